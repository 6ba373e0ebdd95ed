"""Dataflow lookups between blocks (TVM's ``get_producers`` / ``get_consumers``): which live
blocks of the same function write what a block reads, and which read what it writes."""

from __future__ import annotations

from .state import Block, KernelState


def producers(state: KernelState, block: Block) -> list[Block]:
    """The live blocks whose results ``block`` reads, in operand order; a reduction's init
    block (the fill of its output) is one of them."""
    out: list[Block] = []
    for operand in block.operands:
        producer = state.blocks.get((block.func, operand.producer)) if operand.producer else None
        if producer is not None and not producer.inlined and producer not in out:
            out.append(producer)
    return out


def consumers(state: KernelState, block: Block) -> list[Block]:
    """The live blocks that read ``block``'s result, in the order the kernel states them."""
    out: list[Block] = []
    for consumer, _ in state.consumers(block):
        if consumer not in out:
            out.append(consumer)
    return out
