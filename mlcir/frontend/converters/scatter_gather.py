"""GatherND, ScatterND and ScatterElements.

GatherND is a ``take`` along the first axis of the data with its indexed dims merged into one:
each index tuple becomes one row number (``sum(index * strides)``, negative indices counted
from the end; with ``batch_dims`` the batch's offset added), so the gather itself is the
existing gather block. The data's batch and indexed dims must be static.
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
