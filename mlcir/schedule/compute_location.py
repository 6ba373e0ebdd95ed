"""Compute-location primitives: where a block is computed (TVM's compute_at and
compute_inline): ``compute_at``, ``reverse_compute_at``, ``decompose_reduction``,
``compute_inline``, ``reverse_compute_inline``."""

from __future__ import annotations

import copy
import math
import random

from mlir import ir

from .collapse import KIND as COLLAPSE
from .expand import KIND as EXPAND
from .errors import PrimitiveError
from .loops import _expand_dim
from .reduction import made_by_rfactor
from .inline import RENAME, check_inlinable
from .move import move_after
from .rewrite import Rewrite
from .rewrites import rewritten
from .state import REDUCTION, SPATIAL, Attach, Block, KernelState, Loop, inner_extent
from .fuzz_support import (LIKELY, consumer_blocks, mostly, on_block, own_loops, pick_block,
                           spatial_prefix)
from .instruction import COMPUTE_AT, COMPUTE_INLINE, DECOMPOSE_REDUCTION, REVERSE_COMPUTE_AT, REVERSE_COMPUTE_INLINE


def compute_at(state: KernelState, block: Block, loop: Loop) -> None:
    """Compute the producer ``block`` under ``loop`` of its consumer, only the region that one
    iteration of ``loop`` needs."""
    _attach(state, block, state.owner(loop), loop, "compute_at")


def reverse_compute_at(state: KernelState, block: Block, loop: Loop) -> None:
    """Compute the consumer ``block`` under ``loop`` of its producer, right after the tile of
    the producer that one iteration of ``loop`` computes."""
    _attach(state, block, state.owner(loop), loop, "reverse_compute_at")


def decompose_reduction(state: KernelState, block: Block, loop: Loop) -> Block:
    """Compute the reduction's initialisation right before ``loop`` (inside the loop above it)
    instead of once for the whole output; returns the init block."""
    chain = state.enclosing(block)
    if loop.id not in chain:
        raise PrimitiveError("decompose_reduction", f"loop {state.loop_name(loop)} does not "
                             f"enclose block '{block.name}'")
    init = init_fill(state, block)
    reshaped = state.init_producer(block)
    if init is None and reshaped is not None and state.expanded(reshaped):
        raise PrimitiveError("decompose_reduction", f"the init of block '{block.name}' "
                             f"('{reshaped.name}') is reshaped "
                             f"({state.reshape_reason(reshaped)}): nothing fuses through the "
                             "reshape into the nest "
                             "(decompose first, then reorder)")
    if init is None:
        raise PrimitiveError("decompose_reduction", f"block '{block.name}' has no init block "
                             "(a linalg.fill of its output)")
    if REDUCTION not in block.kinds:
        raise PrimitiveError("decompose_reduction", f"block '{block.name}' is not a reduction")
    moved_along = block.attach is not None and init.attach == block.attach
    if init.attach is not None and not moved_along:
        # TVM's rule: after a decomposition the update block has no init left. Moving the
        # init a second time (back out of the nest) was not undone (fuzz_schedules --seed 14
        # --case 946 computed wrong sums).
        raise PrimitiveError("decompose_reduction", f"the init of block '{block.name}' "
                             f"('{init.name}') is already placed inside its nest")
    pos = chain.index(loop.id)
    vectorized = next((lid for lid in chain[:pos]
                       if state.loops[lid].annotations.get("vectorize")), None)
    if vectorized is not None:
        # The tile of a vectorized loop is one vector operation: there is no place inside it
        # for the init (placed there anyway, with a consumer computed at an outer loop, the
        # sums came out wrong: fuzz_schedules --seed 14 --case 946).
        raise PrimitiveError("decompose_reduction", f"loop {state.loop_name(loop)} is inside "
                             f"the vectorized loop {state.loop_name(state.loops[vectorized])}: "
                             "its tile is one vector operation, with no place for the init")
    if pos > 0:
        above = state.loops[chain[pos - 1]]
        if above.block != block.name:
            raise PrimitiveError("decompose_reduction", "the loop above must be the block's own")
        _attach(state, init, block, above, "compute_at")
    return init


ACCUMULATOR_IN_REDUCTION_LOOP = (
    "the cache_write stage of '{}' would promote its accumulator inside a loop stepping its "
    "reduction, which upstream bufferization rejects (the loop would yield a buffer not "
    "equivalent to its own): cache_write and reverse_compute_at at that loop do not combine")


def has_cache_write(state: KernelState, block: Block) -> bool:
    return any(x.origin.get("kind") == "cache_write" and x.origin.get("source") == block.name
               for x in state.blocks.values())


def _check_not_read_by_index(state: KernelState, producer: Block, prim: str) -> None:
    """A tensor whose layout ``transform_layout`` changed is read by ``tensor.extract`` at
    computed indices, which neither inlining nor tiling fuses through."""
    readers = sorted(b.name for b in state.blocks.values() if b.func == producer.func
                     and not b.inlined and producer.name in b.reads_by_index)
    if readers:
        raise PrimitiveError(prim, f"block '{readers[0]}' reads block '{producer.name}' by "
                             "tensor.extract (transform_layout changed its layout), which does "
                             "not fuse: compute_at and inlines go before transform_layout")


