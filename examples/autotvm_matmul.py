"""TVM's guide, "Optimizing operators with schedule templates and AutoTVM", in mlcir.

    python examples/autotvm_matmul.py [--size 512] [--trials 10] [--tuner random|grid|ga|xgb]

Both templates of the chapter: the basic one (two ``define_knob`` tile sizes) and the advanced
one (two ``define_split`` knobs, every divisor of the extents). Each becomes a task whose config
space is printed, is tuned with the chosen tuner (each trial logged at DEBUG level, the progress
line, the records appended to ``matmul.log``), and is built with its best config inside
``apply_history_best``, checked against numpy and timed. docs/autotvm.md is the guide.
"""

from __future__ import annotations

import argparse
import logging
import sys

import numpy as np

import mlcir
from mlcir import autotvm, te
from mlcir.tune import evaluate


def _matmul(N: int, L: int, M: int, dtype: str) -> tuple[mlcir.Schedule, list[te.Tensor]]:
    A = te.placeholder((N, L), name="A", dtype=dtype)
    B = te.placeholder((L, M), name="B", dtype=dtype)
    k = te.reduce_axis((0, L), name="k")
    C = te.compute((N, M), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    return mlcir.Schedule(te.create_prim_func([A, B, C])), [A, B, C]


@autotvm.template("tutorial/matmul_v1")
def matmul_basic(N: int, L: int, M: int, dtype: str):
    """The basic template: the tile sizes are knobs with five hand-picked candidates each."""
    sch, args = _matmul(N, L, M, dtype)
    c = sch.get_block("C")
    y, x, k = sch.get_loops(c)
    cfg = autotvm.get_config()
    cfg.define_knob("tile_y", [1, 2, 4, 8, 16])
    cfg.define_knob("tile_x", [1, 2, 4, 8, 16])
    yo, yi = sch.split(y, [None, cfg["tile_y"].val])
    xo, xi = sch.split(x, [None, cfg["tile_x"].val])
    sch.reorder(yo, xo, k, yi, xi)
    return sch, args


@autotvm.template("tutorial/matmul")
def matmul(N: int, L: int, M: int, dtype: str):
    """The advanced template: every split of y and x (``define_split``), and the inner x tile
    vectorized."""
    sch, args = _matmul(N, L, M, dtype)
    c = sch.get_block("C")
    y, x, k = sch.get_loops(c)
    cfg = autotvm.get_config()
    cfg.define_split("tile_y", y, num_outputs=2)
    cfg.define_split("tile_x", x, num_outputs=2)
    yo, yi = cfg["tile_y"].apply(sch, c, y)
    xo, xi = cfg["tile_x"].apply(sch, c, x)
    sch.reorder(yo, xo, k, yi, xi)
    sch.vectorize(xi)
    return sch, args


TUNERS = {"random": autotvm.tuner.RandomTuner, "grid": autotvm.tuner.GridSearchTuner,
          "ga": lambda task: autotvm.tuner.GATuner(task, pop_size=8),
          "xgb": lambda task: autotvm.tuner.XGBTuner(task, plan_size=8, feature_type="knob")}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=512)
    parser.add_argument("--trials", type=int, default=10)
    parser.add_argument("--tuner", choices=sorted(TUNERS), default="random")
    parser.add_argument("--log", default="matmul.log")
    args = parser.parse_args(argv)
    n = args.size
    logging.getLogger("autotvm").setLevel(logging.DEBUG)
    logging.getLogger("autotvm").addHandler(logging.StreamHandler(sys.stdout))

    a = np.random.default_rng(0).uniform(size=(n, n)).astype(np.float32)
    b = np.random.default_rng(1).uniform(size=(n, n)).astype(np.float32)
    for template in (matmul_basic, matmul):
        task = autotvm.task.create(template.task_name, args=(n, n, n, "float32"),
                                   target="llvm -threads=1")
        print(task.config_space)
        option = autotvm.measure_option(builder="local", runner=autotvm.LocalRunner(number=5))
        tuner = TUNERS[args.tuner](task)
        tuner.tune(n_trial=args.trials, measure_option=option,
                   callbacks=[autotvm.callback.log_to_file(args.log),
                              autotvm.callback.progress_bar(args.trials)])
        with autotvm.apply_history_best(args.log):
            sch, _ = template(n, n, n, "float32")
        np.testing.assert_allclose(mlcir.build(sch.mod, target="llvm -threads=1").main(a, b),
                                   a @ b, rtol=1e-4)
        seconds = evaluate(sch, target="llvm -threads=1")
        print(f"{template.task_name}: best config {tuner.best_config}, checked against numpy, "
              f"{seconds * 1e3:.3f} ms ({task.flop / seconds / 1e9:.1f} GFLOPS)\n")
        print(sch.trace)


if __name__ == "__main__":
    main()
