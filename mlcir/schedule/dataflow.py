"""Dataflow lookups between blocks (TVM's ``get_producers`` / ``get_consumers``): which live
blocks of the same function write what a block reads, and which read what it writes."""

from __future__ import annotations

import random

from .state import Block, KernelState
from .fuzz_support import on_block, pick_block, some_block_or_loop
from .instruction import GET_BLOCK, GET_CHILD_BLOCKS, GET_CONSUMERS, GET_LOOPS, GET_PRODUCERS


def producers(state: KernelState, block: Block) -> list[Block]:
    """The live blocks whose results ``block`` reads, in operand order; a reduction's init
    block (the fill of its output) is one of them; then those it reads by ``tensor.extract``
    (a tensor whose layout ``transform_layout`` changed)."""
    out: list[Block] = []
    names = [op.producer for op in block.operands if op.producer] + sorted(block.reads_by_index)
    for name in names:
        producer = state.blocks.get((block.func, name))
        if producer is not None and not producer.inlined and producer not in out:
            out.append(producer)
    return out


def consumers(state: KernelState, block: Block) -> list[Block]:
    """The live blocks that read ``block``'s result, in the order the kernel states them."""
    readers = [c for c, _ in state.consumers(block)] + [
        b for b in state.blocks.values()
        if b.func == block.func and not b.inlined and block.name in b.reads_by_index]
    out: list[Block] = []
    for consumer in readers:
        if not any(consumer is b for b in out):
            out.append(consumer)
    return out


# -- fuzzing ----------------------------------------------------------------------------------

@GET_BLOCK.fuzzed_by(0.25)
def fuzz_get_block(sch, rng: random.Random) -> bool:
    return pick_block(sch, rng)[1] is not None


@GET_CHILD_BLOCKS.fuzzed_by(0.25)
def fuzz_get_child_blocks(sch, rng: random.Random) -> bool:
    target = some_block_or_loop(sch, rng)
    if target is not None:
        sch.get_child_blocks(target)
    return target is not None


for _lookup in (GET_LOOPS, GET_PRODUCERS, GET_CONSUMERS):  # of a random block
    _lookup.fuzzed_by(0.25)(
        lambda sch, rng, name=_lookup.name: on_block(sch, rng, getattr(sch, name)))