def compute_inline(state: KernelState, original: ir.Module, block: Block) -> None:
    """Inline an elementwise producer into its consumers (its block disappears)."""
    _check_inline(block, "compute_inline")
    consumers = state.consumers(block)
    _check_not_read_by_index(state, block, "compute_inline")
    if not consumers:
        raise PrimitiveError("compute_inline", f"block '{block.name}' has no consumer block")
    if any(c.operands[i].is_init for c, i in consumers):
        raise PrimitiveError("compute_inline", f"block '{block.name}' initialises a consumer's "
                             "output; decompose_reduction places it instead")
    own_stages = [x for x in state.blocks.values()
                  if x.origin.get("kind") in ("cache_read", "cache_write")
                  and x.origin.get("source") == block.name and not x.inlined]
    writes = [x for x in own_stages if x.origin["kind"] == "cache_write"]
    if writes and len(own_stages) == 1:
        _inline_into_copy(state, block, writes[0])
        return
    inside = [b for lid in block.order for b in state.attached_at(lid, block.func)
              if b not in own_stages]
    if own_stages and (len(consumers) != 1 or any(x.origin["kind"] != "cache_read"
                                                   for x in own_stages)):
        # A copy of the block's input moves to its one consumer, which reads that input once
        # the block is inlined; a copy of its result has nothing left to copy.
        _check_uncached(state, [block], "compute_inline")
    if block.expansions:  # (its loops go with it, its reordered levels too)
        _undo_expansions(state, block)
    _check_not_expanded(state, [block] + [c for c, _ in consumers], "compute_inline")
    _check_inlinable(state, original, block, "compute_inline")  # before the state changes
    moves = [_loops_taken_over(state, block, other) for other in inside]  # checked first
    for other, parts in zip(inside, moves):
        _take_over(state, other, parts)
    before = {c.name: list(c.operands) for c, _ in consumers}
    moved = {id(block.operands[x.origin["operand"]]): x for x in own_stages}
    # The consumers' loops stay as they are; the block's own loops disappear with it.
    _inline(state, original, block, consumers, "compute_inline")
    for stage in state.blocks.values():
        # The fused op's operands are renumbered (inputs kept, the block's inputs, outputs):
        # the consumers' cache stages follow theirs.
        if stage.origin.get("kind") and stage.origin.get("source") in before:
            consumer = state.blocks[(stage.func, stage.origin["source"])]
            operand = before[consumer.name][stage.origin["operand"]]
            stage.origin["operand"] = next(i for i, op in enumerate(consumer.operands)
                                           if op is operand)
    for i, operand in enumerate(consumers[0][0].operands if moved else []):
        if id(operand) in moved:
            stage = moved[id(operand)]
            stage.origin.update(source=consumers[0][0].name, operand=i)
            if stage.attach is not None:
                # Placed at a loop of the block, which goes: the copy is made where the block
                # was computed (a loop of its consumer), or before the consumer, whole.
                stage.attach = None if block.attach is None else Attach(
                    "compute_at", block.attach.target, block.attach.loop)
                stage.region = {}


def reverse_compute_inline(state: KernelState, original: ir.Module, block: Block) -> None:
    """Inline an elementwise consumer into its producer (the producer's block computes the
    consumer's result)."""
    prim = "reverse_compute_inline"
    _check_inline(block, prim)
    producers = {op.producer for op in block.operands if op.producer and not op.is_init}
    if len(producers) != 1:
        raise PrimitiveError(prim, f"block '{block.name}' must read exactly one block, reads "
                             f"{sorted(producers) or 'none'}")
    producer = state.blocks[(block.func, producers.pop())]
    if producer.origin.get("kind") == "cache_read":
        raise PrimitiveError(prim, f"block '{block.name}' reads its producer through the cache "
                             f"stage '{producer.name}': inline before caching")
    if REDUCTION in producer.kinds:
        raise PrimitiveError(prim, f"producer '{producer.name}' is a reduction: its result is "
                             "complete only after the last reduction step (use "
                             "reverse_compute_at)")
    if state.consumers(producer) != [(block, i) for i, op in enumerate(block.operands)
                                     if op.producer == producer.name]:
        raise PrimitiveError(prim, f"producer '{producer.name}' has other consumers")
    reads = next(op for op in block.operands if op.producer == producer.name)
    # As TVM, the producer keeps its loops when the consumer walks the same domain and either
    # was not scheduled or the producer was (the consumer's loops go with it); else it takes
    # over the consumer's loops.
    producer_scheduled = not _plain_nest(state, producer) or producer.attach is not None \
        or any(state.attached_at(lid, producer.func) for lid in producer.order)
    keep = reads.map_results == producer.output_map == list(range(len(producer.kinds))) \
        and block.extents == producer.extents \
        and (_plain_nest(state, block) or producer_scheduled) \
        and not any(state.attached_at(lid, block.func) for lid in block.order)
    if block.attach is not None and not (keep and block.attach.target == producer.name):
        # (computed at its producer's loops, it goes with its own loops: the producer's stay)
        raise PrimitiveError(prim, f"block '{block.name}' is computed at block "
                             f"'{block.attach.target}': the producer cannot take over loops it "
                             "shares with another block")
    stages = [x for x in state.blocks.values() if not x.inlined
              and x.origin.get("kind") in ("cache_read", "cache_write")
              and x.origin.get("source") in (block.name, producer.name)]
    _check_not_expanded(state, [block, producer], prim)
    inside_producer = producer.attach is not None and producer.attach.target == block.name
    if inside_producer and any(state.attached_at(lid, producer.func) for lid in producer.order):
        raise PrimitiveError(prim, f"producer '{producer.name}' is computed at a loop of "
                             f"'{block.name}', which disappears, and blocks are computed at "
                             "its own loops")
    if not keep and not inside_producer and producer_scheduled:
        raise PrimitiveError(prim, f"producer '{producer.name}' was already scheduled and "
                             f"takes over the loops of '{block.name}' (which was scheduled, "
                             "or walks its data in another order): inline before scheduling")
    _check_inlinable(state, original, producer, prim)  # before the state changes
    cached = [(x, state.blocks[(x.func, x.origin["source"])].operands[x.origin["operand"]])
              for x in stages]
    if inside_producer:
        # The producer computed its tiles under the consumer's loops: the merged block takes
        # the consumer's nest as it was scheduled; the producer's own loops go.
        for lid in producer.order:
            del state.loops[lid]
        producer.attach, producer.region, producer.order = None, {}, []
    if keep:
        # The consumer's loops go, the producer's (the same domain, in the same order) stay:
        # what was computed at the one is computed at the other.
        block.attach, block.region = None, {}
        same = dict(zip(block.order, producer.order))
        for other in state.blocks.values():
            if other.attach is not None and other.attach.loop in same:
                other.attach.loop = same[other.attach.loop]
    _inline(state, original, producer, [(block, 0)], prim, into_producer=block,
            keep_loops=keep)
    # The merged op's operands are renumbered (the consumer's other inputs, the producer's
    # inputs, the consumer's outputs): the stages of both follow theirs, a cache of the
    # producer's output now caches the merged op's.
    first_output = next(i for i, op in enumerate(producer.operands) if op.is_init)
    for stage, operand in cached:
        index = next((i for i, op in enumerate(producer.operands) if op is operand),
                     first_output)
        stage.origin.update(source=producer.name, operand=index)


