"""Benchmark (issue 42): ConvTranspose of decoder shapes, mlcir against onnxruntime, one thread.

    python bench/conv_transpose.py [--threads 1] [--rounds 5]

Per shape (batch 1, fixed seeds): a one-node model built with ``onnx.helper``; mlcir's build
(the strided-phase form: one stride-1 convolution whose output channels are the stride's
phases, then an interleave: docs/frontend.md#convtranspose), the same model with the filter
fed as an input (the zero-insertion form, which a run-time filter still takes: the stride's
inserted zeros multiplied), and onnxruntime's ``session.run``, each checked against
onnxruntime, then timed in turns in this process (``ex.main(x)`` as called). GFLOP/s count
the transposed convolution's own multiply-adds and are divided by ``bench/peak.py``'s
one-thread peak. Run it alone: other processes distort the timings.
"""

from __future__ import annotations

import argparse
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
from mlcir.peak import peak_gflops  # noqa: E402
from mlcir.testing import onnx_models as models, timing  # noqa: E402

# name: (C_in, C_out, H=W, kernel, stride, pads, group)
SHAPES = {
    "unet-up 2x2/2 128->64 @32": (128, 64, 32, 2, 2, 0, 1),
    "dcgan 4x4/2 256->128 @16": (256, 128, 16, 4, 2, 1, 1),
    "dcgan 4x4/2 64->3 @64": (64, 3, 64, 4, 2, 1, 1),
    "fsrcnn 9x9/2 56->1 @64": (56, 1, 64, 9, 2, 4, 1),
    "seg 3x3/2 64->64 @56 (output_padding 1)": (64, 64, 56, 3, 2, 1, 1),
    "depthwise 4x4/2 64 @32": (64, 64, 32, 4, 2, 1, 64),
}


def model(c_in: int, c_out: int, hw: int, k: int, s: int, p: int, g: int,
          filter_input: bool = False) -> tuple[onnx.ModelProto, np.ndarray]:
    rng = np.random.default_rng(0)
    w = (rng.standard_normal((c_in, c_out // g, k, k)) / np.sqrt(c_in * k * k / g)).astype(
        np.float32)
    extra = [1, 1] if k == 3 else [0, 0]
    node = helper.make_node("ConvTranspose", ["x", "w"], ["y"], strides=[s, s], pads=[p] * 4,
                            group=g, output_padding=extra)
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, c_in, hw, hw])]
    inits = []
    if filter_input:
        inputs.append(helper.make_tensor_value_info("w", TensorProto.FLOAT, list(w.shape)))
    else:
        inits.append(numpy_helper.from_array(w, "w"))
    graph = helper.make_graph([node], "convt", inputs,
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              initializer=inits)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    m = onnx.shape_inference.infer_shapes(m)
    return m, w


def bench(name: str, threads: int, rounds: int, peak: float | None) -> dict:
    c_in, c_out, hw, k, s, p, g = SHAPES[name]
    phased, w = model(c_in, c_out, hw, k, s, p, g)
    zeros, _ = model(c_in, c_out, hw, k, s, p, g, filter_input=True)
    target = f"llvm -threads={threads}"
    ex = mlcir.build(from_onnx(phased), target=target)
    ex_zeros = mlcir.build(from_onnx(zeros), target=target)
    x = np.random.default_rng(1).standard_normal((1, c_in, hw, hw)).astype(np.float32)
    (want,) = models.reference(phased, {"x": x}).values()
    np.testing.assert_allclose(ex.main(x), want, rtol=1e-3, atol=1e-3)
    np.testing.assert_allclose(ex_zeros.main(x, w), want, rtol=1e-3, atol=1e-3)
    session = timing.onnxruntime_session(phased, threads)
    ort_run, _ = timing.onnxruntime_calls(session, {"x": x})
    seconds = timing.interleaved({"ort": ort_run, "phases": lambda: ex.main(x),
                                  "zeros": lambda: ex_zeros.main(x, w)},
                                 rounds=rounds, threads=threads)
    flops = 2.0 * c_in * (c_out // g) * k * k * hw * hw
    return {"name": name, "threads": threads, **{f"{key}_us": v * 1e6 for key, v in seconds.items()},
            "gflops": flops / seconds["phases"] / 1e9, "peak": peak}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--threads", default="1")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--shapes", default=",".join(SHAPES), help="comma-separated names")
    args = parser.parse_args()
    peak = peak_gflops(threads=1)
    print(f"{'shape':<42} {'thr':>3} | {'ort us':>9} {'mlcir us':>9} {'zeros us':>9} "
          f"{'ort/mlcir':>9} {'GFLOP/s':>8} {'% peak':>6}")
    for threads in (int(t) for t in args.threads.split(",")):
        for name in args.shapes.split(","):
            r = bench(name, threads, args.rounds, peak)
            print(f"{name:<42} {threads:>3} | {r['ort_us']:>9.1f} {r['phases_us']:>9.1f} "
                  f"{r['zeros_us']:>9.1f} {r['ort_us'] / r['phases_us']:>8.2f}x "
                  f"{r['gflops']:>8.1f} {100 * r['gflops'] / peak:>5.0f}%", flush=True)
    print("us per call as called; 'mlcir': the strided-phase form, 'zeros': the same op with a "
          "run-time filter (the zero-insertion form); ort/mlcir at least 1.0x is issue 42's "
          "target.")


if __name__ == "__main__":
    main()
