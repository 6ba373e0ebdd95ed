"""Sampling for stochastic schedules: perfect tilings and categorical choices.

Pure functions of a ``random.Random``, so a schedule's seed fixes every decision.
"""

from __future__ import annotations

import math
import random
from functools import lru_cache
from typing import Sequence


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


def sample_perfect_tile(rng: random.Random, extent: int, n: int, max_innermost_factor: int) -> list[int]:
    """A uniformly random tiling among :func:`perfect_tilings` (innermost factor capped)."""
    choices = perfect_tilings(extent, n, max_innermost_factor)
    if not choices:
        raise ValueError(f"no perfect tiling of {extent} into {n} factors with an innermost "
                         f"factor <= {max_innermost_factor}")
    return list(rng.choice(choices))


def sample_categorical(rng: random.Random, probs: Sequence[float]) -> int:
    """An index drawn with the given probabilities."""
    total = sum(probs)
    if total <= 0 or any(p < 0 for p in probs):
        raise ValueError(f"probabilities must be non-negative with a positive sum, got {list(probs)}")
    x = rng.random() * total
    acc = 0.0
    for i, p in enumerate(probs):
        acc += p
        if x < acc:
            return i
    return len(probs) - 1


def is_perfect(extent: int, factors: Sequence[int]) -> bool:
    return all(f >= 1 for f in factors) and math.prod(factors) == extent
