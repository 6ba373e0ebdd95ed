"""Benchmark (issue 45): AutoTVM's four tuners on the guide's 512^3 matmul template.

    python bench/autotvm_tuners.py [--template issue|split-vec|resnet-conv] [--size 512]
                                   [--trials 32] [--no-metaschedule]

The template of docs/autotvm.md (``issue``: ``tile_y`` every divisor of 512, ``tile_x`` 1..16,
50 configs; ``split-vec``: both tiles every divisor, the inner x loop vectorized, 100 configs;
``resnet-conv``: the heaviest kernel of a ResNet basic block, 3x3 convolutions of 64 channels
at 56x56 (ResNet-50's conv2_x shape),
as ``autotvm.task.extract_from_program`` finds it, its default design space as the config
space; ``--size`` is ignored) tuned single-threaded with GridSearchTuner, RandomTuner, GATuner(pop_size=8) and
XGBTuner(plan_size=8, feature_type="knob") for ``--trials`` trials each, then the whole grid;
and, for comparison, mlcir's MetaSchedule-style search (``tune_kernel``, evolutionary, XGBoost)
of the same kernel's default design space for the same number of trials. Each row: the best
config, the GFLOPS the tuner's runner measured for it, the same config re-timed at the end in
turns with the other rows' (``--rounds`` interleaved rounds, the best of each) and that
figure's share of the peak FMA rate of one core (``mlcir.peak.peak_gflops(1)``, measured in this
process), and the tuning wall time. The machine's other load moves every figure; compare the
re-timed column of one run.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import mlcir  # noqa: E402
from mlcir import autotvm, te  # noqa: E402
from mlcir.peak import peak_gflops  # noqa: E402
from mlcir.targets import compile_module  # noqa: E402
from mlcir.tune import random_inputs  # noqa: E402

TARGET = "llvm -threads=1"


def _matmul(N: int, L: int, M: int, dtype: str):
    """The matmul both templates schedule: its schedule, block ``C``, its loops, its tensors."""
    A = te.placeholder((N, L), name="A", dtype=dtype)
    B = te.placeholder((L, M), name="B", dtype=dtype)
    k = te.reduce_axis((0, L), name="k")
    C = te.compute((N, M), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    sch = mlcir.Schedule(te.create_prim_func([A, B, C]))
    c = sch.get_block("C")
    return sch, c, sch.get_loops(c), [A, B, C]


@autotvm.template("tutorial/matmul")
def matmul(N: int, L: int, M: int, dtype: str):
    sch, c, (y, x, kk), args = _matmul(N, L, M, dtype)
    cfg = autotvm.get_config()
    cfg.define_split("tile_y", y, num_outputs=2)
    cfg.define_knob("tile_x", [1, 2, 4, 8, 16])
    yo, yi = cfg["tile_y"].apply(sch, c, y)
    xo, xi = sch.split(x, [None, cfg["tile_x"].val])
    sch.reorder(yo, xo, kk, yi, xi)
    return sch, args


@autotvm.template("bench/matmul_split_vec")
def matmul_split_vec(N: int, L: int, M: int, dtype: str):
    sch, c, (y, x, kk), args = _matmul(N, L, M, dtype)
    cfg = autotvm.get_config()
    cfg.define_split("tile_y", y, num_outputs=2)
    cfg.define_split("tile_x", x, num_outputs=2)
    yo, yi = cfg["tile_y"].apply(sch, c, y)
    xo, xi = cfg["tile_x"].apply(sch, c, x)
    sch.reorder(yo, xo, kk, yi, xi)
    sch.vectorize(xi)
    return sch, args


TEMPLATES = {"issue": "tutorial/matmul", "split-vec": "bench/matmul_split_vec"}

TUNERS = {
    "GridSearchTuner": autotvm.tuner.GridSearchTuner,
    "RandomTuner": lambda t: autotvm.tuner.RandomTuner(t, seed=0),
    "GATuner(pop_size=8)": lambda t: autotvm.tuner.GATuner(t, pop_size=8, seed=0),
    "XGBTuner(plan_size=8, knob)": lambda t: autotvm.tuner.XGBTuner(
        t, plan_size=8, feature_type="knob", seed=0),
}


def retime(mods: list, rounds: int) -> list[float]:
    """Seconds per call of each module, timed in turns: ``rounds`` rounds, each timing every
    module once (3 calls after a warm-up); the best round of each."""
    exes = [compile_module(m, target=TARGET) for m in mods]
    inputs = random_inputs(exes[0])
    best = [math.inf] * len(exes)
    for _ in range(rounds):
        for i, ex in enumerate(exes):
            best[i] = min(best[i], ex.time_evaluator("main", number=3, repeat=1,
                                                   warmup=1)(*inputs).median)
    return best


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--template", choices=[*sorted(TEMPLATES), "resnet-conv"], default="issue")
    parser.add_argument("--size", type=int, default=512)
    parser.add_argument("--trials", type=int, default=32)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--no-metaschedule", action="store_true")
    args = parser.parse_args(argv)
    n = args.size
    peak = peak_gflops(1)
    if args.template == "resnet-conv":
        from mlcir.frontend import from_onnx
        from mlcir.testing import onnx_models

        model = from_onnx(onnx_models.resnet_block(channels=64, hw=56))
        task = autotvm.task.extract_from_program(model, target=TARGET)[0]
        print(f"kernel {task.label} of a ResNet basic block (64 channels, 56x56), "
              f"{task.flop / 1e6:.1f} MFLOP")
    else:
        task = autotvm.task.create(TEMPLATES[args.template], args=(n, n, n, "float32"),
                                   target=TARGET)
        print(f"{n}^3 f32 matmul")
    print(f"{task.name}, {TARGET}, peak {peak:.1f} GFLOPS (1 core); "
          f"{len(task.config_space)} configs", flush=True)
    option = autotvm.measure_option(builder=autotvm.LocalBuilder(timeout=60),
                                    runner=autotvm.LocalRunner(number=1, repeat=2, timeout=60))
    runs = [(name, make, args.trials) for name, make in TUNERS.items()]
    if len(task.config_space) <= 1000:
        runs.append(("GridSearchTuner, whole grid", autotvm.tuner.GridSearchTuner,
                     len(task.config_space)))
    rows = []  # (name, trials, best config, tuning GFLOPS, module, seconds tuning)
    for name, make, trials in runs:
        tuner = make(task)
        start = time.time()
        tuner.tune(trials, measure_option=option)
        sch, _ = task.instantiate(tuner.best_config)
        rows.append((name, trials, repr(tuner.best_config).rsplit(",", 2)[0],
                     tuner.best_flops / 1e9, sch.mod, time.time() - start))
        print(f"{name}: {rows[-1][3]:.1f} GFLOPS, {rows[-1][5]:.0f} s", flush=True)
    if not args.no_metaschedule:
        start = time.time()
        with tempfile.TemporaryDirectory() as work:
            best = mlcir.tune.tune_kernel(task.kernel, target=TARGET, work_dir=work,
                                          max_trials=args.trials, verbose=0)
        rows.append(("MetaSchedule-style search (`tune_kernel`, default space)", args.trials,
                     "(its own space)", task.flop / best.latency / 1e9, best.mod,
                     time.time() - start))
    seconds = retime([r[4] for r in rows], args.rounds)
    print("\n| tuner | trials | best config | GFLOPS in tuning | GFLOPS re-timed in turns "
          "| % of peak | tuning time (s) |")
    print("|---|---|---|---|---|---|---|")
    for (name, trials, config, tuned, _, wall), secs in zip(rows, seconds):
        gflops = task.flop / secs / 1e9
        print(f"| {name} | {trials} | `{config}` | {tuned:.1f} | {gflops:.1f} | "
              f"{100 * gflops / peak:.1f} | {wall:.0f} |")


if __name__ == "__main__":
    main()
