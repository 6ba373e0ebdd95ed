"""Reductions: ReduceMean/Sum/Max/Min/Prod -> graph.mean/sum/max/min/prod.

``axes`` moved from an attribute to an (optional, constant) input: at opset 13 for ReduceSum,
at 18 for the others; the converters have one implementation for each form.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..builder import GraphBuilder
from ..converter import Converter, Node, Value, converter


class _Reduce(Converter):
    axes_input_since = 18  # the opset at which axes became an input

    @classmethod
    def constant_inputs(cls, node: Node) -> dict[int, str]:
        return {1: "axes"} if node.opset >= cls.axes_input_since else {}

    @classmethod
    def reduce(cls, cx: GraphBuilder, node: Node, x: Value, axes: Sequence[int] | None) -> Value:
        rank = cx.rank(x)
        if not axes:
            if node.attr("noop_with_empty_axes", 0):
                return x
            axes = list(range(rank))
        axes = cx.axes(axes, rank)
        return cx.op(cls.graph_op, x, axes=axes, keepdims=int(node.attr("keepdims", 1)))

    @classmethod
    def _impl_v13(cls, cx: GraphBuilder, node: Node, inputs: list[Value]) -> Value:
        """axes from the attribute."""
        return cls.reduce(cx, node, inputs[0], node.attr("axes"))

    @classmethod
    def _impl_v18(cls, cx: GraphBuilder, node: Node, inputs: list[Value]) -> Value:
        """axes from the optional second input (a constant)."""
        axes = inputs[1] if len(inputs) > 1 and inputs[1] is not None else None
        return cls.reduce(cx, node, inputs[0],
                          None if axes is None else [int(a) for a in axes.reshape(-1)])


@converter
class ReduceSum(_Reduce):
    """ReduceSum -> graph.sum (axes an input since opset 13)."""

    graph_op = "sum"
    axes_input_since = 13
    _impl_v13 = _Reduce.__dict__["_impl_v18"]


@converter
class ReduceMean(_Reduce):
    """ReduceMean -> graph.mean (axes an input since opset 18)."""

    graph_op = "mean"


@converter
class ReduceMax(_Reduce):
    """ReduceMax -> graph.max (axes an input since opset 18)."""

    graph_op = "max"


@converter
class ReduceMin(_Reduce):
    """ReduceMin -> graph.min (axes an input since opset 18)."""

    graph_op = "min"


@converter
class ReduceProd(_Reduce):
    """ReduceProd -> graph.prod (axes an input since opset 18)."""

    graph_op = "prod"
