"""``transform_layout``: legality and the state update (the IR rewrite is :mod:`.relayout`).

The tensor a block writes changes layout; its producer is re-expressed over the new layout's
dimensions, its consumers keep their loops and read it with ``tensor.extract``. A producer
already scheduled keeps its loops (:func:`_carried_loops`): a permuted dimension is the same
loops under a new number; a packed one ``d -> (d // c, d % c)`` gives its inner levels to
``d % c`` and its outer ones to ``d // c``, a level that straddles the two becoming a loop fused
from both (an unsplit ``d`` walks ``d // c`` fused with ``d % c``: the same order).

The new blocks are read from a scratch copy of the kernel with the
schedule's rewrites so far and this one applied, so the state is what the IR will be.
"""

from __future__ import annotations

import random

import math
from typing import Any, Callable

from mlir import ir

from .errors import PrimitiveError
from .relayout import (KIND, LayoutResult, check_layout, index_map_text, is_identity,
                       is_permutation, parse_index_map, producer_problem, result_copy_name, spec)
from .rewrite import Rewrite
from .rewrites import apply_rewrite, rewritten
from .state import SPATIAL, Block, KernelState, read_blocks
from .fuzz_support import intermediate, pick_block
from .instruction import TRANSFORM_LAYOUT


def transform_layout(state: KernelState, original: ir.Module, block: Block, buffer: Any,
                     index_map: Callable[..., Any] | str) -> str:
    """Change the layout of ``block``'s ``buffer`` (``("write", 0)``, or ``("read", i)``: the
    tensor its input ``i`` is, written by another block); returns the map as printed."""
    producer = _producer(state, block, buffer)
    rank = len(producer.output_map)
    names, results = parse_index_map(index_map, rank)
    shape = [producer.extents[d] if d is not None else -1 for d in producer.output_map]
    check_layout(shape, results)
    if (producer.func, result_copy_name(producer.name)) in state.blocks:
        raise PrimitiveError(KIND, f"a block is named '{result_copy_name(producer.name)}', the "
                             "name of the copy back to the function's layout")
    scratch = rewritten(original, state.rewrites)
    problem = producer_problem(scratch, producer.func, producer.name)
    if problem:
        raise PrimitiveError(KIND, problem)
    if is_identity(results):
        return index_map_text(names, results)  # the layout it has: nothing changes
    permutation = is_permutation(results)
    consumers = [c for c, _ in state.consumers(producer)]
    init = state.init_producer(producer)
    relayouted = [producer] + ([init] if init else [])
    # A permutation renumbers the dims of the producer (and its init) and the consumers read
    # it through a permuted indexing map: places, caches and fusion stay as they were. A
    # packing makes the consumers read by tensor.extract, which nothing fuses through, and
    # removes the operand they read, which cache stages name by position.
    for b in relayouted:
        if b.origin or not permutation and (b.attach is not None or _hosts(state, b)):
            raise PrimitiveError(KIND, f"block '{b.name}' is placed, cached or has blocks "
                                 "placed in it: a packing goes before compute_at, "
                                 "cache_read/cache_write and decompose_reduction")
    for b in consumers:
        if permutation and b.origin.get("kind") == "cache_write":
            continue  # the promotion of the producer's result, in its new layout
        if b.origin or any(x.origin.get("source") == b.name and not x.inlined and (
                not permutation or b.operands[x.origin["operand"]].producer == producer.name)
                for x in state.blocks.values()):
            raise PrimitiveError(KIND, f"block '{b.name}' reads the tensor and is a cache "
                                 "stage or cached: transform_layout before cache_read / "
                                 "cache_write")
    # rfactor's split is made by the transform script, after this rewrite: on the IR the
    # rewrite sees, a factored block is still one op, whose reads the state no longer has
    # (a factored consumer was missed and read the old layout: fuzz_schedules --seed 0
    # --case 132).
    factored = [x.origin["rfactor"] for x in state.blocks.values()
                if x.func == producer.func and "rfactor" in x.origin]
    if factored:
        raise PrimitiveError(KIND, f"block '{factored[0]}' was factored (rfactor): "
                             "transform_layout before rfactor")
    # An unscheduled producer gets fresh loops over the new layout, in its order (TVM's
    # transform_layout followed by transform_block_layout); a scheduled one keeps its loops.
    carried = {b.name: _carried_loops(state, b, results) for b in relayouted
               if _scheduled(state, b) or b.attach is not None or _hosts(state, b)}
    renumbered = {b.name: {d: new[0] for d, new in _new_dims(b, results).items()}
                  for b in relayouted}
    entry = Rewrite(KIND, producer.func, spec(producer.name, names, results))
    with original.context, ir.Location.unknown():
        try:
            apply_rewrite(scratch, entry)
        except PrimitiveError:
            raise
        except Exception as error:  # noqa: BLE001 - the rewrite's reason is the message
            raise PrimitiveError(KIND, str(error)) from None
        fresh = KernelState()
        read_blocks(scratch, fresh)
    for b in relayouted:
        _replace(state, b, fresh.blocks[(b.func, b.name)], carried.get(b.name))
    _renumber_regions(state, producer.func, renumbered)
    copy = fresh.blocks.get((producer.func, result_copy_name(producer.name)))
    if copy is not None:  # the function's result, copied back to the signature's layout
        if not permutation:
            copy.reads_by_index.add(producer.name)
        _add_block(state, copy)
    for c, _ in state.consumers(producer):
        if c.origin:  # a cache_write stage: its extents are the new layout's
            _permute_stage(state, c, results)
            continue
        new = fresh.blocks[(c.func, c.name)]
        if permutation:  # the same operands, the tensor's read through a permuted map
            c.operands = [fresh_op if op.producer == producer.name else op
                          for op, fresh_op in zip(c.operands, new.operands)]
            c.op_name = new.op_name
            continue
        c.operands, c.output_map, c.op_name, c.window = (new.operands, new.output_map,
                                                        new.op_name, new.window)
        c.reads_by_index.add(producer.name)
    state.rewrites.append(entry)
    return index_map_text(names, results)


