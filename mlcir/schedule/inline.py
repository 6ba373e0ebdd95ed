"""compute_inline as a rewrite: merge an elementwise ``linalg.generic`` into its consumers.

Upstream MLIR 22.1 has no transform op that fuses one chosen pair of elementwise linalg ops
(only the whole-function pass ``linalg-fuse-elementwise-ops``, which also drops mlcir's block
names), so inlining is done here, on the loop-level IR, before the transform script runs.
A recorded schedule lists its inlines in the transform module (``mlcir.inline``) and
``mlcir-opt --transform-script`` applies them first, so no Python schedule code is needed to
replay it. Named elementwise ops (``linalg.add``) are generalized first with the transform
dialect's ``structured.generalize``.
"""

from __future__ import annotations


from mlir import ir
from mlir.dialects import linalg

from mlcir.dialects.loop import (BLOCK_ATTR, dps_inits, dps_inputs, is_linalg, iterator_kinds,
                                 tag_block)

from .errors import ScheduleError
from .payload import as_generic, clone_body, find_block_op
from .rewrite import Rewrite, rewrite_kind

Dims = list[int | None]  # an affine map's results: a dim position or None for the constant 0


def _dims(amap: ir.AffineMap) -> Dims | None:
    out: Dims = []
    for e in amap.results:
        if isinstance(e, ir.AffineDimExpr):
            out.append(e.position)
        elif isinstance(e, ir.AffineConstantExpr) and e.value == 0:
            out.append(None)
        else:
            return None
    return out


def _maps(op: ir.Operation) -> list[Dims | None]:
    return [_dims(ir.AffineMapAttr(m).value) for m in linalg.get_indexing_maps(op)]


def check_inlinable(module: ir.Module, func_name: str, block: str) -> str | None:
    """Why ``block`` cannot be inlined into its consumers (None when it can)."""
    op = find_block_op(module, func_name, block)
    if op is None:
        return None  # a block created by the schedule; the schedule checks those itself
    if not is_linalg(op) or len(op.results) != 1:
        return f"block '{block}' must be a single-result linalg op"
    if any(k != "spatial" for k in iterator_kinds(op)):
        return f"block '{block}' is not elementwise"
    maps = _maps(op)
    if any(m is None for m in maps):
        return f"block '{block}' indexes an operand with an expression; only plain dims inline"
    out = maps[-1]
    if None in out or sorted(out) != list(range(len(out))):
        return f"block '{block}' does not write its result with a permutation"
    for use in op.results[0].uses:
        consumer = use.owner
        if not is_linalg(consumer):
            return f"block '{block}' is used by '{consumer.name}', which is not a linalg op"
        if any(m is None for m in _maps(consumer)):
            return f"consumer '{consumer.name}' indexes an operand with an expression"
    if op.name == "linalg.generic":
        body = op.regions[0].blocks[0]
        n_inputs = len(dps_inputs(op))
        if any(True for _ in body.arguments[n_inputs].uses):
            return f"block '{block}' reads its destination; it is not a pure elementwise op"
        if any(o.operation.name == "linalg.index" for o in body.operations):
            # Its body would be cloned into the consumer's loops, where the indices differ.
            return f"block '{block}' reads its loop indices (linalg.index, e.g. a gather)"
    return None


def _compose(consumer_read: Dims, producer_out: Dims, producer_in: Dims) -> Dims:
    """The map from the consumer's dims to a producer input: producer_in ∘ producer_out⁻¹ ∘
    consumer_read."""
    inverse = {d: r for r, d in enumerate(producer_out)}
    out: Dims = []
    for d in producer_in:
        out.append(None if d is None else consumer_read[inverse[d]])
    return out


def _affine(num_dims: int, dims: Dims) -> ir.AffineMap:
    return ir.AffineMap.get(num_dims, 0, [ir.AffineConstantExpr.get(0) if d is None else
                                          ir.AffineDimExpr.get(d) for d in dims])


