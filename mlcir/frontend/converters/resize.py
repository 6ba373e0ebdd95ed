"""Resize (nearest and linear) as gathers with constant indices, one axis at a time.

With constant ``scales`` or ``sizes`` and static input dims, every output coordinate's source
is known at import: it is computed here in float32 exactly as onnxruntime computes it (the
coordinate transformation, then the nearest mode's rounding, or the two neighbours and their
weights, clamped into the axis). Nearest is one ``take`` per resized axis; linear is two takes
and a weighted sum per axis (bilinear and trilinear are separable, so resizing one axis after
the other is the same sum). The takes and the arithmetic are injective/elementwise graph ops,
which graph-fuse-ops puts into one kernel.
"""

from __future__ import annotations

import numpy as np

from ..builder import GraphBuilder
from ..converter import Converter, Node, Value, converter

_TRANSFORMS = ("half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners",
               "asymmetric")
_NEAREST_MODES = ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil")

F32 = np.float32


def source_coordinates(transform: str, out_size: int, in_size: int, scale: float
                       ) -> np.ndarray:
    """The input coordinate (float32) of each output coordinate along one axis."""
    x = np.arange(out_size, dtype=F32)
    scale, n_in, n_out = F32(scale), F32(in_size), F32(out_size)
    half = F32(0.5)
    if transform == "half_pixel":
        return (x + half) / scale - half
    if transform == "half_pixel_symmetric":
        adjustment = n_out / (scale * n_in)
        offset = n_in / F32(2) * (F32(1) - adjustment)
        return offset + (x + half) / scale - half
    if transform == "pytorch_half_pixel":
        return (x + half) / scale - half if out_size > 1 else np.zeros_like(x)
    if transform == "align_corners":
        if out_size == 1:
            return np.zeros_like(x)
        return x * (n_in - F32(1)) / (n_out - F32(1))
    assert transform == "asymmetric", transform
    return x / scale


def nearest_indices(coords: np.ndarray, mode: str, in_size: int) -> np.ndarray:
    """onnxruntime's rounding of source coordinates to the nearest input index."""
    if mode == "round_prefer_floor":
        halfway = coords == np.trunc(coords) + F32(0.5)
        rounded = np.where(halfway, np.floor(coords), _round_half_away(coords))
    elif mode == "round_prefer_ceil":
        rounded = _round_half_away(coords)
    elif mode == "floor":
        rounded = np.floor(coords)
    else:
        rounded = np.ceil(coords)
    return np.clip(rounded.astype(np.int64), 0, in_size - 1)


def _round_half_away(v: np.ndarray) -> np.ndarray:
    """C's round(): halves away from zero (numpy's rounds them to even)."""
    return np.sign(v) * np.floor(np.abs(v) + F32(0.5))


