"""Timing compiled functions the way TVM's ``time_evaluator`` does.

``evaluator = time_evaluator(fn, number=10, repeat=5, warmup=2)`` returns a callable; calling
it with the function's arguments (:func:`time_calls` for a no-argument callable) runs ``warmup`` untimed calls, then ``repeat`` measurements,
each the mean of ``number`` back-to-back calls (``number`` is grown until one measurement takes
at least ``min_repeat_ms``). Arguments are checked and packed once, outside the timed region.
``warmup_s`` keeps calling, untimed, until that many seconds have passed since the warm-up
began (:data:`PARALLEL_WARMUP_S` for code on several threads).
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass
from typing import Any, Callable

from mlcir.errors import RuntimeInputError


#: Untimed calls, in seconds, before timing code that runs on several threads. After an idle
#: while (its OpenMP workers asleep, or the cores busy building), two-thread calls ran slow
#: for a while, and one warm-up call was not enough (docs/measurements/runtime.md#warm-up).
PARALLEL_WARMUP_S = 0.05


@dataclass(frozen=True)
class TimingResult:
    """Seconds per call: one mean per repeat, and their summary."""

    results: tuple[float, ...]
    number: int

    @property
    def mean(self) -> float:
        return statistics.fmean(self.results)

    @property
    def median(self) -> float:
        return statistics.median(self.results)

    @property
    def min(self) -> float:
        return min(self.results)

    @property
    def max(self) -> float:
        return max(self.results)

    @property
    def std(self) -> float:
        return statistics.pstdev(self.results) if len(self.results) > 1 else 0.0

    def __str__(self) -> str:
        ms = 1e3
        return (f"Execution time summary:\n {'mean (ms)':>10} {'median (ms)':>12} "
                f"{'max (ms)':>10} {'min (ms)':>10} {'std (ms)':>10}\n"
                f" {self.mean * ms:>10.4f} {self.median * ms:>12.4f} {self.max * ms:>10.4f} "
                f"{self.min * ms:>10.4f} {self.std * ms:>10.4f}")


def time_calls(call: Callable[[], None], *, number: int = 10, repeat: int = 3, warmup: int = 1,
            min_repeat_ms: float = 0.0, warmup_s: float = 0.0) -> TimingResult:
    """Time a no-argument callable (see the module docstring)."""
    if number < 1 or repeat < 1 or warmup < 0 or warmup_s < 0:
        raise RuntimeInputError(f"number and repeat must be >= 1, warmup and warmup_s >= 0, "
                                f"got number={number}, repeat={repeat}, warmup={warmup}, "
                                f"warmup_s={warmup_s}")
    start = time.perf_counter()
    for _ in range(warmup):
        call()
    while time.perf_counter() - start < warmup_s:
        call()
    if min_repeat_ms > 0:
        while True:
            start = time.perf_counter()
            for _ in range(number):
                call()
            elapsed_ms = (time.perf_counter() - start) * 1e3
            if elapsed_ms >= min_repeat_ms:
                break
            number = max(number * 2, int(number * min_repeat_ms / max(elapsed_ms, 1e-3) * 1.1))
    results = []
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(number):
            call()
        results.append((time.perf_counter() - start) / number)
    return TimingResult(tuple(results), number)


def time_evaluator(function: Any, *, number: int = 10, repeat: int = 3, warmup: int = 1,
                   min_repeat_ms: float = 0.0) -> Callable[..., TimingResult]:
    """A callable that times ``function`` (an :class:`~mlcir.runtime.Function` or any Python
    callable) on the arguments it is given."""

    def evaluate(*args: Any) -> TimingResult:
        if hasattr(function, "prepare"):
            call, _ = function.prepare(*args)
        else:
            def call() -> None:
                function(*args)
        return time_calls(call, number=number, repeat=repeat, warmup=warmup,
                       min_repeat_ms=min_repeat_ms)

    return evaluate
