"""Benchmark (issues 5 and 13): whole ONNX models at deployed sizes, mlcir untuned (default
schedules) and naive (``schedule="none"``), next to onnxruntime; a 1024^3 matmul next to numpy.

    python bench/models.py [--models stem,bottleneck,...] [--threads 1,2] [--trials N]

Models: ``stem`` (ResNet-50's 7x7/2 convolution and max pool at 224x224), ``bottleneck``
(ResNet-50, 256 channels at 56x56), ``basic_block`` (64 channels at 56x56), ``mobilenet_v2``
(two inverted-residual blocks, 24 channels at 56x56), ``bert256`` (a BERT-like encoder layer,
128 tokens, width 256, 4 heads), ``mlp1``, ``mlp64``, ``cnn`` (MNIST), ``matmul1024``; and the
small ``resnet`` and ``transformer`` of the tuned figures in docs/measurements/.

For each model (mlcir.testing.onnx_models, fixed seeds) and each thread count: the
import+compile time with default schedules and without (``schedule="none"``), then two
comparisons, timed in turns in this process on the same inputs (median of rounds):

- **as called**: ``ex.main(**inputs)`` (mlcir untuned, naive, and tuned with ``--trials``)
  against ``session.run(None, inputs)`` (onnxruntime, the same intra-op threads): what a user
  sees, and the ratio that counts;
- **compiled code**: mlcir's prepared call (arguments packed once, outputs reused) against
  onnxruntime's ``run_with_iobinding`` on buffers bound once.

The summary gives, per thread count, the geometric mean of onnxruntime / mlcir untuned (as
called) and the lowest model. Whether 2 threads are slower than 1 is measured apart: both
builds of a model timed in turns in one process (no onnxruntime pool between them); a model
whose default schedules run nothing parallel at 2 threads has the same code at both (two
builds of the same code differ by up to 25% on this clock), so only the others can be slower. ``matmul1024``
times a plain 1024^3 f32 matmul untuned against numpy's ``a @ b`` (OpenBLAS with the same
threads, its best kernel: the OpenBLAS overrides are removed before numpy loads).

Each row also gives the GFLOPS of the untuned compiled code (the model's kernels' operations,
:func:`mlcir.tune.tasks.flops`, counted as direct convolution: effective GFLOPS where a 3x3
convolution is Winograd, which can pass 100%) and its share of the machine's peak on as many
threads (bench/peak.py, measured once). Every mlcir output is checked against onnxruntime
(numpy) first. Run it alone: other processes
distort the timings.
"""

from __future__ import annotations

import argparse
import functools
import math
import os
import shutil
import sys
import tempfile
import time
from typing import Any, Callable

for _name in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE"):  # before numpy loads (MLIR notes)
    os.environ.pop(_name, None)

import numpy as np  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import mlcir  # noqa: E402
from mlcir.frontend import from_onnx  # noqa: E402
from mlcir.passes.layout_chains import set_module_layout  # noqa: E402
from mlcir.testing import blas, timing  # noqa: E402
from mlcir.testing import onnx_models as om  # noqa: E402
from mlcir.tune.tasks import extract_tasks  # noqa: E402

import peak  # noqa: E402

Model = Callable[[], "tuple[Any, dict[str, np.ndarray]]"]

MODELS: dict[str, Model] = {
    "stem": lambda: (om.resnet50_stem(), om.resnet50_stem_inputs()),
    "bottleneck": lambda: (om.resnet50_bottleneck(), om.resnet50_bottleneck_inputs()),
    "basic_block": lambda: (om.resnet_basic_block(), om.resnet_basic_block_inputs()),
    "mobilenet_v2": lambda: (om.mobilenet_v2_blocks(), om.mobilenet_v2_blocks_inputs()),
    "bert256": lambda: (om.bert_encoder_layer(width=256, heads=4),
                        om.bert_encoder_layer_inputs(width=256)),
    "mlp1": lambda: (om.mlp(batch=1), om.mlp_inputs(batch=1)),
    "mlp64": lambda: (om.mlp(batch=64), om.mlp_inputs(batch=64)),
    "cnn": lambda: (om.mnist_cnn(), om.mnist_cnn_inputs()),
}
DEFAULT_MODELS = list(MODELS)
MODELS.update({  # the small models of issue 5's figures (docs/measurements/)
    "resnet": lambda: (om.resnet_block(), om.resnet_block_inputs()),
    "transformer": lambda: (om.transformer_encoder(), om.transformer_encoder_inputs()),
})
MATMUL = "matmul1024"


