"""DepthToSpace, SpaceToDepth and Pad: data movement built from reshape, permute_dims, take and
where.

- DepthToSpace/SpaceToDepth are a reshape to rank 6, a permute_dims and a reshape back (ONNX's
  own definition); the batch may be dynamic.
- Pad is one ``take`` per padded axis with a constant index vector: ``edge`` clamps it into the
  axis, ``reflect`` mirrors it, ``wrap`` takes it modulo the size, and ``constant`` clamps it and
  then puts the constant value where a constant mask says the element is padding (``where``).
  Negative pads crop (first, as onnxruntime does). Only the padded axes need static sizes.
  Pads known only at run time (a graph input) are ``graph.pad``, a gather block whose result
  dims are all dynamic: its shape depends on the pads' values, so where it is a result of the
  model the caller passes the output array (``f(x, pads, out=y)``).
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
    padding is masked afterwards). As onnxruntime does, negative pads crop first and the
    padding repeats, mirrors or wraps what is left."""
    start = max(-before, 0)
    kept = size - start - max(-after, 0)
    wanted = np.arange(-max(before, 0), kept + max(after, 0), dtype=np.int64)
    if mode == "wrap":
        return start + np.mod(wanted, kept)
    if mode == "reflect" and kept > 1:
        period = 2 * (kept - 1)
        folded = np.mod(wanted, period)
        return start + np.where(folded < kept, folded, period - folded)
    return start + np.clip(wanted, 0, kept - 1)


@converter
class Pad(Converter):
    """Pad(mode) -> with pads known at import, one take per padded axis (and for ``constant``
    a where with the value); with pads known only at run time, graph.pad (every result dim
    dynamic). The constant value may be a runtime scalar. Modes constant, reflect, edge (13),
    wrap (19); axes (18, a constant)."""

    graph_ops = ("take", "where", "pad")
    constants = {3: "axes"}

    @classmethod
    def check(cls, node: Node) -> list[str]:
        mode = node.attr("mode", "constant")
        modes = _PAD_MODES if node.opset >= 19 else _PAD_MODES[:3]
        return [] if mode in modes else [f"mode={mode!r} is not one of {modes}"]

    @classmethod
    def _impl_v13(cls, cx: GraphBuilder, node: Node, inputs: list[Value]) -> Value:
        x, pads = inputs[0], inputs[1]
        value = inputs[2] if len(inputs) > 2 else None
        axes = inputs[3] if len(inputs) > 3 else None
        rank = cx.rank(x)
        axes = list(range(rank)) if axes is None else \
            [cx.axis(int(a), rank) for a in np.asarray(axes).reshape(-1)]
        if len(set(axes)) != len(axes) or cx.shape(pads) != (2 * len(axes),):
            raise cx.error(f"pads of shape {list(cx.shape(pads))} must have two entries for "
                           f"each of the axes {axes}")
        fill = cx.scalar(0, x) if value is None else value
        if cx.rank(fill) and cx.shape(fill) != (1,):
            raise cx.error(f"constant_value must be a scalar, got shape {list(cx.shape(fill))}")
        fill = cx.astype(cx.reshape(fill, []) if cx.rank(fill) else fill, cx.dtype(x))
        mode = node.attr("mode", "constant")
        if not cx.is_constant(pads):
            return cls.runtime_pads(cx, x, pads, axes, fill, mode)
        pads = [int(p) for p in np.asarray(pads).reshape(-1)]
        shape = cx.shape(x)
        mask = np.ones([1] * rank, bool)
        for i, axis in enumerate(axes):
            before, after = pads[i], pads[i + len(axes)]
            if before == after == 0:
                continue
            size = shape[axis]
            if size is None:
                raise cx.error(f"axis {axis} is padded, so its size must be static")
            kept = size - max(-before, 0) - max(-after, 0)
            if kept < 1:
                raise cx.error(f"pads {pads} crop all of axis {axis} (size {size})")
            if mode == "reflect" and (before >= kept or after >= kept):
                raise cx.error(f"reflect pads of axis {axis} ({before}, {after}) must be "
                               f"smaller than its size {kept}")
            x = cx.op("take", x, pad_indices(size, before, after, mode), axis=axis)
            if mode == "constant":
                inside = np.arange(-before, size + after)
                inside = (inside >= 0) & (inside < size)  # negative pads: cropped, all inside
                mask = mask & inside.reshape([-1 if d == axis else 1 for d in range(rank)])
        if mode != "constant" or mask.all():
            return x
        return cx.op("where", mask, x, fill)

    @staticmethod
    def runtime_pads(cx: GraphBuilder, x: Value, pads: Value, axes: list[int], fill: Value,
                     mode: str) -> Value:
        """graph.pad, with pads for every axis (0 for the axes not listed)."""
        rank = cx.rank(x)
        pads = cx.astype(pads, np.dtype(np.int64))
        if axes != list(range(rank)):
            # every axis' begin and end, read from pads or from the 0 appended to it
            where = {a: i for i, a in enumerate(axes)}
            count = len(axes)
            picks = [where[a] if a in where else 2 * count for a in range(rank)]
            picks += [where[a] + count if a in where else 2 * count for a in range(rank)]
            pads = cx.op("take", cx.concat([pads, np.zeros(1, np.int64)], 0),
                         np.array(picks, np.int64), axis=0)
        return cx.op("pad", x, pads, fill, mode=mode)

    _impl_v18 = _impl_v13  # adds the axes input
    _impl_v19 = _impl_v13  # adds mode "wrap", allowed by check()
