"""A small tuning study, end to end: how fast do search strategies and cost models find good
schedules? (docs/tuning.md, "Study tuning runs").

    python examples/tuning_study.py [--trials 32] [--seeds 3] [--kernels matmul,conv]
                                    [--size small|medium] [--threads 1] [--out tuning_study]

For each kernel (a matmul and a convolution), each configuration and each seed, the kernel is
tuned from scratch in its own work dir (``OUT/work/<kernel>/<config>/seed<N>``, each with its
``run.json``); the configurations are

- ``random``: random search (it never consults a cost model);
- ``evolutionary, random model``: evolutionary search ranking by noise (no cost model);
- ``evolutionary, xgb``: evolutionary search with the XGBoost cost model (mlcir's default).

It writes ``OUT/study.png``: the best latency so far against trials, the median over seeds as
a line and the min-max band, one panel per kernel; ``OUT/study.csv`` with those curves; and the
full ``mlcir report`` of each kernel's runs in ``OUT/report-<kernel>/`` (every trial as a CSV
row, the per-run curves, the cost model's predictions). The default (2 kernels x 3
configurations x 3 seeds x 32 trials) takes a few minutes; ``--size medium --trials 200
--seeds 5`` is a study worth plotting on a quiet machine (timings are meaningless on a loaded
one). Re-running with the same ``--out`` resumes the runs (their databases are kept).
"""

from __future__ import annotations

import argparse
import csv
import os
import sys
from pathlib import Path

for _name in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE"):  # numpy's best kernel (MLIR notes)
    os.environ.pop(_name, None)

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import mlcir
from mlcir.testing import kernels
from mlcir.tune import tune_kernel
from mlcir.tune.report import load_run

CONFIGS = {"random": ("random", "random"),
           "evolutionary, random model": ("evolutionary", "random"),
           "evolutionary, xgb": ("evolutionary", "xgb")}
SIZES = {"small": {"matmul": (128, 128, 128), "conv": (1, 16, 18, 18, 32, 3, 3)},
         "medium": {"matmul": (512, 512, 512), "conv": (1, 64, 58, 58, 64, 3, 3)}}


def kernel_text(kernel: str, size: str) -> str:
    shape = SIZES[size][kernel]
    text, _ = kernels.matmul(*shape) if kernel == "matmul" else kernels.conv2d(*shape)
    return text


def best_so_far(work_dir: Path, trials: int) -> np.ndarray:
    """Best latency (us) after each of the first ``trials`` trials (NaN before a success;
    the last value carried on if the run stopped early)."""
    curve = np.full(trials, np.nan)
    for t in load_run(work_dir).trials:
        if t.trial < trials and np.isfinite(t.best_so_far):
            curve[t.trial] = t.best_so_far * 1e6
    for i in range(1, trials):
        if np.isnan(curve[i]):
            curve[i] = curve[i - 1]
    return curve


def run_study(args: argparse.Namespace) -> dict[tuple[str, str], np.ndarray]:
    """Tune every (kernel, configuration, seed); the curves, seeds as rows."""
    curves: dict[tuple[str, str], np.ndarray] = {}
    for kernel in args.kernels:
        with mlcir.make_context():
            module = mlcir.parse(kernel_text(kernel, args.size))
        dirs = []
        for config in args.configs:
            strategy, model = CONFIGS[config]
            rows = []
            for seed in range(args.seeds):
                work = args.out / "work" / kernel / config.replace(", ", "-").replace(" ", "_") \
                    / f"seed{seed}"
                print(f"{kernel}: {config}, seed {seed} -> {work}", flush=True)
                tune_kernel(module, target=f"llvm -threads={args.threads}", work_dir=work,
                            max_trials=args.trials, strategy=strategy, cost_model=model,
                            num_trials_per_iter=args.per_round, seed=seed, verbose=0,
                            builders=args.builders, name=kernel)
                rows.append(best_so_far(work, args.trials))
                dirs.append(work)
            curves[kernel, config] = np.vstack(rows)
        mlcir.tune.report(dirs, args.out / f"report-{kernel}")
    return curves