def _inline_into_copy(state: KernelState, block: Block, copy: Block) -> None:
    """TVM's compute_inline of a block whose result a cache_write copies out: the block is
    inlined into the copy, which then computes its values (under the copy's name, in the
    copy's place and loops) and the block is gone. Here the copy was a promotion of the
    block's output; the block's op becomes the copy's block (renamed), with the copy's loops,
    taking over the block's loops down to the copy's place as TensorIR keeps them."""
    prim = "compute_inline"
    why = f"block '{block.name}' is copied out by '{copy.name}' (cache_write), into which it is "
    if block.output_map != list(range(len(block.kinds))):
        raise PrimitiveError(prim, why + "inlined: it must write its result over its own "
                             "dimensions in order")
    others = [b.name for lid in block.order for b in state.attached_at(lid, block.func)
              if b is not copy]
    if block.attach is not None or others:
        raise PrimitiveError(prim, why + "inlined: it must be computed on its own, nothing "
                             "but the copy computed at its loops")
    _check_not_expanded(state, [block], prim)
    parts = _loops_taken_over(state, block, copy, stage_ok=True) \
        if copy.attach is not None else []
    for lid in block.order:
        del state.loops[lid]
    if copy.attach is not None:
        _take_over(state, copy, parts)
    copy.origin = {}
    for attr in ("kinds", "extents", "operands", "output_map", "op_name", "window",
                 "reads_by_index"):
        setattr(copy, attr, getattr(block, attr))
    block.inlined, block.order, block.levels = True, [], []
    _reads_renamed(state, block.name, copy.name)
    state.rewrites.append(Rewrite(RENAME, block.func, block.name, (copy.name,)))


def _reads_renamed(state: KernelState, old: str, new: str) -> None:
    """The blocks that read block ``old`` (as an operand or by index) now read ``new``."""
    for other in state.blocks.values():
        for op in other.operands:
            if op.producer == old:
                op.producer = new
        if old in other.reads_by_index:
            other.reads_by_index = other.reads_by_index - {old} | {new}


def _loops_taken_over(state: KernelState, block: Block, other: Block,
                      stage_ok: bool = False, prim: str = "compute_inline"
                      ) -> list[list[tuple[int, int]]]:
    """As TVM removes an inlined block but not its loops: ``other``, computed at a loop of
    ``block``, keeps the loops down to that one as the outer levels of its own dims (their
    parts in ``other``'s dims, outermost first)."""
    why = f"block '{other.name}' is computed at a loop of block '{block.name}', whose loops "
    if block.attach is not None or other.origin.get("kind") and not stage_ok:
        raise PrimitiveError(prim, why + "disappear (it is computed at another "
                             "block, or the other block is a cache stage)")
    chain = block.order[:block.order.index(other.attach.loop) + 1]
    by_target = {t: d for d, t in other.region.items()}
    parts = [[(by_target.get(d), e) for d, e in state.loops[lid].parts] for lid in chain]
    if any(d is None for loop_parts in parts for d, _ in loop_parts):
        raise PrimitiveError(prim, why + f"disappear: one walks data '{other.name}' "
                             "does not index")
    return parts


def _take_over(state: KernelState, other: Block, parts: list[list[tuple[int, int]]]) -> None:
    moved = [state.new_loop(other, loop_parts) for loop_parts in parts]
    for loop in reversed(moved):
        for d, _ in loop.parts:
            other.levels[d].insert(0, loop.id)
    other.order = [loop.id for loop in moved] + other.order
    other.attach = None
    other.region = {}


