"""The MLC course chapter "Automatic Program Optimization", in mlcir.

    python examples/schedule_matmul.py

A 128x128x128 matmul kernel (block "C") is scheduled by hand (``schedule_mm``), by a
stochastic schedule (``stochastic_schedule_mm``) whose sampled decisions appear in the printed
trace, and by the course's random search over that stochastic schedule. Every schedule is
also shown as the transform-dialect script that replays it without Python.
"""

from __future__ import annotations

import numpy as np

import mlcir
from mlcir.testing import kernels
from mlcir.tune import evaluate, random_search

# The kernel, as people write it for mlir-opt: linalg on tensors, the blocks named.
MATMUL, REFERENCE = kernels.matmul(128, 128, 128)


def schedule_mm(sch: mlcir.Schedule, jfactor: int = 4) -> mlcir.Schedule:
    block_c = sch.get_block("C", func_name="main")
    i, j, k = sch.get_loops(block_c)
    j_0, j_1 = sch.split(loop=j, factors=[None, jfactor])
    sch.reorder(i, j_0, k, j_1)
    sch.decompose_reduction(block_c, k)
    return sch


def stochastic_schedule_mm(sch: mlcir.Schedule) -> mlcir.Schedule:
    block_c = sch.get_block("C", func_name="main")
    i, j, k = sch.get_loops(block=block_c)
    j_factors = sch.sample_perfect_tile(loop=j, n=2, max_innermost_factor=16)
    j_0, j_1 = sch.split(loop=j, factors=j_factors)
    sch.reorder(i, j_0, k, j_1)
    sch.decompose_reduction(block_c, k)
    return sch


def check(sch: mlcir.Schedule) -> None:
    """The scheduled kernel still computes A @ B."""
    ex = mlcir.build(sch.mod)
    a, b = kernels.random_inputs(MATMUL)
    np.testing.assert_allclose(ex.main(a, b), REFERENCE(a, b), rtol=1e-4, atol=1e-3)


def main() -> None:
    base = mlcir.Schedule(MATMUL)
    print(f"unscheduled:        {evaluate(base) * 1e3:8.3f} ms")

    sch = schedule_mm(mlcir.Schedule(MATMUL))
    check(sch)
    print(f"schedule_mm (j/4):  {evaluate(sch) * 1e3:8.3f} ms")
    print(sch.trace)

    sch = stochastic_schedule_mm(mlcir.Schedule(MATMUL, seed=1))
    check(sch)
    print(f"\nstochastic_schedule_mm, seed 1: {evaluate(sch) * 1e3:8.3f} ms")
    print(sch.trace)
    print("\nThe same schedule as transform IR (apply it with "
          "`mlcir-opt kernel.mlir --transform-script=this.mlir`):")
    print(sch.as_transform())

    print("\nRandom search over stochastic_schedule_mm:")
    best = random_search(MATMUL, stochastic_schedule_mm, num_trials=5)
    assert best is not None
    check(best)
    print("Best schedule:")
    print(best.trace)


if __name__ == "__main__":
    main()
