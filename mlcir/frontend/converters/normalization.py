"""InstanceNormalization and GroupNormalization on the ``layer_norm`` kernel.

Both normalise over trailing axes — the spatial axes of one channel (instance), or the
channels of a group and their spatial axes (group, after a reshape to ``[N, G, -1]``) — which
is what ``graph.layer_norm`` computes, with unit gamma and zero beta; the per-channel scale and
bias follow as a broadcast multiply and add (which graph-fuse-ops folds into the kernel's
epilogue). The channel and spatial dims must be static; the batch may be dynamic.
"""

from __future__ import annotations

import math

import numpy as np

from ..builder import GraphBuilder
from ..converter import Converter, Node, Value, converter, require


def _channels_and_spatial(cx: GraphBuilder, x: Value, op: str) -> tuple[int | None, int,
                                                                        list[int]]:
    shape = cx.shape(x)
    if len(shape) < 3:
        raise cx.error(f"{op} needs an input of rank >= 3 (N, C, spatial...), got rank "
                       f"{len(shape)}")
    if any(d is None for d in shape[1:]):
        raise cx.error(f"{op} needs static channel and spatial dims, got shape "
                       f"{['?' if d is None else d for d in shape]}")
    return shape[0], int(shape[1]), [int(d) for d in shape[2:]]  # type: ignore[arg-type]


def _normalize_trailing(cx: GraphBuilder, x: Value, first_axis: int, epsilon: float) -> Value:
    """layer_norm of ``x`` over the axes from ``first_axis`` on, no scale or shift."""
    dims = [int(d) for d in cx.shape(x)[first_axis:]]  # type: ignore[arg-type]
    ones, zeros = np.ones(dims, cx.dtype(x)), np.zeros(dims, cx.dtype(x))
    return cx.op("layer_norm", x, ones, zeros, axes=list(range(first_axis, cx.rank(x))),
                 epsilon=epsilon)


def _per_channel(cx: GraphBuilder, x: Value, scale: Value, bias: Value, channels: int) -> Value:
    """``x * scale + bias`` with scale and bias of shape [C] along axis 1."""
    shape = [1, channels] + [1] * (cx.rank(x) - 2)
    return cx.op("add", cx.op("multiply", x, cx.reshape(scale, shape)), cx.reshape(bias, shape))


@converter
class InstanceNormalization(Converter):
    """InstanceNormalization(epsilon) -> layer_norm over the spatial axes, then the
    per-channel scale and bias."""

    graph_ops = ("layer_norm", "multiply", "add", "reshape")

    @classmethod
    def _impl_v13(cls, cx: GraphBuilder, node: Node, inputs: list[Value]) -> Value:
        x, scale, bias = inputs
        _, channels, _ = _channels_and_spatial(cx, x, "InstanceNormalization")
        y = _normalize_trailing(cx, x, 2, float(node.attr("epsilon", 1e-5)))
        return _per_channel(cx, y, scale, bias, channels)


@converter
class GroupNormalization(Converter):
    """GroupNormalization(num_groups, epsilon) -> reshape to [N, G, -1], layer_norm over the
    last axis, reshape back, scale and bias per channel (opset 21; the per-group scale and
    bias of opsets 18-20 are deprecated, and onnx's checker refuses those models)."""

    graph_ops = ("layer_norm", "multiply", "add", "reshape")

    @classmethod
    def check(cls, node: Node) -> list[str]:
        problems: list[str] = []
        stash = node.attr("stash_type", 1)
        require(stash == 1, f"stash_type={stash} is not supported (only 1: float32)", problems)
        return problems

    @classmethod
    def normalize(cls, cx: GraphBuilder, node: Node, x: Value) -> tuple[Value, int, int]:
        n, channels, spatial = _channels_and_spatial(cx, x, "GroupNormalization")
        groups = int(node.attr("num_groups"))
        if groups < 1 or channels % groups:
            raise cx.error(f"{channels} channels do not split into num_groups={groups}")
        batch = -1 if n is None else n
        grouped = cx.reshape(x, [batch, groups, channels // groups * math.prod(spatial)])
        y = _normalize_trailing(cx, grouped, 2, float(node.attr("epsilon", 1e-5)))
        return cx.reshape(y, [batch, channels, *spatial]), channels, groups

    @classmethod
    def _impl_v21(cls, cx: GraphBuilder, node: Node, inputs: list[Value]) -> Value:
        x, scale, bias = inputs
        y, channels, _ = cls.normalize(cx, node, x)
        return _per_channel(cx, y, scale, bias, channels)
