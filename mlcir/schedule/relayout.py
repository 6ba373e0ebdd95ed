"""The rewrite behind ``transform_layout`` (TVM's): the tensor a block writes stored in another
layout, given as an index map ``lambda i, j: (i // 4, j, i % 4)``.

Supported maps are permutations and packings of the dimensions: each result is a dimension
``d``, ``d // c`` or ``d % c``, and a dimension appears either once plainly or once as the pair
``d // c``, ``d % c`` (``c`` dividing its extent) — the layouts TVM's guides pack with
(``NCHW -> NCHW4c``, blocked weights). They are bijections, and their inverses are linear
(``d = c * a + b``), which is how the rewrite keeps every op tileable:

- the producer is re-expressed over the new layout's dimensions (its own loops become the
  layout's, fresh: it must be unscheduled), reading its inputs through the inverse map and
  writing its result plainly;
- each consumer reads the new tensor: through its indexing map, permuted, when the layout is
  a permutation (so tiling and fusion go through it as before); with ``tensor.extract`` at
  the mapped indices when it packs a dimension (an indexing map through ``//`` and ``%`` is
  tiled with wrong slice sizes upstream whenever the tile does not divide ``c`` or ``c`` the
  tile). Its loops are unchanged.

There is no transform op for it (upstream has only ``structured.pack``, tiled layouts of all
of an op's operands at once), so it is a rewrite of the loop-level IR applied before the
transform script, recorded in the transform module like the inlines (``mlcir.inline``).
"""

from __future__ import annotations

import inspect
import json
import re
from dataclasses import dataclass
from typing import Any, Callable

from mlir import ir
from mlir.dialects import affine, bufferization, linalg, tensor

from mlcir.dialects.loop import BLOCK_ATTR, dps_inits, dps_inputs, is_linalg, tag_block

from .errors import PrimitiveError, ScheduleError
from .payload import as_generic, clone_body, find_block_op
from .rewrite import Rewrite, rewrite_kind

KIND = "transform_layout"


# -- the index map -------------------------------------------------------------------------
@dataclass(frozen=True)
class LayoutResult:
    """One result of the index map: dimension ``dim`` (``op``: "", "//" or "%") by ``c``."""

    dim: int
    op: str = ""
    c: int = 1


class _Sym:
    """What the index map's lambda is called with: records ``d``, ``d // c``, ``d % c``."""

    def __init__(self, result: LayoutResult):
        self.result = result

    def __floordiv__(self, c: Any) -> "_Sym":
        return self._with("//", c)

    def __mod__(self, c: Any) -> "_Sym":
        return self._with("%", c)

    def _with(self, op: str, c: Any) -> "_Sym":
        if self.result.op or not isinstance(c, int) or c < 1:
            raise PrimitiveError(KIND, "index map results must be d, d // c or d % c with a "
                                 "positive integer c")
        return _Sym(LayoutResult(self.result.dim, op, c))

    def __getattr__(self, name: str) -> Any:
        raise PrimitiveError(KIND, "index map results must be d, d // c or d % c (a "
                             "permutation or a packing of the dimensions)")

    def __add__(self, other: Any) -> Any:
        return self.__getattr__("add")

    __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = __add__


def parse_index_map(index_map: Callable[..., Any] | str, rank: int) -> tuple[list[str], list[LayoutResult]]:
    """The map's parameter names and results, from a lambda or its printed form."""
    if isinstance(index_map, str):
        return _parse_text(index_map)
    names = list(inspect.signature(index_map).parameters)
    if len(names) != rank:
        raise PrimitiveError(KIND, f"the index map takes {len(names)} indices, the tensor has "
                             f"{rank} dimensions")
    out = index_map(*[_Sym(LayoutResult(d)) for d in range(rank)])
    out = out if isinstance(out, (tuple, list)) else (out,)
    if not all(isinstance(r, _Sym) for r in out):
        raise PrimitiveError(KIND, "index map results must be d, d // c or d % c")
    return names, [r.result for r in out]