def _check_not_expanded(state: KernelState, blocks: list[Block], prim: str) -> None:
    for block in blocks:
        if state.expanded(block):
            raise PrimitiveError(prim, f"block '{block.name}' reads reshaped operands "
                                 f"({state.reshape_reason(block)}): nothing fuses through "
                                 f"the reshape; {prim} first")


def _check_uncached(state: KernelState, blocks: list[Block], prim: str) -> None:
    """The inline rewrite renumbers the merged op's operands, which the cache stages of these
    blocks name: inline before caching."""
    for block in blocks:
        if any(other.origin.get("source") == block.name and not other.inlined
               for other in state.blocks.values()):
            raise PrimitiveError(prim, f"an operand of block '{block.name}' is cached "
                                 "(cache_read/cache_write); inline before caching")


def init_fill(state: KernelState, block: Block) -> Block | None:
    """The fill that initialises reduction ``block`` (what decompose_reduction places)."""
    init = state.init_producer(block)
    return init if init is not None and init.op_name == "linalg.fill" else None


def _check_inlinable(state: KernelState, original: ir.Module, producer: Block,
                     prim: str) -> None:
    """On the IR the inline will rewrite: the schedule's rewrites so far applied (a changed
    layout makes a consumer read through expressions, which no inline composes)."""
    reason = check_inlinable(rewritten(original, state.rewrites), producer.func, producer.name)
    if reason:
        raise PrimitiveError(prim, reason)


def _check_inline(block: Block, prim: str) -> None:
    if REDUCTION in block.kinds:
        raise PrimitiveError(prim, f"block '{block.name}' is a reduction")
    if block.origin.get("kind"):
        raise PrimitiveError(prim, f"block '{block.name}' is a cache stage")
    if block.op_name == "linalg.fill":
        raise PrimitiveError(prim, f"block '{block.name}' is a fill; use decompose_reduction")


def _inline(state: KernelState, original: ir.Module, producer: Block,
            consumers: list[tuple[Block, int]], prim: str,
            into_producer: Block | None = None, keep_loops: bool = False) -> None:
    """Update the state for an inline and record the rewrite the materializer applies.

    ``compute_inline``: ``producer`` disappears into its consumers. With ``into_producer``
    (``reverse_compute_inline`` of that consumer): the consumer disappears and ``producer``
    now computes its result over the consumer's domain."""
    _check_inlinable(state, original, producer, prim)
    merged = [op for op in producer.operands if not op.is_init]
    if into_producer is None:
        producer.inlined = True
        for c, _ in consumers:
            # The order of the fused op's operands (inline.py's _fuse_into): the inputs it
            # kept, the producer's inputs, then its outputs.
            c.operands = [op for op in c.operands
                          if op.producer != producer.name and not op.is_init] + merged + \
                [op for op in c.operands if op.is_init]
        state.rewrites.append(Rewrite("compute_inline", producer.func, producer.name))
    else:
        consumer = into_producer
        consumer.inlined = True
        for other in state.blocks.values():  # computed at the consumer's loops, now its
            if other.attach is not None and other.attach.target == consumer.name:
                other.attach.target = producer.name
        producer.operands = [op for op in consumer.operands
                             if op.producer != producer.name and not op.is_init] + merged + \
            [op for op in consumer.operands if op.is_init]
        if keep_loops:
            for lid in consumer.order:
                del state.loops[lid]
        else:
            for attr in ("kinds", "extents", "levels", "order", "output_map"):
                setattr(producer, attr, getattr(consumer, attr))
            for lid in producer.order:
                state.loops[lid].block = producer.name
        _reads_renamed(state, consumer.name, producer.name)
        state.rewrites.append(Rewrite("reverse_compute_inline", consumer.func, consumer.name))


def _dim_correspondence(producer: Block, consumer: Block, operand: int,
                        prim: str) -> dict[int, int]:
    """For each dim of ``producer``'s result, the consumer dim that indexes it."""
    out_map = producer.output_map
    read_map = consumer.operands[operand].map_results
    if None in out_map or sorted(out_map) != list(range(len(out_map))) and \
            len(set(out_map)) != len(out_map):
        raise PrimitiveError(prim, f"block '{producer.name}' does not write its result with a "
                             "permutation map")
    mapping = {}
    for r, p_dim in enumerate(out_map):
        c_dim = read_map[r] if r < len(read_map) else None
        if c_dim is None:
            raise PrimitiveError(prim, f"block '{consumer.name}' reads '{producer.name}' with a "
                                 "non-trivial index expression; not supported")
        mapping[p_dim] = c_dim
    return mapping


