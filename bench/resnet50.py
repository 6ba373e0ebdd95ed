"""Benchmark: the whole ResNet-50 (torchvision's layout, bench/compile_time.py's builder), untuned,
as called, against onnxruntime with the same intra-op threads, timed in turns in this process.

    python bench/resnet50.py [--threads 1] [--rounds 15]

Prints the build time (import + compile + first call), the outputs' largest difference, both
medians and the ratio onnxruntime / mlcir (above 1: mlcir is faster). Run it alone.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

for _name in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE"):  # before numpy loads (MLIR notes)
    os.environ.pop(_name, None)

import numpy as np  # noqa: E402
import onnxruntime as ort  # noqa: E402

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import compile_time  # noqa: E402

import mlcir  # noqa: E402
from mlcir.frontend import from_onnx  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args(argv)
    model = compile_time.resnet50()
    inputs = compile_time.model_inputs(model)
    start = time.perf_counter()
    function = mlcir.build(from_onnx(model), f"llvm -threads={args.threads}").main
    function(**inputs)
    build = time.perf_counter() - start
    options = ort.SessionOptions()
    options.intra_op_num_threads, options.inter_op_num_threads = args.threads, 1
    session = ort.InferenceSession(model.SerializeToString(), options)
    expected = session.run(None, inputs)[0]
    error = float(np.abs(np.asarray(function(**inputs)) - expected).max())
    ours, theirs = [], []
    for _ in range(args.rounds):
        start = time.perf_counter()
        function(**inputs)
        ours.append(time.perf_counter() - start)
        start = time.perf_counter()
        session.run(None, inputs)
        theirs.append(time.perf_counter() - start)
    mine, ort_time = float(np.median(ours)), float(np.median(theirs))
    print(f"resnet50, {args.threads} thread(s): build + first call {build:.1f} s; largest "
          f"difference {error:.3g} (outputs up to {float(np.abs(expected).max()):.4g}); mlcir "
          f"{mine * 1e3:.1f} ms, onnxruntime {ort_time * 1e3:.1f} ms: onnxruntime/mlcir "
          f"{ort_time / mine:.3f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