# ``--layout none`` builds (and tunes) without graph-pack-weights and graph-layout-nchwc: the
# "before" of the layout figures.
LAYOUT = "packed"


def _build(model: Any, target: str, schedule: str) -> tuple[Any, float]:
    """The executable of ``model`` and its import+compile seconds."""
    start = time.perf_counter()
    ex = mlcir.build(from_onnx(model), target=target, schedule=schedule, layout=LAYOUT)
    return ex, time.perf_counter() - start


def add_layout_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--layout", choices=("packed", "direct", "none"), default="packed",
                        help="direct: 3x3 convolutions without Winograd (graph-winograd); "
                             "none: without packed weights and the NCHWc layout (the "
                             "figures before them)")


def set_layout(layout: str) -> None:
    global LAYOUT
    LAYOUT = layout


def _check(ex: Any, inputs: dict[str, np.ndarray], expected: list[np.ndarray]) -> None:
    got = ex.main(**inputs)
    got = got if isinstance(got, tuple) else (got,)
    for g, e in zip(got, expected):
        np.testing.assert_allclose(g, e, rtol=1e-3, atol=1e-4)


def bench_model(name: str, threads: int, trials: int) -> dict:
    model, inputs = MODELS[name]()
    expected = list(om.reference(model, inputs).values())
    target = f"llvm -threads={threads}"
    untuned, compile_s = _build(model, target, "default")
    naive, naive_compile_s = _build(model, target, "none")
    executables = {"untuned": untuned, "naive": naive}
    tune_s = None
    if trials:
        work = tempfile.mkdtemp(prefix=f"mlcir-bench-{name}-")
        try:
            start = time.perf_counter()
            module = from_onnx(model)
            set_module_layout(module, LAYOUT)
            db = mlcir.tune.tune_module(module, target=target, work_dir=work,
                                        max_trials_global=trials, num_trials_per_iter=8,
                                        verbose=0)
            tune_s = time.perf_counter() - start
            executables["tuned"] = mlcir.build(module, target=target, records=db,
                                               layout=LAYOUT)
        finally:
            shutil.rmtree(work, ignore_errors=True)
    for ex in executables.values():
        _check(ex, inputs, expected)
    ort_run, ort_bound = timing.onnxruntime_calls(timing.onnxruntime_session(model, threads),
                                                  inputs)
    calls: dict[str, Callable[[], Any]] = {"ort_run": ort_run, "ort_bound": ort_bound}
    for label, ex in executables.items():
        args = [inputs[a.name] for a in ex["main"].signature.args]
        _, prepared = timing.mlcir_calls(ex["main"], *args)
        calls[f"{label}_main"] = lambda ex=ex: ex.main(**inputs)
        calls[f"{label}_prepared"] = prepared
    seconds = timing.interleaved(calls, threads=threads)
    return {"model": name, "threads": threads, "compile_s": compile_s, "flops": model_flops(name),
            "naive_compile_s": naive_compile_s, "tune_s": tune_s,
            **{f"{key}_us": value * 1e6 for key, value in seconds.items()}}


def bench_matmul(threads: int) -> dict:
    """A plain 1024^3 f32 matmul, untuned, against numpy (OpenBLAS with ``threads``)."""
    n = 1024
    model = om.single_op("MatMul", [[n, n], [n, n]])
    rng = np.random.default_rng(0)
    a, b = (rng.standard_normal((n, n)).astype(np.float32) for _ in range(2))
    ex, compile_s = _build(model, f"llvm -threads={threads}", "default")
    np.testing.assert_allclose(ex.main(a, b), a @ b, rtol=1e-3, atol=1e-2)
    blas.set_threads(threads)
    seconds = timing.interleaved({"numpy": lambda: a @ b, "untuned": lambda: ex.main(a, b)},
                                 threads=threads)
    return {"threads": threads, "compile_s": compile_s,
            **{f"{key}_us": value * 1e6 for key, value in seconds.items()}}


