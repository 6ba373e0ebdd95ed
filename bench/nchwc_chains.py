"""Benchmark: do short convolution chains pay for running in NCHW<c>c, layout changes included?

    python bench/nchwc_chains.py [case ...]

Each case is a small chain of convolutions (each followed by a relu) between an NCHW input and
an NCHW output, built two ways: ``packed`` (the default: the chain in NCHWc, with its layout
change in and out) and ``none`` (NCHW throughout). Untuned (default schedules), one thread,
the prepared calls (compiled code) timed in turns in one process; outputs checked against
each other. Run it alone on the machine. The figures decided that graph-layout-nchwc blocks
every chain, a lone 1x1 or depthwise convolution too (docs/graph-passes.md).
"""

from __future__ import annotations

import os
import sys

for _name in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE"):  # before numpy loads (MLIR notes)
    os.environ.pop(_name, None)

import numpy as np  # noqa: E402
import onnx  # noqa: E402
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import mlcir  # noqa: E402
from mlcir.frontend import from_onnx  # noqa: E402
from mlcir.testing import timing  # noqa: E402

# name -> ([(out channels, kernel, stride, depthwise)], input channels, height = width)
CASES = {
    "1x1 256->64 @56": ([(64, 1, 1, False)], 256, 56),
    "dw3x3 144 @56": ([(144, 3, 1, True)], 144, 56),
    "dw3x3/2 144 @56": ([(144, 3, 2, True)], 144, 56),
    "1x1+dw 24->144 @56": ([(144, 1, 1, False), (144, 3, 1, True)], 24, 56),
    "dw+1x1 144->24 @56": ([(144, 3, 1, True), (24, 1, 1, False)], 144, 56),
    "1x1+1x1 64->256->64 @56": ([(256, 1, 1, False), (64, 1, 1, False)], 64, 56),
    "3x3 64 @56": ([(64, 3, 1, False)], 64, 56),
}


def chain(specs: list[tuple[int, int, int, bool]], channels: int, hw: int) -> onnx.ModelProto:
    rng = np.random.default_rng(0)
    nodes, weights, x, c = [], [], "x", channels
    for i, (out, k, stride, depthwise) in enumerate(specs):
        groups = c if depthwise else 1
        w = (rng.standard_normal((out, c // groups, k, k)) * 0.1).astype(np.float32)
        weights.append(numpy_helper.from_array(w, f"w{i}"))
        nodes.append(helper.make_node("Conv", [x, f"w{i}"], [f"c{i}"], kernel_shape=[k, k],
                                      pads=[k // 2] * 4, strides=[stride] * 2, group=groups))
        nodes.append(helper.make_node("Relu", [f"c{i}"], [f"r{i}"]))
        x, c = f"r{i}", out
    graph = helper.make_graph(
        nodes, "chain", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, channels, hw, hw])],
        [helper.make_tensor_value_info(x, TensorProto.FLOAT, None)], weights)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    return onnx.shape_inference.infer_shapes(model)


def main() -> None:
    names = sys.argv[1:] or list(CASES)
    print(f"{'case':28s} {'blocked us':>10s} {'NCHW us':>8s}  NCHW/blocked")
    for name in names:
        specs, channels, hw = CASES[name]
        model = chain(specs, channels, hw)
        x = np.random.default_rng(1).standard_normal((1, channels, hw, hw)).astype(np.float32)
        calls, outputs = {}, {}
        for layout in ("packed", "none"):
            ex = mlcir.build(from_onnx(model), target="llvm -threads=1", layout=layout)
            prepared, outs = ex["main"].prepare(x)
            prepared()
            outputs[layout] = outs[0].copy()
            calls[layout] = prepared
        np.testing.assert_allclose(outputs["none"], outputs["packed"], rtol=1e-3, atol=1e-3)
        t = timing.interleaved(calls, rounds=7, budget_s=0.05)
        print(f"{name:28s} {t['packed'] * 1e6:10.0f} {t['none'] * 1e6:8.0f}  "
              f"{t['none'] / t['packed']:.2f}", flush=True)


if __name__ == "__main__":
    main()
