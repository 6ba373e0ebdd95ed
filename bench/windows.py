"""Benchmark: strided, depthwise and pooling window ops, mlcir tuned next to onnxruntime.

    python bench/windows.py [--ops conv_s2,dwconv,dwconv_s2,maxpool_s2,avgpool_s2]
                            [--trials 64] [--threads 1] [--layout packed|none]

The ops ending in ``_r50``, ``_mbv2``, ``stem7x7_s2`` and ``global_avgpool`` are issue 14's
per-op set at ResNet-50 / MobileNetV2 sizes; its matmuls with a constant right operand
(``mm<M>_<K>x<N>``) are bench/layouts.py's, here so that they can be tuned too.

Each op is a one-node ONNX model (mlcir.testing.onnx_models.single_op, fixed seeds) measured
as bench/models.py measures a model: output checked against onnxruntime, then, timed in turns
in this process, ``ex.main`` against ``session.run`` (as called) and the prepared call against
``run_with_iobinding`` (compiled code). The tuned figure varies between runs by up to ~40% for
the scalar depthwise kernels (the search itself is measurement-driven); run it alone and more
than once.
"""

from __future__ import annotations

import argparse
import os
import sys

for _name in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE"):  # before numpy loads (MLIR notes)
    os.environ.pop(_name, None)

import numpy as np  # noqa: E402

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import layouts
import models as model_bench
from mlcir.testing import onnx_models


def conv(cin: int, cout: int, hw: int, k: int, stride: int, groups: int = 1,
         pad: int | None = None):
    w = np.random.default_rng(0).standard_normal((cout, cin // groups, k, k)).astype(np.float32)
    model = onnx_models.single_op(
        "Conv", {"x": [1, cin, hw, hw]},
        {"kernel_shape": [k, k], "pads": [k // 2 if pad is None else pad] * 4, "strides": [stride, stride],
         "group": groups}, initializers={"w": w * 0.1})
    return model, onnx_models.single_op_inputs(model)


def pool(op: str, channels: int, hw: int, k: int, stride: int, pad: int = 1):
    model = onnx_models.single_op(op, {"x": [1, channels, hw, hw]},
                                  {"kernel_shape": [k, k], "pads": [pad] * 4,
                                   "strides": [stride, stride]})
    return model, onnx_models.single_op_inputs(model)


def global_avgpool(channels: int, hw: int):
    model = onnx_models.single_op("GlobalAveragePool", {"x": [1, channels, hw, hw]})
    return model, onnx_models.single_op_inputs(model)


OPS = {
    "conv_s2": lambda: conv(32, 64, 56, 3, 2),
    "dwconv": lambda: conv(64, 64, 56, 3, 1, groups=64),
    "dwconv_s2": lambda: conv(64, 64, 56, 3, 2, groups=64),
    "maxpool_s2": lambda: pool("MaxPool", 64, 56, 3, 2),
    "avgpool_s2": lambda: pool("AveragePool", 64, 56, 3, 2),
    # The MNIST CNN's (bench/models.py): unpadded, stride 1, 26 and 24 output columns.
    "conv_mnist1": lambda: conv(1, 32, 28, 3, 1, pad=0),
    "conv_mnist2": lambda: conv(32, 64, 26, 3, 1, pad=0),
    "maxpool_2x2": lambda: pool("MaxPool", 64, 24, 2, 2, pad=0),
    # Issue 14's per-op set at ResNet-50 / MobileNetV2 sizes.
    "conv3x3_r50": lambda: conv(64, 64, 56, 3, 1),
    "conv3x3_s2_r50": lambda: conv(128, 128, 56, 3, 2),
    "conv1x1_r50": lambda: conv(256, 64, 56, 1, 1),
    "stem7x7_s2": lambda: conv(3, 64, 224, 7, 2),
    "dwconv_mbv2": lambda: conv(144, 144, 56, 3, 1, groups=144),
    "dwconv_s2_mbv2": lambda: conv(144, 144, 56, 3, 2, groups=144),
    "maxpool_r50": lambda: pool("MaxPool", 64, 112, 3, 2),
    "global_avgpool": lambda: global_avgpool(2048, 7),
    # ... and its matmuls with a constant right operand (bench/layouts.py's, here to be tuned).
    **{name: case for name, case in layouts.CASES.items() if name.startswith("mm")},
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--ops", default=",".join(OPS))
    parser.add_argument("--trials", type=int, default=64)
    parser.add_argument("--threads", default="1")
    model_bench.add_layout_argument(parser)
    args = parser.parse_args()
    model_bench.set_layout(args.layout)
    model_bench.MODELS.update(OPS)
    thread_counts = [int(t) for t in args.threads.split(",")]
    model_bench.measure_peaks(thread_counts)
    print(model_bench.HEADER)
    for name in args.ops.split(","):
        for threads in thread_counts:
            print(model_bench.row(model_bench.bench_model(name, threads, args.trials)),
                  flush=True)
    print(model_bench.FOOTER)


if __name__ == "__main__":
    main()
