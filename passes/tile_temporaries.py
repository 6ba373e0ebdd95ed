"""``mlcir-tile-temporaries``: a temporary a loop nest uses one tile at a time is allocated
tile by tile, not whole.

A schedule that computes an epilogue at a convolution's outer tile (``reverse_compute_at``)
leaves the convolution's accumulator as tiles ``tensor.extract_slice``'d from one
``tensor.empty`` of the whole result: bufferized as it is, that is a full-size buffer each tile
is zero-filled into, accumulated in and read back from (1.8 MB for a MobileNetV2 expansion,
written and read once more per call). A slice of an empty tensor is itself an empty tensor of
the slice's shape (upstream's ``fold_tensor_empty`` patterns, applied as a transform script
to every function), so each tile gets a buffer of its own size, which stays in L1.
"""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir
from mlir.dialects import transform
from mlir.dialects.transform import tensor as ttensor

from mlcir.ir import find_first
from mlcir.transform import apply, match_ops, new_script

from .registry import ModulePass, register_pass


def build_folding(root: ir.Value) -> None:
    patterns = transform.ApplyPatternsOp(match_ops(root, ["func.func"]))
    with ir.InsertionPoint(patterns.patterns):
        ttensor.ApplyFoldTensorEmptyPatternsOp(fold_single_use_only=False)


@register_pass
@dataclass
class TileTemporaries(ModulePass):
    name = "mlcir-tile-temporaries"
    summary = "Slices of tensor.empty become tensor.empty of the slice (before bufferization)"

    def run(self, module: ir.Operation) -> None:
        if find_first(module, lambda op: op.name == "tensor.empty"):
            apply(module, new_script(build_folding))
