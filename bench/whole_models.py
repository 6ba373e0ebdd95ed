"""Benchmark (issue 39 item 1): whole models against onnxruntime, untuned, as called.

    python bench/whole_models.py [--models resnet50_v1,resnet50_v2,mobilenet_v2,bert_base]
                                 [--threads 1,2] [--rounds 10] [--top 8]

Models (mlcir/testing/whole_models.py, random weights, fixed seeds): ``resnet50_v1``
(torchvision's export, batch norm folded), ``resnet50_v2`` (the ONNX zoo's layout, opset 7,
batch norm nodes), ``mobilenet_v2`` (width 1.0), ``bert_base`` (12 layers, hidden 768, 128
tokens, an attention mask). For each model and thread count: the build time (import, compile,
first call), the largest difference from onnxruntime, then ``ex.main(**inputs)`` and
``session.run`` (the same intra-op threads) timed in turns (mlcir.testing.timing.interleaved:
multi-threaded turns start on settled cores), medians of ``--rounds``, and their
ratio onnxruntime / mlcir (above 1: mlcir is faster); then the profiler's ``--top`` kernels
with their share of the time and % of the machine's peak on as many threads (mlcir.peak).
Run it alone: anything else on the cores distorts it.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings

for _name in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE"):  # before numpy loads (MLIR notes)
    os.environ.pop(_name, None)

import numpy as np  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import mlcir  # noqa: E402
from mlcir.frontend import from_onnx  # noqa: E402
from mlcir.testing import timing, whole_models  # noqa: E402

MODELS = {"resnet50_v1": whole_models.resnet50_v1, "resnet50_v2": whole_models.resnet50_v2,
          "mobilenet_v2": whole_models.mobilenet_v2, "bert_base": whole_models.bert_base}


def measure(name: str, threads: int, rounds: int, top: int) -> float:
    """Print one model's figures at ``threads``; returns onnxruntime / mlcir."""
    model = MODELS[name]()
    inputs = whole_models.model_inputs(model)
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the opset 7 model's conversion note
        executable = mlcir.build(from_onnx(model), f"llvm -threads={threads}")
    function = executable.main
    function(**inputs)
    build = time.perf_counter() - start
    session = timing.onnxruntime_session(model, threads)
    expected = session.run(None, inputs)[0]
    error = float(np.abs(np.asarray(function(**inputs)) - expected).max())
    seconds = timing.interleaved({"onnxruntime": lambda: session.run(None, inputs),
                                  "mlcir": lambda: function(**inputs)},
                                 rounds=rounds, budget_s=0.0, threads=threads)
    mine, reference = seconds["mlcir"], seconds["onnxruntime"]
    print(f"{name}, {threads} thread(s): build + first call {build:.1f} s; largest difference "
          f"{error:.3g} (outputs up to {float(np.abs(expected).max()):.4g}); mlcir "
          f"{mine * 1e3:.1f} ms, onnxruntime {reference * 1e3:.1f} ms: onnxruntime/mlcir "
          f"{reference / mine:.3f}x")
    if top:
        profile = executable.profile(**inputs, repeat=3)
        print("\n".join(profile.table().splitlines()[:top + 2]))
    return reference / mine


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--threads", default="1,2")
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--top", type=int, default=8, help="profiled kernels to list (0: none)")
    args = parser.parse_args(argv)
    names = [n for n in args.models.split(",") if n]
    unknown = sorted(set(names) - set(MODELS))
    if unknown:
        parser.error(f"unknown model(s) {', '.join(unknown)}; known: {', '.join(MODELS)}")
    for threads in [int(t) for t in args.threads.split(",")]:
        ratios = [measure(name, threads, args.rounds, args.top) for name in names]
        mean = float(np.exp(np.mean(np.log(ratios))))
        print(f"{threads} thread(s): geometric mean onnxruntime/mlcir {mean:.3f}x over "
              f"{len(ratios)} model(s)\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
