"""Rules shared by the design spaces of every target: which blocks a kernel has, which are
elementwise, inlining elementwise producers into their consumers, and trying a primitive that
may not apply. Each backend builds its space from these (mlcir/targets/cpu/space.py,
mlcir/targets/cuda/space.py); neither space imports the other."""

from __future__ import annotations

from typing import Callable

from mlcir.schedule import Schedule, ScheduleError
from mlcir.schedule.state import SPATIAL, Block

SpaceFn = Callable[[Schedule], None]
"""A design space: a stochastic schedule function, applied to a fresh :class:`Schedule`."""


def elementwise(block: Block) -> bool:
    """A block with only spatial dims, not an init and not made by a schedule primitive."""
    return all(k == SPATIAL for k in block.kinds) and block.op_name != "linalg.fill" \
        and not block.origin


def blocks(sch: Schedule, func: str) -> list[Block]:
    """The blocks of ``func`` not inlined yet, in program order."""
    return [b for (f, _), b in sch.state.blocks.items() if f == func and not b.inlined]


def consumers(sch: Schedule, block: Block) -> list[Block]:
    """The blocks that read what ``block`` writes."""
    return [b for b in blocks(sch, block.func)
            if any(op.producer == block.name and not op.is_init for op in b.operands)]


def attempt(fn: Callable[..., object], *args: object) -> bool:
    """Apply ``fn(*args)`` if the schedule takes it; whether it did."""
    try:
        fn(*args)
        return True
    except ScheduleError:
        return False


def inline_elementwise(sch: Schedule, func: str) -> None:
    """Inline each elementwise block of ``func`` whose consumers are all elementwise or a
    ``linalg.generic`` (a reduction such as softmax's sum), not a named contraction."""
    for block in reversed(blocks(sch, func)):
        readers = consumers(sch, block)
        if elementwise(block) and readers and all(
                elementwise(c) or c.op_name == "linalg.generic" for c in readers):
            attempt(sch.compute_inline, sch.get_block(block.name, func))
