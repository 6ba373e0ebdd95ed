"""ArgMax, ArgMin and TopK, built from comparisons, ``where`` and reductions (no sort kernel).

- ArgMax/ArgMin: the extreme along the axis (``max``/``min`` keepdims), ``equal`` to find where
  it is, ``where`` to put each hit's position (an ``[n]`` constant) and a non-position
  elsewhere, and a ``min`` (first index) or ``max`` (``select_last_index``) reduction.
- TopK: each element's rank along the axis is the number of elements that beat it (larger, or
  equal at a lower index: ONNX's tie rule), a compare of the ``[.., n, 1]`` and ``[.., 1, n]``
  views summed over the last axis; the index of slot ``s < k`` is the position whose rank is
  ``s``; the values are gathered at those indices. That is O(n²) work and an ``[.., n, n]``
  intermediate per row: fine for the sizes of detection heads and samplers (n up to a few
  thousand), not for sorting long axes.

The axis must have a static size (the position constants are built at import).
"""

from __future__ import annotations

import numpy as np

from ..builder import GraphBuilder
from ..converter import Converter, Node, Value, converter


def _positions(n: int, axis: int, rank: int) -> np.ndarray:
    """``0..n-1`` (int64) laid along ``axis`` of a rank-``rank`` array of size-1 dims."""
    shape = [1] * rank
    shape[axis] = n
    return np.arange(n, dtype=np.int64).reshape(shape)


def _axis_size(cx: GraphBuilder, x: Value, axis: int, op: str) -> int:
    size = cx.shape(x)[axis]
    if size is None:
        raise cx.error(f"{op} needs the size of axis {axis} to be static, but the input has "
                       f"shape {['?' if d is None else d for d in cx.shape(x)]}")
    return int(size)


class _ArgExtreme(Converter):
    """ArgMax/ArgMin(axis, keepdims, select_last_index) -> int64 positions."""

    graph_ops = ("max", "min", "equal", "where")
    extreme = ""  # the reduction finding the value: "max" or "min"

    @classmethod
    def _impl_v13(cls, cx: GraphBuilder, node: Node, inputs: list[Value]) -> Value:
        x = inputs[0]
        rank = cx.rank(x)
        axis = cx.axis(node.attr("axis", 0), rank)
        n = _axis_size(cx, x, axis, node.op_type)
        keepdims = int(node.attr("keepdims", 1))
        last = bool(node.attr("select_last_index", 0))
        best = cx.op(cls.extreme, x, axes=[axis], keepdims=1)
        hit = cx.op("equal", x, best)
        miss = np.array(-1 if last else n, dtype=np.int64)
        where = cx.op("where", hit, _positions(n, axis, rank), miss)
        return cx.op("max" if last else "min", where, axes=[axis], keepdims=keepdims)


@converter
class ArgMax(_ArgExtreme):
    """ArgMax -> max, equal, where, min (max with select_last_index)."""

    extreme = "max"


@converter
class ArgMin(_ArgExtreme):
    """ArgMin -> min, equal, where, min (max with select_last_index)."""

    extreme = "min"


def _move_axis(cx: GraphBuilder, x: Value, source: int, target: int) -> Value:
    if source == target:
        return x
    order = [d for d in range(cx.rank(x)) if d != source]
    order.insert(target, source)
    return cx.op("permute_dims", x, axes=order)


@converter
class TopK(Converter):
    """TopK(axis, largest, sorted) with K a constant input -> ranks by comparison, then the
    indices of ranks 0..K-1 and the values gathered there (see the module docstring). The
    outputs are always sorted (what ``sorted=0`` allows too)."""

    graph_ops = ("greater", "less", "equal", "logical_and", "logical_or", "astype", "sum",
                 "where", "gather_elements", "permute_dims", "reshape")
    constants = {1: "K"}

    @classmethod
    def _impl_v13(cls, cx: GraphBuilder, node: Node, inputs: list[Value]) -> list[Value]:
        x, k_value = inputs[0], inputs[1]
        if k_value.size != 1:
            raise cx.error(f"K must be one integer, got shape {list(k_value.shape)}")
        k = int(k_value.reshape(-1)[0])
        rank = cx.rank(x)
        axis = cx.axis(node.attr("axis", -1), rank)
        n = _axis_size(cx, x, axis, "TopK")
        if not 0 <= k <= n:
            raise cx.error(f"K={k} is out of range for an axis of {n} elements")
        if k == 0:
            raise cx.error("K=0 gives empty outputs, which mlcir's tensors cannot have")
        largest = bool(node.attr("largest", 1))
        rows = _move_axis(cx, x, axis, rank - 1)
        lead = [-1 if d is None else d for d in cx.shape(rows)[:-1]]
        if lead.count(-1) > 1:
            raise cx.error("TopK supports at most one dynamic dim besides the axis")
        as_row = cx.reshape(rows, lead + [1, n])
        as_col = cx.reshape(rows, lead + [n, 1])
        # beats[.., i, j]: element j comes before element i
        better = cx.op("greater" if largest else "less", as_row, as_col)
        earlier = np.arange(n)[None, :] < np.arange(n)[:, None]
        beats = cx.op("logical_or", better,
                      cx.op("logical_and", cx.op("equal", as_row, as_col), earlier))
        ranks = cx.op("sum", cx.astype(beats, np.dtype(np.int64)), axes=[rank], keepdims=0)
        ranks = cx.reshape(ranks, lead + [1, n])
        slots = np.arange(k, dtype=np.int64).reshape(k, 1)
        at_slot = cx.op("equal", ranks, slots)  # [.., k, n]
        indices = cx.op("sum", cx.op("where", at_slot, np.arange(n, dtype=np.int64),
                                     np.array(0, np.int64)), axes=[rank], keepdims=0)
        values = cx.op("gather_elements", rows, indices, axis=rank - 1)
        return [_move_axis(cx, values, rank - 1, axis), _move_axis(cx, indices, rank - 1, axis)]
