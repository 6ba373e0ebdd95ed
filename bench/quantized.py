"""Benchmark (issue 41 item 5): int8 models against onnxruntime's int8 session and against
mlcir's own float32 build, untuned, as called, one thread.

    python bench/quantized.py [--models resnet_block,mobilenet_v2_blocks,...] [--rounds 7]

Each model (random weights, fixed seeds: mlcir/testing/onnx_models.py) is quantized as a user
would (mlcir/testing/quantized.py: quantize_static to QDQ with per-channel 7-bit weights over a
calibration reader of 8 seeded inputs, or quantize_dynamic for the transformer layer). Timed
in turns (mlcir.testing.timing.interleaved), medians of ``--rounds``: mlcir's int8 build
(``ex.main(x)``), onnxruntime's int8 session on the same file (default graph optimizations:
its own QDQ fusion, ``session.run``) and mlcir's float32 build of the float model. Ratios above
1 mean mlcir's int8 is faster. Run it alone; it prints ``uptime``'s load first.
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
from mlcir.testing import onnx_models as om  # noqa: E402
from mlcir.testing import quantized as qm  # noqa: E402
from mlcir.testing import timing, whole_models  # noqa: E402

#: name -> (float model, its inputs, how it is quantized)
MODELS = {
    "mlp": (om.mlp, om.mlp_inputs, "static"),
    "resnet_block": (om.resnet_block, om.resnet_block_inputs, "static"),
    "resnet50_bottleneck": (om.resnet50_bottleneck, om.resnet50_bottleneck_inputs, "static"),
    "mobilenet_v2_blocks": (om.mobilenet_v2_blocks, om.mobilenet_v2_blocks_inputs, "static"),
    "bert_encoder_layer": (om.bert_encoder_layer, om.bert_encoder_layer_inputs, "dynamic"),
    "mobilenet_v2": (whole_models.mobilenet_v2, None, "static"),
    "resnet50_v1": (whole_models.resnet50_v1, None, "static"),
}


def measure(name: str, rounds: int) -> None:
    build_float, inputs_of, how = MODELS[name]
    model = build_float()
    inputs = inputs_of() if inputs_of else whole_models.model_inputs(model)
    start = time.perf_counter()
    int8 = qm.quantize_static(model) if how == "static" else qm.quantize_dynamic(model)
    quantize = time.perf_counter() - start
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mine = mlcir.build(from_onnx(int8)).main
        mine(**inputs)
        build = time.perf_counter() - start
        floats = mlcir.build(from_onnx(model)).main
    session = timing.onnxruntime_session(int8, 1)
    expected = session.run(None, inputs)[0]
    got = np.asarray(mine(**inputs))
    error = float(np.abs(got.astype(np.float64) - expected).max())
    seconds = timing.interleaved({"mlcir int8": lambda: mine(**inputs),
                                  "onnxruntime int8": lambda: session.run(None, inputs),
                                  "mlcir float32": lambda: floats(**inputs)},
                                 rounds=rounds, budget_s=0.05)
    m8, o8, m32 = (seconds[k] for k in ("mlcir int8", "onnxruntime int8", "mlcir float32"))
    print(f"{name} ({how}): quantize {quantize:.1f} s, mlcir build + first call {build:.1f} s; "
          f"largest difference from onnxruntime int8 {error:.3g} "
          f"(outputs up to {float(np.abs(expected).max()):.4g})")
    print(f"  mlcir int8 {m8 * 1e3:.3f} ms | onnxruntime int8 {o8 * 1e3:.3f} ms | "
          f"mlcir float32 {m32 * 1e3:.3f} ms | onnxruntime int8 / mlcir int8 {o8 / m8:.2f}x | "
          f"mlcir float32 / mlcir int8 {m32 / m8:.2f}x", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="mlp,resnet_block,mobilenet_v2_blocks,"
                        "resnet50_bottleneck,bert_encoder_layer")
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    print("load:", os.popen("uptime").read().strip(), flush=True)
    for name in args.models.split(","):
        measure(name, args.rounds)
    print("load:", os.popen("uptime").read().strip())


if __name__ == "__main__":
    main()
