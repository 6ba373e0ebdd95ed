"""The ``graph`` ops in numpy: the ``evaluate`` functions of the op table.

Constant folding runs them, and tests compare the lowerings against them.
"""

from __future__ import annotations

import builtins
import math
from typing import Any, Sequence

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from .graph_shape_ops import reshape_result
from .graph_shapes import window_output_size


def _erf(x: np.ndarray) -> np.ndarray:
    return np.vectorize(math.erf, otypes=[x.dtype])(x)


def _divide(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """arith.divf for floats; arith.divsi (rounds toward zero, like C and ONNX) for integers."""
    if np.issubdtype(np.result_type(a, b), np.integer):
        return (np.sign(a) * np.sign(b) * (np.abs(a) // np.abs(b))).astype(np.result_type(a, b))
    return np.divide(a, b)


def _np_clip(x: np.ndarray, min: float, max: float) -> np.ndarray:  # the attributes' names
    if np.issubdtype(x.dtype, np.integer):
        info = np.iinfo(x.dtype)
        lo = info.min if min == -math.inf else builtins.max(info.min, math.ceil(min))
        hi = info.max if max == math.inf else builtins.min(info.max, math.floor(max))
        return np.minimum(np.maximum(x, x.dtype.type(lo)), x.dtype.type(hi))
    return np.minimum(np.maximum(x, x.dtype.type(min)), x.dtype.type(max))


def _np_gelu(x: np.ndarray, approximate: str) -> np.ndarray:
    v = x.astype(np.float64)
    if approximate == "tanh":
        inner = math.sqrt(2 / math.pi) * (v + 0.044715 * v ** 3)
        return (0.5 * v * (1 + np.tanh(inner))).astype(x.dtype)
    return (0.5 * v * (1 + _erf(v / math.sqrt(2)))).astype(x.dtype)


def _np_reduce(fn):
    def evaluate(x: np.ndarray, axes: Sequence[int], keepdims: int) -> np.ndarray:
        return fn(x, axis=tuple(axes), keepdims=bool(keepdims))
    return evaluate


def _np_mean(x: np.ndarray, axes: Sequence[int], keepdims: int) -> np.ndarray:
    total = np.sum(x, axis=tuple(axes), keepdims=bool(keepdims), dtype=x.dtype)
    count = math.prod(x.shape[a] for a in axes)
    return _divide(total, np.asarray(count, x.dtype)).astype(x.dtype)


def _np_softmax(x: np.ndarray, axis: int) -> np.ndarray:
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return e / np.sum(e, axis=axis, keepdims=True)


def _np_log_softmax(x: np.ndarray, axis: int) -> np.ndarray:
    shifted = x - np.max(x, axis=axis, keepdims=True)
    return shifted - np.log(np.sum(np.exp(shifted), axis=axis, keepdims=True))


def _np_layer_norm(x: np.ndarray, gamma: np.ndarray, beta: np.ndarray, axes: Sequence[int],
                   epsilon: float) -> np.ndarray:
    axes = tuple(axes)
    mean = np.mean(x, axis=axes, keepdims=True)
    var = np.mean(np.square(x - mean), axis=axes, keepdims=True)
    return ((x - mean) / np.sqrt(var + x.dtype.type(epsilon)) * gamma + beta).astype(x.dtype)


def _np_windows(padded: np.ndarray, kernel: Sequence[int], strides: Sequence[int],
                dilation: Sequence[int]) -> np.ndarray:
    """Every window of an NCHW array as a view ``[N, C, OH, OW, KH, KW]``."""
    (kh, kw), (sh, sw), (dh, dw) = kernel, strides, dilation
    view = sliding_window_view(padded, (dh * (kh - 1) + 1, dw * (kw - 1) + 1), axis=(2, 3))
    return view[:, :, ::sh, ::sw, ::dh, ::dw]


def _np_conv2d(x: np.ndarray, w: np.ndarray, strides: Sequence[int], padding: Sequence[int],
               dilation: Sequence[int], groups: int) -> np.ndarray:
    pt, pl, pb, pr = padding
    padded = np.pad(x, ((0, 0), (0, 0), (pt, pb), (pl, pr)))
    win = _np_windows(padded, w.shape[2:], strides, dilation)
    n, c, oh, ow, kh, kw = win.shape
    o = w.shape[0]
    win = win.reshape(n, groups, c // groups, oh, ow, kh, kw)
    wg = w.reshape(groups, o // groups, c // groups, kh, kw)
    out = np.einsum("ngchwij,gocij->ngohw", win, wg)
    return out.reshape(n, o, oh, ow).astype(x.dtype)


def _np_pool_out(x: np.ndarray, kernel, strides, padding, dilation, ceil_mode) -> list[int]:
    pt, pl, pb, pr = padding
    return [window_output_size(x.shape[2], kernel[0], strides[0], pt, pb, dilation[0], ceil_mode),
            window_output_size(x.shape[3], kernel[1], strides[1], pl, pr, dilation[1], ceil_mode)]


def _np_pool_windows(x: np.ndarray, fill: Any, out: Sequence[int], kernel: Sequence[int],
                     strides: Sequence[int], padding: Sequence[int], dilation: Sequence[int]
                     ) -> np.ndarray:
    """The ``out`` windows along H and W of ``x`` padded with ``fill`` (also past the
    bottom/right padding, where ceil mode reads)."""
    pt, pl, pb, pr = padding
    need = [(o - 1) * s + d * (k - 1) + 1 for o, s, d, k in zip(out, strides, dilation, kernel)]
    extra_h = max(0, need[0] - (x.shape[2] + pt + pb))
    extra_w = max(0, need[1] - (x.shape[3] + pl + pr))
    padded = np.pad(x, ((0, 0), (0, 0), (pt, pb + extra_h), (pl, pr + extra_w)),
                    constant_values=fill)
    return _np_windows(padded, kernel, strides, dilation)[:, :, :out[0], :out[1]]


def _np_max_pool2d(x: np.ndarray, kernel, strides, padding, dilation, ceil_mode) -> np.ndarray:
    lowest = -np.inf if np.issubdtype(x.dtype, np.floating) else np.iinfo(x.dtype).min
    out = _np_pool_out(x, kernel, strides, padding, dilation, ceil_mode)
    return _np_pool_windows(x, lowest, out, kernel, strides, padding, dilation).max(axis=(-2, -1))


def pool_divisors(spatial: Sequence[int], kernel: Sequence[int], strides: Sequence[int],
                  padding: Sequence[int], dilation: Sequence[int], ceil_mode: int,
                  count_include_pad: int) -> np.ndarray:
    """``[OH, OW]``: how many taps of each average-pooling window are counted: those inside the
    input, or with ``count_include_pad`` inside the input and its explicit padding (never the
    extra region ceil mode reads past the padding)."""
    h, w = spatial
    pt, pl, pb, pr = padding
    out = [window_output_size(h, kernel[0], strides[0], pt, pb, dilation[0], ceil_mode),
           window_output_size(w, kernel[1], strides[1], pl, pr, dilation[1], ceil_mode)]
    if count_include_pad:
        counted = np.ones((1, 1, h + pt + pb, w + pl + pr), np.int64)
        padding = (0, 0, 0, 0)
    else:
        counted = np.ones((1, 1, h, w), np.int64)
    return _np_pool_windows(counted, 0, out, kernel, strides, padding, dilation).sum(
        axis=(-2, -1))[0, 0]


def _np_avg_pool2d(x: np.ndarray, kernel, strides, padding, dilation, ceil_mode,
                   count_include_pad) -> np.ndarray:
    out = _np_pool_out(x, kernel, strides, padding, dilation, ceil_mode)
    total = _np_pool_windows(x, 0, out, kernel, strides, padding, dilation).sum(
        axis=(-2, -1), dtype=x.dtype)
    divisors = pool_divisors(x.shape[2:], kernel, strides, padding, dilation, ceil_mode,
                             count_include_pad)
    return _divide(total, divisors.astype(x.dtype)).astype(x.dtype)


def _np_strided_slice(x: np.ndarray, begin: Sequence[int], end: Sequence[int],
                      strides: Sequence[int]) -> np.ndarray:
    index = tuple(slice(b, e if (s > 0 or e >= 0) else None, s)
                  for b, e, s in zip(begin, end, strides))
    return np.ascontiguousarray(x[index])


def _np_take(x: np.ndarray, indices: np.ndarray, axis: int) -> np.ndarray:
    n = x.shape[axis]
    if np.any((indices < -n) | (indices >= n)):
        raise IndexError(f"take: indices out of range for an axis of {n} elements")
    return np.take(x, np.where(indices < 0, indices + n, indices), axis=axis)


def _np_gather_elements(x: np.ndarray, indices: np.ndarray, axis: int) -> np.ndarray:
    n = x.shape[axis]
    if np.any((indices < -n) | (indices >= n)):
        raise IndexError(f"gather_elements: indices out of range for an axis of {n} elements")
    return np.take_along_axis(x, np.where(indices < 0, indices + n, indices), axis=axis)


def _np_scatter_rows(data: np.ndarray, rows: np.ndarray, updates: np.ndarray,
                     reduction: str) -> np.ndarray:
    n = data.shape[0]
    if np.any((rows < 0) | (rows >= n)):
        raise IndexError(f"scatter_rows: rows out of range for {n} rows")
    out = data.copy()
    if reduction == "none":
        for m, row in enumerate(rows):  # in order: a later update of a row wins
            out[row] = updates[m]
        return out
    combine = {"add": np.add, "mul": np.multiply, "max": np.maximum, "min": np.minimum}
    combine[reduction].at(out, rows, updates)
    return out


def _np_pad(x: np.ndarray, pads: np.ndarray, value: np.ndarray, mode: str) -> np.ndarray:
    rank = x.ndim
    before, after = [int(p) for p in pads[:rank]], [int(p) for p in pads[rank:]]
    for axis, (b, e) in enumerate(zip(before, after)):
        n = x.shape[axis] - max(-b, 0) - max(-e, 0)  # kept after cropping
        if n < 1 or (mode == "reflect" and (b >= n or e >= n)):
            raise ValueError(f"pad: pads ({b}, {e}) do not fit axis {axis} of {n} elements "
                             f"in mode {mode!r}")
    cropped = x[tuple(slice(max(-b, 0), n - max(-e, 0))
                      for b, e, n in zip(before, after, x.shape))]
    widths = [(max(b, 0), max(e, 0)) for b, e in zip(before, after)]
    if mode == "constant":
        return np.pad(cropped, widths, constant_values=value)
    return np.pad(cropped, widths, mode={"edge": "edge", "reflect": "reflect",
                                         "wrap": "wrap"}[mode])


_np_sum = _np_reduce(lambda x, **kw: np.sum(x, dtype=x.dtype, **kw))
_np_max = _np_reduce(np.max)
_np_min = _np_reduce(np.min)
_np_prod = _np_reduce(lambda x, **kw: np.prod(x, dtype=x.dtype, **kw))


def _np_matmul_packed(lhs: np.ndarray, packed: np.ndarray) -> np.ndarray:
    return np.einsum("...mk,bkn->...mbn", lhs, packed).astype(lhs.dtype)


def _np_reshape(x: np.ndarray, shape: Sequence[int]) -> np.ndarray:
    return np.reshape(x, reshape_result(x.shape, shape))


def _np_pad_window(x: np.ndarray, padding, value) -> np.ndarray:
    top, left, bottom, right = padding
    widths = [(0, 0), (0, 0), (top, bottom), (left, right)] + [(0, 0)] * (x.ndim - 4)
    fill = value
    if np.issubdtype(x.dtype, np.integer) and not np.isfinite(value):
        info = np.iinfo(x.dtype)
        fill = info.min if value < 0 else info.max
    return np.pad(x, widths, constant_values=np.asarray(fill).astype(x.dtype))


def _np_isinf(x: np.ndarray, detect_positive: int, detect_negative: int) -> np.ndarray:
    return ((np.isposinf(x) & bool(detect_positive)) | (np.isneginf(x) & bool(detect_negative)))


def _np_shift(fn):
    """numpy's shift of integers viewed as unsigned, 0 for shift counts of the width or more
    (what numpy gives for unsigned types; C and LLVM leave them undefined)."""
    def evaluate(x: np.ndarray, y: np.ndarray) -> np.ndarray:
        dtype = np.result_type(x, y)
        unsigned = np.dtype(f"u{dtype.itemsize}")
        a, n = x.astype(dtype).view(unsigned), y.astype(dtype).view(unsigned)
        wide = n >= 8 * dtype.itemsize
        out = fn(a, np.where(wide, 0, n).astype(unsigned))
        return np.where(wide, unsigned.type(0), out).astype(unsigned).view(dtype)
    return evaluate


def _np_float(fn):
    """A numpy ufunc that keeps the float element type of its operand."""
    return lambda x: fn(x).astype(x.dtype)
