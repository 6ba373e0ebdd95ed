"""DepthToSpace, SpaceToDepth and Pad: data movement built from reshape, permute_dims, take and
where.

- DepthToSpace/SpaceToDepth are a reshape to rank 6, a permute_dims and a reshape back (ONNX's
  own definition); the batch may be dynamic.
- Pad is one ``take`` per padded axis with a constant index vector: ``edge`` clamps it into the
  axis, ``reflect`` mirrors it, ``wrap`` takes it modulo the size, and ``constant`` clamps it and
  then puts the constant value where a constant mask says the element is padding (``where``).
  Negative pads crop. Only the padded axes need static sizes. The pads (and axes) must be
  known at import: the result's shape depends on them, and mlcir computes result shapes before
  running (a pads tensor given at run time is refused with that reason).
"""

from __future__ import annotations

import numpy as np

from ..builder import GraphBuilder
from ..converter import Converter, Node, Value, converter


def _nchw(cx: GraphBuilder, x: Value, op: str) -> tuple[int | None, int, int, int]:
    shape = cx.shape(x)
    if len(shape) != 4:
        raise cx.error(f"{op} takes an NCHW tensor (rank 4), got rank {len(shape)}")
    n, c, h, w = shape
    if None in (c, h, w):
        raise cx.error(f"{op} needs static C, H and W, got shape "
                       f"{['?' if d is None else d for d in shape]}")
    return n, int(c), int(h), int(w)  # type: ignore[arg-type]


def _batch(n: int | None) -> int:
    return -1 if n is None else n


@converter
class DepthToSpace(Converter):
    """DepthToSpace(blocksize, mode DCR or CRD) -> reshape, permute_dims, reshape."""

    graph_ops = ("reshape", "permute_dims")

    @classmethod
    def check(cls, node: Node) -> list[str]:
        mode = node.attr("mode", "DCR")
        return [] if mode in ("DCR", "CRD") else [f"mode={mode!r} must be 'DCR' or 'CRD'"]

    @classmethod
    def _impl_v13(cls, cx: GraphBuilder, node: Node, inputs: list[Value]) -> Value:
        x = inputs[0]
        n, c, h, w = _nchw(cx, x, "DepthToSpace")
        b = int(node.attr("blocksize"))
        if b < 1 or c % (b * b):
            raise cx.error(f"{c} channels do not split into blocks of {b}x{b}")
        if node.attr("mode", "DCR") == "DCR":
            split, order = [_batch(n), b, b, c // (b * b), h, w], [0, 3, 4, 1, 5, 2]
        else:
            split, order = [_batch(n), c // (b * b), b, b, h, w], [0, 1, 4, 2, 5, 3]
        blocks = cx.op("permute_dims", cx.reshape(x, split), axes=order)
        return cx.reshape(blocks, [_batch(n), c // (b * b), h * b, w * b])


@converter
class SpaceToDepth(Converter):
    """SpaceToDepth(blocksize) -> reshape, permute_dims, reshape."""

    graph_ops = ("reshape", "permute_dims")

    @classmethod
    def _impl_v13(cls, cx: GraphBuilder, node: Node, inputs: list[Value]) -> Value:
        x = inputs[0]
        n, c, h, w = _nchw(cx, x, "SpaceToDepth")
        b = int(node.attr("blocksize"))
        if b < 1 or h % b or w % b:
            raise cx.error(f"H={h} and W={w} do not split into blocks of {b}x{b}")
        blocks = cx.reshape(x, [_batch(n), c, h // b, b, w // b, b])
        moved = cx.op("permute_dims", blocks, axes=[0, 3, 5, 1, 2, 4])
        return cx.reshape(moved, [_batch(n), c * b * b, h // b, w // b])


_PAD_MODES = ("constant", "reflect", "edge", "wrap")


def pad_indices(size: int, before: int, after: int, mode: str) -> np.ndarray:
    """The source index of each element of one padded axis (``constant``: clamped; the
    padding is masked afterwards)."""
    wanted = np.arange(-before, size + after, dtype=np.int64)
    if mode == "wrap":
        return np.mod(wanted, size)
    if mode == "reflect" and size > 1:
        period = 2 * (size - 1)
        folded = np.mod(wanted, period)
        return np.where(folded < size, folded, period - folded)
    return np.clip(wanted, 0, size - 1)


@converter
class Pad(Converter):
    """Pad(mode) with constant pads (and axes, opset 18) -> one take per padded axis, and for
    ``constant`` a where with the constant value (an input that may be known only at run
    time). Modes constant, reflect, edge (13), wrap (19)."""

    graph_ops = ("take", "where")
    constants = {3: "axes"}  # and the pads, refused in check() with the reason

    @classmethod
    def check(cls, node: Node) -> list[str]:
        mode = node.attr("mode", "constant")
        modes = _PAD_MODES if node.opset >= 19 else _PAD_MODES[:3]
        problems = [] if mode in modes else [f"mode={mode!r} is not one of {modes}"]
        if node.input(1).present and node.input(1).constant is None:
            problems.append(f"pads '{node.input(1).name}' is known only at run time: the "
                            "result's shape would depend on its values, and mlcir computes "
                            "result shapes before running (pads must be a constant, or "
                            "computed from constants and static shapes)")
        return problems

    @classmethod
    def _impl_v13(cls, cx: GraphBuilder, node: Node, inputs: list[Value]) -> Value:
        x, pads = inputs[0], inputs[1]
        value = inputs[2] if len(inputs) > 2 else None
        axes = inputs[3] if len(inputs) > 3 else None
        rank = cx.rank(x)
        axes = list(range(rank)) if axes is None else \
            [cx.axis(int(a), rank) for a in np.asarray(axes).reshape(-1)]
        pads = [int(p) for p in np.asarray(pads).reshape(-1)]
        if len(pads) != 2 * len(axes) or len(set(axes)) != len(axes):
            raise cx.error(f"pads {pads} must have two entries for each of the axes {axes}")
        mode = node.attr("mode", "constant")
        shape = cx.shape(x)
        mask = np.ones([1] * rank, bool)
        for i, axis in enumerate(axes):
            before, after = pads[i], pads[i + len(axes)]
            if before == after == 0:
                continue
            size = shape[axis]
            if size is None:
                raise cx.error(f"axis {axis} is padded, so its size must be static")
            if size + before + after < 1:
                raise cx.error(f"pads {pads} leave nothing of axis {axis} (size {size})")
            if mode == "reflect" and (before >= size or after >= size):
                raise cx.error(f"reflect pads of axis {axis} ({before}, {after}) must be "
                               f"smaller than its size {size}")
            source = pad_indices(size, before, after, mode)
            x = cx.op("take", x, source, axis=axis)
            if mode == "constant":
                inside = np.arange(-before, size + after)
                inside = (inside >= 0) & (inside < size)
                mask = mask & inside.reshape([-1 if d == axis else 1 for d in range(rank)])
        if mode != "constant" or mask.all():
            return x
        fill = cx.scalar(0, x) if value is None else value
        if cx.rank(fill) and cx.shape(fill) != (1,):
            raise cx.error(f"constant_value must be a scalar, got shape {list(cx.shape(fill))}")
        if cx.rank(fill):
            fill = cx.reshape(fill, [])
        return cx.op("where", mask, x, cx.astype(fill, cx.dtype(x)))

    _impl_v18 = _impl_v13  # adds the axes input
    _impl_v19 = _impl_v13  # adds mode "wrap", allowed by check()
