"""Reordered split levels as a rewrite: one dimension of a block becomes several.

MLIR tiling makes the loops of a split dimension outer level first (each tile nested in the
one above), so an order such as ``i_1, j, i_0`` — TensorIR accepts any order of the loops of
one chain — has no tiling. Instead the block's op is rewritten before the transform script:
its dimension ``i`` of extent ``e_0 * e_1`` becomes two dimensions ``(i_0, i_1)``; operands
indexed by ``i`` itself are reshaped (``tensor.expand_shape``) to ``[..., e_0, e_1, ...]``,
operands indexed by an expression of ``i`` (a convolution's ``oh + kh``) read
``i_0 * e_1 + i_1`` instead, and results are collapsed back. Each level is then a dimension
of its own, which tiling and interchange place anywhere. A recorded schedule lists these
rewrites beside its inlines (``mlcir.inline``), so ``mlcir-opt --transform-script`` replays
them too.
"""

from __future__ import annotations

import math

from mlir import ir
from mlir.dialects import arith, linalg, tensor

from mlcir.dialects.loop import BLOCK_ATTR, dps_inputs, iterator_kinds, tag_block

from .errors import ScheduleError
from .payload import as_generic, body_element_type, clone_body, find_block_op, reassociation
from .rewrite import Rewrite, rewrite_kind

KIND = "expand_dim"  # its entry in the schedule's recorded rewrites


def apply_expand(module: ir.Module, func_name: str, block: str, dim: int,
                 extents: list[int]) -> None:
    """Rewrite ``block``'s dimension ``dim`` into ``len(extents)`` dimensions: ``dim`` keeps
    the outermost level, the others are appended after the op's last dimension."""
    found = find_block_op(module, func_name, block)
    if found is None:
        raise ScheduleError(f"reorder: no block '{block}' in function '{func_name}'")
    op = as_generic(module, found)
    body = op.regions[0].blocks[0]
    reads_indices = any(o.operation.name == "linalg.index" for o in body.operations)
    maps = [ir.AffineMapAttr(m).value for m in linalg.get_indexing_maps(op)]
    n_dims = maps[0].n_dims
    total = n_dims + len(extents) - 1
    level_dims = [dim] + list(range(n_dims, total))
    strides = [math.prod(extents[k + 1:]) for k in range(len(extents))]
    combined = ir.AffineConstantExpr.get(0)
    for d, stride in zip(level_dims, strides):
        combined = combined + ir.AffineDimExpr.get(d) * stride
    substitution = ir.AffineMap.get(total, 0, [combined if d == dim else ir.AffineDimExpr.get(d)
                                               for d in range(n_dims)])
    n_inputs = len(dps_inputs(op))
    operands, new_maps, collapse = [], [], []
    padded_from = None  # the extent of `dim` when the levels cover more (a partial split)
    with ir.InsertionPoint(op), op.location:
        for value, amap in zip(op.operands, maps):
            operand_type = value.type
            if not isinstance(operand_type, ir.RankedTensorType):  # a fill's scalar
                operands.append(value)
                new_maps.append(ir.AffineMap.get(total, 0, []))
                collapse.append(None)
                continue
            shape = ir.RankedTensorType(value.type).shape
            results: list[ir.AffineExpr] = []
            groups: list[list[int]] = []
            expanded: list[int] = []
            for r, expr in enumerate(amap.results):
                if isinstance(expr, ir.AffineDimExpr) and expr.position == dim:
                    if shape[r] < math.prod(extents):
                        padded_from = shape[r]
                        value = _pad(value, r, math.prod(extents))
                        shape = ir.RankedTensorType(value.type).shape
                    groups.append(list(range(len(expanded), len(expanded) + len(extents))))
                    expanded += extents
                    results += [ir.AffineDimExpr.get(d) for d in level_dims]
                else:
                    groups.append([len(expanded)])
                    expanded.append(shape[r])
                    results.append(expr.compose(substitution))
            new_maps.append(ir.AffineMap.get(total, 0, results))
            if len(expanded) != len(shape):
                element = ir.RankedTensorType(value.type).element_type
                value = tensor.ExpandShapeOp(ir.RankedTensorType.get(expanded, element), value,
                                             reassociation(groups), [], expanded).result
            operands.append(value)
            collapse.append((groups, ir.RankedTensorType(operand_type).shape)
                            if len(expanded) != len(shape) else None)
        iterators = list(ir.ArrayAttr(op.attributes["iterator_types"]))
        kind = iterators[dim]
        outputs = operands[n_inputs:]
        generic = linalg.GenericOp([o.type for o in outputs], operands[:n_inputs], outputs,
                                   new_maps,
                                   ir.ArrayAttr.get(iterators + [kind] * (len(extents) - 1)))
        new_body = generic.regions[0].blocks.append(*[body_element_type(v) for v in operands])
        mapping = dict(zip(body.arguments, new_body.arguments))
        if reads_indices and padded_from is not None:
            raise ScheduleError(f"reorder: block '{block}' reads its loop indices "
                                "(linalg.index), which its padded rows would read past")

        def index_value(d: int) -> ir.Value:  # linalg.index d of the old op, in the new one
            if d != dim:
                return linalg.IndexOp(d).result
            return _linear_index(level_dims, strides)

        yielded = clone_body(body, new_body, mapping, stop_at_yield=False,
                             index_value=index_value)
        with ir.InsertionPoint(new_body):
            if padded_from is not None and iterator_kinds(op)[dim] == "reduction":
                # The padded steps of a reduction keep the accumulator as it is: whatever the
                # combiner, they add nothing (a spatial dim's padded results are dropped).
                yielded = _guarded(yielded, list(new_body.arguments)[n_inputs:], level_dims,
                                   strides, padded_from)
            linalg.YieldOp(yielded)
        for k, (old, new) in enumerate(zip(op.results, generic.results)):
            if collapse[n_inputs + k] is not None:
                groups, shape = collapse[n_inputs + k]
                padded = [math.prod(extents) if len(g) > 1 else shape[r]
                          for r, g in enumerate(groups)]
                element = ir.RankedTensorType(old.type).element_type
                new = tensor.CollapseShapeOp(ir.RankedTensorType.get(padded, element), new,
                                             reassociation(groups)).result
                if padded != list(shape):  # the padded rows computed too: drop them
                    new = tensor.ExtractSliceOp(old.type, new, [], [], [], [0] * len(shape),
                                                list(shape), [1] * len(shape)).result
                    new.owner.attributes[PADDING] = ir.UnitAttr.get()
            old.replace_all_uses_with(new)
    name = ir.StringAttr(op.attributes[BLOCK_ATTR])
    op.erase()
    tag_block(generic.operation, name)
    fold_reshape_pairs(module)


