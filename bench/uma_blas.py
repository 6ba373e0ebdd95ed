"""Benchmark (issue 44): the ``blas`` UMA backend (matmuls and Gemms to numpy's OpenBLAS sgemm)
against mlcir's own kernels (default schedules, packed weights) and numpy, at 1 and 2 threads.

    python bench/uma_blas.py [--models mlp1,mlp64,ffn128,bert256] [--threads 1,2]

Models: ``mlp1``/``mlp64`` (the 784-128-10 MLP, batch 1 and 64), ``ffn128`` (a transformer's
feed-forward block: 128 tokens, 256 -> 1024 -> 256, Gemm + Relu + Gemm), ``bert256`` (a BERT-like
encoder layer, 128 tokens, width 256, 4 heads; no numpy baseline). Per model and thread count
the three are timed in turns in this process (``mlcir.testing.timing.interleaved``, as called:
``ex.main(x)`` and the numpy function on the same arrays); OpenBLAS gets the same threads as
mlcir (``mlcir.testing.blas.set_threads``: numpy and the backend share one OpenBLAS). Reported:
ratios (own / blas: above 1 the backend is faster; numpy / blas) and each one's GFLOPS (the
model's operations, ``mlcir.tune.tasks.flops``) as % of the machine's peak on as many threads
(``mlcir.peak``). Every output is checked against numpy/onnxruntime first. Run it alone
(``--best``: each call's fastest round rather than the median, for a machine others load).
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
from mlcir.testing import blas, onnx_models, timing  # noqa: E402
from mlcir.tune import extract_tasks  # noqa: E402


def ffn(tokens: int = 128, width: int = 256, hidden: int = 1024, seed: int = 0) -> onnx.ModelProto:
    rng = np.random.default_rng(seed)
    inits = [numpy_helper.from_array(rng.standard_normal(s).astype(np.float32) * 0.05, n)
             for n, s in (("w0", (width, hidden)), ("b0", (hidden,)), ("w1", (hidden, width)),
                          ("b1", (width,)))]
    nodes = [helper.make_node("Gemm", ["x", "w0", "b0"], ["h"]),
             helper.make_node("Relu", ["h"], ["r"]),
             helper.make_node("Gemm", ["r", "w1", "b1"], ["y"])]
    graph = helper.make_graph(nodes, "ffn",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [tokens, width])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [tokens, width])],
                              inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def _weights(model: onnx.ModelProto) -> dict[str, np.ndarray]:
    return {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}


def _numpy_mlp(model: onnx.ModelProto):
    w = _weights(model)
    w0, w1 = np.ascontiguousarray(w["w0"].T), np.ascontiguousarray(w["w1"].T)  # stored so once
    return lambda x: np.maximum(x @ w0 + w["b0"], 0) @ w1 + w["b1"]


def _numpy_ffn(model: onnx.ModelProto):
    w = _weights(model)
    return lambda x: np.maximum(x @ w["w0"] + w["b0"], 0) @ w["w1"] + w["b1"]


def models() -> dict[str, tuple]:
    bert = onnx_models.bert_encoder_layer(width=256, heads=4)
    return {
        "mlp1": lambda: (onnx_models.mlp(batch=1), onnx_models.mlp_inputs(batch=1), _numpy_mlp),
        "mlp64": lambda: (onnx_models.mlp(batch=64), onnx_models.mlp_inputs(batch=64),
                          _numpy_mlp),
        "ffn128": lambda: (ffn(), {"x": np.random.default_rng(1).standard_normal(
            (128, 256)).astype(np.float32)}, _numpy_ffn),
        "bert256": lambda: (bert, onnx_models.bert_encoder_layer_inputs(width=256), None),
    }


def bench(name: str, make, threads: int, best: bool = False) -> str:
    model, inputs, numpy_of = make()
    target = f"llvm -threads={threads}"
    own = mlcir.build(from_onnx(model), target)
    offloaded = mlcir.build(from_onnx(model), target, backend="blas")
    report = offloaded.partition_report
    expected = next(iter(onnx_models.reference(model, inputs).values()))
    for ex in (own, offloaded):
        np.testing.assert_allclose(ex.main(**inputs), expected, rtol=2e-3, atol=2e-3)
    calls = {"own": lambda: own.main(**inputs), "blas": lambda: offloaded.main(**inputs)}
    if numpy_of is not None:
        numpy_fn, x = numpy_of(model), next(iter(inputs.values()))
        np.testing.assert_allclose(numpy_fn(x), expected, rtol=2e-3, atol=2e-3)
        calls["numpy"] = lambda: numpy_fn(x)
    blas.set_threads(threads)
    seconds = timing.interleaved(calls, rounds=7 if best else 5, threads=threads, best=best)
    operations = sum(t.flops * t.weight for t in extract_tasks(from_onnx(model), target))
    peak = peak_gflops(threads)
    share = {k: 100 * operations / s / 1e9 / peak for k, s in seconds.items()}
    numpy_cols = (f"{seconds['numpy'] / seconds['blas']:6.2f}  {share['numpy']:5.1f}%"
                  if "numpy" in seconds else f"{'-':>6}  {'-':>6}")
    return (f"{name:<8} {threads:>2}  {len(report.offloaded):>3}  "
            f"{seconds['own'] / seconds['blas']:6.2f}  {numpy_cols}  "
            f"{share['own']:5.1f}%  {share['blas']:5.1f}%")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="mlp1,mlp64,ffn128,bert256")
    parser.add_argument("--threads", default="1,2")
    parser.add_argument("--best", action="store_true",
                        help="the fastest round instead of the median (a loaded machine)")
    args = parser.parse_args(argv)
    table = models()
    print(f"numpy's BLAS: {blas.describe()}")
    print("ratios of as-called times (own / blas: >1 = the blas backend is faster); GFLOPS as "
          "% of mlcir.peak on as many threads")
    print(f"{'model':<8} {'T':>2}  {'off':>3}  {'own/bl':>6}  {'np/bl':>6}  {'np %pk':>6}  "
          f"{'own%pk':>6}  {'bl%pk':>6}")
    for threads in (int(t) for t in args.threads.split(",")):
        for name in args.models.split(","):
            print(bench(name, table[name], threads, args.best), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
