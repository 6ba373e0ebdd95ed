"""``mlcir-gpu-lower-vectors``: vector ops in GPU kernels lowered to what NVVM conversion takes.

``convert-gpu-to-nvvm`` converts 1-D vector ops (loads, stores, arithmetic, extracts of rows)
but not n-D broadcasts or shape casts; on the CPU, ``convert-vector-to-llvm`` lowers those
first, but it cannot run on GPU code (it does not know GPU address spaces: measured, it emits
"conversion of memref memory space #gpu.address_space<workgroup> … failed" without failing,
which the Python bindings turn into a process abort). ``canonicalize`` also turns lowered shape
casts back into broadcasts, so this pass runs on the outlined ``gpu.func`` bodies right before
``convert-gpu-to-nvvm``: the same lowering patterns (contractions to outer products, broadcasts,
shape casts, transposes, masks, transfers of rank 1), with leading unit dims cast away.
"""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir
from mlir.dialects import transform
from mlir.dialects.transform import vector as tvector

from mlcir.ir import find_first
from mlcir.transform import apply, match_ops, new_script

from .registry import ModulePass, register_pass


def build_lowering(root: ir.Value) -> None:
    kernels = match_ops(root, ["gpu.func"])
    patterns = transform.ApplyPatternsOp(kernels)
    with ir.InsertionPoint(patterns.patterns):
        tvector.ApplyLowerContractionPatternsOp(
            lowering_strategy=tvector.VectorContractLowering.OuterProduct)
        tvector.ApplyLowerOuterProductPatternsOp()
        tvector.ApplyLowerMultiReductionPatternsOp(
            lowering_strategy=tvector.VectorMultiReductionLowering.InnerParallel)
        tvector.ApplyTransferPermutationPatternsOp()
        tvector.ApplyTransferToScfPatternsOp(max_transfer_rank=1, full_unroll=True)
        tvector.ApplyLowerTransferPatternsOp(max_transfer_rank=1)
        tvector.ApplyLowerBroadcastPatternsOp()
        tvector.ApplyLowerShapeCastPatternsOp()
        tvector.ApplyLowerTransposePatternsOp(
            lowering_strategy=tvector.VectorTransposeLowering.Shuffle1D)
        tvector.ApplyLowerMasksPatternsOp()
        tvector.ApplyLowerCreateMaskPatternsOp()
        tvector.ApplyLowerInterleavePatternsOp()
        tvector.ApplyLowerGatherPatternsOp()


@register_pass
@dataclass
class GpuLowerVectors(ModulePass):
    name = "mlcir-gpu-lower-vectors"
    summary = "Lower n-D vector ops in gpu.func kernels (before convert-gpu-to-nvvm)"

    def run(self, module: ir.Operation) -> None:
        if find_first(module, lambda op: op.name.startswith("vector.") and any(
                p.name == "gpu.func" for p in _parents(op))):
            apply(module, new_script(build_lowering))


def _parents(op: ir.Operation):
    parent = op.parent
    while parent is not None:
        yield parent
        parent = parent.parent