@functools.cache
def model_tasks(name: str, layout: str = "packed") -> list[Any]:
    """The kernels of model ``name`` built with ``layout`` (imported and extracted once per
    process)."""
    module = from_onnx(MODELS[name]()[0])
    set_module_layout(module, layout)
    return extract_tasks(module)


def model_flops(name: str) -> float:
    """Operations of one inference as the model states them: each kernel's (2 per
    multiply-add of a reduction, 1 per element else, :func:`mlcir.tune.tasks.flops`) times
    the calls of it, with direct convolutions (``layout="direct"``). A Winograd convolution
    (graph-winograd) executes a quarter of its multiplications, so its "effective" rate may
    pass the FMA peak: the distance to the direct-convolution roof."""
    return sum(task.flops * task.weight for task in model_tasks(name, "direct"))


def parallel_kernels(name: str, threads: int) -> list[str]:
    """The kernels whose default schedule at ``threads`` has a parallel loop: with none, the
    build is the 1-thread build (the same code), so it cannot be slower."""
    target = f"llvm -threads={threads}"
    return [task.name for task in model_tasks(name)
            if any(inst.kind.name == "parallel"
                   for inst in mlcir.tune.default_schedule(task.module, target).trace.insts)]


def compare_threads(name: str) -> dict:
    """mlcir untuned at 1 and at 2 threads, timed in turns in this process (the fair test of
    "2 threads are never slower than 1": both builds see the same machine, and no
    onnxruntime pool runs between them), and the kernels that run parallel at 2 threads."""
    model, inputs = MODELS[name]()
    executables = {t: _build(model, f"llvm -threads={t}", "default")[0] for t in (1, 2)}
    calls = {f"t{t}": (lambda ex=ex: ex.main(**inputs)) for t, ex in executables.items()}
    seconds = timing.interleaved(calls, rounds=9, budget_s=0.05, threads=2)
    return {"model": name, "t1_us": seconds["t1"] * 1e6, "t2_us": seconds["t2"] * 1e6,
            "parallel": parallel_kernels(name, 2)}


HEADER = (f"{'':<13}{'':>3} {'compile s':>11} | {'as called: ex.main vs session.run (us)':<47} | "
          f"{'compiled code (us)':<27} | {'untuned':<12}\n"
          f"{'model':<13}{'thr':>3} {'dflt':>5} {'none':>5} | "
          f"{'ort':>8} {'untuned':>8} {'naive':>8} {'tuned':>8} {'ort/unt':>7} {'ort/tun':>7} | "
          f"{'ort iob':>8} {'untuned':>8} {'ort/unt':>7} | {'GFLOPS':>6} {'%peak':>5}")


def measure_peaks(thread_counts: list[int]) -> None:
    """Measure the FMA peak (bench/peak.py) for each thread count first, in a quiet process:
    measured between the models, one run's two-thread peak came out at the one-thread figure
    (the %peak column read 177%)."""
    for threads in thread_counts:
        peak.peak_gflops(threads)


def row(r: dict) -> str:
    tuned = r.get("tuned_main_us")
    gflops = r["flops"] / r["untuned_prepared_us"] / 1e3
    return (f"{r['model']:<13}{r['threads']:>3} {r['compile_s']:>5.2f} "
            f"{r['naive_compile_s']:>5.2f} | {r['ort_run_us']:>8.1f} "
            f"{r['untuned_main_us']:>8.1f} {r['naive_main_us']:>8.1f} "
            + (f"{tuned:>8.1f} " if tuned else f"{'-':>8} ")
            + f"{r['ort_run_us'] / r['untuned_main_us']:>6.2f}x "
            + (f"{r['ort_run_us'] / tuned:>6.2f}x" if tuned else f"{'-':>7}")
            + f" | {r['ort_bound_us']:>8.1f} {r['untuned_prepared_us']:>8.1f} "
              f"{r['ort_bound_us'] / r['untuned_prepared_us']:>6.2f}x"
            + f" | {gflops:>6.1f} {100 * gflops / peak.peak_gflops(r['threads']):>4.0f}%")