def _fuse_into(producer: ir.Operation, consumer: ir.Operation) -> ir.Operation:
    """A new generic computing ``consumer`` with ``producer`` recomputed in its body."""
    p_maps = _maps(producer)
    c_maps = _maps(consumer)
    p_inputs = dps_inputs(producer)
    c_inputs = dps_inputs(consumer)
    c_outputs = dps_inits(consumer)
    n_dims = ir.AffineMapAttr(linalg.get_indexing_maps(consumer)[0]).value.n_dims
    reads = [i for i, v in enumerate(c_inputs) if v == producer.results[0]]
    keep = [i for i in range(len(c_inputs)) if i not in reads]
    new_inputs = [c_inputs[i] for i in keep] + p_inputs
    new_maps = [c_maps[i] for i in keep]
    for k in range(len(p_inputs)):
        new_maps.append(_compose(c_maps[reads[0]], p_maps[-1], p_maps[k]))
    new_maps += c_maps[len(c_inputs):]
    iterators = ir.ArrayAttr(consumer.attributes["iterator_types"])
    with ir.InsertionPoint(consumer), consumer.location:
        fused = linalg.GenericOp_(new_inputs, c_outputs, [_affine(n_dims, m) for m in new_maps],
                                  iterators)
    body = fused.regions[0].blocks[0]
    c_body = consumer.regions[0].blocks[0]
    p_body = producer.regions[0].blocks[0]
    args = list(body.arguments)
    mapping: dict = {}
    for new_pos, i in enumerate(keep):
        mapping[c_body.arguments[i]] = args[new_pos]
    for k in range(len(p_inputs)):
        mapping[p_body.arguments[k]] = args[len(keep) + k]
    for j in range(len(c_outputs)):
        mapping[c_body.arguments[len(c_inputs) + j]] = args[len(new_inputs) + j]
    produced = clone_body(p_body, body, mapping, stop_at_yield=True)
    for i in reads:
        mapping[c_body.arguments[i]] = produced[0]
    yielded = clone_body(c_body, body, mapping, stop_at_yield=False)
    with ir.InsertionPoint(body):
        linalg.YieldOp(yielded)
    for old, new in zip(consumer.results, fused.results):
        old.replace_all_uses_with(new)
    return fused.operation


RENAME = "rename_block"  # its entry in the schedule's recorded rewrites


def apply_rename(module: ir.Module, func_name: str, block: str, new_name: str) -> None:
    """The op of ``block`` now answers to ``new_name`` (a compute_inline into the copy a
    cache_write made: that copy computes the block's values, under its own name)."""
    op = find_block_op(module, func_name, block)
    if op is None:
        raise ScheduleError(f"compute_inline: no block '{block}' in function '{func_name}'")
    tag_block(op.operation, ir.StringAttr.get(new_name))


def apply_inline(module: ir.Module, kind: str, func_name: str, block: str) -> None:
    """Apply one recorded inline: ``compute_inline`` removes ``block`` into its consumers;
    ``reverse_compute_inline`` merges ``block``'s producer into it under the producer's name."""
    op = find_block_op(module, func_name, block)
    if op is None:
        raise ScheduleError(f"{kind}: no block '{block}' in function '{func_name}'")
    if kind == "compute_inline":
        producer = as_generic(module, op)
        consumers = []
        for use in producer.results[0].uses:
            if use.owner not in consumers:
                consumers.append(use.owner)
        for consumer in consumers:
            consumer = as_generic(module, consumer)
            name = ir.StringAttr(consumer.attributes[BLOCK_ATTR]).value
            fused = _fuse_into(producer, consumer)
            consumer.erase()
            tag_block(fused, name)
        producer.erase()
    elif kind == "reverse_compute_inline":
        consumer = as_generic(module, op)
        producer_op = next(v.owner for v in dps_inputs(consumer)
                           if not isinstance(v.owner, ir.Block) and BLOCK_ATTR in v.owner.attributes)
        producer = as_generic(module, producer_op)
        name = ir.StringAttr(producer.attributes[BLOCK_ATTR]).value
        fused = _fuse_into(producer, consumer)
        consumer.erase()
        producer.erase()
        tag_block(fused, name)
    else:
        raise ScheduleError(f"unknown inline kind {kind!r}")


@rewrite_kind(RENAME)
def _apply_recorded_rename(module: ir.Module, rewrite: Rewrite) -> None:
    apply_rename(module, rewrite.func, rewrite.target, rewrite.args[0])


@rewrite_kind("compute_inline", "reverse_compute_inline")
def _apply_recorded_inline(module: ir.Module, rewrite: Rewrite) -> None:
    apply_inline(module, rewrite.kind, rewrite.func, rewrite.target)
