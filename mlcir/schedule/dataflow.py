"""Dataflow lookups between blocks (TVM's ``get_producers`` / ``get_consumers``): which live
blocks of the same function write what a block reads, and which read what it writes."""

from __future__ import annotations

from .state import Block, KernelState


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