# On the tensor.pad and tensor.extract_slice an expansion makes for a split that does not
# divide: the padded elements they add or drop are ones nothing reads (a spatial dim's extra
# rows are dropped, a reduction's extra steps add the combiner's neutral value).
PADDING = "mlcir.expand_padding"


def fold_reshape_pairs(module: ir.Module) -> None:
    """An expanded operand that is an expanded op's result collapsed back (and, for a split
    that does not divide, sliced and padded again: elements no one reads) is that result.
    A block computed at a block whose levels were reordered is expanded the same way
    (compute_location.py), and only so does the one op read the other's result directly,
    which fusion needs."""
    expands: list[ir.Operation] = []

    def visit(op: ir.Operation) -> ir.WalkResult:
        if op.name == "tensor.expand_shape":
            expands.append(op)
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)
    for expand in expands:
        chain = [expand]
        source = expand.operands[0]
        owner = _defining(source)
        if owner is not None and owner.name == "tensor.pad" and PADDING in owner.attributes:
            chain.append(owner)
            owner = _defining(owner.operands[0])
            if owner is None or owner.name != "tensor.extract_slice" \
                    or PADDING not in owner.attributes:
                continue
            chain.append(owner)
            owner = _defining(owner.operands[0])
        if owner is None or owner.name != "tensor.collapse_shape":
            continue
        chain.append(owner)
        inner = owner.operands[0]
        if inner.type != expand.results[0].type or \
                str(owner.attributes["reassociation"]) != str(expand.attributes["reassociation"]):
            continue
        expand.results[0].replace_all_uses_with(inner)
        for op in chain:  # what is left unused goes, outermost first
            if all(not list(r.uses) for r in op.results):
                op.erase()
            else:
                break


