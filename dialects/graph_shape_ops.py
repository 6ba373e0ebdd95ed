"""Shape rules of the ``graph`` ops that move data: reshape, iota, broadcast_to, slicing,
gathers, scatters and padding, with the reshape helpers the lowerings share."""

from __future__ import annotations

import math
from typing import Any, Sequence

from mlir import ir

from .graph_shapes import _axis, _count, _fmt, _require_numeric, _same_element_type, \
    is_signless_int_type
from .opdef import ShapeError, TensorSpec


def reshape_source_axis(d: int, position: int) -> int | None:
    """The axis of x that entry ``d`` at ``position`` of graph.reshape's ``shape`` keeps: 0
    is x's dim at the same position, -2 - j x's dim j; None for a size or the -1."""
    if d == 0:
        return position
    return -2 - d if d <= -2 else None


def reshape_result(x: Sequence[int | None], shape: Sequence[int]) -> list[int | None]:
    """graph.reshape's result dims (None: dynamic) for ``x``'s dims: a 0 keeps x's dim at
    its position, -2 - j keeps x's dim j, the -1 is the rest of the elements — static when
    every dim of x that is not kept is (ShapeError when the element counts do not fit)."""
    sources = [reshape_source_axis(d, i) for i, d in enumerate(shape)]
    copied = {j for j in sources if j is not None}
    if list(shape).count(-1) > 1 or any(j is not None and j >= len(x) for j in sources) or \
            len(copied) != sum(j is not None for j in sources):
        raise ShapeError(f"shape {list(shape)} must be the full result shape (every dim >= 1, "
                         "0 for x's dim at the same position, -2 - j for x's dim j, each kept "
                         "once, or one -1 for the rest)")
    uncopied = [d for i, d in enumerate(x) if i not in copied]
    out: list[int | None] = [x[j] if j is not None else d for j, d in zip(sources, shape)]
    static = math.prod(d for j, d in zip(sources, out) if j is None and d != -1)
    if None in uncopied:
        out = [None if j is None and d == -1 else d for j, d in zip(sources, out)]
        if out.count(None) > 1 and reshape_groups(x, shape) is None:
            raise ShapeError(f"shape {list(shape)}: a reshape of {_fmt(x)} with more than one "
                             "dynamic dim must keep them in x's order, the dims between them "
                             "regrouping")
        return out
    count = math.prod(uncopied)
    if (-1 in out and count % static) or (-1 not in out and count != static):
        kept = " outside the kept dims" if copied else ""
        raise ShapeError(f"cannot reshape {_fmt(x)} ({count} elements{kept}) to {list(shape)} "
                         f"({static}{' * -1' if -1 in out else ''} elements)")
    out = [count // static if d == -1 else d for d in out]
    return out


def reshape_groups(x: Sequence[int | None], shape: Sequence[int]
                   ) -> tuple[list[list[int]], list[list[int]], list[int | None]] | None:
    """A reshape that keeps dims of x (0, -2 - j) as a regrouping around them: the collapse
    groups of x, the expand groups of the result and the dims in between — each kept dim a
    group of its own (with unit dims joining it), the static dims of x between two kept ones
    one group expanded to the result dims between them. None when no dim is kept, the kept
    ones are not in x's order, or what lies between does not regroup. Every expand group
    then has one dynamic dim at most, what ``tensor.expand_shape`` can lower."""
    kept = [(p, reshape_source_axis(d, p)) for p, d in enumerate(shape)
            if reshape_source_axis(d, p) is not None]
    if not kept or [j for _, j in kept] != sorted({j for _, j in kept}):
        return None
    collapse: list[list[int]] = []
    expand: list[list[int]] = []
    mid: list[int | None] = []
    pending_x: list[int] = []  # unit dims before the first group
    pending_t: list[int] = []
    bounds = [(-1, -1)] + kept + [(len(shape), len(x))]
    for (p0, j0), (p1, j1) in zip(bounds, bounds[1:]):
        xs, ts = list(range(j0 + 1, j1)), list(range(p0 + 1, p1))
        sizes = [shape[p] for p in ts]
        if xs and ts:
            if any(x[j] is None for j in xs) or any(d < 1 and d != -1 for d in sizes):
                return None
            static = math.prod(d for d in sizes if d != -1)
            count = math.prod(x[j] for j in xs)  # type: ignore[misc]
            if count % static or (-1 not in sizes and count != static):
                return None
            collapse.append(xs)
            expand.append(ts)
            mid.append(count)
        elif xs or ts:
            if any(x[j] != 1 for j in xs) or any(d not in (1, -1) for d in sizes):
                return None
            into_x, into_t = (collapse[-1], expand[-1]) if collapse else (pending_x, pending_t)
            into_x.extend(xs)
            into_t.extend(ts)
        if p1 < len(shape):  # the kept dim that ends this segment
            collapse.append(pending_x + [j1])
            expand.append(pending_t + [p1])
            mid.append(x[j1])
            pending_x, pending_t = [], []
    return [sorted(g) for g in collapse], [sorted(g) for g in expand], mid


def _reshape(specs: list[TensorSpec], attrs: dict[str, Any]) -> list[TensorSpec]:
    (x,) = specs
    return [TensorSpec(tuple(reshape_result(x.shape, attrs["shape"])), x.element_type)]


def _iota(specs: list[TensorSpec], attrs: dict[str, Any]) -> list[TensorSpec]:
    (x,) = specs
    axis = attrs["axis"]
    _axis(axis, x.rank)
    return [TensorSpec((x.shape[axis],), ir.IntegerType.get_signless(64))]


def _broadcast_to(specs: list[TensorSpec], attrs: dict[str, Any]) -> list[TensorSpec]:
    (x,) = specs
    shape = tuple(attrs["shape"])
    if any(d < 1 for d in shape):
        raise ShapeError(f"shape {list(shape)} must have every dim >= 1")
    if len(shape) < x.rank:
        raise ShapeError(f"cannot broadcast {_fmt(x.shape)} to the lower rank {list(shape)}")
    for axis, d in enumerate(x.shape):
        target = shape[len(shape) - x.rank + axis]
        if d is not None and d != 1 and d != target:
            raise ShapeError(f"cannot broadcast {_fmt(x.shape)} to {list(shape)} (dimension "
                             f"{axis} is {d}, the target's is {target})")
    return [TensorSpec(shape, x.element_type)]


def slice_length(size: int, begin: int, end: int, stride: int) -> int:
    """Elements of ``x[begin:end:stride]`` along an axis of ``size`` elements, with the
    normalised bounds of ``strided_slice`` (``end = -1`` with a negative stride: through
    index 0)."""
    if stride > 0:
        lo, hi = min(begin, size), min(end, size)
        return max(0, -(-(hi - lo) // stride))
    lo, hi = max(end, -1), min(begin, size - 1)
    return max(0, -(-(hi - lo) // -stride))


def _strided_slice(specs: list[TensorSpec], attrs: dict[str, Any]) -> list[TensorSpec]:
    (x,) = specs
    begin = _count(attrs, "begin", x.rank)
    end = _count(attrs, "end", x.rank)
    strides = _count(attrs, "strides", x.rank)
    shape: list[int | None] = []
    for axis, (n, b, e, s) in enumerate(zip(x.shape, begin, end, strides)):
        if s == 0:
            raise ShapeError(f"strides {strides}: the stride of axis {axis} is 0")
        if b < 0 or e < -1:
            raise ShapeError(f"axis {axis}: begin {b} must be >= 0 and end {e} >= -1 (bounds "
                             "are normalised; end -1 with a negative stride means through 0)")
        if n is None:
            shape.append(None)
            continue
        length = slice_length(n, b, e, s)
        if length == 0:
            raise ShapeError(f"axis {axis}: the slice {b}:{e}:{s} of {n} elements is empty")
        shape.append(length)
    return [TensorSpec(tuple(shape), x.element_type)]


def _take(specs: list[TensorSpec], attrs: dict[str, Any]) -> list[TensorSpec]:
    x, indices = specs
    t = indices.element_type
    if not (is_signless_int_type(t) and ir.IntegerType(t).width in (32, 64)):
        raise ShapeError(f"indices must be i32 or i64, got {t}")
    axis = attrs["axis"]
    _axis(axis, x.rank)
    return [TensorSpec(x.shape[:axis] + indices.shape + x.shape[axis + 1:], x.element_type)]


def _gather_elements(specs: list[TensorSpec], attrs: dict[str, Any]) -> list[TensorSpec]:
    x, indices = specs
    t = indices.element_type
    if not (is_signless_int_type(t) and ir.IntegerType(t).width in (32, 64)):
        raise ShapeError(f"indices must be i32 or i64, got {t}")
    if indices.rank != x.rank:
        raise ShapeError(f"indices {_fmt(indices.shape)} must have the rank of x {_fmt(x.shape)}")
    _axis(attrs["axis"], x.rank)
    return [TensorSpec(indices.shape, x.element_type)]


SCATTER_REDUCTIONS = ("none", "add", "mul", "max", "min")


def _scatter_rows(specs: list[TensorSpec], attrs: dict[str, Any]) -> list[TensorSpec]:
    data, rows, updates = specs
    t = rows.element_type
    if not (is_signless_int_type(t) and ir.IntegerType(t).width in (32, 64)):
        raise ShapeError(f"rows must be i32 or i64, got {t}")
    _same_element_type([data, updates])
    _require_numeric(data, "data")
    if data.rank != 2 or rows.rank != 1 or updates.rank != 2:
        raise ShapeError(f"data [R, K], rows [M] and updates [M, K] expected, got data "
                         f"{_fmt(data.shape)}, rows {_fmt(rows.shape)}, updates "
                         f"{_fmt(updates.shape)}")
    for what, a, b in (("M", rows.shape[0], updates.shape[0]),
                       ("K", data.shape[1], updates.shape[1])):
        if a is not None and b is not None and a != b:
            raise ShapeError(f"{what} differs: data {_fmt(data.shape)}, rows "
                             f"{_fmt(rows.shape)}, updates {_fmt(updates.shape)}")
    if attrs["reduction"] not in SCATTER_REDUCTIONS:
        raise ShapeError(f"reduction must be one of {SCATTER_REDUCTIONS}, got "
                         f"{attrs['reduction']!r}")
    return [data]


PAD_MODES = ("constant", "reflect", "edge", "wrap")


def _pad(specs: list[TensorSpec], attrs: dict[str, Any]) -> list[TensorSpec]:
    x, pads, value = specs
    t = pads.element_type
    if not (is_signless_int_type(t) and ir.IntegerType(t).width == 64):
        raise ShapeError(f"pads must be i64, got {t}")
    if pads.shape != (2 * x.rank,):
        raise ShapeError(f"pads must have shape [{2 * x.rank}] (begin and end of each of the "
                         f"{x.rank} axes), got {_fmt(pads.shape)}")
    if value.rank != 0:
        raise ShapeError(f"value must be a 0-d tensor, got {_fmt(value.shape)}")
    _same_element_type([x, value])
    if attrs["mode"] not in PAD_MODES:
        raise ShapeError(f"mode must be one of {PAD_MODES}, got {attrs['mode']!r}")
    return [TensorSpec((None,) * x.rank, x.element_type)]
