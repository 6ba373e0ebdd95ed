"""Benchmark (issue 4): the default design space tuned with 64 trials, next to numpy.

    python bench/tune_matmul.py [--sizes 128,512,1024,mlp] [--trials 64] [--threads 1,2]

For each problem (float32 matmul NxNxN, and the MLP's first linear layer 1x784 @ 784x128):
the untuned kernel, the kernel tuned with random search and with evolutionary search (XGBoost
cost model), each timed in turns with numpy (same thread count, same 64-byte-aligned arrays)
right after it is built: ``ex.main(a, b)`` against ``a @ b`` (as called, a new output each
call), and the prepared call against ``np.matmul(a, b, out=out)`` (compiled code). Reports
latency, GFLOPS, the ratios to numpy, tuning wall time and trials per minute, and how well the
cost model ranks held-out candidates (Spearman correlation and top-5 recall, averaged over 5
random 70/30 splits of the random-search run's records — an unbiased sample of the space; the
evolutionary run's late records are all near the best). numpy runs with its best kernel
(``OPENBLAS_CORETYPE``/``OPENBLAS_L2_SIZE`` removed in this process), printed first.
Run it alone: other processes distort the timings and the thread scaling.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time

for _name in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE"):  # before numpy loads (MLIR notes)
    os.environ.pop(_name, None)

import numpy as np  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import mlcir
from mlcir.runtime import aligned_array, aligned_empty
from mlcir.testing import blas, kernels, timing
from mlcir.tune import Database, tune_kernel
from mlcir.tune.cost_model import XGBModel, ranking_quality

PROBLEMS = {"128": (128, 128, 128), "512": (512, 512, 512), "1024": (1024, 1024, 1024),
            "mlp": (1, 128, 784)}


def model_quality(work_dir: str, splits: int = 5) -> dict[str, float]:
    records = [r for r in Database(work_dir).records() if r.ok and r.features]
    if len(records) < 16:
        return {}
    scores: dict[str, list[float]] = {"spearman": [], "top_k_recall": []}
    for seed in range(splits):
        order = np.random.default_rng(seed).permutation(len(records))
        cut = int(len(records) * 0.7)
        train, held = [records[i] for i in order[:cut]], [records[i] for i in order[cut:]]
        model = XGBModel(seed=0)
        model.update("w", [r.features for r in train], [r.mean_secs for r in train])
        q = ranking_quality(model.predict([r.features for r in held]), [r.mean_secs for r in held])
        for key in scores:
            scores[key].append(q[key])
    return {key: float(np.mean(v)) for key, v in scores.items()}


def run(problem: str, trials: int, threads: int, work_root: str) -> list[dict]:
    m, n, k = PROBLEMS[problem]
    text, _ = kernels.matmul(m, n, k)
    flops = 2.0 * m * n * k
    rng = np.random.default_rng(0)
    a = aligned_array(rng.standard_normal((m, k)).astype(np.float32))
    b = aligned_array(rng.standard_normal((k, n)).astype(np.float32))
    out = aligned_empty((m, n), np.float32)
    ref = a @ b
    target = f"llvm -threads={threads}"
    rows = []
    blas.set_threads(threads)

    def timed(mod, variant: str, extra: dict) -> None:
        """Build ``mod`` and time it in turns with numpy, as called and as compiled code."""
        ex = mlcir.build(mod, target=target)
        ex.set_num_threads(threads)
        call, prepared = timing.mlcir_calls(ex["main"], a, b)
        got = ex["main"](a, b)
        err = float(np.abs(got - ref).max() / np.abs(ref).max())
        assert err < 1e-4, f"{variant}: wrong result ({err})"
        secs = timing.interleaved({"numpy": lambda: a @ b, "main": call,
                                   "numpy_out": lambda: np.matmul(a, b, out=out),
                                   "prepared": prepared}, best=True, budget_s=0.1,
                                  threads=threads)
        rows.append({"problem": problem, "threads": threads, "variant": variant, **secs,
                     **extra})

    timed(mlcir.Schedule(text).mod, "untuned", {})
    for strategy in ("random", "evolutionary"):
        work_dir = os.path.join(work_root, f"{problem}-{threads}-{strategy}")
        shutil.rmtree(work_dir, ignore_errors=True)
        start = time.perf_counter()
        best = tune_kernel(text, target=target, work_dir=work_dir, max_trials=trials,
                           strategy=strategy, seed=0, verbose=0)
        wall = time.perf_counter() - start
        extra = {"tune_s": wall, "trials_per_min": trials / wall * 60}
        if strategy == "random":
            extra.update({f"model_{k}": v for k, v in model_quality(work_dir).items()})
        timed(best.mod, f"tuned-{strategy}", extra)
    return [dict(r, gflops=flops / r["prepared"] / 1e9) for r in rows]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="128,512,1024,mlp")
    parser.add_argument("--trials", type=int, default=64)
    parser.add_argument("--threads", default="1,2")
    parser.add_argument("--work-dir", default=None)
    args = parser.parse_args(argv)
    work_root = args.work_dir or tempfile.mkdtemp(prefix="mlcir-tune-bench-")
    print(f"numpy BLAS: {blas.describe()}; CPUs: {os.cpu_count()}; trials: {args.trials}")
    print(f"{'':>8} {'':>3} {'':<20} | {'as called (ms)':<28} | {'compiled code (ms)':<37} |")
    print(f"{'problem':>8} {'thr':>3} {'variant':<20} | {'numpy':>9} {'mlcir':>9} {'ratio':>7} | "
          f"{'numpy':>9} {'mlcir':>9} {'GFLOPS':>8} {'ratio':>7} | {'tune s':>7} "
          f"{'trials/min':>10} {'spearman':>8} {'top5':>5}")
    for problem in args.sizes.split(","):
        for threads in (int(t) for t in args.threads.split(",")):
            for r in run(problem, args.trials, threads, work_root):
                print(f"{r['problem']:>8} {r['threads']:>3} {r['variant']:<20} | "
                      f"{r['numpy'] * 1e3:>9.3f} {r['main'] * 1e3:>9.3f} "
                      f"{r['numpy'] / r['main']:>6.2f}x | {r['numpy_out'] * 1e3:>9.3f} "
                      f"{r['prepared'] * 1e3:>9.3f} {r['gflops']:>8.1f} "
                      f"{r['numpy_out'] / r['prepared']:>6.2f}x | "
                      f"{r.get('tune_s', float('nan')):>7.1f} "
                      f"{r.get('trials_per_min', float('nan')):>10.1f} "
                      f"{r.get('model_spearman', float('nan')):>8.2f} "
                      f"{r.get('model_top_k_recall', float('nan')):>5.2f}", flush=True)
    print("ratio: numpy time / mlcir time (above 1: mlcir is faster), each pair timed in turns "
          "right after the kernel was built (best of 5 rounds). As called: ex.main(a, b) against "
          "a @ b; compiled code: the prepared call against np.matmul(a, b, out=out).")


if __name__ == "__main__":
    main()