def _attach(state: KernelState, b: Block, target: Block, loop: Loop, prim: str) -> None:
    if b is target or b.func != target.func:
        raise PrimitiveError(prim, f"block '{b.name}' cannot be computed in its own nest")
    _follow_expansions(state, b, target, prim)
    inside = [x for x in state.blocks.values()
              if x.attach is not None and x.attach.target == b.name and not x.inlined]
    if inside and (b.attach is not None or not _plain_nest(state, b)):
        # TVM removes the moved block from its loops, not the loops: the blocks computed at
        # them keep them (as the outer levels of their own dims, as compute_inline leaves
        # them), and `b` gets fresh loops. Not where `b` shares loops with another block, a
        # block inside is its init or a cache stage of it (they go with `b`), or the target
        # is inside `b`'s nest.
        if b.attach is not None or any(x.origin or x is state.init_producer(b)
                                       for x in inside) \
                or any(state.loops[i].block == b.name for i in state.enclosing(target)):
            raise PrimitiveError(prim, f"other blocks are computed inside block '{b.name}', "
                                 "whose loops were split, fused or computed elsewhere: compute "
                                 "it at its place first")
        moves = [_loops_taken_over(state, b, x, prim=prim) for x in inside]  # checked first
        for x, parts in zip(inside, moves):
            _take_over(state, x, parts)
    chain = state.enclosing(target)
    if loop.id not in chain:
        raise PrimitiveError(prim, f"loop {state.loop_name(loop)} does not enclose block "
                             f"'{target.name}'")
    outer = chain[:chain.index(loop.id) + 1]
    if loop.block != target.name:
        raise PrimitiveError(prim, "the loop must belong to the target block's own nest")
    if any(state.loops[i].block == b.name for i in outer):
        # The target is itself computed at a loop of `b` (its cache stage, say).
        raise PrimitiveError(prim, f"block '{target.name}' is computed inside the nest of "
                             f"block '{b.name}', which cannot be computed in its own nest")
    if prim == "compute_at":
        reads = [i for i, op in enumerate(target.operands) if op.producer == b.name]
        _check_not_read_by_index(state, b, prim)
        if not reads:
            raise PrimitiveError(prim, f"block '{target.name}' does not read block '{b.name}'")
        others = sorted({c.name for c, _ in state.consumers(b) if c is not target})
        if others:
            # TVM's rule too; MLIR would have to yield the tile out of the loop, which
            # upstream supports only for scf.forall (and asserts on scf.for).
            raise PrimitiveError(prim, f"block '{b.name}' is also read by "
                                 f"{', '.join(repr(o) for o in others)}: every consumer must be "
                                 "under the target loop")
        is_init = any(target.operands[i].is_init for i in reads)
        _below_copied_producer(state, b, target, loop, prim)
        if b.origin.get("kind") == "cache_read" and None in target.operands[reads[0]].map_results:
            # A copy of an operand read through a window (``oh + kh``): the tiled op's operand
            # is promoted, whatever region the tile reads; its own loops are never tiled.
            b.attach = Attach(prim, target.name, loop.id)
            return
        mapping = _dim_correspondence(b, target, reads[0], prim)
        if is_init:
            _spatial_above(state, outer, prim, f"'{b.name}' initialises '{target.name}'")
        init = _moving_init(state, b, prim) if REDUCTION in b.kinds else None
        # The producer covers the region one iteration of `loop` reads.
        _fresh_nest(state, b)
        for p_dim, t_dim in mapping.items():
            _reset_dim(state, b, p_dim, t_dim, inner_extent(state, target, t_dim, loop.id)[0])
        if init is not None:
            # As a TensorIR reduction block carries its init: the fill moves with it, so a
            # tile the loop computes again (a loop over data the reduction does not index)
            # starts from the init again instead of adding to its earlier sums
            # (fuzz_schedules --seed 13 --case 1864, with the init left outside).
            _fresh_nest(state, init)
            for r, p_dim in enumerate(b.output_map):
                t_dim = mapping[p_dim]
                _reset_dim(state, init, init.output_map[r], t_dim,
                           inner_extent(state, target, t_dim, loop.id)[0])
            init.attach = Attach(prim, target.name, loop.id)
    else:
        reads = [i for i, op in enumerate(b.operands) if op.producer == target.name
                 and not op.is_init]
        _check_not_read_by_index(state, target, prim)
        if not reads:
            raise PrimitiveError(prim, f"block '{b.name}' does not read block '{target.name}'")
        _spatial_above(state, outer, prim, f"'{b.name}' needs complete results of "
                       f"'{target.name}'")
        mapping = _dim_correspondence(target, b, reads[0], prim)
        # A cache_write stage is the promotion of the producer's output (cache.py): the
        # producer's other consumers read the written-back result as before.
        others = [] if b.origin.get("kind") == "cache_write" else \
            sorted({c.name for c, _ in state.consumers(target) if c is not b})
        order = [blk.name for blk in state.blocks.values() if blk.func == b.func]
        # The nest moves to where the consumer is, which a block reading the producer may
        # come before: the consumer then moves up first, right after the producer.
        move_up = any(order.index(o) < order.index(b.name) for o in others)
        for lid in outer:
            for d, _ in state.loops[lid].parts:
                if d not in mapping:
                    raise PrimitiveError(prim, f"loop dimension {d} of '{target.name}' does not "
                                         f"index the data '{b.name}' reads")
                if b.kinds[mapping[d]] == REDUCTION and has_cache_write(state, b):
                    raise PrimitiveError(prim, ACCUMULATOR_IN_REDUCTION_LOOP.format(b.name))
                if others and b.kinds[mapping[d]] == REDUCTION:
                    # The tiles of the target are yielded for its other consumers, which
                    # upstream does only out of scf.forall, and a forall cannot step a
                    # reduction (it asserts on scf.for).
                    raise PrimitiveError(prim, f"block '{target.name}' is also read by "
                                         f"{', '.join(repr(o) for o in others)}, and loop "
                                         f"{state.loop_name(state.loops[lid])} steps a "
                                         f"reduction dimension of '{b.name}': MLIR yields "
                                         "the tiles of a producer with other consumers only out "
                                         "of loops without reductions")
        if move_up:
            move_after(state, b, target, prim)
        _fresh_nest(state, b)
        for t_dim, c_dim in mapping.items():
            _reset_dim(state, b, c_dim, t_dim, inner_extent(state, target, t_dim, loop.id)[0])
    b.attach = Attach(prim, target.name, loop.id)


