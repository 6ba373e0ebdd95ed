"""GatherND, ScatterND and ScatterElements.

GatherND is a ``take`` along the first axis of the data with its indexed dims merged into one:
each index tuple becomes one row number (``sum(index * strides)``, negative indices counted
from the end; with ``batch_dims`` the batch's offset added), so the gather itself is the
existing gather block. The data's batch and indexed dims must be static.

ScatterND and ScatterElements become the one scatter graph op, ``scatter_rows`` (data
``[R, K]``, one row number per update, updates ``[M, K]``; a copy and a loop over the updates):
ScatterND's index tuples are row numbers of its indexed dims merged, the rest of each slice a
row of K elements; ScatterElements' indices are row numbers of the data flattened to
``[size, 1]``, its index along the axis scaled by the axis' stride plus each update's own
position along the other axes (a constant). Reductions: none (13), add and mul (16), max and
min (18); with ``none`` a later duplicate index wins, as in onnxruntime.
"""

from __future__ import annotations

import math

import numpy as np

from ..builder import GraphBuilder
from ..converter import Converter, Node, Value, converter


def _row_numbers(cx: GraphBuilder, indices: Value, dims: list[int]) -> Value:
    """``indices[..., q]`` (q = len(dims)) as row numbers of the dims merged row-major,
    negative entries counting from the end of their dim."""
    sizes = np.array(dims, np.int64)
    strides = np.array([math.prod(dims[i + 1:]) for i in range(len(dims))], np.int64)
    indices = cx.astype(indices, np.dtype(np.int64))
    wrapped = cx.op("where", cx.op("less", indices, np.array(0, np.int64)),
                    cx.op("add", indices, sizes), indices)
    return cx.op("sum", cx.op("multiply", wrapped, strides), axes=[cx.rank(indices) - 1],
                 keepdims=0)


@converter
class GatherND(Converter):
    """GatherND(batch_dims) -> row numbers (where, add, multiply, sum) and one take."""

    graph_ops = ("take", "where", "less", "add", "multiply", "sum", "reshape")

    @classmethod
    def _impl_v13(cls, cx: GraphBuilder, node: Node, inputs: list[Value]) -> Value:
        data, indices = inputs
        batch = int(node.attr("batch_dims", 0))
        data_shape, index_shape = cx.shape(data), cx.shape(indices)
        q = index_shape[-1] if index_shape else None
        if q is None:
            raise cx.error("the last dim of the indices (the length of an index tuple) must "
                           "be static")
        if not 1 <= q <= len(data_shape) - batch:
            raise cx.error(f"index tuples of length {q} do not fit data of rank "
                           f"{len(data_shape)} with batch_dims={batch}")
        if batch and len(index_shape) <= batch:
            raise cx.error(f"batch_dims={batch} needs indices of rank > {batch}")
        fixed = data_shape[:batch + q]
        if any(d is None for d in fixed):
            raise cx.error(f"the batch and indexed dims of the data {list(fixed)} must be static")
        dims = [int(d) for d in fixed]  # type: ignore[arg-type]
        rows = _row_numbers(cx, indices, dims[batch:])
        count = math.prod(dims[batch:])
        if batch:
            batches = math.prod(dims[:batch])
            offsets = (np.arange(batches, dtype=np.int64) * count).reshape(
                dims[:batch] + [1] * (len(index_shape) - 1 - batch))
            rows = cx.op("add", rows, offsets)
            count *= batches
        rest = [-1 if d is None else d for d in data_shape[batch + q:]]
        table = cx.reshape(data, [count] + rest)
        return cx.op("take", table, rows, axis=0)


def _reductions(opset: int) -> tuple[str, ...]:
    return ("none",) if opset < 16 else ("none", "add", "mul") if opset < 18 else \
        ("none", "add", "mul", "max", "min")


def _dims(cx: GraphBuilder, v: Value) -> list[int]:
    return [-1 if d is None else int(d) for d in cx.shape(v)]


def _flat(cx: GraphBuilder, v: Value, shape: list[int], what: str) -> Value:
    if shape.count(-1) > 1:
        raise cx.error(f"the {what} would be reshaped to {shape}: more than one dynamic dim")
    return cx.reshape(v, shape)