def _producer(state: KernelState, block: Block, buffer: Any) -> Block:
    if not (isinstance(buffer, (tuple, list)) and len(buffer) == 2
            and buffer[0] in ("read", "write") and isinstance(buffer[1], int)):
        raise PrimitiveError(KIND, f"buffer must be ('read', i) or ('write', i), got {buffer!r}")
    kind, index = buffer
    if kind == "write":
        if index != 0:
            raise PrimitiveError(KIND, f"block '{block.name}' writes one tensor, no #{index}")
        return block
    inputs = [op for op in block.operands if not op.is_init]
    if not 0 <= index < len(inputs):
        raise PrimitiveError(KIND, f"block '{block.name}' has {len(inputs)} inputs, no #{index}")
    name = inputs[index].producer
    if name is None:
        raise PrimitiveError(KIND, f"input #{index} of block '{block.name}' is not written by "
                             "a block (a function argument's layout is the signature)")
    return state.blocks[(block.func, name)]


def _permute_stage(state: KernelState, stage: Block, results: list[LayoutResult]) -> None:
    stage.extents = [stage.extents[r.dim] for r in results]
    for dim, lid in enumerate(stage.order):
        state.loops[lid].parts = [(dim, stage.extents[dim])]


def _hosts(state: KernelState, b: Block) -> bool:
    """Whether blocks are computed at loops of ``b``."""
    return any(x.attach is not None and x.attach.target == b.name and not x.inlined
               and x.func == b.func for x in state.blocks.values())


def _renumber_regions(state: KernelState, func: str, renumbered: dict[str, dict[int, int]]
                      ) -> None:
    """Where a relayouted block is computed, or blocks are computed at it, the dims that
    match tiles (``Block.region``) take their new numbers."""
    for x in state.blocks.values():
        if x.func != func or x.attach is None:
            continue
        own = renumbered.get(x.name, {})
        target = renumbered.get(x.attach.target, {})
        x.region = {own.get(d, d): target.get(t, t) for d, t in x.region.items()}


def _new_dims(b: Block, results: list[LayoutResult]) -> dict[int, tuple[int, int, int]]:
    """Each dim of ``b`` once it iterates over the new layout: ``(outer, inner, c)``, the dims
    walking ``d // c`` and ``d % c`` of a packed dim (``inner`` -1 for a plain one); the
    layout's dims come first, then the reduction dims."""
    new_dims: dict[int, tuple[int, int, int]] = {}
    reductions = [d for d, kind in enumerate(b.kinds) if kind != SPATIAL]
    for d in range(len(b.kinds)):
        if d in reductions:
            new_dims[d] = (len(results) + reductions.index(d), -1, 1)
            continue
        if d not in b.output_map:
            raise PrimitiveError(KIND, f"loop dimension {d} of block '{b.name}' is not a "
                                 "dimension of the tensor it writes")
        axis = b.output_map.index(d)
        at = {r.op: p for p, r in enumerate(results) if r.dim == axis}
        new_dims[d] = (at[""], -1, 1) if "" in at else (at["//"], at["%"], results[at["%"]].c)
    return new_dims