def linear_neighbours(coords: np.ndarray, in_size: int
                      ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The two input indices around each coordinate and their weights (onnxruntime's
    clamping: a coordinate outside the axis takes its edge element)."""
    c = np.clip(coords, F32(0), F32(in_size - 1))
    lo = np.minimum(c.astype(np.int64), in_size - 1)
    hi = np.minimum(lo + 1, in_size - 1)
    w_hi = np.abs(c - lo.astype(F32))
    w_lo = np.abs(c - hi.astype(F32))
    same = lo == hi
    w_hi, w_lo = np.where(same, F32(0.5), w_hi), np.where(same, F32(0.5), w_lo)
    return lo, hi, w_lo, w_hi


def _present(v: Value | None) -> bool:
    return v is not None and not (isinstance(v, np.ndarray) and v.size == 0)


@converter
class Resize(Converter):
    """Resize, modes nearest and linear, with constant scales or sizes (see the module
    docstring). Coordinate transformations: half_pixel, pytorch_half_pixel, align_corners,
    asymmetric, half_pixel_symmetric (19); all four nearest modes; axes (18). Refused: cubic,
    tf_crop_and_resize and tf_half_pixel_for_nearest (onnxruntime has neither, so neither
    could be checked), antialias, keep_aspect_ratio_policy other than stretch."""

    graph_ops = ("take", "multiply", "add")
    constants = {2: "scales", 3: "sizes"}

    @classmethod
    def check(cls, node: Node) -> list[str]:
        problems = []
        mode = node.attr("mode", "nearest")
        if mode not in ("nearest", "linear"):
            problems.append(f"mode={mode!r} is not supported (only 'nearest' and 'linear')")
        transforms = _TRANSFORMS if node.opset >= 19 else \
            tuple(t for t in _TRANSFORMS if t != "half_pixel_symmetric")
        transform = node.attr("coordinate_transformation_mode", "half_pixel")
        if transform not in transforms:
            problems.append(f"coordinate_transformation_mode={transform!r} is not supported "
                            f"(supported: {', '.join(transforms)})")
        nearest = node.attr("nearest_mode", "round_prefer_floor")
        if nearest not in _NEAREST_MODES:
            problems.append(f"nearest_mode={nearest!r} is not one of {_NEAREST_MODES}")
        if node.attr("antialias", 0):
            problems.append("antialias=1 is not supported")
        policy = node.attr("keep_aspect_ratio_policy", "stretch")
        if policy != "stretch":
            problems.append(f"keep_aspect_ratio_policy={policy!r} is not supported (only "
                            "'stretch')")
        return problems

    @classmethod
    def _impl_v13(cls, cx: GraphBuilder, node: Node, inputs: list[Value]) -> Value:
        x = inputs[0]
        scales = inputs[2] if len(inputs) > 2 else None
        sizes = inputs[3] if len(inputs) > 3 else None
        rank = cx.rank(x)
        axes = node.attr("axes")
        axes = list(range(rank)) if axes is None else [cx.axis(a, rank) for a in axes]
        if _present(scales) == _present(sizes):
            raise cx.error("exactly one of scales and sizes must be given")
        given = np.asarray(scales if _present(scales) else sizes).reshape(-1)
        if given.size != len(axes):
            raise cx.error(f"{'scales' if _present(scales) else 'sizes'} {given.tolist()} "
                           f"must have one entry per axis {axes}")
        shape = cx.shape(x)
        mode = node.attr("mode", "nearest")
        transform = node.attr("coordinate_transformation_mode", "half_pixel")
        if mode == "linear" and not np.issubdtype(cx.dtype(x), np.floating):
            raise cx.error(f"linear resizing of {cx.dtype(x)} tensors is not supported")
        for axis, value in zip(axes, given):
            in_size = shape[axis]
            if _present(scales):
                scale = F32(value)
                if in_size is None:
                    if scale == 1:
                        continue
                    raise cx.error(f"axis {axis} is resized, so its size must be static")
                out_size = int(np.floor(scale * F32(in_size)))
            else:
                out_size = int(value)
                if in_size is None:
                    raise cx.error(f"axis {axis} is resized, so its size must be static")
                scale = F32(out_size) / F32(in_size)
            if out_size < 1 or scale <= 0:
                raise cx.error(f"axis {axis} of size {in_size} would be resized to "
                               f"{out_size} elements")
            coords = source_coordinates(transform, out_size, in_size, scale)
            if mode == "nearest":
                index = nearest_indices(coords, node.attr("nearest_mode", "round_prefer_floor"),
                                        in_size)
                if not np.array_equal(index, np.arange(in_size)):
                    x = cx.op("take", x, index, axis=axis)
                continue
            lo, hi, w_lo, w_hi = linear_neighbours(coords, in_size)
            if np.array_equal(coords, np.arange(in_size, dtype=F32)):
                continue
            along = [-1 if d == axis else 1 for d in range(rank)]
            dtype = cx.dtype(x)
            x = cx.op("add",
                      cx.op("multiply", cx.op("take", x, lo, axis=axis),
                            w_lo.astype(dtype).reshape(along)),
                      cx.op("multiply", cx.op("take", x, hi, axis=axis),
                            w_hi.astype(dtype).reshape(along)))
        return x

    _impl_v18 = _impl_v13  # adds axes, antialias, keep_aspect_ratio_policy (checked)
    _impl_v19 = _impl_v13  # adds half_pixel_symmetric (checked)