def _follow_expansions(state: KernelState, b: Block, target: Block, prim: str) -> None:
    """``b`` computed at a block whose split levels were reordered (each level a dimension:
    expand.py) has the dims that index those levels expanded the same way, in the same
    order, so that its op reads (or writes) the target's levels directly and fuses as any
    (the reshapes between them fold away); a reduction moving with its init fill takes the
    fill along. TVM regenerates the moved block's loops, so ``b``'s own splits go anyway."""
    if b.expansions:
        _undo_expansions(state, b)
    if state.expanded(b) or any(r.kind == COLLAPSE and r.of_block(target.func, target.name)
                                for r in state.rewrites):
        _check_not_expanded(state, [b, target], prim)
    if not target.expansions or b.origin.get("source") == target.name:
        return  # (a cache stage of the target copies its levels: made after the reshape)
    why = (f"block '{target.name}' reads reshaped operands ({state.reshape_reason(target)}), "
           f"and block '{b.name}' cannot be reshaped the same way")
    if b.origin:  # a cache stage is a promotion, not an op of its own to reshape
        raise PrimitiveError(prim, f"{why}: it is a {b.origin.get('kind', 'made')} stage")
    if any(x.attach is not None and x.attach.target == b.name and not x.inlined
           for x in state.blocks.values()) or any(x.origin.get("source") == b.name
                                                  for x in state.blocks.values()):
        raise PrimitiveError(prim, f"{why}: blocks are computed at it or cache it")
    if made_by_rfactor(state, b):
        raise PrimitiveError(prim, f"{why}: rfactor made it")
    if prim == "compute_at":
        reads = [i for i, op in enumerate(target.operands) if op.producer == b.name]
        if not reads:
            return  # (refused below)
        target_dims = _unexpanded(target.operands[reads[0]].map_results, target.expansions)
        own_dims = list(b.output_map)
    else:
        reads = [i for i, op in enumerate(b.operands) if op.producer == target.name
                 and not op.is_init]
        if not reads:
            return
        target_dims = _unexpanded(target.output_map, target.expansions)
        own_dims = list(b.operands[reads[0]].map_results)
    if target_dims is None or len(target_dims) != len(own_dims):
        raise PrimitiveError(prim, f"{why}: it reads a reshaped dim through an expression")
    along = {t: o for t, o in zip(target_dims, own_dims) if t is not None}
    init = None
    if prim == "compute_at" and REDUCTION in b.kinds:
        fill = state.init_producer(b)
        if fill is not None and fill.attach is None and fill.op_name == "linalg.fill" \
                and not fill.origin and not state.expanded(fill) \
                and state.consumers(fill) == [(b, _init_operand(b))]:
            init = fill
    trial = copy.deepcopy(state)  # every check passes before the state changes
    for s in (trial, state):
        moved = s.blocks[(b.func, b.name)]
        before = list(moved.output_map)
        done = _replay(s, moved, along, target.expansions, prim, why)
        if init is not None and done:
            fill = s.blocks[(init.func, init.name)]
            _replay(s, fill, dict(zip(before, fill.output_map)), done, prim, why)
            fill.followed = b.name


def _undo_expansions(state: KernelState, b: Block) -> None:
    """``b`` is moved, and TVM regenerates the loops of the block it moves: the reordered
    levels of ``b`` go with its other loops, and so does the reshape they made (its expand
    rewrites are dropped), where nothing else was made on top of it — no block computed at
    ``b`` or caching it, no other rewrite of it since, no reshaped init (else it stays
    refused)."""
    first = next((i for i, r in enumerate(state.rewrites)
                  if r.kind == EXPAND and r.of_block(b.func, b.name)), None)
    later = state.rewrites[first:] if first is not None else []
    init = state.init_producer(b)
    if first is None or b.unexpanded is None or len(b.unexpanded["operands"]) != len(b.operands) \
            or any(not (r.kind == EXPAND and r.of_block(b.func, b.name))
                   and (r.target == b.name or b.name in r.args) for r in later) \
            or any(r.kind == COLLAPSE and r.of_block(b.func, b.name) for r in state.rewrites) \
            or (init is not None and state.expanded(init)) \
            or any(not x.inlined and x is not b and (
                (x.attach is not None and x.attach.target == b.name)
                or x.origin.get("source") == b.name) for x in state.blocks.values()):
        return
    saved = b.unexpanded
    b.kinds, b.extents = list(saved["kinds"]), list(saved["extents"])
    b.output_map, b.op_name = list(saved["output_map"]), saved["op_name"]
    b.dim_names = dict(saved["dim_names"])
    for operand, (results, terms) in zip(b.operands, saved["operands"]):
        operand.map_results, operand.terms = list(results), list(terms)
    b.expansions, b.unexpanded = [], None
    state.rewrites = [r for r in state.rewrites
                      if not (r.kind == EXPAND and r.of_block(b.func, b.name))]
    _fresh_nest(state, b, always=True)


