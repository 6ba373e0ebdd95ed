"""``mlcir-lower-vectors``: lower the vector ops a schedule produced, after bufferization.

Contractions become outer products (then FMAs), transfers become plain loads/stores, shape
casts, transposes and broadcasts are lowered — the pattern set measured to give the ideal
AVX-512 micro-kernel for a vectorized matmul tile (16 FMAs per k step, accumulators in
registers). A 16 x 16 transpose (a layout change's tile) is upstream's ``Shuffle16x16``
sequence of 64 two-source shuffles; other shapes fall back to one shuffle of the flattened
vector, which LLVM lowers to a permute per element (much slower: docs/decisions.md#layout-changes).
Applied as one fixed transform script to every
function.

Before it, a reduction of pairs (:func:`deinterleave_pair_reductions`): a strided pooling
reads its window through the view ``[.., W/2, 2]``, so its vector tile is ``vector<N x 2>``
reduced over the pair. Lowered as 2-D vectors, that was N loads of 2 elements and a
shuffle to put them together per tap (perf: ``vmovups xmm``, ``vshufps``, ``vinsertf128``);
read as one ``vector<2N>`` and split by ``vector.deinterleave`` it is one load and two
permutes (docs/measurements/layouts.md#fifth-round-padding-written-by-the-producer).
"""

from __future__ import annotations

from dataclasses import dataclass

from typing import Callable

from mlir import ir
from mlir.dialects import arith, memref, transform, vector
from mlir.dialects.transform import vector as tvector

from mlcir.ir import find_first, ops_named
from mlcir.transform import apply, match_attr, match_ops, new_script

from .registry import ModulePass, register_pass


# multi_reduction kinds whose combiner is one arith op (float pooling: max and sum).
_COMBINERS: dict[str, Callable[[ir.Value, ir.Value], ir.Value]] = {
    "maxnumf": arith.maxnumf, "maximumf": arith.maximumf, "add": arith.addf}


def deinterleave_pair_reductions(module: ir.Operation) -> int:
    """Rewrite every ``vector.multi_reduction`` of a ``vector<N x 2 x f>`` over its pairs as
    ``acc ⊕ even ⊕ odd`` of a ``vector.deinterleave`` of the same values read as a
    ``vector<2N>`` (:func:`_linear`), the order upstream's lowering combines them in; returns
    how many."""
    count = 0
    for op in ops_named(module, "vector.multi_reduction"):
        source, acc = op.operands
        kind = str(op.attributes["kind"]).split("<")[-1].rstrip(">")
        shape = ir.VectorType(source.type).shape
        if len(shape) != 2 or shape[1] != 2 or kind not in _COMBINERS or \
                list(ir.DenseI64ArrayAttr(op.attributes["reduction_dims"])) != [1] or \
                not isinstance(ir.VectorType(source.type).element_type, ir.FloatType):
            continue
        combine = _COMBINERS[kind]
        with ir.InsertionPoint(op), op.location:
            even, odd = vector.DeinterleaveOp(_linear(source)).results
            result = combine(combine(acc, even), odd)
        op.results[0].replace_all_uses_with(result)
        op.erase()
        count += 1
    return count


def _linear(value: ir.Value) -> ir.Value:
    """``value`` (a ``vector<N x K>``) as a ``vector<N*K>``, computed with 1-D ops where its
    producers allow (a contiguous read, a select, a compare, a splat, a broadcast of one row),
    else a ``vector.shape_cast`` of it."""
    vt = ir.VectorType(value.type)
    (n, k), elem = vt.shape, vt.element_type
    flat = ir.VectorType.get([n * k], elem)
    op = None if isinstance(value.owner, ir.Block) else value.owner.operation
    name = op.name if op is not None else ""
    if name == "arith.select" and isinstance(op.operands[0].type, ir.VectorType):
        return arith.select(*(_linear(v) for v in op.operands))
    if name in ("arith.cmpi", "arith.cmpf"):
        return ir.Operation.create(name, results=[flat], operands=[_linear(v) for v in op.operands],
                                   attributes={"predicate": op.attributes["predicate"]}).result
    if name == "arith.constant" and ir.DenseElementsAttr(op.attributes["value"]).is_splat:
        splat = ir.DenseElementsAttr(op.attributes["value"]).get_splat_value()
        return arith.ConstantOp(flat, ir.DenseElementsAttr.get_splat(flat, splat)).result
    if name == "vector.broadcast" and isinstance(op.operands[0].type, ir.VectorType) and \
            ir.VectorType(op.operands[0].type).shape == [k]:
        row = op.operands[0]
        return vector.ShuffleOp(row, row, [j for _ in range(n) for j in range(k)]).result
    if name == "vector.transfer_read":
        read = _contiguous_read(op, flat)
        if read is not None:
            return read
    return vector.shape_cast(flat, value)