def plot(curves: dict[tuple[str, str], np.ndarray], args: argparse.Namespace) -> Path:
    from matplotlib.figure import Figure

    fig = Figure(figsize=(4.6 * len(args.kernels), 3.4), dpi=80, layout="constrained")
    x = np.arange(1, args.trials + 1)
    for i, kernel in enumerate(args.kernels):
        ax = fig.add_subplot(1, len(args.kernels), i + 1)
        for j, config in enumerate(args.configs):
            seeds = curves[kernel, config]
            if np.isnan(seeds).all():
                continue
            with np.errstate(all="ignore"):
                low, mid, high = (np.nanmin(seeds, 0), np.nanmedian(seeds, 0),
                                  np.nanmax(seeds, 0))
            ax.fill_between(x, low, high, step="post", alpha=0.2, color=f"C{j}", linewidth=0)
            ax.step(x, mid, where="post", color=f"C{j}", label=config)
        ax.set_title(f"{kernel} {'x'.join(map(str, SIZES[args.size][kernel]))}", fontsize=9)
        ax.set_xlabel("trials")
        ax.set_ylabel("best latency so far (us)")
        ax.set_yscale("log")
        ax.grid(alpha=0.3, which="both")
        ax.legend(fontsize=7)
    fig.suptitle(f"median and min-max over {args.seeds} seeds, llvm -threads={args.threads}",
                 fontsize=9)
    path = args.out / "study.png"
    fig.savefig(path)
    return path


def write_csv(curves: dict[tuple[str, str], np.ndarray], path: Path) -> None:
    with open(path, "w", newline="") as f:
        out = csv.writer(f)
        out.writerow(["kernel", "config", "seed", "trial", "best_latency_us"])
        for (kernel, config), seeds in curves.items():
            for seed, row in enumerate(seeds):
                for trial, value in enumerate(row, start=1):
                    out.writerow([kernel, config, seed, trial, "" if np.isnan(value) else value])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trials", type=int, default=32, help="trials per run (default: 32)")
    parser.add_argument("--seeds", type=int, default=3, help="seeds per configuration (default: 3)")
    parser.add_argument("--per-round", type=int, default=8,
                        help="candidates per search round (default: 8)")
    parser.add_argument("--kernels", default="matmul,conv",
                        help="comma-separated: matmul, conv (default: both)")
    parser.add_argument("--configs", default=",".join(CONFIGS).replace(", ", "/"),
                        help="comma-separated, among: " + ", ".join(c.replace(", ", "/")
                                                                   for c in CONFIGS))
    parser.add_argument("--size", choices=tuple(SIZES), default="small",
                        help="problem sizes (default: small)")
    parser.add_argument("--threads", type=int, default=1, help="threads (default: 1)")
    parser.add_argument("--builders", type=int, default=1, help="builder processes (default: 1)")
    parser.add_argument("--out", type=Path, default=Path("tuning_study"),
                        help="output folder (default: ./tuning_study)")
    args = parser.parse_args()
    args.kernels = [k for k in args.kernels.split(",") if k]
    args.configs = [c.replace("/", ", ") for c in args.configs.split(",") if c]
    for name, allowed in (("kernel", SIZES["small"]), ("config", CONFIGS)):
        wrong = [v for v in getattr(args, name + "s") if v not in allowed]
        if wrong:
            parser.error(f"unknown {name} {wrong[0]!r} (choose from {', '.join(allowed)})")
    args.out.mkdir(parents=True, exist_ok=True)
    curves = run_study(args)
    write_csv(curves, args.out / "study.csv")
    print(f"wrote {plot(curves, args)}, {args.out / 'study.csv'} and the reports "
          f"{', '.join(str(args.out / f'report-{k}') for k in args.kernels)}")


if __name__ == "__main__":
    main()
