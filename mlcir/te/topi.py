"""A few of TVM's TOPI operators written with ``te`` (numpy broadcasting, sums), and a generic
CPU schedule for a reduction, as in TVM's "Introduction to TOPI"."""

from __future__ import annotations

import builtins
from typing import Callable, Sequence

from mlcir.schedule import Schedule

from .expr import Expr, TEError, as_expr
from .tensor import Tensor, compute, reduce_axis
from .tensor import sum as te_sum


def _broadcast_shape(a: Sequence[int], b: Sequence[int]) -> tuple[int, ...]:
    rank = builtins.max(len(a), len(b))
    a, b = (1,) * (rank - len(a)) + tuple(a), (1,) * (rank - len(b)) + tuple(b)
    shape = []
    for x, y in zip(a, b):
        if x != y and 1 not in (x, y):
            raise TEError(f"shapes {list(a)} and {list(b)} do not broadcast")
        shape.append(builtins.max(x, y))
    return tuple(shape)


def _element(t: Tensor | float, index: tuple[Expr, ...]) -> Expr:
    """``t`` read at the broadcast ``index`` (its trailing dims; size-1 dims at 0)."""
    if not isinstance(t, Tensor):
        return as_expr(t)
    own = index[len(index) - t.ndim:]
    return t[tuple(0 if n == 1 else i for i, n in zip(own, t.shape))]


def _broadcast(name: str, op: Callable[[Expr, Expr], Expr], a: Tensor | float,
               b: Tensor | float) -> Tensor:
    shape = _broadcast_shape(getattr(a, "shape", ()), getattr(b, "shape", ()))
    return compute(shape, lambda *i: op(_element(a, i), _element(b, i)), name=name)


def broadcast_add(a: Tensor | float, b: Tensor | float, name: str = "T_add") -> Tensor:
    return _broadcast(name, lambda x, y: x + y, a, b)


def broadcast_sub(a: Tensor | float, b: Tensor | float, name: str = "T_subtract") -> Tensor:
    return _broadcast(name, lambda x, y: x - y, a, b)


def broadcast_mul(a: Tensor | float, b: Tensor | float, name: str = "T_multiply") -> Tensor:
    return _broadcast(name, lambda x, y: x * y, a, b)


def broadcast_div(a: Tensor | float, b: Tensor | float, name: str = "T_divide") -> Tensor:
    return _broadcast(name, lambda x, y: x / y, a, b)


def elemwise_sum(xs: Sequence[Tensor], name: str = "T_elemwise_sum") -> Tensor:
    """The elementwise sum of tensors of one shape."""
    if not xs or any(x.shape != xs[0].shape for x in xs):
        raise TEError("elemwise_sum takes one or more tensors of one shape")

    def add(*i: Expr) -> Expr:
        total = xs[0][i]
        for x in xs[1:]:
            total = total + x[i]
        return total
    return compute(xs[0].shape, add, name=name)


def sum(a: Tensor, axis: int | Sequence[int] | None = None, keepdims: bool = False,  # noqa: A001
        name: str = "T_sum") -> Tensor:
    """The sum over ``axis`` (all axes when None), as ``numpy.sum``."""
    axes = list(range(a.ndim)) if axis is None else [axis] if isinstance(axis, int) else list(axis)
    axes = sorted(x % a.ndim for x in axes)
    reduce = {x: reduce_axis((0, a.shape[x]), f"k{x}") for x in axes}
    kept = [x for x in range(a.ndim) if x not in reduce]
    shape = [1 if x in reduce else a.shape[x] for x in range(a.ndim)] if keepdims \
        else [a.shape[x] for x in kept]

    def body(*i: Expr) -> Expr:
        spatial = list(i) if not keepdims else [i[x] for x in kept]
        it = iter(spatial)
        index = tuple(reduce[x] if x in reduce else next(it) for x in range(a.ndim))
        return te_sum(a[index], axis=[reduce[x] for x in axes])
    return compute(shape, body, name=name)


def schedule_reduce(sch: Schedule, block: str) -> None:
    """A generic CPU schedule for the reduction ``block`` fed by elementwise computes: every
    block it reads (transitively) is inlined into it, and its spatial loops, fused, run in
    parallel."""
    target = sch.get_block(block)
    pending = list(sch.get_producers(target))
    while pending:
        producer = pending.pop()
        if sch.get(producer).endswith("_init"):
            continue
        pending.extend(sch.get_producers(producer))
        sch.compute_inline(producer)
    spatial = [loop for loop in sch.get_loops(target) if sch.get(loop).kind == "spatial"]
    if spatial:
        sch.parallel(sch.fuse(*spatial) if len(spatial) > 1 else spatial[0])
