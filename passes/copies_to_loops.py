"""``mlcir-copies-to-loops``: copies between strided buffers become loops LLVM vectorizes.

After bufferization a copy between views with strides (a padded input's interior, a row of
an NCHW tensor) is a ``memref.copy`` that ``finalize-memref-to-llvm`` turns into a call of the
runtime's ``memrefCopy``, which copies element by element through ``memcpy``: in ResNet-50's
stem its copies took longer than the convolution. As ``linalg.copy`` they become loops
(``convert-linalg-to-loops``) whose innermost, contiguous dimension LLVM vectorizes.
Contiguous copies stay ``memref.copy`` (one ``llvm.memcpy``), and so do copies of a single
row (a vector tile of a padded copy), which the runtime copies faster than the loops.
"""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir
from mlir.dialects import linalg

from .registry import ModulePass, register_pass


def _contiguous(t: ir.Type) -> bool:
    """Whether a memref of this type is one contiguous run of elements (identity layout)."""
    memref = ir.MemRefType(t)
    return memref.affine_map == ir.AffineMap.get_identity(memref.rank)


def _one_row(t: ir.Type) -> bool:
    """Whether every dim but the innermost has one element: a single run of a strided view
    (a vector tile of a padded copy), which ``memrefCopy`` copies faster than the loops
    (docs/measurements/layouts.md#notes-moved-from-the-package-code)."""
    return all(d == 1 for d in ir.MemRefType(t).shape[:-1])


@register_pass
@dataclass
class CopiesToLoops(ModulePass):
    name = "mlcir-copies-to-loops"
    summary = "Rewrite memref.copy between strided views as linalg.copy (loops, vectorized)"

    def run(self, module: ir.Operation) -> None:
        strided: list[ir.Operation] = []

        def collect(op: ir.Operation) -> ir.WalkResult:
            if op.name == "memref.copy" and not all(
                    _contiguous(v.type) for v in op.operands) and not _one_row(
                    op.operands[0].type):
                strided.append(op)
            return ir.WalkResult.ADVANCE

        with module.context:
            module.walk(collect)
            for op in strided:
                with ir.InsertionPoint(op), op.location:
                    linalg.copy(op.operands[0], outs=[op.operands[1]])
                op.erase()