def _carried_loops(state: KernelState, b: Block, results: list[LayoutResult]
                   ) -> dict[int, list[tuple[int, int]]]:
    """The parts each of ``b``'s loops walks once ``b`` iterates over the new layout (the
    producer's dims as the rewrite numbers them: the layout's, then its reduction dims);
    raises where the loops cannot be carried over."""
    if b.dim_names:
        raise PrimitiveError(KIND, f"the split levels of block '{b.name}' were reordered, which "
                             "reshapes it (a dimension per level): transform_layout first")
    new_dims = _new_dims(b, results)
    translated: dict[tuple[int, int], list[tuple[int, int]]] = {}  # (loop, part) -> parts
    for d, (outer, inner, c) in new_dims.items():
        occurrences = [(lid, k, e) for lid in dict.fromkeys(b.levels[d])
                       for k, (dim, e) in enumerate(state.loops[lid].parts) if dim == d]
        if inner >= 0 and math.prod(e for _, _, e in occurrences) != b.extents[d]:
            raise PrimitiveError(KIND, f"the split of loop dimension {d} of block '{b.name}' "
                                 "does not divide its extent (a padded last tile): the new "
                                 "layout has no padding")
        left = c  # iterations of d % c not yet given to a level, innermost level first
        for lid, k, e in reversed(occurrences):
            if inner < 0 or left == 1:
                translated[(lid, k)] = [(outer, e)]
            elif left % e == 0:
                translated[(lid, k)] = [(inner, e)]
                left //= e
            elif e % left == 0:
                translated[(lid, k)] = [(outer, e // left), (inner, left)]
                left = 1
            else:
                raise PrimitiveError(KIND, f"a loop of block '{b.name}' walks {e} iterations of "
                                     f"dimension {d}, which cut across its packing by {c}: "
                                     "transform_layout before splitting it so")
        if inner >= 0 and left == 1 and not any(p[0] == outer for lid, k, _ in occurrences
                                                for p in translated[(lid, k)]):
            lid, k, _ = occurrences[0]  # d == c: d // c is one iteration, walked outermost
            translated[(lid, k)] = [(outer, 1)] + translated[(lid, k)]
    return {lid: [p for k in range(len(state.loops[lid].parts)) for p in translated[(lid, k)]]
            for lid in b.order}


def _add_block(state: KernelState, new: Block) -> None:
    """``new`` (read from the scratch kernel) joins the state, with fresh loops."""
    _fresh_loops(state, new)
    state.blocks[(new.func, new.name)] = new


def _scheduled(state: KernelState, b: Block) -> bool:
    return (any(len(levels) > 1 for levels in b.levels) or b.order != sorted(b.order)
            or bool(b.annotations) or any(state.loops[lid].annotations or
                                          len(state.loops[lid].parts) > 1 for lid in b.order))


def _replace(state: KernelState, old: Block, new: Block,
             carried: dict[int, list[tuple[int, int]]] | None) -> None:
    """``old`` becomes ``new`` (read from the scratch kernel), keeping its loops as
    ``carried`` says, else with fresh ones."""
    if len(new.operands) == len(old.operands):
        for before, after in zip(old.operands, new.operands):
            after.producer = before.producer  # a cache stage it reads stays its producer
    for attr in ("kinds", "extents", "operands", "output_map", "op_name", "window"):
        setattr(old, attr, getattr(new, attr))
    if carried is None:
        for lid in old.order:
            state.loops.pop(lid, None)
        _fresh_loops(state, old)
        return
    old.levels = [[] for _ in old.extents]
    for lid in old.order:
        loop = state.loops[lid]
        if len(carried[lid]) != len(loop.parts):
            loop.knob = None
        loop.parts = carried[lid]
        for dim, _ in loop.parts:
            if lid not in old.levels[dim]:
                old.levels[dim].append(lid)


def _fresh_loops(state: KernelState, block: Block) -> None:
    block.levels, block.order = [], []
    for dim, extent in enumerate(block.extents):
        loop = state.new_loop(block, [(dim, extent if extent is not None else -1)])
        block.levels.append([loop.id])
        block.order.append(loop.id)


# -- fuzzing ----------------------------------------------------------------------------------

@TRANSFORM_LAYOUT.fuzzed_by(0.5)
def fuzz_transform_layout(sch, rng: random.Random) -> bool:
    inner = intermediate(sch, rng)
    block, rv = pick_block(sch, rng, lambda b: not b.origin and b.op_name != "linalg.fill"
                            and bool(b.output_map) and inner(b))
    if rv is None:
        return False
    names = [f"v{i}" for i in range(len(block.output_map))]
    results = list(names)
    rng.shuffle(results)  # a permutation,
    extents = [block.extents[d] if d is not None else 1 for d in block.output_map]
    position = rng.randrange(len(names))
    divisors = [c for c in range(2, 9) if extents[position] % c == 0]
    if divisors and rng.random() < 0.5:  # or a packing of one dim
        c = rng.choice(divisors)
        v = names[position]
        at = results.index(v)
        results[at:at + 1] = [f"{v} // {c}"]
        results.append(f"{v} % {c}")
    sch.transform_layout(rv, ("write", 0), f"lambda {', '.join(names)}: ({', '.join(results)},)")
    return True
