"""``mlcir-lower-vectors``: lower the vector ops a schedule produced, after bufferization.

Contractions become outer products (then FMAs), transfers become plain loads/stores, shape
casts, transposes and broadcasts are lowered — the pattern set measured to give the ideal
AVX-512 micro-kernel for a vectorized matmul tile (16 FMAs per k step, accumulators in
registers). A 16 x 16 transpose (a layout change's tile) is upstream's ``Shuffle16x16``
sequence of 64 two-source shuffles; other shapes fall back to one shuffle of the flattened
vector, which LLVM lowered to a permute per element (a 16-wide layout-change tile: 145 us
that way, 84.5 us with the sequence). Applied as one fixed transform script to every
function.
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
    funcs = match_ops(root, ["func.func"])
    patterns = transform.ApplyPatternsOp(funcs)
    with ir.InsertionPoint(patterns.patterns):
        tvector.ApplyLowerContractionPatternsOp(
            lowering_strategy=tvector.VectorContractLowering.OuterProduct)
        tvector.ApplyTransferPermutationPatternsOp()
        tvector.ApplyLowerMultiReductionPatternsOp(
            lowering_strategy=tvector.VectorMultiReductionLowering.InnerParallel)
        tvector.ApplySplitTransferFullPartialPatternsOp(
            split_transfer_strategy=tvector.VectorTransferSplit.LinalgCopy)
        tvector.ApplyTransferToScfPatternsOp(max_transfer_rank=1, full_unroll=True)
        tvector.ApplyLowerTransferPatternsOp(max_transfer_rank=1)
        tvector.ApplyLowerShapeCastPatternsOp()
        tvector.ApplyLowerTransposePatternsOp(
            lowering_strategy=tvector.VectorTransposeLowering.Shuffle16x16)
        tvector.ApplyLowerBroadcastPatternsOp()
        tvector.ApplyLowerOuterProductPatternsOp()
    transform.ApplyCommonSubexpressionEliminationOp(funcs)


@register_pass
@dataclass
class LowerVectors(ModulePass):
    name = "mlcir-lower-vectors"
    summary = "Lower vector contractions, transfers and shape ops (after bufferization)"

    def run(self, module: ir.Operation) -> None:
        if find_first(module, lambda op: op.name.startswith("vector.")):
            apply(module, new_script(build_lowering))
