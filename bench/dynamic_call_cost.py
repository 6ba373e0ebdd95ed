"""Benchmark (issue 40, item 3): the shape-generic cost of a call of a dynamic model.

    python bench/dynamic_call_cost.py [--batch 4] [--rounds 15] [--calls 2000]

The dynamic MLP (``mlcir.testing.onnx_models.mlp("N")``) and its static build at ``--batch``:
each called as a user calls it (``ex.main(x)``) and as a prepared call (the compiled code
alone, ``ex["main"].prepare(x)``), in turns, each turn ``--calls`` calls timed with
``time.thread_time`` (this thread's CPU time: time other processes take from the core does
not count), medians of ``--rounds``. The difference as called - prepared is what the call
path adds: result shapes computed from the inputs' (dynamic), allocation, checks.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import mlcir  # noqa: E402
from mlcir.frontend import from_onnx  # noqa: E402
from mlcir.testing import onnx_models  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--calls", type=int, default=2000)
    args = parser.parse_args(argv)
    x = onnx_models.mlp_inputs(args.batch)["x"]
    dynamic = mlcir.build(from_onnx(onnx_models.mlp("N")), "llvm -threads=1")
    static = mlcir.build(from_onnx(onnx_models.mlp(args.batch)), "llvm -threads=1")
    calls = {"dynamic, as called": (lambda f: lambda: f(x))(dynamic.main),
             "dynamic, prepared": dynamic["main"].prepare(x)[0],
             "static, as called": (lambda f: lambda: f(x))(static.main),
             "static, prepared": static["main"].prepare(x)[0]}
    samples: dict[str, list[float]] = {name: [] for name in calls}
    for _ in range(args.rounds):
        for name, call in calls.items():
            start = time.thread_time()
            for _ in range(args.calls):
                call()
            samples[name].append((time.thread_time() - start) / args.calls)
    us = {name: statistics.median(values) * 1e6 for name, values in samples.items()}
    for name, value in us.items():
        print(f"{name:20s} {value:8.2f} us")
    print(f"call path: dynamic {us['dynamic, as called'] - us['dynamic, prepared']:.2f} us, "
          f"static {us['static, as called'] - us['static, prepared']:.2f} us per call")
    return 0


if __name__ == "__main__":
    sys.exit(main())
