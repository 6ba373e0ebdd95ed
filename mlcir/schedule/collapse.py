"""A split across a fused loop's parts as a rewrite: several dimensions of a block become one.

TensorIR splits a fused loop anywhere (``fuse(i, j)`` then ``split(f, [None, 5])`` with 5
not dividing ``j``'s extent): a tile then starts mid-row and its ``i``, ``j`` are a division
and a remainder of the fused index, which MLIR tiling cannot express on the separate
dimensions. So the block's op is rewritten before the transform script, as for reordered split
levels (expand.py): the fused dimensions ``(i, j)`` become one dimension ``f`` of extent
``e_i * e_j``. Its result, and every operand indexed by those dimensions plainly and in that
order, are reshaped (``tensor.collapse_shape``; the result is expanded back); an operand
indexed otherwise (a broadcast bias, a transposed or windowed read) is read in the body with
``tensor.extract`` at ``i = f floordiv e_j``, ``j = f mod e_j``. ``f`` then tiles like any
dimension, a partial last tile included. The rewrite is recorded beside the inlines, so
``mlcir-opt --transform-script`` replays it too.
"""

from __future__ import annotations

import math

from mlir import ir
from mlir.dialects import affine, linalg, tensor

from mlcir.dialects.loop import BLOCK_ATTR, dims_of, dps_inputs, loop_extents, tag_block

from .errors import PrimitiveError, ScheduleError
from .payload import as_generic, body_element_type, clone_body, find_block_op, reassociation
from .rewrite import Rewrite, rewrite_kind
from .state import SPATIAL, Block, KernelState, Loop, Operand

KIND = "collapse_dims"  # its entry in the schedule's recorded rewrites


def new_dim_numbers(n_dims: int, group: list[int]) -> dict[int, int]:
    """The op's dims after the rewrite: the group is one dim where its smallest member was,
    the others keep their order."""
    kept = [d for d in range(n_dims) if d not in group or d == min(group)]
    numbers = {d: kept.index(d) for d in kept}
    for d in group:
        numbers[d] = numbers[min(group)]
    return numbers


def plain_run(results: list[int | None], group: list[int]) -> int | None:
    """Where ``group`` appears in ``results`` as consecutive plain dims in its order, else
    None."""
    if group[0] not in results:
        return None
    start = results.index(group[0])
    return start if results[start:start + len(group)] == group else None


def collapse_fused(state: KernelState, block: Block, loop: Loop, why: str,
                   factored: bool) -> None:
    """The state side of the rewrite: the dims that ``loop`` fuses become one dim of
    ``block``, which ``loop`` walks alone; the rewrite is recorded. ``why`` begins the
    error where the rewrite cannot be made; ``factored``: rfactor made ``block`` (its op
    exists only once the transform script runs)."""
    group = [d for d, _ in loop.parts]
    if any(block.levels[d] != [loop.id] or block.extents[d] != e for d, e in loop.parts):
        raise PrimitiveError("split", f"{why}: its parts must be whole dimensions, each "
                             "unsplit (fuse the dimensions, then split the fused loop)")
    if any(o.is_init and plain_run(o.map_results, group) is None for o in block.operands):
        raise PrimitiveError("split", f"{why}: block '{block.name}' must write the fused "
                             "dimensions in the loop's order (its result is reshaped)")
    related = [b.name for b in state.blocks.values() if not b.inlined and b is not block and (
        (b.attach is not None and b.attach.target == block.name)
        or b.origin.get("source") == block.name)]
    if block.attach is not None or related or block.dim_names or state.expanded(block) \
            or factored:
        raise PrimitiveError("split", f"{why}, which reshapes block '{block.name}': it must "
                             "then be computed on its own (not computed at another block, "
                             "nothing computed at it, no cache stage, no rfactor, split levels "
                             "in order)")
    numbers = new_dim_numbers(len(block.kinds), group)
    fused = numbers[group[0]]
    n_new = max(numbers.values()) + 1
    old_extents = list(block.extents)

    def renumbered(form):
        return None if form is None else ({numbers[d]: c for d, c in form[0].items()}, form[1])

    operands, outputs = [], []
    for operand in block.operands:
        run = plain_run(operand.map_results, group)
        touches = any(r in group for r in operand.map_results) or any(
            form is None or any(d in group for d in form[0])
            for r, form in zip(operand.map_results, operand.terms) if r is None)
        if run is not None:
            n = len(group)
            results = [numbers[r] if r is not None else None for r in operand.map_results]
            results[run:run + n] = [fused]
            terms = [renumbered(f) for f in operand.terms]
            if terms:
                terms[run:run + n] = [({fused: 1}, 0)]
            shape = list(operand.shape)
            if shape:
                shape[run:run + n] = [math.prod(shape[run:run + n])]
            new = Operand(operand.producer, results, operand.is_init, terms, shape)
        elif not touches:
            new = Operand(operand.producer,
                          [numbers[r] if r is not None else None for r in operand.map_results],
                          operand.is_init, [renumbered(f) for f in operand.terms],
                          list(operand.shape))
        else:  # read by tensor.extract in the body (an init is always a plain run)
            if operand.producer is not None:
                block.reads_by_index.add(operand.producer)
            continue
        (outputs if operand.is_init else operands).append(new)
    covered = {r for o in operands + outputs for r in o.map_results if r is not None}
    uncovered = [d for d in range(n_new) if d not in covered]
    new_extents: list[int | None] = [None] * n_new
    new_kinds = [SPATIAL] * n_new
    for d in range(len(block.kinds)):
        new_extents[numbers[d]] = old_extents[d]
        new_kinds[numbers[d]] = block.kinds[d]
    new_extents[fused] = loop.extent
    if uncovered:
        operands.append(Operand(None, uncovered, False, [({d: 1}, 0) for d in uncovered],
                                [new_extents[d] for d in uncovered]))
    levels: list[list[int]] = [[] for _ in range(n_new)]
    for d, lv in enumerate(block.levels):
        if d not in group:
            levels[numbers[d]] = lv
    levels[fused] = [loop.id]
    for lid in block.order:
        other = state.loops[lid]
        other.parts = [(numbers[d], e) for d, e in other.parts] if lid != loop.id \
            else [(fused, loop.extent)]
    loop.knob = None
    state.rewrites.append(Rewrite(KIND, block.func, block.name, (",".join(map(str, group)),)))
    block.kinds, block.extents, block.levels = new_kinds, new_extents, levels
    block.operands = operands + outputs
    block.output_map = next(o.map_results for o in outputs)
    block.op_name = "linalg.generic"
    block.window = any(r is None for o in block.operands for r in o.map_results)


