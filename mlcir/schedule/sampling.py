"""Sampling primitives: ``sample_perfect_tile`` and ``sample_categorical`` (TVM's sampling).

Decisions are drawn from a ``random.Random`` (so a schedule's seed fixes every one) or given,
and then checked; the space of a sampled tiling also gives the knobs of the transform script.
"""

from __future__ import annotations

import math
import random
from functools import lru_cache
from typing import Any, Sequence

from .errors import PrimitiveError
from .state import KernelState, Loop, TileKnob


def divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


@lru_cache(maxsize=4096)
def perfect_tilings(extent: int, n: int, max_innermost_factor: int) -> tuple[tuple[int, ...], ...]:
    """Every way to write ``extent`` as an ordered product of ``n`` factors whose last factor
    is at most ``max_innermost_factor`` (MetaSchedule's ``sample_perfect_tile`` space)."""
    if n == 1:
        return ((extent,),) if extent <= max_innermost_factor or max_innermost_factor <= 0 else ()
    out = []
    for first in divisors(extent):
        for rest in perfect_tilings(extent // first, n - 1, max_innermost_factor):
            out.append((first, *rest))
    return tuple(out)


def sample_perfect_tile(state: KernelState, rng: random.Random, loop: Loop, n: int,
                        max_innermost_factor: int, decision: Sequence[int] | None) -> list[int]:
    """``n`` factors whose product is ``loop``'s extent (innermost at most
    ``max_innermost_factor``): ``decision`` checked, or a uniformly random tiling."""
    prim = "sample_perfect_tile"
    if n < 1:
        raise PrimitiveError(prim, f"n must be >= 1, got {n}")
    if loop.extent < 1:
        raise PrimitiveError(prim, f"loop {state.loop_name(loop)} has a dynamic extent")
    if decision is None:
        choices = perfect_tilings(loop.extent, n, max_innermost_factor)
        if not choices:
            raise PrimitiveError(prim, f"no perfect tiling of {loop.extent} into {n} factors "
                                 f"with an innermost factor <= {max_innermost_factor}")
        return list(rng.choice(choices))
    values = [int(v) for v in decision]
    if len(values) != n or any(f < 1 for f in values) or math.prod(values) != loop.extent:
        raise PrimitiveError(prim, f"decision {list(decision)} is not a tiling of loop "
                             f"{state.loop_name(loop)} (extent {loop.extent}) into {n} factors")
    if max_innermost_factor > 0 and values[-1] > max_innermost_factor:
        raise PrimitiveError(prim, f"decision {values}: innermost factor {values[-1]} exceeds "
                             f"max_innermost_factor={max_innermost_factor}")
    return values


def tile_knobs(decision: Sequence[int], max_innermost_factor: int,
               levels: int) -> list[TileKnob]:
    """The knobs of the outer ``levels - 1`` loops of a split by a sampled tiling: each loop's
    tile size is the product of the factors inside it."""
    tilings = perfect_tilings(math.prod(decision), len(decision), max_innermost_factor)
    return [TileKnob(tuple(sorted({math.prod(t[i + 1:]) for t in tilings})),
                     math.prod(decision[i + 1:])) for i in range(levels - 1)]


def sample_categorical(rng: random.Random, candidates: Sequence[Any], probs: Sequence[float],
                       decision: int | None) -> int:
    """The index of one of ``candidates``: ``decision`` checked, or drawn with ``probs``."""
    prim = "sample_categorical"
    if len(candidates) != len(probs) or not candidates:
        raise PrimitiveError(prim, "candidates and probs must be non-empty and of the same "
                             "length")
    if decision is not None:
        if not isinstance(decision, int) or not 0 <= decision < len(candidates):
            raise PrimitiveError(prim, f"decision {decision!r} is not an index into "
                                 f"{len(candidates)} candidates")
        return decision
    total = sum(probs)
    if total <= 0 or any(p < 0 for p in probs):
        raise PrimitiveError(prim, f"probabilities must be non-negative with a positive sum, "
                             f"got {list(probs)}")
    x = rng.random() * total
    acc = 0.0
    for i, p in enumerate(probs):
        acc += p
        if x < acc:
            return i
    return len(probs) - 1
