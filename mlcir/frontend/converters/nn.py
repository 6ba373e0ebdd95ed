"""Neural-network ops: convolution, pooling, normalizations, softmax.

Convolution and pooling are 2-D graph ops (NCHW); 1-D ones (NCL) are imported as 2-D with a
height of 1. ``auto_pad`` is resolved here into explicit pads, the form the graph ops take.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..builder import GraphBuilder
from ..converter import Converter, Node, Value, converter, require

_AUTO_PADS = ("NOTSET", "VALID", "SAME_UPPER", "SAME_LOWER")


def _check_window(node: Node, problems: list[str], weight: int | None = None) -> None:
    """Checks shared by Conv and the pools: 1-D or 2-D, a known auto_pad."""
    rank = node.input(0).rank
    kernel = node.attr("kernel_shape")
    if kernel is None and weight is not None:
        w_rank = node.input(weight).rank
        kernel = None if w_rank is None else [0] * (w_rank - 2)
    spatial = len(kernel) if kernel is not None else (rank - 2 if rank is not None else None)
    if spatial is not None and spatial not in (1, 2):
        problems.append(f"{spatial}-D windows are not supported (only 1-D and 2-D, "
                        "NCL and NCHW)")
    auto_pad = node.attr("auto_pad", "NOTSET")
    require(auto_pad in _AUTO_PADS, f"auto_pad={auto_pad!r} is not one of {_AUTO_PADS}",
            problems)


def _pads(cx: GraphBuilder, node: Node, x: Value, kernel: Sequence[int],
          strides: Sequence[int], dilations: Sequence[int]) -> list[int]:
    """ONNX pads ``[begin..., end...]`` with auto_pad resolved."""
    spatial = len(kernel)
    auto_pad = node.attr("auto_pad", "NOTSET")
    if auto_pad == "NOTSET":
        pads = list(node.attr("pads", [0] * 2 * spatial))
        if len(pads) != 2 * spatial:
            raise cx.error(f"pads {pads} should have {2 * spatial} entries")
        return pads
    if auto_pad == "VALID":
        return [0] * 2 * spatial
    sizes = cx.static_shape(x, f"auto_pad={auto_pad}")[2:]
    begin, end = [], []
    for size, k, s, d in zip(sizes, kernel, strides, dilations):
        out = -(-size // s)
        total = max(0, (out - 1) * s + (k - 1) * d + 1 - size)
        small, large = total // 2, total - total // 2
        begin.append(small if auto_pad == "SAME_UPPER" else large)
        end.append(large if auto_pad == "SAME_UPPER" else small)
    return begin + end


class _Window:
    """The window parameters of a Conv or pool node, lifted to 2-D."""

    def __init__(self, cx: GraphBuilder, node: Node, x: Value, kernel: Sequence[int]) -> None:
        rank = cx.rank(x)
        spatial = len(kernel)
        if rank != spatial + 2 or spatial not in (1, 2):
            raise cx.error(f"a {spatial}-D window on an input of rank {rank} is not supported "
                           "(1-D: NCL, 2-D: NCHW)")
        strides = list(node.attr("strides", [1] * spatial))
        dilations = list(node.attr("dilations", [1] * spatial))
        pads = _pads(cx, node, x, kernel, strides, dilations)
        self.one_d = spatial == 1
        if self.one_d:  # NCL -> NC1L
            kernel, strides, dilations = [1, *kernel], [1, *strides], [1, *dilations]
            pads = [0, pads[0], 0, pads[1]]
        self.kernel, self.strides, self.dilations = list(kernel), strides, dilations
        self.padding = pads  # (top, left, bottom, right): ONNX's order for 2-D

    def lift(self, cx: GraphBuilder, x: Value) -> Value:
        if not self.one_d:
            return x
        n, c, length = cx.static_shape(x, "a 1-D window")
        return cx.reshape(x, [n, c, 1, length])

    def lower(self, cx: GraphBuilder, y: Value) -> Value:
        if not self.one_d:
            return y
        n, c, _, length = cx.static_shape(y, "a 1-D window")
        return cx.reshape(y, [n, c, length])


@converter
class Conv(Converter):
    """Conv (groups, strides, pads, dilations, auto_pad) -> graph.conv2d, plus a broadcast add
    of the bias reshaped to [1, C, 1, 1]."""

    graph_ops = ("conv2d",)

    @classmethod
    def check(cls, node: Node) -> list[str]:
        problems: list[str] = []
        _check_window(node, problems, weight=1)
        return problems

    @classmethod
    def _impl_v13(cls, cx: GraphBuilder, node: Node, inputs: list[Value]) -> Value:
        x, w = inputs[0], inputs[1]
        bias = inputs[2] if len(inputs) > 2 else None
        kernel = node.attr("kernel_shape") or cx.shape(w)[2:]
        window = _Window(cx, node, x, kernel)
        if window.one_d:
            out_c, in_c, k = cx.static_shape(w, "a 1-D convolution's weight")
            w = cx.reshape(w, [out_c, in_c, 1, k])
        y = cx.op("conv2d", window.lift(cx, x), w, strides=window.strides,
                  padding=window.padding, dilation=window.dilations,
                  groups=int(node.attr("group", 1)))
        if bias is not None:
            (channels,) = cx.static_shape(bias, "the bias")
            y = cx.op("add", y, cx.reshape(bias, [1, channels, 1, 1]))
        return window.lower(cx, y)


@converter
class MaxPool(Converter):
    """MaxPool -> graph.max_pool2d (no Indices output). On uint8 (a QOperator model's
    activations; stored as i8) the sign bit is flipped before and after (``x ^ 0x80`` orders
    uint8 bits as int8), so the signed maximum is the unsigned one."""

    graph_ops = ("max_pool2d",)
    unsigned_inputs = True

    @classmethod
    def check(cls, node: Node) -> list[str]:
        problems: list[str] = []
        _check_window(node, problems)
        require(len(node.outputs) < 2 or not node.outputs[1],
                "the Indices output is not supported", problems)
        info = node.input(0)
        if info.type is not None and info.type[1].kind == "u" and info.type[1] != np.uint8:
            problems.append(f"input 0 ('{info.name}') is {info.type[1]}: of the unsigned "
                            "types only uint8 is supported")
        return problems

    @classmethod
    def _impl_v13(cls, cx: GraphBuilder, node: Node, inputs: list[Value]) -> Value:
        x = inputs[0]
        info = node.input(0)
        flip = info.type is not None and info.type[1] == np.uint8
        if flip:
            x = cx.op("bitwise_xor", x, np.array(-128, np.int8))
        window = _Window(cx, node, x, node.attr("kernel_shape"))
        y = cx.op("max_pool2d", window.lift(cx, x), kernel=window.kernel,
                  strides=window.strides, padding=window.padding, dilation=window.dilations,
                  ceil_mode=int(node.attr("ceil_mode", 0)))
        y = window.lower(cx, y)
        return cx.op("bitwise_xor", y, np.array(-128, np.int8)) if flip else y


@converter
class AveragePool(Converter):
    """AveragePool -> graph.avg_pool2d (dilations from opset 19)."""

    graph_ops = ("avg_pool2d",)

    @classmethod
    def check(cls, node: Node) -> list[str]:
        problems: list[str] = []
        _check_window(node, problems)
        return problems

    @classmethod
    def _impl_v13(cls, cx: GraphBuilder, node: Node, inputs: list[Value]) -> Value:
        x = inputs[0]
        window = _Window(cx, node, x, node.attr("kernel_shape"))
        y = cx.op("avg_pool2d", window.lift(cx, x), kernel=window.kernel,
                  strides=window.strides, padding=window.padding, dilation=window.dilations,
                  ceil_mode=int(node.attr("ceil_mode", 0)),
                  count_include_pad=int(node.attr("count_include_pad", 0)))
        return window.lower(cx, y)

    _impl_v19 = _impl_v13  # adds the dilations attribute, read by _Window


class _GlobalPool(Converter):

    @classmethod
    def _impl_v13(cls, cx: GraphBuilder, node: Node, inputs: list[Value]) -> Value:
        x = inputs[0]
        rank = cx.rank(x)
        if rank < 3:
            raise cx.error(f"the input must have spatial dims (rank >= 3), got rank {rank}")
        return cx.op(cls.graph_op, x, axes=list(range(2, rank)), keepdims=1)


@converter
class GlobalAveragePool(_GlobalPool):
    """GlobalAveragePool -> graph.mean over the spatial axes, keepdims."""

    graph_op = "mean"


@converter
class GlobalMaxPool(_GlobalPool):
    """GlobalMaxPool -> graph.max over the spatial axes, keepdims."""

    graph_op = "max"


@converter
class BatchNormalization(Converter):
    """BatchNormalization in inference: ``x * a + b`` with ``a = scale / sqrt(var + eps)`` and
    ``b = bias - mean * a`` per channel (folded when the statistics are constants, as they are
    in exported models)."""

    graph_ops = ("multiply", "add")

    @classmethod
    def check(cls, node: Node) -> list[str]:
        problems: list[str] = []
        require(not node.attr("training_mode", 0), "training_mode=1 is not supported (mlcir "
                "imports models for inference)", problems)
        require(not any(node.outputs[1:]), "the running mean/variance outputs (training) are "
                "not supported", problems)
        rank = node.input(0).rank
        require(rank is None or rank >= 2, f"the input must have rank >= 2, got {rank}", problems)
        return problems

    @classmethod
    def _impl_v13(cls, cx: GraphBuilder, node: Node, inputs: list[Value]) -> Value:
        x, scale, bias, mean, var = inputs[:5]
        eps = cx.scalar(float(node.attr("epsilon", 1e-5)), var)
        a = cx.op("divide", scale, cx.op("sqrt", cx.op("add", var, eps)))
        b = cx.op("subtract", bias, cx.op("multiply", mean, a))
        (channels,) = cx.static_shape(a, "the per-channel statistics")
        per_channel = [1, channels] + [1] * (cx.rank(x) - 2)
        return cx.op("add", cx.op("multiply", x, cx.reshape(a, per_channel)),
                     cx.reshape(b, per_channel))


class _Softmax(Converter):
    """Softmax-like ops: one axis (default -1) since opset 13."""


    @classmethod
    def _impl_v13(cls, cx: GraphBuilder, node: Node, inputs: list[Value]) -> Value:
        x = inputs[0]
        axis = cx.axis(node.attr("axis", -1), cx.rank(x))
        return cx.op(cls.graph_op, x, axis=axis)


@converter
class Softmax(_Softmax):
    """Softmax(axis) -> graph.softmax."""

    graph_op = "softmax"


@converter
class LogSoftmax(_Softmax):
    """LogSoftmax(axis) -> graph.log_softmax (what classifiers exported from PyTorch end with)."""

    graph_op = "log_softmax"


@converter
class LayerNormalization(Converter):
    """LayerNormalization (opset 17) -> graph.layer_norm over axes [axis, rank); gamma and
    beta are broadcast to x.shape[axis:] (beta defaults to zeros). Only the Y output."""

    graph_ops = ("layer_norm",)

    @classmethod
    def check(cls, node: Node) -> list[str]:
        problems: list[str] = []
        require(not any(node.outputs[1:]), "the Mean and InvStdDev outputs are not supported",
                problems)
        return problems

    @classmethod
    def _impl_v17(cls, cx: GraphBuilder, node: Node, inputs: list[Value]) -> Value:
        x, gamma = inputs[0], inputs[1]
        beta = inputs[2] if len(inputs) > 2 else None
        rank = cx.rank(x)
        axis = cx.axis(node.attr("axis", -1), rank)
        normalized = list(cx.shape(x)[axis:])
        if any(d is None for d in normalized):
            raise cx.error(f"the normalized dims {normalized} of the input must be static")
        if beta is None:
            beta = np.zeros(normalized, cx.dtype(x))
        gamma, beta = (cx.broadcast_to(v, normalized) for v in (gamma, beta))
        return cx.op("layer_norm", x, gamma, beta, axes=list(range(axis, rank)),
                     epsilon=float(node.attr("epsilon", 1e-5)))
