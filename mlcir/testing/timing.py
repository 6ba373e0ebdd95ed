"""Timing for the benchmarks and examples: what a user's call costs, next to its baseline.

The rules (``shared`` MLIR notes, "Benchmarking against numpy and onnxruntime"): time what a
user sees, ``ex.main(x)`` against ``session.run(None, feeds)`` or a full numpy call; report
compiled-code time (a prepared call: arguments checked and packed once, outputs reused) only
beside it, labelled, against onnxruntime's ``run_with_iobinding`` with pre-bound buffers; measure
each result and its baseline in the same process, in turns (:func:`interleaved`), so a busier
moment of the machine hits both alike.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from mlcir.runtime import time_calls
from mlcir.runtime.evaluator import PARALLEL_WARMUP_S


#: Worker threads keep spinning after a parallel region (libomp's KMP_BLOCKTIME, OpenBLAS's
#: threads a similar while), taking a core from whatever runs next. Timing turns of
#: multi-threaded calls pause this long between turns so each starts on quiet cores.
SETTLE_S = 0.3


def interleaved(calls: Mapping[str, Callable[[], Any]], *, rounds: int = 5,
                budget_s: float = 0.02, best: bool = False,
                threads: int = 1) -> dict[str, float]:
    """Seconds per call of each callable, timed in turns (a, b, c, a, b, c, …): after one
    warm-up call each, ``rounds`` rounds in which each callable runs enough calls to last about
    ``budget_s`` (at least one). Per callable the median of its rounds (``best``: the
    minimum). With ``threads`` > 1 each turn starts after a pause of :data:`SETTLE_S` and
    ``PARALLEL_WARMUP_S`` of untimed calls (at least one)."""
    numbers = {}
    for name, call in calls.items():
        start = time.perf_counter()
        call()
        numbers[name] = max(1, min(1000, int(budget_s / max(time.perf_counter() - start, 1e-7))))
    samples: dict[str, list[float]] = {name: [] for name in calls}
    for _ in range(rounds):
        for name, call in calls.items():
            if threads > 1:
                time.sleep(SETTLE_S)
            # calls after an idle pause run slow for a while (PARALLEL_WARMUP_S): every
            # callable gets the same warm-up (onnxruntime too: docs/measurements/runtime.md)
            result = time_calls(call, number=numbers[name], repeat=1, warmup=int(threads > 1),
                                warmup_s=PARALLEL_WARMUP_S if threads > 1 else 0.0)
            samples[name].append(result.results[0])
    pick = min if best else statistics.median
    return {name: pick(values) for name, values in samples.items()}


def onnxruntime_session(model: Any, threads: int = 1):
    """An onnxruntime CPU session for ``model`` (a ModelProto, bytes or a path) with
    ``threads`` intra-op threads and one inter-op thread."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    source = model.SerializeToString() if hasattr(model, "SerializeToString") else str(model)
    return ort.InferenceSession(source, options, providers=["CPUExecutionProvider"])


def onnxruntime_calls(session: Any, feeds: Mapping[str, np.ndarray]
                      ) -> tuple[Callable[[], Any], Callable[[], Any]]:
    """Two no-argument calls of ``session`` on ``feeds``: ``session.run(None, feeds)`` (what a
    user calls) and ``run_with_iobinding`` on inputs and outputs bound once (the runtime's
    own time, to set beside a prepared mlcir call)."""
    import onnxruntime as ort

    feeds = dict(feeds)
    outputs = session.run(None, feeds)
    binding = session.io_binding()
    keep = []
    for name, array in feeds.items():
        value = ort.OrtValue.ortvalue_from_numpy(np.ascontiguousarray(array))
        keep.append(value)
        binding.bind_ortvalue_input(name, value)
    for meta, example in zip(session.get_outputs(), outputs):
        value = ort.OrtValue.ortvalue_from_numpy(np.empty_like(example))
        keep.append(value)
        binding.bind_ortvalue_output(meta.name, value)

    def run() -> Any:
        return session.run(None, feeds)

    def bound(_alive: list = keep) -> None:  # the bound buffers live as long as the call
        session.run_with_iobinding(binding)

    return run, bound


def mlcir_calls(function: Any, *args: np.ndarray) -> tuple[Callable[[], Any], Callable[[], Any]]:
    """Two no-argument calls of a compiled function (``ex["main"]``): ``function(*args)`` as a
    user calls it (arguments checked, descriptors packed, outputs allocated), and the prepared
    call that reuses all of that (compiled-code time)."""
    prepared, _ = function.prepare(*args)
    return (lambda: function(*args)), prepared