def _unexpanded(dims: list[int | None],
                expansions: list[tuple[int, tuple[int, ...], tuple[int, ...]]]
                ) -> list[int | None] | None:
    """``dims`` (an operand's indices) as they were before ``expansions``: each run of level
    dims is its dimension again (None when a level is indexed otherwise)."""
    out = list(dims)
    for dim, _, level_dims in reversed(expansions):
        run = list(level_dims)
        at = next((p for p in range(len(out) - len(run) + 1) if out[p:p + len(run)] == run),
                  None)
        if at is not None:
            out[at:at + len(run)] = [dim]
        if any(d in run[1:] for d in out):
            return None
    return out


def _replay(state: KernelState, b: Block, along: dict[int, int | None],
            expansions: list[tuple[int, tuple[int, ...], tuple[int, ...]]], prim: str,
            why: str) -> list[tuple[int, tuple[int, ...], tuple[int, ...]]]:
    """Expand ``b`` as ``expansions`` expanded another block, whose dims ``along`` maps to
    ``b``'s; returns ``b``'s expansions made."""
    along = dict(along)
    done = []
    for dim, extents, level_dims in expansions:
        if dim not in along:
            continue  # (a dim of the other block that b does not index: its reduction)
        own = along[dim]
        if own is None:
            raise PrimitiveError(prim, f"{why}: it indexes the dim through an expression")
        extent = b.extents[own]
        if extent is None or math.prod(extents) < extent:
            raise PrimitiveError(prim, f"{why}: its dim has another extent ({extent})")
        if math.prod(extents) > extent and (b.reads_by_index or not all(
                form is not None and (own not in form[0] or form == ({own: 1}, 0))
                for operand in b.operands for form in operand.terms)):
            raise PrimitiveError(prim, f"{why}: the split does not divide its dim, which it "
                                 "reads through an expression or at its loop indices")
        if not done:
            _fresh_nest(state, b, always=True)
        loop = state.loops[b.levels[own][0]]
        loop.parts = [(own, extents[0])]
        levels = [loop] + [state.new_loop(b, [(own, e)]) for e in extents[1:]]
        b.levels[own] = [lv.id for lv in levels]
        at = b.order.index(loop.id)
        b.order[at + 1:at + 1] = [lv.id for lv in levels[1:]]
        first_new = len(b.kinds)
        _expand_dim(state, b, own)
        own_levels = (own, *range(first_new, first_new + len(extents) - 1))
        done.append((own, extents, own_levels))
        along.update(zip(level_dims, own_levels))
    return done


def _below_copied_producer(state: KernelState, b: Block, target: Block, loop: Loop,
                           prim: str) -> None:
    """A cache_read stage copies what its producer computes: where the producer is computed
    at a loop of the same block, the copy goes at or inside that loop."""
    source = b.operands[0].producer if b.origin.get("kind") == "cache_read" else None
    producer = state.blocks.get((b.func, source)) if source else None
    if producer is None or producer.attach is None or producer.attach.target != target.name:
        return
    chain = state.enclosing(target)
    if producer.attach.loop in chain and chain.index(loop.id) < chain.index(producer.attach.loop):
        where = state.loop_name(state.loops[producer.attach.loop])
        raise PrimitiveError(prim, f"block '{source}', which '{b.name}' copies, is computed at "
                             f"loop {where} of '{target.name}': the copy goes at or inside it")


def _moving_init(state: KernelState, b: Block, prim: str) -> Block | None:
    """The init of reduction ``b`` that moves with it when it is computed at a loop (None when
    it is already placed inside ``b``'s nest by decompose_reduction)."""
    init = state.init_producer(b)
    if init is None:
        raise PrimitiveError(prim, f"reduction '{b.name}' accumulates into data it does not "
                             "initialise: a tile computed again would add to its earlier sums")
    if init.attach is not None and init.attach.target == b.name:
        return None
    if not (init.op_name == "linalg.fill" or _expanded_fill(init, b)) or init.attach is not None \
            or state.consumers(init) != [(b, _init_operand(b))]:
        raise PrimitiveError(prim, f"the init of reduction '{b.name}' ('{init.name}') is not a "
                             "fill of its own, placed at the root: it cannot move with it")
    return init


def _expanded_fill(init: Block, b: Block) -> bool:
    """A fill that followed the expansion of its reduction ``b`` (a generic now, writing a
    scalar; levels it reordered itself are not ``b``'s)."""
    return bool(init.expansions) and init.followed == b.name and all(
        op.is_init or not op.map_results for op in init.operands)


def _init_operand(b: Block) -> int:
    return next(i for i, op in enumerate(b.operands) if op.is_init)


def _spatial_above(state: KernelState, outer: list[int], prim: str, why: str) -> None:
    for lid in outer:
        loop = state.loops[lid]
        if state.loop_kind(loop) != SPATIAL:
            raise PrimitiveError(prim, f"loop {state.loop_name(loop)} at or above the target "
                                 f"loop is a reduction loop, but {why}")


def _reset_dim(state: KernelState, b: Block, dim: int, target_dim: int, extent: int) -> None:
    """Give ``b``'s dimension ``dim`` one loop of ``extent``: the tile of the target's
    ``target_dim`` at the loop ``b`` is computed at (partial where that tile is)."""
    state.loops[b.levels[dim][0]].parts = [(dim, extent)]
    b.region[dim] = target_dim


