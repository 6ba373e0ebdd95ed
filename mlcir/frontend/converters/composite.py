"""Ops the graph dialect has no op for, composed of the ones it has.

ReduceL1, ReduceL2, ReduceSumSquare and ReduceLogSumExp are a map and a ``sum`` (the last
shifted by its maximum so ``exp`` cannot overflow); LpNormalization divides by such a norm;
MeanVarianceNormalization subtracts a ``mean`` and divides by the root of another; Hardmax is
ArgMax's first maximum compared with the positions; LRN sums squares over a channel window
with an average pool over a ``[C, H*W]`` view; RMSNormalization (opset 23) divides by the
root mean square. Each is checked against onnxruntime (tests/test_frontend_composite.py).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..builder import GraphBuilder
from ..converter import Converter, Node, Value, converter
from .reduce import _Reduce
from .selection import _axis_size, _positions


def _float_input(cx: GraphBuilder, x: Value, op: str) -> None:
    if cx.dtype(x).kind != "f":
        raise cx.error(f"{op} of {cx.dtype(x)} values is not supported (floating point only)")


class _ComposedReduce(_Reduce):
    """A reduction over ``axes``: :meth:`compose` builds it from the reduced axes."""

    @classmethod
    def reduce(cls, cx: GraphBuilder, node: Node, x: Value, axes: Sequence[int] | None) -> Value:
        rank = cx.rank(x)
        if not axes:
            if node.attr("noop_with_empty_axes", 0):
                return cls.compose(cx, x, [], int(node.attr("keepdims", 1)))
            axes = list(range(rank))
        return cls.compose(cx, x, cx.axes(axes, rank), int(node.attr("keepdims", 1)))

    @classmethod
    def compose(cls, cx: GraphBuilder, x: Value, axes: list[int], keepdims: int) -> Value:
        raise NotImplementedError


def _sum(cx: GraphBuilder, x: Value, axes: list[int], keepdims: int) -> Value:
    return cx.op("sum", x, axes=axes, keepdims=keepdims) if axes else x


@converter
class ReduceL1(_ComposedReduce):
    """ReduceL1 -> sum(abs(x))."""

    graph_ops = ("abs", "sum")

    @classmethod
    def compose(cls, cx: GraphBuilder, x: Value, axes: list[int], keepdims: int) -> Value:
        return _sum(cx, cx.op("abs", x), axes, keepdims)


@converter
class ReduceSumSquare(_ComposedReduce):
    """ReduceSumSquare -> sum(x * x)."""

    graph_ops = ("multiply", "sum")

    @classmethod
    def compose(cls, cx: GraphBuilder, x: Value, axes: list[int], keepdims: int) -> Value:
        return _sum(cx, cx.op("multiply", x, x), axes, keepdims)


@converter
class ReduceL2(_ComposedReduce):
    """ReduceL2 -> sqrt(sum(x * x))."""

    graph_ops = ("multiply", "sum", "sqrt")

    @classmethod
    def compose(cls, cx: GraphBuilder, x: Value, axes: list[int], keepdims: int) -> Value:
        _float_input(cx, x, "ReduceL2")
        return cx.op("sqrt", _sum(cx, cx.op("multiply", x, x), axes, keepdims))


@converter
class ReduceLogSumExp(_ComposedReduce):
    """ReduceLogSumExp -> log(sum(exp(x - m))) + m with m the maximum over the axes."""

    graph_ops = ("max", "subtract", "exp", "sum", "log", "add")

    @classmethod
    def compose(cls, cx: GraphBuilder, x: Value, axes: list[int], keepdims: int) -> Value:
        _float_input(cx, x, "ReduceLogSumExp")
        if not axes:
            return x
        top = cx.op("max", x, axes=axes, keepdims=1)
        total = _sum(cx, cx.op("exp", cx.op("subtract", x, top)), axes, keepdims)
        shift = top if keepdims else cx.op("max", x, axes=axes, keepdims=0)
        return cx.op("add", cx.op("log", total), shift)


@converter
class LpNormalization(Converter):
    """LpNormalization(axis, p in {1, 2}) -> x / norm_p(x) along the axis."""

    graph_ops = ("abs", "multiply", "sum", "sqrt", "divide")

    @classmethod
    def _impl_v1(cls, cx: GraphBuilder, node: Node, inputs: list[Value]) -> Value:
        x = inputs[0]
        _float_input(cx, x, "LpNormalization")
        axis = cx.axis(node.attr("axis", -1), cx.rank(x))
        p = int(node.attr("p", 2))
        if p == 1:
            norm = _sum(cx, cx.op("abs", x), [axis], 1)
        elif p == 2:
            norm = cx.op("sqrt", _sum(cx, cx.op("multiply", x, x), [axis], 1))
        else:
            raise cx.error(f"p={p} (ONNX allows 1 and 2)")
        return cx.op("divide", x, norm)


@converter
class MeanVarianceNormalization(Converter):
    """MeanVarianceNormalization(axes=[0, 2, 3]) -> (x - mean) / sqrt(mean((x - mean)^2) +
    1e-9), onnxruntime's epsilon."""

    graph_ops = ("mean", "subtract", "multiply", "add", "sqrt", "divide")

    @classmethod
    def _impl_v13(cls, cx: GraphBuilder, node: Node, inputs: list[Value]) -> Value:
        x = inputs[0]
        _float_input(cx, x, "MeanVarianceNormalization")
        axes = cx.axes(node.attr("axes", [0, 2, 3]), cx.rank(x))
        centred = cx.op("subtract", x, cx.op("mean", x, axes=axes, keepdims=1))
        variance = cx.op("mean", cx.op("multiply", centred, centred), axes=axes, keepdims=1)
        return cx.op("divide", centred,
                     cx.op("sqrt", cx.op("add", variance, cx.scalar(1e-9, x))))