def _contiguous_read(op: ir.Operation, flat: ir.VectorType) -> ir.Value | None:
    """A ``vector<N x K>`` in-bounds, unmasked read of the two innermost dims ``[.., K]`` of
    a row-major memref as one read of ``N * K`` elements (the two dims collapsed), or None."""
    base = op.operands[0]
    if not isinstance(base.type, ir.MemRefType):
        return None
    mt = ir.MemRefType(base.type)
    rank, k = mt.rank, ir.VectorType(op.results[0].type).shape[1]
    row_major = [1]
    for size in reversed(mt.shape[1:]):
        row_major.insert(0, row_major[0] * size)
    strides, offset = mt.get_strides_and_offset()
    in_bounds = [bool(ir.BoolAttr(a).value) for a in ir.ArrayAttr(op.attributes["in_bounds"])]
    minor = ir.AffineMap.get_minor_identity(rank, 2)
    if rank < 2 or not mt.has_static_shape or mt.shape[-1] != k or strides != row_major or \
            offset != 0 or len(op.operands) != rank + 2 or not all(in_bounds) or \
            ir.AffineMapAttr(op.attributes["permutation_map"]).value != minor:
        return None  # (a mask is an extra operand)
    indices = list(op.operands[1:1 + rank])
    collapsed_type = ir.MemRefType.get(mt.shape[:-2] + [mt.shape[-2] * k], mt.element_type)
    reassociation = [[i] for i in range(rank - 2)] + [[rank - 2, rank - 1]]
    collapsed = memref.CollapseShapeOp(collapsed_type, base, reassociation).result
    column = arith.addi(arith.muli(indices[-2], arith.ConstantOp(ir.IndexType.get(), k).result),
                        indices[-1])
    return vector.TransferReadOp(flat, collapsed, indices[:-2] + [column],
                                 ir.AffineMapAttr.get(ir.AffineMap.get_minor_identity(rank - 1, 1)),
                                 op.operands[1 + rank], [True]).result


UNROLL_FIRST = "mlcir.unroll_first"


def tag_masked_projected_writes(module: ir.Operation) -> int:
    """Mark each masked ``transfer_write`` whose map is not a minor identity (a register tile
    with a partial last row written into a packed panel, ``memref<?x1x32>``): upstream's
    permutation patterns lower it to a ``maskedstore`` whose mask has the wrong shape
    (docs/fuzzing.md), so the transfers of its function are unrolled to rank 1 first.
    Returns how many."""
    count = 0
    for op in ops_named(module, "vector.transfer_write"):
        write = op.opview
        if write.mask is None:
            continue
        perm = ir.AffineMapAttr(op.attributes["permutation_map"]).value
        if perm == ir.AffineMap.get_minor_identity(perm.n_dims, len(perm.results)):
            continue
        op.attributes[UNROLL_FIRST] = ir.UnitAttr.get()
        count += 1
    return count


def build_lowering(root: ir.Value, unroll_first: bool = False) -> None:
    funcs = match_ops(root, ["func.func"])
    if unroll_first:  # in the functions holding such a write only
        writes = match_attr(root, UNROLL_FIRST, op_names=["vector.transfer_write"])
        owners = transform.GetParentOp(transform.AnyOpType.get(), writes, op_name="func.func",
                                       deduplicate=True).result
        first = transform.ApplyPatternsOp(owners)
        with ir.InsertionPoint(first.patterns):
            tvector.ApplyTransferToScfPatternsOp(max_transfer_rank=1, full_unroll=True)
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
            deinterleave_pair_reductions(module)
            unroll_first = tag_masked_projected_writes(module) > 0
            apply(module, new_script(lambda root: build_lowering(root, unroll_first)))