def _fresh_nest(state: KernelState, b: Block, always: bool = False) -> None:
    """Give ``b`` one loop per dimension again, as TVM's compute_at regenerates the loops of
    the block it moves (its splits, fusions and annotations are dropped; a block computed
    elsewhere before moves)."""
    if b.attach is None and _plain_nest(state, b) and not always:
        return
    b.region = {}
    for lid in b.order:
        del state.loops[lid]
    b.levels, b.order = [], []
    for dim, extent in enumerate(b.extents):
        loop = state.new_loop(b, [(dim, extent if extent is not None else -1)])
        b.levels.append([loop.id])
        b.order.append(loop.id)


def _plain_nest(state: KernelState, b: Block) -> bool:
    """Whether ``b`` has one loop per dimension, neither split nor fused."""
    return all(len(levels) == 1 for levels in b.levels) and \
        all(len(state.loops[lid].parts) == 1 for lid in b.order)


# -- fuzzing ----------------------------------------------------------------------------------

@COMPUTE_AT.fuzzed_by(1)
def fuzz_compute_at(sch, rng: random.Random) -> bool:
    # Not the fills that initialise reductions: in TensorIR the init is part of the reduction
    # block, and decompose_reduction places it.
    # Likely legal: a producer with one consumer (all its consumers must be under the loop),
    # which is computed at no other block (its loops would be shared ones).
    likely = rng.random() < LIKELY
    producer, rv = pick_block(sch, rng, lambda b: b.attach is None and b.op_name != "linalg.fill"
                               and bool(consumer_blocks(sch, b)) and (not likely or (
                                   len(consumer_blocks(sch, b)) == 1
                                   and consumer_blocks(sch, b)[0].attach is None)))
    if producer is None:
        return False
    consumer = rng.choice(consumer_blocks(sch, producer))
    loops = sch.get_loops(sch.get_block(consumer.name))
    if not loops:
        return False
    sch.compute_at(rv, mostly(rng, own_loops(sch, sch.get_block(consumer.name)), loops))
    return True


@REVERSE_COMPUTE_AT.fuzzed_by(1)
def fuzz_reverse_compute_at(sch, rng: random.Random) -> bool:
    consumer, rv = pick_block(sch, rng, lambda b: b.attach is None and any(
        op.producer and not op.is_init for op in b.operands))
    if consumer is None:
        return False
    producer = rng.choice([op.producer for op in consumer.operands
                           if op.producer and not op.is_init])
    loops = sch.get_loops(sch.get_block(producer))
    if not loops:
        return False
    # Likely legal: loops above the producer's reductions, of a producer computed at no
    # other block (its loops would be shared ones), for a consumer whose other producers do
    # not read the producer (TVM's rule: they must be complete before the loop).
    target = next(b for b in sch.state.blocks.values() if b.name == producer)
    others = [sch.state.blocks[(consumer.func, op.producer)] for op in consumer.operands
              if op.producer and op.producer != producer]
    waits = any(op.producer == producer for other in others for op in other.operands)
    likely = spatial_prefix(sch, own_loops(sch, sch.get_block(producer))) \
        if target.attach is None and not waits else []
    sch.reverse_compute_at(rv, mostly(rng, likely, loops))
    return True


@COMPUTE_INLINE.fuzzed_by(1)
def fuzz_compute_inline(sch, rng: random.Random) -> bool:
    return on_block(sch, rng, sch.compute_inline, lambda b: "reduction" not in b.kinds
                     and not b.origin and b.op_name != "linalg.fill" and bool(consumer_blocks(sch, b)))


@REVERSE_COMPUTE_INLINE.fuzzed_by(1)
def fuzz_reverse_compute_inline(sch, rng: random.Random) -> bool:
    def producers(b) -> set[str]:
        return {op.producer for op in b.operands if op.producer and not op.is_init}

    def elementwise(b) -> bool:
        return "reduction" not in b.kinds and not b.origin and b.op_name != "linalg.fill"

    def after_elementwise(b) -> bool:
        names = producers(b)
        return len(names) == 1 and elementwise(sch.state.blocks[(b.func, names.pop())])

    likely = rng.random() < LIKELY
    return on_block(sch, rng, sch.reverse_compute_inline, lambda b: elementwise(b)
                     and bool(producers(b)) and (after_elementwise(b) or not likely))


@DECOMPOSE_REDUCTION.fuzzed_by(1)
def fuzz_decompose_reduction(sch, rng: random.Random) -> bool:
    block, rv = pick_block(sch, rng, lambda b: "reduction" in b.kinds and not b.origin)
    loops = own_loops(sch, rv) if rv is not None else []
    if not loops:
        return False
    # Legal where every loop above is spatial (the init then runs once per output tile) and
    # none of them vectorized, once per block (the init is then placed).
    init = init_fill(sch.state, block)
    placed = init is None or init.attach is not None and init.attach != block.attach
    prefix = loops[:len(spatial_prefix(sch, loops)) + 1]
    likely = [] if placed else [
        rv for i, rv in enumerate(prefix)
        if not any(sch.get(above).annotations.get("vectorize") for above in prefix[:i])]
    sch.decompose_reduction(rv, mostly(rng, likely, loops))
    return True
