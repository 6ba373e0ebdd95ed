"""TVM's tensor-expression guide, vector addition, in mlcir.

    python examples/te_vector_add.py [n]

``C[i] = A[i] + B[i]`` written with ``te.placeholder`` and ``te.compute``, made a kernel with
``te.create_prim_func``, then scheduled as the guide does for a CPU: the loop split by a
factor, the outer part on threads and the inner part vectorized. Each version is checked
against numpy and timed.
"""

from __future__ import annotations

import sys

import numpy as np

import mlcir
from mlcir import te
from mlcir.tune import evaluate

FACTOR = 64


def vector_add(n: int) -> mlcir.Schedule:
    A = te.placeholder((n,), name="A")
    B = te.placeholder((n,), name="B")
    C = te.compute(A.shape, lambda i: A[i] + B[i], name="C")
    return mlcir.Schedule(te.create_prim_func([A, B, C]))


def parallel_vectorized(sch: mlcir.Schedule) -> None:
    (i,) = sch.get_loops(sch.get_block("C"))
    outer, inner = sch.split(i, factors=[None, FACTOR])
    sch.parallel(outer)
    sch.vectorize(inner)


def check(sch: mlcir.Schedule, n: int, seed: int = 0) -> None:
    rng = np.random.default_rng(seed)
    a, b = (rng.standard_normal(n).astype(np.float32) for _ in range(2))
    np.testing.assert_allclose(mlcir.build(sch.mod).main(a, b), a + b)


def main(n: int = 1 << 20) -> None:
    naive = vector_add(n)
    check(naive, n)
    print(f"naive:               {evaluate(naive) * 1e3:8.3f} ms")
    sch = vector_add(n)
    parallel_vectorized(sch)
    check(sch, n)
    print(f"parallel+vectorized: {evaluate(sch) * 1e3:8.3f} ms")
    print(sch.trace)


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 1 << 20)
