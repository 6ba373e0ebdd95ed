"""Benchmark (issue 3): float32 matmul, unscheduled, the course's schedule_mm, and a hand
schedule written with mlcir's primitives, next to numpy measured in the same run.

    python bench/schedule_matmul.py [--sizes 128,512,1024] [--repeat 5]

Run it alone: other processes on the two cores distort timings and thread scaling. Each
variant is timed in turns with numpy (``np.matmul(a, b, out=out)``, the same thread count)
right after it is built: the best of ``--repeat`` rounds, each the mean of several calls, on
64-byte-aligned arrays. Both sides are compiled code with the output given (mlcir: a prepared
call; at these sizes a call's Python overhead is below 0.1%). numpy's thread count is set
through its OpenBLAS in this process; it runs with its best kernel (``OPENBLAS_CORETYPE`` and
``OPENBLAS_L2_SIZE`` removed here), printed first.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

for _name in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE"):  # before numpy loads (MLIR notes)
    os.environ.pop(_name, None)

import numpy as np  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import mlcir
from mlcir.runtime import aligned_array, aligned_empty
from mlcir.testing import blas, kernels, timing

# Hand-schedule tile sizes per problem size: (ib, jb, kb, outer loop order). Found with the
# schedule prototype's sweep on this machine (docs/schedules.md); the register tile is 8x32.
SERIAL = {128: (64, 64, 128, "ijk"), 512: (256, 512, 128, "ijk"), 1024: (128, 512, 64, "kji")}
PARALLEL = {128: (64, 64, 128, "ijk"), 512: (256, 512, 128, "ijk"), 1024: (64, 128, 64, "ikj")}


def schedule_mm(sch: mlcir.Schedule, jfactor: int = 4) -> None:
    """The course's schedule: split j by 4, reorder, decompose the reduction."""
    c = sch.get_block("C", func_name="main")
    i, j, k = sch.get_loops(c)
    j0, j1 = sch.split(j, factors=[None, jfactor])
    sch.reorder(i, j0, k, j1)
    sch.decompose_reduction(c, k)


def hand_schedule(sch: mlcir.Schedule, ib: int, jb: int, kb: int, order: str,
                  parallel: bool) -> None:
    """Cache tiles (ib, jb, kb) around an 8x32 register tile, k stepped by one inside the
    register tile's loops; the register tile vectorized, k unrolled by 4, the outer i tiles
    parallel on request."""
    c = sch.get_block("C", func_name="main")
    i, j, k = sch.get_loops(c)
    i0, i1, i2 = sch.split(i, [None, ib // 8, 8])
    j0, j1, j2 = sch.split(j, [None, jb // 32, 32])
    k0, k1 = sch.split(k, [None, kb])
    outer = {"i": i0, "j": j0, "k": k0}
    sch.reorder(*(outer[x] for x in order), i1, j1, k1, i2, j2)
    if parallel:
        sch.parallel(i0)
    sch.vectorize(i2)
    sch.unroll(k1, factor=4)


def gflops(n: int, seconds: float) -> float:
    return 2.0 * n ** 3 / seconds / 1e9


def bench_size(n: int, repeat: int) -> list[dict]:
    text, _ = kernels.matmul(n, n, n)
    rng = np.random.default_rng(0)
    a = aligned_array(rng.standard_normal((n, n)).astype(np.float32))
    b = aligned_array(rng.standard_normal((n, n)).astype(np.float32))
    out = aligned_empty((n, n), np.float32)
    ref = a @ b
    rows = []

    def add(variant: str, sch: mlcir.Schedule, threads_list: tuple[int, ...], target: str = "llvm"):
        start = time.perf_counter()
        ex = mlcir.build(sch.mod, target=target)
        build_s = time.perf_counter() - start
        got = ex.main(a, b, out)
        err = float(np.abs(got - ref).max() / np.abs(ref).max())
        assert err < 1e-4, f"{variant} at {n}: wrong result (relative error {err})"
        call, _ = ex["main"].prepare(a, b, out)  # checked and packed once, as time_evaluator does
        slow = variant == "unscheduled" and n >= 1024
        for threads in threads_list:
            ex.set_num_threads(threads)
            blas.set_threads(threads)
            secs = timing.interleaved({"numpy": lambda: np.matmul(a, b, out=out),
                                       "mlcir": call}, rounds=1 if slow else repeat,
                                      budget_s=0.2, best=True, threads=threads)
            rows.append({"size": n, "variant": variant, "threads": threads,
                         "ms": secs["mlcir"] * 1e3, "gflops": gflops(n, secs["mlcir"]),
                         "numpy_ms": secs["numpy"] * 1e3, "ratio": secs["numpy"] / secs["mlcir"],
                         "build_s": build_s})

    add("unscheduled", mlcir.Schedule(text), (1,))
    sch = mlcir.Schedule(text)
    schedule_mm(sch)
    add("schedule_mm", sch, (1,))
    sch = mlcir.Schedule(text)
    hand_schedule(sch, *SERIAL[n], parallel=False)
    add("hand", sch, (1,))
    sch = mlcir.Schedule(text)
    hand_schedule(sch, *PARALLEL[n], parallel=True)
    add("hand-parallel", sch, (1, 2))
    return rows


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="128,512,1024")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--json", default=None, help="also write the rows to this file")
    args = parser.parse_args(argv)
    print(f"numpy BLAS: {blas.describe()}; CPUs: {os.cpu_count()}")
    rows = []
    print(f"{'size':>5} {'variant':<14} {'thr':>3} {'ms':>10} {'GFLOPS':>8} {'numpy ms':>9} "
          f"{'vs numpy':>9}")
    for n in (int(s) for s in args.sizes.split(",")):
        for row in bench_size(n, args.repeat):
            rows.append(row)
            print(f"{row['size']:>5} {row['variant']:<14} {row['threads']:>3} {row['ms']:>10.3f} "
                  f"{row['gflops']:>8.1f} {row['numpy_ms']:>9.3f} {row['ratio']:>8.2f}x",
                  flush=True)
    print("vs numpy: numpy's time / mlcir's, the two timed in turns right after the variant was "
          "built (above 1: mlcir is faster)")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