@converter
class Hardmax(Converter):
    """Hardmax(axis) -> 1 at the first maximum along the axis, 0 elsewhere."""

    graph_ops = ("max", "equal", "where", "min", "astype")

    @classmethod
    def _impl_v13(cls, cx: GraphBuilder, node: Node, inputs: list[Value]) -> Value:
        x = inputs[0]
        rank = cx.rank(x)
        axis = cx.axis(node.attr("axis", -1), rank)
        n = _axis_size(cx, x, axis, "Hardmax")
        positions = _positions(n, axis, rank)
        hit = cx.op("equal", x, cx.op("max", x, axes=[axis], keepdims=1))
        first = cx.op("min", cx.op("where", hit, positions, np.array(n, np.int64)),
                      axes=[axis], keepdims=1)
        return cx.astype(cx.op("equal", positions, first), cx.dtype(x))


@converter
class LRN(Converter):
    """LRN(size, alpha, beta, bias) over NCHW channels: x / (bias + alpha / size *
    square_sum)^beta, the window sum an average pool (padding counted) times its size."""

    graph_ops = ("multiply", "reshape", "avg_pool2d", "add", "power", "divide")

    @classmethod
    def _impl_v13(cls, cx: GraphBuilder, node: Node, inputs: list[Value]) -> Value:
        x = inputs[0]
        _float_input(cx, x, "LRN")
        shape = cx.static_shape(x, "LRN")
        if len(shape) < 3:
            raise cx.error(f"LRN needs an input of rank >= 3 (N, C, ...), got rank {len(shape)}")
        size = int(node.attr("size"))
        alpha, beta = float(node.attr("alpha", 1e-4)), float(node.attr("beta", 0.75))
        bias = float(node.attr("bias", 1.0))
        n, c = shape[0], shape[1]
        rest = int(np.prod(shape[2:]))
        squares = cx.reshape(cx.op("multiply", x, x), [n, 1, c, rest])
        before, after = (size - 1) // 2, size - 1 - (size - 1) // 2
        window = cx.op("avg_pool2d", squares, kernel=[size, 1], strides=[1, 1],
                       padding=[before, 0, after, 0], dilation=[1, 1], ceil_mode=0,
                       count_include_pad=1)
        square_sum = cx.reshape(window, list(shape))  # the window's mean: alpha / size folded
        scale = cx.op("add", cx.op("multiply", square_sum, cx.scalar(alpha, x)),
                      cx.scalar(bias, x))
        return cx.op("divide", x, cx.op("power", scale, cx.scalar(beta, x)))


@converter
class RMSNormalization(Converter):
    """RMSNormalization(axis, epsilon) (opset 23) -> x / sqrt(mean(x^2 over [axis, rank)) +
    epsilon) * scale."""

    graph_ops = ("multiply", "mean", "add", "rsqrt")

    @classmethod
    def _impl_v23(cls, cx: GraphBuilder, node: Node, inputs: list[Value]) -> Value:
        x, scale = inputs[0], inputs[1]
        _float_input(cx, x, "RMSNormalization")
        if node.attr("stash_type", 1) != 1:
            raise cx.error("stash_type other than 1 (float32) is not supported")
        rank = cx.rank(x)
        axis = cx.axis(node.attr("axis", -1), rank)
        mean_square = cx.op("mean", cx.op("multiply", x, x), axes=list(range(axis, rank)),
                            keepdims=1)
        eps = cx.scalar(float(node.attr("epsilon", 1e-5)), x)
        return cx.op("multiply", cx.op("multiply", x, cx.op("rsqrt", cx.op("add", mean_square,
                                                                             eps))), scale)
