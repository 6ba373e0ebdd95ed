"""The blocked NCHW<c>c layout (graph-layout-nchwc) and the Winograd ops built on it.

The conversions between NCHW and NCHW<c>c in numpy (arrays and filters), and the shape rules
and numpy semantics of the ops that take blocked tensors.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from . import winograd
from .graph_eval import _np_conv2d, _np_max_pool2d, _np_pad_window
from .graph_shapes import _conv2d, _fmt, _pool, _require_float, _same_element_type
from .opdef import ShapeError, TensorSpec


def parse_blocked_layout(layout: str) -> int | None:
    """The channel block of ``"NCHW16c"`` (16); None for ``"NCHW"``; raises otherwise."""
    if layout == "NCHW":
        return None
    if layout.startswith("NCHW") and layout.endswith("c") and layout[4:-1].isdigit() \
            and int(layout[4:-1]) > 0:
        return int(layout[4:-1])
    raise ShapeError(f"layout {layout!r} is neither NCHW nor NCHW<c>c (NCHW16c)")


def _layout_transform(specs: list[TensorSpec], attrs: dict[str, Any]) -> list[TensorSpec]:
    (x,) = specs
    src, dst = parse_blocked_layout(attrs["src_layout"]), parse_blocked_layout(attrs["dst_layout"])
    if (src is None) == (dst is None):
        raise ShapeError(f"layout_transform goes between NCHW and NCHW<c>c, got "
                         f"{attrs['src_layout']} -> {attrs['dst_layout']}")
    if src is None:
        if x.rank != 4:
            raise ShapeError(f"x must be NCHW (rank 4), got {_fmt(x.shape)}")
        n, c, h, w = x.shape
        if c is None or c % dst:
            raise ShapeError(f"{c} channels do not split into blocks of {dst}")
        return [TensorSpec((n, c // dst, h, w, dst), x.element_type)]
    if x.rank != 5 or x.shape[4] != src:
        raise ShapeError(f"x must be NCHW{src}c ([N, C/{src}, H, W, {src}]), got {_fmt(x.shape)}")
    n, cb, h, w, _ = x.shape
    return [TensorSpec((n, None if cb is None else cb * src, h, w), x.element_type)]


def to_blocked(x: np.ndarray, block: int) -> np.ndarray:
    """NCHW -> NCHW<block>c: ``[N, C/c, H, W, c]``."""
    n, c, h, w = x.shape
    return np.ascontiguousarray(x.reshape(n, c // block, block, h, w).transpose(0, 1, 3, 4, 2))


def from_blocked(x: np.ndarray) -> np.ndarray:
    """NCHW<c>c -> NCHW."""
    n, cb, h, w, c = x.shape
    return np.ascontiguousarray(x.transpose(0, 1, 4, 2, 3).reshape(n, cb * c, h, w))


def pack_filter(w: np.ndarray, in_block: int, out_block: int) -> np.ndarray:
    """An OIHW filter ``[O, C, KH, KW]`` as ``conv2d_nchwc`` streams it:
    ``[O/co, C/ci, KH, KW, ci, co]`` (a depthwise ``[C, 1, KH, KW]``: ci = 1)."""
    o, c, kh, kw = w.shape
    return np.ascontiguousarray(w.reshape(o // out_block, out_block, c // in_block, in_block, kh,
                                          kw).transpose(0, 2, 4, 5, 3, 1))


def unpack_filter(w: np.ndarray) -> np.ndarray:
    ob, cb, kh, kw, ci, co = w.shape
    return np.ascontiguousarray(w.transpose(0, 5, 1, 4, 2, 3).reshape(ob * co, cb * ci, kh, kw))


def _np_layout_transform(x: np.ndarray, src_layout: str, dst_layout: str) -> np.ndarray:  # noqa: ARG001
    block = parse_blocked_layout(dst_layout)
    return from_blocked(x) if block is None else to_blocked(x, block)


def _conv2d_nchwc(specs: list[TensorSpec], attrs: dict[str, Any]) -> list[TensorSpec]:
    x, w = specs
    _same_element_type(specs)
    if x.rank != 5 or w.rank != 6:
        raise ShapeError(f"x must be [N, C/ci, H, W, ci] and w [O/co, C/ci, KH, KW, ci, co], got "
                         f"x {_fmt(x.shape)} and w {_fmt(w.shape)}")
    n, cb, h, wd, ci = x.shape
    ob, wcb, kh, kw, wci, co = w.shape
    groups = attrs["groups"]
    if groups == 1 and (wcb, wci) != (cb, ci):
        raise ShapeError(f"w {_fmt(w.shape)} does not read the channel blocks of x {_fmt(x.shape)}")
    if groups != 1 and not (wcb == 1 and wci == 1 and ci == co and ob == cb
                            and groups == cb * ci):
        raise ShapeError(f"groups={groups}: only depthwise (groups = channels, w "
                         f"[C/c, 1, KH, KW, 1, c]) is blocked, got x {_fmt(x.shape)} and "
                         f"w {_fmt(w.shape)}")
    unblocked = _conv2d([TensorSpec((n, None if cb is None else cb * ci, h, wd), x.element_type),
                         TensorSpec((ob * co, wcb * wci, kh, kw), w.element_type)], attrs)[0]
    _, _, oh, ow = unblocked.shape
    return [TensorSpec((n, ob, oh, ow, co), x.element_type)]


def _np_conv2d_nchwc(x: np.ndarray, w: np.ndarray, strides, padding, dilation, groups
                     ) -> np.ndarray:
    out = _np_conv2d(from_blocked(x), unpack_filter(w), strides, padding, dilation, groups)
    return to_blocked(out, w.shape[5])


def _pool_nchwc(specs: list[TensorSpec], attrs: dict[str, Any]) -> list[TensorSpec]:
    (x,) = specs
    if x.rank != 5:
        raise ShapeError(f"x must be NCHW<c>c (rank 5), got {_fmt(x.shape)}")
    n, cb, h, w, c = x.shape
    (out,) = _pool([TensorSpec((n, cb, h, w), x.element_type)], attrs)
    return [TensorSpec(out.shape + (c,), x.element_type)]


def _winograd_input(specs: list[TensorSpec], attrs: dict[str, Any]) -> list[TensorSpec]:
    (x,) = specs
    _require_float(x)
    if x.rank != 5 or None in x.shape:
        raise ShapeError(f"x must be a static NCHW<c>c tensor [N, C/c, H, W, c], got {_fmt(x.shape)}")
    padding = attrs["padding"]
    if len(padding) != 4 or any(p < 0 for p in padding):
        raise ShapeError(f"padding must be 4 sizes >= 0 [top, left, bottom, right], got {padding}")
    n, cb, h, w, c = x.shape
    hp, wp = h + padding[0] + padding[2], w + padding[1] + padding[3]
    step, extra = winograd.TILE, winograd.KERNEL - 1
    if (hp - extra) % step or (wp - extra) % step or hp <= extra or wp <= extra:
        raise ShapeError(f"the padded input's H and W ({hp}, {wp}) must be 4 t + 2 (whole "
                         f"4x4 output tiles of a 3x3 window)")
    tiles = n * ((hp - extra) // step) * ((wp - extra) // step)
    return [TensorSpec((winograd.ALPHA ** 2, tiles, cb * c), x.element_type)]


def _np_winograd_input(x: np.ndarray, padding: Sequence[int]) -> np.ndarray:
    return winograd.input_transform(_np_pad_window(x, padding, 0.0))


def _winograd_output(specs: list[TensorSpec], attrs: dict[str, Any]) -> list[TensorSpec]:
    (m,) = specs
    _require_float(m, "m")
    tiles, block = attrs["tiles"], attrs["block"]
    if len(tiles) != 2 or min(tiles) < 1 or block < 1:
        raise ShapeError(f"tiles must be [tH, tW] >= 1 and block >= 1, got {tiles} and {block}")
    if m.rank != 3 or None in m.shape or m.shape[0] != winograd.ALPHA ** 2:
        raise ShapeError(f"m must be the 36 products [36, tiles, K], got {_fmt(m.shape)}")
    _, t, k = m.shape
    if t % (tiles[0] * tiles[1]) or k % block:
        raise ShapeError(f"m {_fmt(m.shape)} is not [36, N x {tiles[0]} x {tiles[1]} tiles, "
                         f"K/{block} x {block}]")
    n = t // (tiles[0] * tiles[1])
    return [TensorSpec((n, k // block, tiles[0] * winograd.TILE, tiles[1] * winograd.TILE,
                        block), m.element_type)]


def _np_winograd_output(m: np.ndarray, tiles: Sequence[int], block: int) -> np.ndarray:
    return winograd.output_transform(m, tiles, block)


def _np_max_pool2d_nchwc(x: np.ndarray, **attrs: Any) -> np.ndarray:
    return to_blocked(_np_max_pool2d(from_blocked(x), **attrs), x.shape[4])
