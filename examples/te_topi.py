"""TVM's "Introduction to TOPI", in mlcir: operators from ``mlcir.te.topi`` and a generic
schedule of a reduction fed by broadcasts.

    python examples/te_topi.py

A row sum written by hand with ``te.sum`` and the same from ``topi.sum``; then the guide's
``g = sum((a + b + a * b) / 2)`` over broadcast operands (``a`` is 100x10x10, ``b`` 10x10),
scheduled by ``topi.schedule_reduce``: the elementwise computes inlined into the reduction
(found with ``get_producers``), its spatial loops fused and run on threads. Each is checked
against numpy.
"""

from __future__ import annotations

import numpy as np

import mlcir
from mlcir import te
from mlcir.te import topi

X, Y = 100, 10


def row_sum_by_hand(n: int = 64, m: int = 48) -> tuple[te.Tensor, te.Tensor]:
    A = te.placeholder((n, m), name="A")
    k = te.reduce_axis((0, m), "k")
    B = te.compute((n,), lambda i: te.sum(A[i, k], axis=k), name="B")
    return A, B


def row_sum_topi(n: int = 64, m: int = 48) -> tuple[te.Tensor, te.Tensor]:
    A = te.placeholder((n, m), name="A")
    return A, topi.sum(A, axis=1)


def broadcast_reduce(axis: int | None = 1) -> tuple[te.Tensor, te.Tensor, te.Tensor]:
    """``g = sum((a + b + a * b) / 2, axis)`` with ``b`` broadcast over ``a``'s first dim."""
    a = te.placeholder((X, Y, Y), name="a")
    b = te.placeholder((Y, Y), name="b")
    c = topi.broadcast_add(a, b)
    d = topi.broadcast_mul(a, b)
    e = topi.elemwise_sum([c, d])
    f = topi.broadcast_div(e, 2.0)
    g = topi.sum(f, axis=axis)
    return a, b, g


def broadcast_reduce_reference(a: np.ndarray, b: np.ndarray, axis: int | None = 1) -> np.ndarray:
    return ((a + b + a * b) / 2).sum(axis=axis)


def scheduled_broadcast_reduce(axis: int | None = 1) -> mlcir.Schedule:
    sch = mlcir.Schedule(te.create_prim_func(list(broadcast_reduce(axis))))
    topi.schedule_reduce(sch, "T_sum")
    return sch


def check_row_sums(seed: int = 0) -> None:
    x = np.random.default_rng(seed).standard_normal((64, 48)).astype(np.float32)
    for make in (row_sum_by_hand, row_sum_topi):
        ex = mlcir.build(te.create_prim_func(list(make())))
        np.testing.assert_allclose(ex.main(x), x.sum(axis=1), rtol=1e-5, atol=1e-4)


def check_broadcast_reduce(axis: int | None = 1, seed: int = 0) -> None:
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((X, Y, Y)).astype(np.float32)
    b = rng.standard_normal((Y, Y)).astype(np.float32)
    result = mlcir.build(scheduled_broadcast_reduce(axis).mod).main(a, b)
    np.testing.assert_allclose(result, broadcast_reduce_reference(a, b, axis), rtol=1e-4,
                               atol=1e-3)


def main() -> None:
    check_row_sums()
    for axis in (1, None):
        check_broadcast_reduce(axis)
        print(f"sum over axis {axis}: matches numpy")
    print(scheduled_broadcast_reduce().trace)


if __name__ == "__main__":
    main()
