"""Sampling primitives: ``sample_perfect_tile``, ``sample_partitioned_tile`` and
``sample_categorical`` (TVM's sampling).

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
from .fuzz_support import on_loops, some_block_loops
from .instruction import SAMPLE_CATEGORICAL, SAMPLE_PARTITIONED_TILE, SAMPLE_PERFECT_TILE


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
    dynamic = loop.extent < 1
    if decision is None:
        if dynamic:
            raise PrimitiveError(prim, f"loop {state.loop_name(loop)} has a dynamic extent: give "
                                 "a decision (its inner factors are kept, the outer one is the "
                                 "run time's)")
        choices = perfect_tilings(loop.extent, n, max_innermost_factor)
        if not choices:
            raise PrimitiveError(prim, f"no perfect tiling of {loop.extent} into {n} factors "
                                 f"with an innermost factor <= {max_innermost_factor}")
        return list(rng.choice(choices))
    # A dynamic loop takes a decision planned at a representative size: its outer factor
    # stands for the run time's (``split`` infers it).
    values = [int(v) for v in decision]
    if len(values) != n or any(f < 1 for f in values) or \
            not dynamic and math.prod(values) != loop.extent:
        raise PrimitiveError(prim, f"decision {list(decision)} is not a tiling of loop "
                             f"{state.loop_name(loop)} (extent {loop.extent}) into {n} factors")
    if max_innermost_factor > 0 and values[-1] > max_innermost_factor:
        raise PrimitiveError(prim, f"decision {values}: innermost factor {values[-1]} exceeds "
                             f"max_innermost_factor={max_innermost_factor}")
    return values


def sample_partitioned_tile(state: KernelState, rng: random.Random, loop: Loop, n: int,
                            partition_pos: int, innerpart_factor: int, max_innermost_factor: int,
                            decision: Sequence[int] | None) -> list[int]:
    """``n`` factors for a split that need not divide (TVM's ``sample_partitioned_tile``): the
    inner part ``factors[partition_pos:]`` multiplies to any ``P <= extent`` that is a multiple
    of ``innerpart_factor`` (innermost at most ``max_innermost_factor``), the outer part is a
    perfect tiling of ``ceil(extent / P)`` — the last tile of the inner part is partial when
    ``P`` does not divide the extent. ``decision`` is checked, or drawn at random."""
    prim = "sample_partitioned_tile"
    if n < 2 or not 1 <= partition_pos < n:
        raise PrimitiveError(prim, f"needs n >= 2 and 1 <= partition_pos < n, got n={n}, "
                             f"partition_pos={partition_pos}")
    if innerpart_factor < 1:
        raise PrimitiveError(prim, f"innerpart_factor must be >= 1, got {innerpart_factor}")
    extent = loop.extent
    if extent < 1:
        raise PrimitiveError(prim, f"loop {state.loop_name(loop)} has a dynamic extent")
    cap = max_innermost_factor if max_innermost_factor > 0 else extent
    if decision is None:
        inner = _draw_inner_part(rng, extent, n - partition_pos, innerpart_factor, cap)
        if inner is None:
            raise PrimitiveError(prim, f"no inner part of loop {state.loop_name(loop)} (extent "
                                 f"{extent}) is a multiple of {innerpart_factor} with an "
                                 f"innermost factor <= {cap}")
        outer = rng.choice(perfect_tilings(-(-extent // math.prod(inner)), partition_pos, 0))
        return [*outer, *inner]
    values = [int(v) for v in decision]
    inner_product = math.prod(values[partition_pos:]) if len(values) == n else 0
    if len(values) != n or any(f < 1 for f in values) or inner_product > extent \
            or inner_product % innerpart_factor or values[-1] > cap \
            or math.prod(values[:partition_pos]) != -(-extent // inner_product):
        raise PrimitiveError(prim, f"decision {list(decision)} is not a partitioned tiling of "
                             f"loop {state.loop_name(loop)} (extent {extent}) into {n} factors "
                             f"at position {partition_pos} (inner part a multiple of "
                             f"{innerpart_factor}, innermost <= {cap})")
    return values


def _draw_inner_part(rng: random.Random, extent: int, n: int, multiple: int,
                     cap: int) -> list[int] | None:
    """``n`` factors, innermost at most ``cap``, whose product is at most ``extent`` and a
    multiple of ``multiple`` (None if there are none)."""
    for _ in range(64):
        factors = [rng.randint(1, min(cap, extent))]
        for _ in range(n - 1):
            factors.insert(0, rng.randint(1, extent // math.prod(factors)))
        if math.prod(factors) % multiple == 0:
            return factors
    # Rarely drawn: ``multiple`` itself, its largest divisor within the cap innermost.
    innermost = max(f for f in divisors(multiple) if f <= cap)
    if multiple > extent or (n == 1 and innermost != multiple):
        return None
    return [1] * (n - 2) + [multiple // innermost, innermost] if n > 1 else [multiple]


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


# -- fuzzing ----------------------------------------------------------------------------------

def _sampled_split(sch, rng: random.Random, perfect: bool) -> bool:
    loops = some_block_loops(sch, rng)
    if not loops:
        return False
    loop = rng.choice(loops)
    n = rng.choice([2, 3])
    if perfect:
        factors = sch.sample_perfect_tile(loop, n=n, max_innermost_factor=rng.choice([4, 16]))
    else:
        factors = sch.sample_partitioned_tile(loop, n=n, partition_pos=rng.randint(1, n - 1),
                                              max_innermost_factor=rng.choice([4, 16]))
    sch.split(loop, factors)
    return True


@SAMPLE_PERFECT_TILE.fuzzed_by(1)
def fuzz_sample_perfect_tile(sch, rng: random.Random) -> bool:
    return _sampled_split(sch, rng, perfect=True)


@SAMPLE_PARTITIONED_TILE.fuzzed_by(1)
def fuzz_sample_partitioned_tile(sch, rng: random.Random) -> bool:
    return _sampled_split(sch, rng, perfect=False)


@SAMPLE_CATEGORICAL.fuzzed_by(0.5)
def fuzz_sample_categorical(sch, rng: random.Random) -> bool:
    # A sampled inner split factor, as MetaSchedule samples unroll depths and tile sizes.
    def apply(loops: list[Any]) -> None:
        factor = sch.sample_categorical([1, 2, 4, 8], [0.25, 0.25, 0.25, 0.25])
        sch.split(rng.choice(loops), [None, factor])
    return on_loops(sch, rng, apply)
