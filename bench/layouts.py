"""Benchmark: packed constant weights (``graph-pack-weights``) against the original layout.

    python bench/layouts.py [--cases mm1_768x3072,...,bert256] [--threads 1]

Per case (matmuls with a constant right operand at BERT sizes, M = 1, 64, 128 rows, K, N =
768, 3072; and the models of bench/models.py that have such matmuls), untuned (default
schedules): ``mlcir.build(..., layout="packed")`` (the default) and ``layout="none"`` next to
onnxruntime running the same model, each output checked against onnxruntime first, then timed
in turns in this process (``ex.main`` against ``session.run``; medians of interleaved rounds).
Ratios are onnxruntime latency / mlcir latency (above 1: mlcir faster). On a loaded machine
the figures are directional only.
"""

from __future__ import annotations

import argparse
import os
import sys

for _name in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE"):  # before numpy loads (MLIR notes)
    os.environ.pop(_name, None)

import numpy as np  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import mlcir  # noqa: E402
from mlcir.frontend import from_onnx  # noqa: E402
from mlcir.testing import onnx_models as om  # noqa: E402
from mlcir.testing import timing  # noqa: E402


def matmul(m: int, k: int, n: int):
    w = (np.random.default_rng(0).standard_normal((k, n)) / np.sqrt(k)).astype(np.float32)
    model = om.single_op("MatMul", {"x": [m, k]}, initializers={"w": w})
    return model, om.single_op_inputs(model)


CASES = {
    **{f"mm{m}_{k}x{n}": (lambda m=m, k=k, n=n: matmul(m, k, n))
       for m in (1, 64, 128) for k, n in ((768, 3072), (3072, 768))},
    "mlp1": lambda: (om.mlp(batch=1), om.mlp_inputs(batch=1)),
    "mlp64": lambda: (om.mlp(batch=64), om.mlp_inputs(batch=64)),
    "bert256": lambda: (om.bert_encoder_layer(width=256, heads=4),
                        om.bert_encoder_layer_inputs(width=256)),
}


def bench(name: str, threads: int) -> dict[str, float]:
    model, inputs = CASES[name]()
    expected = list(om.reference(model, inputs).values())
    target = f"llvm -threads={threads}"
    calls = {}
    for layout in ("packed", "none"):
        ex = mlcir.build(from_onnx(model), target, layout=layout)
        got = ex.main(**inputs)
        for g, e in zip(got if isinstance(got, tuple) else (got,), expected):
            np.testing.assert_allclose(g, e, rtol=1e-3, atol=1e-4)
        calls[layout] = lambda ex=ex: ex.main(**inputs)
    calls["ort"], _ = timing.onnxruntime_calls(timing.onnxruntime_session(model, threads), inputs)
    return timing.interleaved(calls, threads=threads)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cases", default=",".join(CASES))
    parser.add_argument("--threads", default="1")
    args = parser.parse_args()
    print("| case | threads | ort us | packed us | none us | ort/packed | ort/none |")
    print("|---|---|---|---|---|---|---|")
    for name in args.cases.split(","):
        for threads in (int(t) for t in args.threads.split(",")):
            s = bench(name, threads)
            print(f"| {name} | {threads} | {s['ort'] * 1e6:.0f} | {s['packed'] * 1e6:.0f} | "
                  f"{s['none'] * 1e6:.0f} | {s['ort'] / s['packed']:.2f} | "
                  f"{s['ort'] / s['none']:.2f} |", flush=True)


if __name__ == "__main__":
    main()