def _parse_text(text: str) -> tuple[list[str], list[LayoutResult]]:
    match = re.fullmatch(r"\s*lambda\s+([\w\s,]*):\s*\((.*)\)\s*", text)
    if not match:
        raise PrimitiveError(KIND, f"not an index map: {text!r}")
    names = [n.strip() for n in match.group(1).split(",") if n.strip()]
    results = []
    for item in [s.strip() for s in match.group(2).split(",") if s.strip()]:
        m = re.fullmatch(r"(\w+)(?:\s*(//|%)\s*(\d+))?", item)
        if not m or m.group(1) not in names:
            raise PrimitiveError(KIND, f"index map result {item!r} is not d, d // c or d % c")
        results.append(LayoutResult(names.index(m.group(1)), m.group(2) or "",
                                    int(m.group(3) or 1)))
    return names, results


def index_map_text(names: list[str], results: list[LayoutResult]) -> str:
    """The map as the lambda a trace prints: ``lambda i, j: (i // 4, j, i % 4)``."""
    shown = [names[r.dim] + (f" {r.op} {r.c}" if r.op else "") for r in results]
    return f"lambda {', '.join(names)}: ({', '.join(shown)}{',' if len(shown) == 1 else ''})"


def check_layout(shape: list[int], results: list[LayoutResult]) -> list[int]:
    """The new shape; raises unless the map is a permutation or packing of ``shape``."""
    by_dim: dict[int, list[LayoutResult]] = {}
    for r in results:
        if not 0 <= r.dim < len(shape):
            raise PrimitiveError(KIND, f"index map result uses dimension {r.dim}")
        by_dim.setdefault(r.dim, []).append(r)
    new_shape = []
    for r in results:
        parts = by_dim[r.dim]
        extent = shape[r.dim]
        if len(parts) == 1 and parts[0].op == "":
            new_shape.append(extent)
        elif len(parts) == 2 and {p.op for p in parts} == {"//", "%"} and parts[0].c == parts[1].c:
            if extent % r.c:
                raise PrimitiveError(KIND, f"{r.c} does not divide dimension {r.dim} (extent "
                                     f"{extent}): the layout would need padding")
            new_shape.append(extent // r.c if r.op == "//" else r.c)
        else:
            raise PrimitiveError(KIND, f"dimension {r.dim} must appear once plainly or as the "
                                 "pair d // c, d % c (a permutation or packing)")
    missing = [d for d in range(len(shape)) if d not in by_dim]
    if missing:
        raise PrimitiveError(KIND, f"dimension(s) {missing} are missing from the index map "
                             "(it would not be a bijection)")
    return new_shape


# -- the rewrite -----------------------------------------------------------------------------
def spec(block: str, names: list[str], results: list[LayoutResult]) -> str:
    return json.dumps({"block": block, "map": index_map_text(names, results)})


def apply_layout(module: ir.Module, func_name: str, spec_text: str) -> None:
    """Apply one recorded ``transform_layout`` to ``module`` (see the module docstring)."""
    with module.context, ir.Location.unknown():
        _apply(module, func_name, json.loads(spec_text))


def _apply(module: ir.Module, func_name: str, data: dict[str, str]) -> None:
    names, results = _parse_text(data["map"])
    producer = find_block_op(module, func_name, data["block"])
    if producer is None:
        raise ScheduleError(f"{KIND}: no block '{data['block']}' in function '{func_name}'")
    producer = as_generic(module, producer)
    old_type = ir.RankedTensorType(producer.results[0].type)
    shape = list(old_type.shape)
    new_shape = check_layout(shape, results)
    new_type = ir.RankedTensorType.get(new_shape, old_type.element_type)
    _copy_back_results(producer, data["block"])
    consumers = [use.owner for use in producer.results[0].uses]
    old_init = dps_inits(producer)[0].owner
    with producer.location:
        new_producer = _relayout_producer(producer, results, shape, new_type)
    for consumer in dict.fromkeys(consumers):
        consumer = as_generic(module, consumer) if consumer.name != "linalg.generic" else consumer
        with consumer.location:
            if is_permutation(results):
                _read_permuted(consumer, producer.results[0], new_producer.results[0], results)
            else:
                _read_by_extract(consumer, producer.results[0], new_producer.results[0],
                                 results)
    producer.erase()
    # The old destination (a fill keeps its block name: it must not stay as a second one).
    while not isinstance(old_init, ir.Block) and not any(True for r in old_init.results
                                                         for _ in r.uses):
        operands = list(old_init.operands)
        old_init.erase()
        if not operands or isinstance(operands[-1].owner, ir.Block):
            break
        old_init = operands[-1].owner


def result_copy_name(block: str) -> str:
    """The block that copies a relayouted function result back to the signature's layout."""
    return f"{block}_layout"


def _copy_back_results(producer: ir.Operation, block: str) -> None:
    """A function's result keeps the signature's layout: where ``producer`` writes one, a copy
    block (:func:`result_copy_name`) reads it and is returned instead, as the layout pass of a
    graph compiler puts a layout change at the graph's outputs."""
    value = producer.results[0]
    returns = [use.owner for use in value.uses if use.owner.name == "func.return"]
    if not returns:
        return
    value_type = ir.RankedTensorType(value.type)
    rank = value_type.rank
    identity = ir.AffineMap.get_identity(rank)
    with ir.InsertionPoint(returns[0]), producer.location:
        dest = tensor.EmptyOp(value_type.shape, value_type.element_type).result
        copy = linalg.GenericOp_([value], [dest], [identity, identity],
                                 ir.ArrayAttr.get([ir.Attribute.parse(
                                     "#linalg.iterator_type<parallel>")] * rank))
        body = copy.regions[0].blocks[0]
        with ir.InsertionPoint(body):
            linalg.YieldOp([body.arguments[0]])
        tag_block(copy.operation, ir.StringAttr.get(result_copy_name(block)))
    for ret in returns:
        for i, operand in enumerate(ret.operands):
            if operand == value:
                ret.operands[i] = copy.results[0]


def _inverse(results: list[LayoutResult], shape: list[int]) -> list[ir.AffineExpr]:
    """Each old tensor dimension as an expression of the new layout's dims (d0…)."""
    exprs: list[ir.AffineExpr | None] = [None] * len(shape)
    for position, r in enumerate(results):
        here = ir.AffineDimExpr.get(position)
        if r.op == "":
            exprs[r.dim] = here
        elif r.op == "//":
            inner = next(i for i, x in enumerate(results) if x.dim == r.dim and x.op == "%")
            exprs[r.dim] = here * r.c + ir.AffineDimExpr.get(inner)
    return exprs


def _relayout_producer(op: ir.Operation, results: list[LayoutResult], shape: list[int],
                       new_type: ir.Type) -> ir.Operation:
    maps = [ir.AffineMapAttr(m).value for m in linalg.get_indexing_maps(op)]
    out_map = maps[-1]
    iterators = list(ir.ArrayAttr(op.attributes["iterator_types"]))
    n_old = out_map.n_dims
    reductions = [d for d in range(n_old) if "reduction" in str(iterators[d])]
    n_new = len(results)
    inverse = _inverse(results, shape)
    # Each old iteration dim as an expression of the new ones: a spatial dim through the
    # inverse of the tensor axis it writes, a reduction dim as one of the trailing dims.
    substitution: list[ir.AffineExpr] = [ir.AffineConstantExpr.get(0)] * n_old
    for axis, expr in enumerate(out_map.results):
        substitution[ir.AffineDimExpr(expr).position] = inverse[axis]
    for k, d in enumerate(reductions):
        substitution[d] = ir.AffineDimExpr.get(n_new + k)
    n_dims = n_new + len(reductions)
    sub_map = ir.AffineMap.get(n_dims, 0, substitution)
    new_maps = [ir.AffineMap.get(n_dims, 0, [e.compose(sub_map) for e in m.results])
                for m in maps[:-1]]
    new_maps.append(ir.AffineMap.get(n_dims, 0, [ir.AffineDimExpr.get(d) for d in range(n_new)]))
    init = _new_init(dps_inits(op)[0], new_type)
    new_iterators = ir.ArrayAttr.get(
        [ir.Attribute.parse("#linalg.iterator_type<parallel>")] * n_new
        + [ir.Attribute.parse("#linalg.iterator_type<reduction>")] * len(reductions))
    with ir.InsertionPoint(op):
        new = linalg.GenericOp_(dps_inputs(op), [init], new_maps, new_iterators)
    body = op.regions[0].blocks[0]
    if any(o.operation.name == "linalg.index" for o in body.operations):
        raise ScheduleError(f"{KIND}: block reads its loop indices (linalg.index)")
    new_body = new.regions[0].blocks[0]
    mapping = dict(zip(body.arguments, new_body.arguments))
    yielded = clone_body(body, new_body, mapping, stop_at_yield=False)
    with ir.InsertionPoint(new_body):
        linalg.YieldOp(yielded)
    tag_block(new.operation, ir.StringAttr(op.attributes[BLOCK_ATTR]))
    return new.operation


def _new_init(value: ir.Value, new_type: ir.RankedTensorType) -> ir.Value:
    """The producer's destination in the new layout: a new ``tensor.empty``, filled as the
    old one was (the fill keeps its block name)."""
    owner = value.owner
    owner = owner.operation if hasattr(owner, "operation") else owner
    with ir.InsertionPoint(owner):
        if owner.name == "tensor.empty":
            return tensor.EmptyOp(new_type.shape, new_type.element_type).result
        if owner.name == "bufferization.alloc_tensor":  # a scope set before: kept
            space = owner.attributes["memory_space"] \
                if "memory_space" in owner.attributes else None
            return bufferization.AllocTensorOp(new_type, [], memory_space=space).result
        if owner.name == "linalg.fill":
            empty = tensor.EmptyOp(new_type.shape, new_type.element_type).result
            filled = linalg.fill(owner.operands[0], outs=[empty])
            tag_block(filled.owner, ir.StringAttr(owner.attributes[BLOCK_ATTR]))
            return filled
    raise ScheduleError(f"{KIND}: the destination of the block is made by '{owner.name}', not "
                        "tensor.empty or a fill of one")


def is_permutation(results: list[LayoutResult]) -> bool:
    """Whether the layout only permutes the dimensions (no packing)."""
    return all(r.op == "" for r in results)


def is_identity(results: list[LayoutResult]) -> bool:
    return is_permutation(results) and [r.dim for r in results] == list(range(len(results)))


def _read_permuted(consumer: ir.Operation, old: ir.Value, new: ir.Value,
                   results: list[LayoutResult]) -> None:
    """``consumer`` reads ``new`` (``old`` permuted) where it read ``old``: the same operand,
    its indexing map's results permuted as the layout's."""
    inputs = dps_inputs(consumer)
    if any(v == old for v in dps_inits(consumer)):
        raise ScheduleError(f"{KIND}: a consumer writes into the tensor")
    maps = [ir.AffineMapAttr(m).value for m in linalg.get_indexing_maps(consumer)]
    new_maps = list(maps)
    for i, value in enumerate(inputs):
        if value == old:
            new_maps[i] = ir.AffineMap.get(maps[i].n_dims, 0,
                                           [maps[i].results[r.dim] for r in results])
            consumer.operands[i] = new
    consumer.attributes["indexing_maps"] = ir.ArrayAttr.get(
        [ir.AffineMapAttr.get(m) for m in new_maps])


def _read_by_extract(consumer: ir.Operation, old: ir.Value, new: ir.Value,
                     results: list[LayoutResult]) -> None:
    """Replace ``consumer``'s operand(s) reading ``old`` by ``tensor.extract`` of ``new`` at
    the mapped indices, in its body."""
    inputs = dps_inputs(consumer)
    outputs = dps_inits(consumer)
    maps = [ir.AffineMapAttr(m).value for m in linalg.get_indexing_maps(consumer)]
    reads = [i for i, v in enumerate(inputs) if v == old]
    if any(v == old for v in outputs):
        raise ScheduleError(f"{KIND}: a consumer writes into the tensor")
    keep = [i for i in range(len(inputs)) if i not in reads]
    n_dims = maps[0].n_dims
    kept_inputs = [inputs[i] for i in keep]
    kept_maps = [maps[i] for i in keep]
    covered = {e.position for m in kept_maps + maps[len(inputs):] for e in m.results
               if isinstance(e, ir.AffineDimExpr)}
    with ir.InsertionPoint(consumer):
        if len(covered) < n_dims:
            # The tensor read was the only operand giving some loop its bound (a row sum
            # of it): an unread tensor of its old shape keeps that bound.
            kept_inputs.append(tensor.EmptyOp(ir.RankedTensorType(old.type).shape,
                                              ir.RankedTensorType(old.type).element_type).result)
            kept_maps.append(maps[reads[0]])
        new_op = linalg.GenericOp_(kept_inputs, outputs, kept_maps + maps[len(inputs):],
                                   consumer.attributes["iterator_types"])
    body = consumer.regions[0].blocks[0]
    new_body = new_op.regions[0].blocks[0]
    mapping: dict = {}
    for new_pos, i in enumerate(keep):
        mapping[body.arguments[i]] = new_body.arguments[new_pos]
    for j in range(len(outputs)):
        mapping[body.arguments[len(inputs) + j]] = new_body.arguments[len(kept_inputs) + j]
    with ir.InsertionPoint(new_body):
        indices = [linalg.IndexOp(d).result for d in range(n_dims)]
        for i in reads:
            read = maps[i].results
            coords = []
            for r in results:
                expr = read[r.dim]
                if r.op == "//":
                    expr = ir.AffineExpr.get_floor_div(expr, r.c)
                elif r.op == "%":
                    expr = ir.AffineExpr.get_mod(expr, r.c)
                coords.append(affine.apply(ir.AffineMap.get(n_dims, 0, [expr]), indices))
            mapping[body.arguments[i]] = tensor.extract(new, coords)
    yielded = clone_body(body, new_body, mapping, stop_at_yield=False)
    with ir.InsertionPoint(new_body):
        linalg.YieldOp(yielded)
    for attr in (BLOCK_ATTR, "loop.iterators"):
        if attr in consumer.attributes:
            new_op.operation.attributes[attr] = consumer.attributes[attr]
    for old_result, res in zip(consumer.results, new_op.results):
        old_result.replace_all_uses_with(res)
    consumer.erase()


def producer_problem(module: ir.Module, func_name: str, block: str) -> str | None:
    """Why the tensor ``block`` writes cannot change layout (None when it can)."""
    op = find_block_op(module, func_name, block)
    if op is None:
        return f"block '{block}' is not in the kernel as given (a block the schedule made)"
    if not is_linalg(op) or len(op.results) != 1:
        return f"block '{block}' must be a single-result linalg op"
    for use in op.results[0].uses:
        owner = use.owner
        if owner.name != "func.return" and not is_linalg(owner):
            return f"the tensor block '{block}' writes is used by '{owner.name}', not a block"
    return None


@rewrite_kind(KIND)
def _apply_recorded(module: ir.Module, rewrite: Rewrite) -> None:
    apply_layout(module, rewrite.func, rewrite.target)
