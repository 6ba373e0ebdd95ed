"""CumSum and Trilu: both a triangular constant over the last (two) axes.

- CumSum is a ``matmul`` of the rows along its axis with a triangular matrix of ones (the
  ``exclusive`` and ``reverse`` forms only move the triangle's diagonal and side), so it runs on
  the matmul kernel and its default schedules; O(n²) work per row, fine for the sequence
  lengths of position ids and masks.
- Trilu is a ``where`` with a constant boolean mask of its last two axes (where one of them
  is symbolic, a mask computed from ``iota``s of the two axes).

CumSum's axis must have a static size (the constant is built at import).
"""

from __future__ import annotations

import numpy as np

from ..builder import GraphBuilder
from ..converter import Converter, Node, Value, converter


def _static(cx: GraphBuilder, x: Value, axes: list[int], op: str) -> list[int]:
    shape = cx.shape(x)
    if any(shape[a] is None for a in axes):
        raise cx.error(f"{op} needs static sizes on axes {axes}, but the input has shape "
                       f"{['?' if d is None else d for d in shape]}")
    return [int(shape[a]) for a in axes]  # type: ignore[arg-type]


def _positions(cx: GraphBuilder, x: Value, axis: int) -> Value:
    """0, 1, ..., n - 1 along ``axis`` of ``x``: a constant where n is static."""
    n = cx.shape(x)[axis]
    return np.arange(n, dtype=np.int64) if n is not None else cx.op("iota", x, axis=axis)


@converter
class CumSum(Converter):
    """CumSum(exclusive, reverse) with a constant axis -> matmul with a triangular matrix of
    ones (permute_dims around it when the axis is not the last)."""

    graph_ops = ("matmul", "permute_dims")
    constants = {1: "axis"}

    @classmethod
    def check(cls, node: Node) -> list[str]:
        info = node.input(0).type
        if info is not None and info[1] not in (np.float32, np.float64, np.int32, np.int64):
            return [f"inputs of type {info[1]} are not supported (float32/64, int32/64)"]
        return []

    @classmethod
    def _impl_v13(cls, cx: GraphBuilder, node: Node, inputs: list[Value]) -> Value:
        x, axis_value = inputs
        if axis_value.size != 1:
            raise cx.error(f"axis must be one integer, got shape {list(axis_value.shape)}")
        rank = cx.rank(x)
        if rank == 0:
            raise cx.error("the input must have rank >= 1")
        axis = cx.axis(int(axis_value.reshape(-1)[0]), rank)
        (n,) = _static(cx, x, [axis], "CumSum")
        source, target = np.arange(n)[:, None], np.arange(n)[None, :]
        exclusive, reverse = bool(node.attr("exclusive", 0)), bool(node.attr("reverse", 0))
        if reverse:
            source, target = target, source
        # ones[j, i] = 1 where element j is summed into result i
        ones = (source < target) if exclusive else (source <= target)
        order = [d for d in range(rank) if d != axis] + [axis]
        rows = x if axis == rank - 1 else cx.op("permute_dims", x, axes=order)
        out = cx.op("matmul", rows, ones.astype(cx.dtype(x)))
        if axis == rank - 1:
            return out
        return cx.op("permute_dims", out, axes=list(np.argsort(order)))


@converter
class Trilu(Converter):
    """Trilu(upper) with an optional constant k -> where(triangular mask, x, 0)."""

    graph_ops = ("where", "iota", "reshape", "subtract", "greater_equal", "less_equal")
    constants = {1: "k"}

    @classmethod
    def _impl_v14(cls, cx: GraphBuilder, node: Node, inputs: list[Value]) -> Value:
        x = inputs[0]
        k_value = inputs[1] if len(inputs) > 1 and inputs[1] is not None else np.int64(0)
        k = int(np.asarray(k_value).reshape(-1)[0])
        rank = cx.rank(x)
        if rank < 2:
            raise cx.error(f"the input must have rank >= 2, got rank {rank}")
        upper = bool(node.attr("upper", 1))
        shape = cx.shape(x)
        if shape[rank - 2] is not None and shape[rank - 1] is not None:
            rows, cols = int(shape[rank - 2]), int(shape[rank - 1])
            diagonal = np.arange(cols)[None, :] - np.arange(rows)[:, None]
            keep = diagonal >= k if upper else diagonal <= k
            return cx.op("where", keep, x, cx.scalar(0, x))
        # A symbolic side: the mask from run-time ranges of the two axes.
        row = cx.reshape(_positions(cx, x, rank - 2), [-1, 1])
        col = cx.reshape(_positions(cx, x, rank - 1), [1, -1])
        diagonal = cx.op("subtract", col, row)
        keep = cx.op("greater_equal" if upper else "less_equal", diagonal,
                     np.array(k, np.int64))
        return cx.op("where", keep, x, cx.scalar(0, x))
