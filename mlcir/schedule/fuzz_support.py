"""What the fuzz samplers of the primitives share (each sampler lives in its primitive's home
module, registered on its entry of :data:`.instruction.KINDS`; the schedule fuzzer,
``mlcir.testing.fuzz_schedules``, draws from that table).

A sampler ``(sch, rng) -> bool`` returns False when it has nothing to apply to, raises
:class:`NothingLikely` when no argument that can be legal was found, and lets the primitive's
``ScheduleError`` (a refusal) through. Whether arguments are *legal* is the schedule's business:
samplers usually draw among arguments that can be legal (``LIKELY``), sometimes anything, so
the legality checks are exercised.
"""

from __future__ import annotations

import random
from typing import Any, Callable

LIKELY = 0.9  # how often a primitive's arguments are drawn among those that can be legal


class NothingLikely(Exception):
    """A primitive found no argument that can be legal this time: it applies nothing."""


def own_loops(sch, block_rv) -> list[Any]:
    """The loops of the block's own nest (not the shared loops it is computed under)."""
    block = next(b for (_, name), b in sch.state.blocks.items() if name == sch.get(block_rv))
    loops = sch.get_loops(block_rv)
    return [rv for rv, lid in zip(loops, sch.state.enclosing(block)) if lid in block.order]


def pick_block(sch, rng: random.Random, want: Callable[[Any], bool] = lambda _block: True):
    """A live block that ``want`` accepts and a handle to it, or ``(None, None)``."""
    candidates = [b for b in sch.state.blocks.values() if not b.inlined and want(b)]
    if not candidates:
        return None, None
    block = rng.choice(candidates)
    return block, sch.get_block(block.name, func_name=block.func)


def some_block_loops(sch, rng: random.Random) -> list:
    """The own loops of a random block that is not a cache stage (none when there is no
    such block)."""
    _, block = pick_block(sch, rng, lambda b: not b.origin)
    return own_loops(sch, block) if block is not None else []


def on_loops(sch, rng: random.Random, apply: Callable[[list[Any]], Any]) -> bool:
    """``apply`` to the own loops of a random block that is not a cache stage, if it has any."""
    loops = some_block_loops(sch, rng)
    if loops:
        apply(loops)
    return bool(loops)


def on_block(sch, rng: random.Random, apply: Callable[[Any], Any],
              want: Callable[[Any], bool] = lambda _block: True) -> bool:
    """``apply`` to a handle of a random live block that ``want`` accepts, if there is one."""
    _, rv = pick_block(sch, rng, want)
    if rv is not None:
        apply(rv)
    return rv is not None


def mostly(rng: random.Random, likely: list[Any], anything: list[Any]) -> Any:
    """Usually one of ``likely`` (arguments that can be legal, as TVM's sampling of compute
    locations draws only those), sometimes anything, so the legality checks are exercised."""
    if rng.random() < LIKELY:
        if not likely:
            raise NothingLikely
        return rng.choice(likely)
    return rng.choice(anything)


def spatial_prefix(sch, loops: list[Any]) -> list[Any]:
    """The loops above the first reduction loop."""
    out = []
    for rv in loops:
        if sch.get(rv).kind != "spatial":
            break
        out.append(rv)
    return out


def consumer_blocks(sch, block) -> list[Any]:
    return [c for c, _ in sch.state.consumers(block)]


def intermediate(sch, rng: random.Random) -> Callable[[Any], bool]:
    """Likely legal for the memory primitives: a block whose result is not the function's
    (whose memory and layout are the caller's), here one that other blocks (not only its
    cache stage) read."""
    likely = rng.random() < LIKELY
    return lambda b: not likely or any(not c.origin for c in consumer_blocks(sch, b))


def some_block_or_loop(sch, rng: random.Random) -> Any:
    """A handle to a random live block or to one of its loops, or None (no block)."""
    _, rv = pick_block(sch, rng)
    if rv is None:
        return None
    loops = sch.get_loops(rv)
    return rng.choice(loops) if loops and rng.random() < 0.7 else rv