def apply_collapse(module: ir.Module, func_name: str, block: str, group: list[int]) -> None:
    """Rewrite ``block``'s dimensions ``group`` (outer first) into one dimension."""
    found = find_block_op(module, func_name, block)
    if found is None:
        raise ScheduleError(f"split: no block '{block}' in function '{func_name}'")
    op = as_generic(module, found)
    body = op.regions[0].blocks[0]
    maps = [ir.AffineMapAttr(m).value for m in linalg.get_indexing_maps(op)]
    n_dims = maps[0].n_dims
    numbers = new_dim_numbers(n_dims, group)
    n_new = max(numbers.values()) + 1
    extents = loop_extents(op)
    fused = numbers[group[0]]
    # Each old dim as an expression of the new ones (a group dim: a digit of the fused index).
    old_dims: list[ir.AffineExpr] = [ir.AffineDimExpr.get(numbers[d]) for d in range(n_dims)]
    for k, d in enumerate(group):
        stride = math.prod(extents[g] for g in group[k + 1:])
        digit = ir.AffineExpr.get_floor_div(ir.AffineDimExpr.get(fused), stride) \
            if stride > 1 else ir.AffineDimExpr.get(fused)
        old_dims[d] = ir.AffineExpr.get_mod(digit, extents[d]) if k else digit
    substitution = ir.AffineMap.get(n_new, 0, old_dims)
    n_inputs = len(dps_inputs(op))
    inputs, input_maps, extracted, outputs, output_maps = [], [], [], [], []
    with ir.InsertionPoint(op), op.location:
        for k, (value, amap) in enumerate(zip(op.operands, maps)):
            dims = [e.position if isinstance(e, ir.AffineDimExpr) else None for e in amap.results]
            run = plain_run(dims, group)
            touches = any(d in group for e in amap.results for d in dims_of(e))
            if run is not None:
                value, new_map = _collapsed(value, amap, run, len(group), numbers, n_new)
            elif not touches:
                new_map = ir.AffineMap.get(n_new, 0, [e.compose(substitution)
                                                      for e in amap.results])
            elif k < n_inputs:
                extracted.append((k, value, amap))
                continue
            else:
                raise ScheduleError(f"split: block '{block}' writes its result with the fused "
                                    "dims out of order")
            (inputs if k < n_inputs else outputs).append(value)
            (input_maps if k < n_inputs else output_maps).append(new_map)
        covered = {e.position for m in input_maps + output_maps for e in m.results
                   if isinstance(e, ir.AffineDimExpr)}
        uncovered = [d for d in range(n_new) if d not in covered]
        if uncovered:
            # A dim only the extracted operands indexed (a reduction): an unread tensor of
            # its extent keeps its bound.
            new_extents = {numbers[d]: extents[d] for d in range(n_dims)}
            element = ir.RankedTensorType(outputs[0].type).element_type
            inputs.append(tensor.EmptyOp([new_extents[d] for d in uncovered], element).result)
            input_maps.append(ir.AffineMap.get(n_new, 0, [ir.AffineDimExpr.get(d)
                                                           for d in uncovered]))
        iterators = list(ir.ArrayAttr(op.attributes["iterator_types"]))
        new_iterators = [None] * n_new
        for d in range(n_dims):
            new_iterators[numbers[d]] = iterators[d]
        generic = linalg.GenericOp([o.type for o in outputs], inputs, outputs,
                                   input_maps + output_maps, ir.ArrayAttr.get(new_iterators))
        new_body = generic.regions[0].blocks.append(*[body_element_type(v)
                                                      for v in inputs + outputs])
        args = list(new_body.arguments)
        kept = [k for k in range(n_inputs) if k not in {x[0] for x in extracted}]
        mapping = {body.arguments[k]: args[i] for i, k in enumerate(kept)}
        for j in range(len(outputs)):
            mapping[body.arguments[n_inputs + j]] = args[len(inputs) + j]
        with ir.InsertionPoint(new_body):
            indices = [linalg.IndexOp(d).result for d in range(n_new)]
            for k, value, amap in extracted:
                coords = [affine.apply(ir.AffineMap.get(n_new, 0, [e.compose(substitution)]),
                                       indices) for e in amap.results]
                mapping[body.arguments[k]] = tensor.extract(value, coords)

        def index_value(d: int) -> ir.Value:  # linalg.index d of the old op, in the new one
            return affine.apply(ir.AffineMap.get(n_new, 0, [old_dims[d]]), indices)

        yielded = clone_body(body, new_body, mapping, stop_at_yield=False,
                             index_value=index_value)
        with ir.InsertionPoint(new_body):
            linalg.YieldOp(yielded)
        for old, new, amap in zip(op.results, generic.results, maps[n_inputs:]):
            dims = [e.position if isinstance(e, ir.AffineDimExpr) else None for e in amap.results]
            run = plain_run(dims, group)
            groups = _groups(len(dims), run, len(group))
            new = tensor.ExpandShapeOp(old.type, new, reassociation(groups), [],
                                       ir.RankedTensorType(old.type).shape).result
            old.replace_all_uses_with(new)
    name = ir.StringAttr(op.attributes[BLOCK_ATTR])
    op.erase()
    tag_block(generic.operation, name)


