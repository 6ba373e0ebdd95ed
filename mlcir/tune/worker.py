"""Worker processes of the tuner: ``python -m mlcir.tune.worker build|run``.

Each reads one JSON request per line on stdin and answers one JSON line on stdout, so the
tuner can give it a time-out, kill it, and start another: a candidate that crashes the process
(LLVM is an assertions build) or hangs costs one worker, not the search.

- ``build``: replay a trace on its kernel, compute the cost-model features, and let the
  target's backend lower it and link a shared library (``build_candidate``; for cuda, no GPU
  needed).
- ``run``: let the target's backend load a shared library (``open_candidate``; for cuda, only
  where the driver and a GPU are found, otherwise the candidate fails with "no CUDA driver:
  libcuda.so.1 not found"), run it once on the workload's inputs, compare the outputs with the
  reference outputs, then time it.
"""

from __future__ import annotations

import json
import math
import os
import sys
import time
import traceback
from typing import Any


def _inject_fault(role: str, key: str) -> None:
    """Test hook: ``MLCIR_TUNE_FAULTS='{"<trace key>": "build-crash"|"run-hang"|…}'`` makes this
    worker abort or hang on that candidate, to test that the tuner contains both."""
    faults = os.environ.get("MLCIR_TUNE_FAULTS")
    if not faults:
        return
    fault = json.loads(faults).get(key, "")
    if fault == f"{role}-crash":
        os.abort()
    if fault == f"{role}-hang":
        time.sleep(3600)


def _build(request: dict[str, Any], cache: dict[str, Any]) -> dict[str, Any]:
    from mlcir.ir import make_context, parse
    from mlcir.schedule import Schedule, Trace
    from mlcir.target import Target
    from mlcir.targets import backend_for

    from .features import extract
    from .kernel_sizes import sampling_schedule

    from .database import trace_key

    _inject_fault("build", trace_key(request["trace"]))
    if "ctx" not in cache:
        cache["ctx"] = make_context()
    ctx = cache["ctx"]
    kernel_path = request["kernel"]
    with ctx:
        if kernel_path not in cache:
            with open(kernel_path) as f:
                cache[kernel_path] = parse(f.read(), source_name=kernel_path)
        kernel = cache[kernel_path]
        start = time.perf_counter()
        sch = Schedule(kernel)
        trace = Trace.from_json(request["trace"])
        trace.apply_to_schedule(sch)
        scored = sampling_schedule(kernel)
        if scored is not Schedule:  # a dynamic kernel's features at its representative size
            sch_at = scored(kernel)
            trace.apply_to_schedule(sch_at)
            features = extract(sch_at)
        else:
            features = extract(sch)
        scheduled = sch.mod
        target = Target.parse(request["target"])
        backend_for(target).build_candidate(scheduled, target, request["out"])
    return {"ok": True, "so": request["out"], "features": features,
            "build_secs": time.perf_counter() - start}


def _run(request: dict[str, Any], cache: dict[str, Any]) -> dict[str, Any]:
    import numpy as np

    from mlcir.errors import CudaDriverError
    from mlcir.runtime.executable import Function
    from mlcir.runtime.library import CallbackErrors
    from mlcir.runtime.signature import Signature
    from mlcir.target import Target
    from mlcir.targets import backend_for

    _inject_fault("run", request.get("key", ""))
    data_path = request["data"]
    if data_path not in cache:
        with np.load(data_path) as data:
            cache[data_path] = {k: data[k] for k in data.files}
    data = cache[data_path]
    signature = Signature.from_json(request["signature"])
    threads = int(request.get("threads", 0))
    if threads > 0:
        from mlcir.runtime.threads import set_num_threads

        set_num_threads(threads)
    try:
        lib, raw = backend_for(Target.parse(request["target"])).open_candidate(request["so"],
                                                                               signature)
    except CudaDriverError as error:  # no driver or GPU here: the candidate cannot run
        return {"ok": False, "error": str(error)}
    fn = Function(signature, raw, CallbackErrors(), lib)
    # A dynamic kernel tuned over ranges has a set of data per size and their weights: its
    # time is the weighted sum of its times at each (mlcir/tune/kernel_sizes.py).
    weights = data["weights"] if "weights" in data else None
    prefixes = [""] if weights is None else [f"size{j}." for j in range(len(weights))]
    total: list[float] | None = None
    for j, prefix in enumerate(prefixes):
        times = _time_one(fn, data, prefix, signature, request, threads)
        if isinstance(times, str):
            return {"ok": False, "error": times if weights is None else f"at size {j}: {times}"}
        w = 1.0 if weights is None else float(weights[j])
        total = [w * t for t in times] if total is None else \
            [a + w * t for a, t in zip(total, times)]
    return {"ok": True, "run_secs": total}


def _time_one(fn: Any, data: dict[str, Any], prefix: str, signature: Any,
              request: dict[str, Any], threads: int) -> list[float] | str:
    """Check ``fn`` on the inputs ``<prefix>input<i>`` against ``<prefix>output<i>`` and time
    it: the times of its repeats, or why its result is wrong."""
    import numpy as np

    from mlcir.runtime.evaluator import PARALLEL_WARMUP_S, time_calls
    from mlcir.runtime.memref import aligned_array

    inputs = [aligned_array(data[f"{prefix}input{i}"]) for i in range(len(signature.args))]
    expected = [data[f"{prefix}output{i}"] for i in range(len(signature.results))]
    call, outputs = fn.prepare(*inputs)
    start = time.perf_counter()
    call()
    first = time.perf_counter() - start
    for i, (got, want) in enumerate(zip(outputs, expected)):
        scale = max(float(np.abs(want).max()), 1e-6) if want.size else 1.0
        err = float(np.abs(got.astype(np.float64) - want).max()) / scale if want.size else 0.0
        if not math.isfinite(err) or err > request.get("rtol", 1e-3):
            return (f"wrong result: output {i} differs from the reference (max relative error "
                    f"{err:.3g})")
    min_ms = float(request.get("min_repeat_ms", 20.0))
    # at least ``number`` calls per repeat, more while a repeat is shorter than min_repeat_ms
    number = max(int(request.get("number", 1)),
                 min(1000, int(math.ceil(min_ms / 1e3 / max(first, 1e-7)))))
    # threads 0: the runtime's count, the machine's cores (several here)
    result = time_calls(call, number=number, repeat=int(request.get("repeat", 3)), warmup=1,
                        warmup_s=PARALLEL_WARMUP_S if threads != 1 else 0.0)
    return list(result.results)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    role = argv[0] if argv else ""
    handler = {"build": _build, "run": _run}.get(role)
    if handler is None:
        print("usage: python -m mlcir.tune.worker build|run", file=sys.stderr)
        return 2
    cache: dict[str, Any] = {}
    out = sys.stdout
    sys.stdout = sys.stderr  # stray prints must not corrupt the protocol
    for line in sys.stdin:
        if not line.strip():
            continue
        request = json.loads(line)
        try:
            response = handler(request, cache)
        except Exception as error:  # noqa: BLE001 - reported to the tuner, which records it
            message = str(error).strip().splitlines()
            response = {"ok": False, "error": f"{type(error).__name__}: "
                                              f"{' | '.join(message[:6])}"[:2000],
                        "traceback": traceback.format_exc()[-4000:]}
        response["id"] = request.get("id")
        out.write(json.dumps(response) + "\n")
        out.flush()
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(main())