def summary(results: list[dict]) -> list[str]:
    """Per thread count: the geometric mean and the lowest ratio (untuned, as called); the
    models where 2 threads were slower than 1."""
    lines = []
    for threads in sorted({r["threads"] for r in results}):
        ratios = {r["model"]: r["ort_run_us"] / r["untuned_main_us"]
                  for r in results if r["threads"] == threads}
        geomean = math.exp(sum(map(math.log, ratios.values())) / len(ratios))
        worst = min(ratios, key=ratios.get)
        lines.append(f"{threads} thread(s): untuned geometric mean onnxruntime/mlcir "
                     f"{geomean:.2f}x over {len(ratios)} model(s); lowest {worst} "
                     f"{ratios[worst]:.2f}x")
    return lines


def threads_summary(comparisons: list[dict]) -> list[str]:
    """The 1-against-2-threads comparison, and the models slower on 2 threads: only a model
    with parallel kernels can be (without, both builds are the same code, and what the clock
    shows between two builds of the same code is noise: up to 25% here)."""
    lines = ["mlcir untuned, 1 against 2 threads, timed in turns (us, speed-up, parallel "
             "kernels at 2 threads):"]
    lines += [f"  {c['model']:<13} {c['t1_us']:>9.1f} {c['t2_us']:>9.1f} "
              f"{c['t1_us'] / c['t2_us']:>6.2f}x  {len(c['parallel'])}" for c in comparisons]
    slower = [c["model"] for c in comparisons if c["parallel"] and c["t2_us"] > c["t1_us"]]
    lines.append("2 threads slower than 1 (models with parallel kernels): "
                 + (", ".join(slower) or "none"))
    return lines


FOOTER = ("ratios: onnxruntime latency / mlcir latency (above 1: mlcir is faster). untuned: "
          "default schedules; naive: schedule=\"none\"; compile s: import + compile with "
          "default schedules (dflt) and without (none); GFLOPS: the model's operations "
          "counted as direct convolution (effective, for Winograd convolutions) per second of "
          "the untuned compiled code, %peak: against bench/peak.py's FMA loop on as many "
          "threads.")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--models", default=",".join([*DEFAULT_MODELS, MATMUL]),
                        help=f"comma-separated, of {', '.join([*MODELS, MATMUL])} (default: "
                             "all but resnet and transformer)")
    parser.add_argument("--threads", default="1,2", help="comma-separated thread counts")
    parser.add_argument("--trials", type=int, default=0,
                        help="also tune each model with this many trials (default: 0, no "
                             "tuning)")
    add_layout_argument(parser)
    args = parser.parse_args()
    set_layout(args.layout)
    names = args.models.split(",")
    unknown = sorted(set(names) - {*MODELS, MATMUL})
    if unknown:
        parser.error(f"unknown model(s): {', '.join(unknown)}")
    thread_counts = [int(t) for t in args.threads.split(",")]
    measure_peaks(thread_counts)
    results = []
    if set(names) - {MATMUL}:
        print(HEADER)
        for name in names:
            if name == MATMUL:
                continue
            for threads in thread_counts:
                results.append(bench_model(name, threads, args.trials))
                print(row(results[-1]), flush=True)
        print(FOOTER)
        for line in summary(results):
            print(line)
        if {1, 2} <= set(thread_counts):
            comparisons = [compare_threads(name) for name in names if name != MATMUL]
            for line in threads_summary(comparisons):
                print(line)
    if MATMUL in names:
        print(f"\n{MATMUL}: numpy's BLAS: {blas.describe()}")
        for threads in thread_counts:
            r = bench_matmul(threads)
            print(f"  {threads} thread(s): numpy {r['numpy_us']:.0f} us, mlcir untuned "
                  f"{r['untuned_us']:.0f} us (numpy/mlcir {r['numpy_us'] / r['untuned_us']:.2f}x,"
                  f" compile {r['compile_s']:.2f} s)", flush=True)


if __name__ == "__main__":
    main()