class _Scatter(Converter):
    graph_ops = ("scatter_rows", "where", "less", "add", "multiply", "sum", "reshape")

    @classmethod
    def check(cls, node: Node) -> list[str]:
        reduction = node.attr("reduction", "none")
        allowed = _reductions(node.opset)
        if reduction not in allowed:
            return [f"reduction={reduction!r} is not one of {allowed} at opset {node.opset}"]
        return []


@converter
class ScatterND(_Scatter):
    """ScatterND(reduction) -> row numbers of the index tuples, scatter_rows of the slices."""

    @classmethod
    def _impl_v13(cls, cx: GraphBuilder, node: Node, inputs: list[Value]) -> Value:
        data, indices, updates = inputs
        data_shape, index_shape = cx.shape(data), cx.shape(indices)
        q = index_shape[-1] if index_shape else None
        if q is None or not 1 <= q <= len(data_shape):
            raise cx.error(f"index tuples of length {q} do not fit data of rank "
                           f"{len(data_shape)}")
        if any(d is None for d in data_shape[:q]):
            raise cx.error(f"the indexed dims of the data {list(data_shape[:q])} must be static")
        dims = [int(d) for d in data_shape[:q]]  # type: ignore[arg-type]
        rest = data_shape[q:]
        width = -1 if None in rest else math.prod(rest)  # type: ignore[arg-type]
        lead = index_shape[:-1]
        count = -1 if None in lead else math.prod(lead)  # type: ignore[arg-type]
        rows = _flat(cx, _row_numbers(cx, indices, dims), [count], "indices")
        table = _flat(cx, data, [math.prod(dims), width], "data")
        slices = _flat(cx, updates, [count, width], "updates")
        out = cx.op("scatter_rows", table, rows, slices,
                    reduction=node.attr("reduction", "none"))
        return _flat(cx, out, _dims(cx, data), "result")

    _impl_v16 = _impl_v13  # adds reduction add and mul (checked)
    _impl_v18 = _impl_v13  # adds reduction max and min (checked)


@converter
class ScatterElements(_Scatter):
    """ScatterElements(axis, reduction) -> row numbers of the flattened data (the index
    along the axis times its stride plus a constant offset), scatter_rows of one element per
    row. The data and the indices must have static shapes."""

    @classmethod
    def _impl_v13(cls, cx: GraphBuilder, node: Node, inputs: list[Value]) -> Value:
        data, indices, updates = inputs
        shape = list(cx.static_shape(data, "ScatterElements' data"))
        index_shape = list(cx.static_shape(indices, "ScatterElements' indices"))
        rank = len(shape)
        axis = cx.axis(node.attr("axis", 0), rank)
        if len(index_shape) != rank or any(
                i > d for a, (i, d) in enumerate(zip(index_shape, shape)) if a != axis):
            raise cx.error(f"indices of shape {index_shape} do not fit data of shape {shape} "
                           f"along axis {axis}")
        strides = [math.prod(shape[a + 1:]) for a in range(rank)]
        offsets = sum(np.arange(n, dtype=np.int64).reshape(
            [n if b == a else 1 for b in range(rank)]) * strides[a]
            for a, n in enumerate(index_shape) if a != axis)
        indices = cx.astype(indices, np.dtype(np.int64))
        wrapped = cx.op("where", cx.op("less", indices, np.array(0, np.int64)),
                        cx.op("add", indices, np.array(shape[axis], np.int64)), indices)
        rows = cx.op("multiply", wrapped, np.array(strides[axis], np.int64))
        if rank > 1:
            rows = cx.op("add", rows, np.asarray(offsets, np.int64))
        count = math.prod(index_shape)
        out = cx.op("scatter_rows", cx.reshape(data, [math.prod(shape), 1]),
                    cx.reshape(rows, [count]), cx.reshape(updates, [count, 1]),
                    reduction=node.attr("reduction", "none"))
        return cx.reshape(out, shape)

    _impl_v16 = _impl_v13  # adds reduction add and mul (checked)
    _impl_v18 = _impl_v13  # adds reduction max and min (checked)