def _defining(value: ir.Value) -> ir.Operation | None:
    if not isinstance(value, ir.OpResult):
        return None
    owner = value.owner
    return getattr(owner, "operation", owner)


# Combiners with the value that leaves the accumulator as it is.
NEUTRAL = {"arith.addf": 0.0, "arith.mulf": 1.0, "arith.maximumf": float("-inf"),
           "arith.maxnumf": float("-inf"), "arith.minimumf": float("inf"),
           "arith.minnumf": float("inf"), "arith.addi": 0, "arith.ori": 0, "arith.xori": 0}


def _guarded(yielded: list[ir.Value], accumulators: list[ir.Value], level_dims: list[int],
             strides: list[int], extent: int) -> list[ir.Value]:
    """What a padded reduction step yields: the combiner of each accumulator takes its
    neutral value there (a form the vectorizer still reads as a reduction); a combiner not
    known keeps the accumulator through a select of the result."""
    block = accumulators[0].owner
    with ir.InsertionPoint.at_block_begin(block):
        valid = _in_bounds(level_dims, strides, extent)
    out = []
    for y, acc in zip(yielded, accumulators):
        combiner = y.owner if isinstance(y, ir.OpResult) else None
        name = combiner.name if combiner is not None else None
        if name in NEUTRAL and len(combiner.operands) == 2 and acc in list(combiner.operands):
            other = 1 if combiner.operands[0] == acc else 0
            value = combiner.operands[other]
            with ir.InsertionPoint(combiner):
                neutral = arith.ConstantOp(value.type, NEUTRAL[name]).result
                kept = arith.SelectOp(valid, value, neutral).result
            combiner.operands[other] = kept
            out.append(y)
        else:
            out.append(arith.SelectOp(valid, y, acc).result)
    return out


def _linear_index(level_dims: list[int], strides: list[int]) -> ir.Value:
    """The step of the original dimension the levels index: ``sum(level * stride)``."""
    index_type = ir.IndexType.get()
    step = None
    for d, stride in zip(level_dims, strides):
        term = linalg.IndexOp(d).result
        if stride != 1:
            term = arith.MulIOp(term, arith.ConstantOp(index_type, stride).result).result
        step = term if step is None else arith.AddIOp(step, term).result
    return step


def _in_bounds(level_dims: list[int], strides: list[int], extent: int) -> ir.Value:
    """Whether the step the levels index is below ``extent``."""
    bound = arith.ConstantOp(ir.IndexType.get(), extent).result
    return arith.CmpIOp(arith.CmpIPredicate.ult, _linear_index(level_dims, strides),
                        bound).result


def _pad(value: ir.Value, position: int, size: int) -> ir.Value:
    """``value`` padded at the end of dimension ``position`` to ``size`` (with zeros: only a
    spatial dimension is padded, whose extra elements are computed and dropped)."""
    source = ir.RankedTensorType(value.type)
    shape = list(source.shape)
    high = [0] * len(shape)
    high[position] = size - shape[position]
    shape[position] = size
    pad = tensor.PadOp(ir.RankedTensorType.get(shape, source.element_type), value, [], [],
                       [0] * len(shape), high)
    pad.operation.attributes[PADDING] = ir.UnitAttr.get()
    body = pad.regions[0].blocks.append(*[ir.IndexType.get()] * len(shape))
    with ir.InsertionPoint(body):
        zero = arith.ConstantOp(source.element_type, 0.0).result \
            if isinstance(source.element_type, ir.FloatType) else \
            arith.ConstantOp(source.element_type, 0).result
        tensor.YieldOp(zero)
    return pad.result


@rewrite_kind(KIND)
def _apply_recorded(module: ir.Module, rewrite: Rewrite) -> None:
    dim, extents = rewrite.args
    apply_expand(module, rewrite.func, rewrite.target, int(dim),
                 [int(e) for e in extents.split(",")])
