"""Benchmark (issue 42 item 5): an LSTM (and GRU) layer against onnxruntime, one thread, as
called.

    python bench/recurrent.py [--ops LSTM,GRU] [--steps 64] [--hidden 256] [--batch 1]
                              [--rounds 20] [--top 6]

The layer (mlcir.testing.onnx_models.recurrent_layer: random weights, fixed seed, input size
= hidden size) is built untuned; for each op: the build time, the largest difference from
onnxruntime, ``ex.main(x)`` and ``session.run`` timed in turns (mlcir.testing.timing
.interleaved), medians of ``--rounds``, their ratio onnxruntime / mlcir (above 1: mlcir is
faster), then the profiler's ``--top`` kernels (which misattributes the kernels called in the
time loop: docs/frontend.md#recurrent-networks). Run it alone: anything else on the cores
distorts it.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import numpy as np  # noqa: E402

import mlcir  # noqa: E402
from mlcir.frontend import from_onnx  # noqa: E402
from mlcir.testing import onnx_models, timing  # noqa: E402


def measure(op: str, steps: int, hidden: int, batch: int, rounds: int, top: int) -> float:
    """Print one layer's figures; returns onnxruntime / mlcir."""
    model = onnx_models.recurrent_layer(op, steps, batch, hidden, hidden)
    inputs = onnx_models.recurrent_layer_inputs(steps, batch, hidden)
    start = time.perf_counter()
    executable = mlcir.build(from_onnx(model))
    function = executable.main
    function(**inputs)
    build = time.perf_counter() - start
    session = timing.onnxruntime_session(model, 1)
    expected = session.run(None, inputs)
    got = function(**inputs)
    error = max(float(np.abs(np.asarray(g) - e).max()) for g, e in zip(got, expected))
    seconds = timing.interleaved({"onnxruntime": lambda: session.run(None, inputs),
                                  "mlcir": lambda: function(**inputs)},
                                 rounds=rounds, budget_s=0.0, threads=1)
    mine, reference = seconds["mlcir"], seconds["onnxruntime"]
    print(f"{op} hidden {hidden}, {steps} steps, batch {batch}: build + first call "
          f"{build:.1f} s; largest difference {error:.3g}; mlcir {mine * 1e6:.0f} us, "
          f"onnxruntime {reference * 1e6:.0f} us: onnxruntime/mlcir {reference / mine:.3f}x")
    if top:
        profile = executable.profile(**inputs, repeat=3)
        print("\n".join(profile.table().splitlines()[:top + 2]))
    return reference / mine


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ops", default="LSTM,GRU")
    parser.add_argument("--steps", type=int, default=64)
    parser.add_argument("--hidden", type=int, default=256)
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--top", type=int, default=6, help="profiled kernels to list (0: none)")
    args = parser.parse_args(argv)
    for op in [o for o in args.ops.split(",") if o]:
        if op not in ("LSTM", "GRU", "RNN"):
            parser.error(f"unknown op {op}; known: LSTM, GRU, RNN")
        measure(op, args.steps, args.hidden, args.batch, args.rounds, args.top)
    return 0


if __name__ == "__main__":
    sys.exit(main())