def _groups(rank: int, run: int, length: int) -> list[list[int]]:
    """The reassociation of a ``rank``-dim tensor whose dims ``run .. run + length`` go into
    one (collapsed index numbering)."""
    return [[r] for r in range(run)] + [list(range(run, run + length))] + \
        [[r + length - 1] for r in range(run + 1, rank - length + 1)]


def _collapsed(value: ir.Value, amap: ir.AffineMap, run: int, length: int,
               numbers: dict[int, int], n_new: int) -> tuple[ir.Value, ir.AffineMap]:
    """``value`` with its dims ``run .. run + length`` collapsed, and its map over the new
    dims."""
    source = ir.RankedTensorType(value.type)
    shape = list(source.shape)
    new_shape = shape[:run] + [math.prod(shape[run:run + length])] + shape[run + length:]
    groups = [[r] for r in range(run)] + [list(range(run, run + length))] + \
        [[r] for r in range(run + length, len(shape))]
    value = tensor.CollapseShapeOp(ir.RankedTensorType.get(new_shape, source.element_type),
                                   value, reassociation(groups)).result
    results = list(amap.results)
    head = ir.AffineDimExpr(results[run]).position
    renumber = ir.AffineMap.get(n_new, 0, [ir.AffineDimExpr.get(numbers[d])
                                           for d in range(amap.n_dims)])
    new_results = [e.compose(renumber) for e in results[:run]] + \
        [ir.AffineDimExpr.get(numbers[head])] + \
        [e.compose(renumber) for e in results[run + length:]]
    return value, ir.AffineMap.get(n_new, 0, new_results)


@rewrite_kind(KIND)
def _apply_recorded(module: ir.Module, rewrite: Rewrite) -> None:
    apply_collapse(module, rewrite.func, rewrite.target,
                   [int(d) for d in rewrite.args[0].split(",")])
