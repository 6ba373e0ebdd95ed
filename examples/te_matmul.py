"""TVM's tensor-expression guide, matrix multiplication, in mlcir.

    python examples/te_matmul.py [size]

``C = A @ B`` is written with ``te.compute`` and ``te.sum``, made a kernel with
``te.create_prim_func`` and scheduled step by step as the guide does it: blocking (32x32 tiles,
the reduction split by 4), vectorization of the inner tile, loop permutation, array packing
of B (a second compute, ``packedB``), a write cache (``cache_write`` placed with
``reverse_compute_at``) and parallel outer loops. Each step is checked against numpy and
timed. The loop variables of a block are named by the schedule ``i, j, k`` (the guide's
``m, n, k``).
"""

from __future__ import annotations

import sys
from typing import Callable

import numpy as np

import mlcir
from mlcir import te
from mlcir.tune import evaluate

BN = 32  # the block size
KFACTOR = 4


def matmul(m: int, n: int, k: int) -> tuple[te.Tensor, te.Tensor, te.Tensor]:
    A = te.placeholder((m, k), name="A")
    B = te.placeholder((k, n), name="B")
    kk = te.reduce_axis((0, k), "k")
    C = te.compute((m, n), lambda x, y: te.sum(A[x, kk] * B[kk, y], axis=kk), name="C")
    return A, B, C


def packed_matmul(m: int, n: int, k: int) -> tuple[te.Tensor, te.Tensor, te.Tensor]:
    """B re-laid out as ``packedB[n // BN, k, n % BN]`` so the inner tile reads it
    contiguously."""
    A = te.placeholder((m, k), name="A")
    B = te.placeholder((k, n), name="B")
    packedB = te.compute((n // BN, k, BN), lambda x, y, z: B[y, x * BN + z], name="packedB")
    kk = te.reduce_axis((0, k), "k")
    C = te.compute((m, n), lambda x, y: te.sum(A[x, kk] * packedB[y // BN, kk, y % BN], axis=kk),
                   name="C")
    return A, B, C


def default(sch: mlcir.Schedule) -> None:
    """No schedule: the loops in the order of the compute."""


def blocking(sch: mlcir.Schedule) -> list:
    """32x32 tiles of C, the reduction split by 4: ``mo, no, ko, ki, mi, ni``."""
    c = sch.get_block("C")
    m, n, k = sch.get_loops(c)
    mo, mi = sch.split(m, [None, BN])
    no, ni = sch.split(n, [None, BN])
    ko, ki = sch.split(k, [None, KFACTOR])
    sch.reorder(mo, no, ko, ki, mi, ni)
    return [mo, no, ko, ki, mi, ni]


def vectorization(sch: mlcir.Schedule) -> None:
    """Blocking, and the inner row of the tile as one vector."""
    *_, ni = blocking(sch)
    sch.vectorize(ni)


def loop_permutation(sch: mlcir.Schedule) -> None:
    """``mo, no, ko, mi, ki, ni``: A's element is reused along the vector row."""
    mo, no, ko, ki, mi, ni = blocking(sch)
    sch.reorder(mo, no, ko, mi, ki, ni)
    sch.vectorize(ni)


def array_packing(sch: mlcir.Schedule) -> None:
    """The permuted schedule on the packed kernel; packedB's outer loop in parallel and its
    inner one vectorized."""
    loop_permutation(sch)
    x, _, z = sch.get_loops(sch.get_block("packedB"))
    sch.parallel(x)
    sch.vectorize(z)


def write_cache(sch: mlcir.Schedule) -> None:
    """Each 32x32 tile accumulated in a local buffer, written back after its reduction."""
    c = sch.get_block("C")
    cc = sch.cache_write(c, 0, "local")
    mo, no, ko, ki, mi, ni = blocking(sch)
    sch.reorder(mo, no, ko, mi, ki, ni)
    sch.vectorize(ni)
    sch.reverse_compute_at(cc, no)


def parallel(sch: mlcir.Schedule) -> None:
    """The write-cached schedule with the row blocks on threads."""
    c = sch.get_block("C")
    cc = sch.cache_write(c, 0, "local")
    mo, no, ko, ki, mi, ni = blocking(sch)
    sch.reorder(mo, no, ko, mi, ki, ni)
    sch.vectorize(ni)
    sch.parallel(mo)
    sch.reverse_compute_at(cc, no)


# (name, the compute, the schedule), in the guide's order.
STEPS: list[tuple[str, Callable, Callable[[mlcir.Schedule], None]]] = [
    ("default", matmul, default),
    ("blocking", matmul, blocking),
    ("vectorization", matmul, vectorization),
    ("loop permutation", matmul, loop_permutation),
    ("array packing", packed_matmul, array_packing),
    ("write cache", matmul, write_cache),
    ("parallel", matmul, parallel),
]


def scheduled(step: int, size: int) -> mlcir.Schedule:
    _, make, schedule = STEPS[step]
    sch = mlcir.Schedule(te.create_prim_func(list(make(size, size, size))))
    schedule(sch)
    return sch


def check(sch: mlcir.Schedule, size: int, seed: int = 0) -> None:
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((size, size)).astype(np.float32)
    b = rng.standard_normal((size, size)).astype(np.float32)
    np.testing.assert_allclose(mlcir.build(sch.mod).main(a, b), a @ b, rtol=1e-4, atol=1e-3)


def main(size: int = 256) -> None:
    for step, (name, _, _) in enumerate(STEPS):
        sch = scheduled(step, size)
        check(sch, size)
        print(f"{name:18s} {evaluate(sch) * 1e3:8.3f} ms")
    print(scheduled(len(STEPS) - 1, size).trace)


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 256)
