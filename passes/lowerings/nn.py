"""conv2d, max_pool2d and avg_pool2d → padding, fill and convolution/pooling blocks.

- **Padding** is blocks of its own: ``pad_init`` (``pad_init_1``…) fills the border strips of
  a tensor of the padded shape with the padding value (0, or the lowest value for max
  pooling) and ``pad`` (a ``linalg.copy``) writes the input into its interior, each through
  an ``extract_slice``/``insert_slice`` pair that bufferizes in place (upstream's
  ``tensor.pad`` decomposes to the same; as blocks the schedule sees and tiles them). Ceil-mode pooling pads the bottom/right further so every window is in bounds.
- **Width strides.** A tile vectorizes with the output width in the lanes only where
  neighbouring outputs read neighbouring inputs. So a convolution with a width stride
  ``s > 1`` reads a deinterleaved copy of its (padded) input — block ``deinterleave``, a
  transpose of the view ``[.., W/s, s]`` to ``[.., s, W/s]``: phase ``r`` holds columns
  ``r, r + s, …`` — and becomes one ``conv_2d_nchw_fchw`` per phase reading that phase with
  stride 1, over the taps ``kw`` with ``kw * dilation ≡ r (mod s)`` (the weights a strided
  view); each accumulates into the previous one's result, the first into the fill.
- ``groups == 1`` is ``linalg.conv_2d_nchw_fchw``; grouped and depthwise convolutions are one
  ``linalg.generic`` with conv_2d_nchw_fchw's loops ``(n, o, oh, ow, c, kh, kw)`` (``c``
  within the group) that reads input channel ``(o floordiv (O/G)) * (C/G) + c``, strides as
  they are. Upstream's grouped/depthwise NCHW ops neither decompose nor vectorize either; the
  default design space leaves this form scalar (a form with the group as a dim of its own,
  phase-split and vectorized, was measured slower: docs/tuning.md).
- Pooling is ``linalg.pooling_nchw_max`` / ``linalg.pooling_nchw_sum``; with a width stride
  ``s > 1`` it is one generic reading the input through the view ``[.., W/s, s]`` (no copy:
  for a pooling a deinterleave costs as much as the pooling). Average pooling divides the
  window sums by the number of counted taps in a ``avg_pool2d`` block: a scalar when every
  window counts the same, else a constant ``[OH, OW]`` tensor of divisors.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np
from mlir import ir
from mlir.dialects import arith, linalg, tensor

from mlcir.dialects.dtypes import numpy_dtype
from mlcir.dialects.graph import pool_divisors
from mlcir.dialects.loop import tag_block
from mlcir.errors import LoweringError

from .rule import LoweringContext, lowering
from . import builders as b


def spatial_dims_static(op: str, *values: ir.Value) -> None:
    for v in values:
        shape = b.shape_of(v)
        if shape[2] is None or shape[3] is None:
            raise LoweringError(f"'{op}' needs static spatial dims (H, W and the kernel's), got "
                                f"{v.type}")


def _sizes(v: ir.Value) -> list[int | ir.Value]:
    """``v``'s dims, dynamic ones as ``tensor.dim`` values."""
    return [d if d is not None else b.dim(v, i) for i, d in enumerate(b.shape_of(v))]


def slice_view(v: ir.Value, offsets: Sequence[int], sizes: Sequence[int | ir.Value],
               strides: Sequence[int], drop: Sequence[int] = ()) -> ir.Value:
    """``tensor.extract_slice`` (a view) with static offsets and strides, dropping the unit
    dims ``drop`` from the result."""
    dyn_size = ir.ShapedType.get_dynamic_size()
    shape = [s if isinstance(s, int) else None for i, s in enumerate(sizes) if i not in drop]
    return tensor.extract_slice(
        b.tensor_type(shape, b.element_type(v)), v, [], [s for s in sizes if not isinstance(s, int)],
        [], list(offsets), [s if isinstance(s, int) else dyn_size for s in sizes], list(strides))


def pad(cx: LoweringContext, x: ir.Value, pads: Sequence[int], value: ir.Value,
        dest: ir.Value | None = None) -> ir.Value:
    """``x`` (NCHW, or NCHW<c>c: dims 2 and 3 are H and W) padded by ``pads = [top, left,
    bottom, right]`` with ``value``, in ``dest`` (default: a new tensor): blocks ``pad_init``
    (and ``pad_init_1``…: a fill of each border strip, the rows above and below and the
    columns either side, not of the whole padded tensor, whose interior the copy overwrites
    anyway) and ``pad`` (a copy into the interior). Where a block of the same kernel
    computes ``x`` (a ``pad_window`` fused into its producer's group),
    ``eliminate-empty-tensors`` has that block write into the interior, and the copy of a
    buffer onto itself folds away. No padding and no ``dest``: ``x`` itself."""
    if not any(pads) and dest is None:
        return x
    top, left, bottom, right = pads
    n, c, h, w, *rest = b.shape_of(x)
    name = cx.block_name("pad")
    padded = dest if dest is not None else b.empty(
        [n, c, h + top + bottom, w + left + right, *rest], b.element_type(x), source=x)
    lead = [n if n is not None else b.dim(x, 0), c if c is not None else b.dim(x, 1)]
    strips = [(0, 0, top, w + left + right), (top + h, 0, bottom, w + left + right),
              (top, 0, h, left), (top, left + w, h, right)]  # (row, column, rows, columns)
    init = f"{name.value}_init"
    for row, column, rows, columns in strips:
        if rows and columns:
            offsets, sizes = [0, 0, row, column] + [0] * len(rest), lead + [rows, columns, *rest]
            strip = b.extract_slice(padded, offsets, sizes, [1] * len(sizes))
            padded = b.insert_slice(b.fill(cx.block_name(init), value, strip), padded, offsets,
                                    sizes)
    sizes = lead + [h, w, *rest]
    offsets = [0, 0, top, left] + [0] * len(rest)
    interior = b.extract_slice(padded, offsets, sizes, [1] * len(sizes))
    copy = linalg.copy(x, outs=[interior])
    tag_block(copy.owner, name)
    return b.insert_slice(copy, padded, offsets, sizes)


def _window_padding_value(value: float, t: ir.Type) -> ir.Value:
    """``value`` in element type ``t``: an infinity is an integer type's extreme."""
    if b.is_float(t) or math.isfinite(value):
        return b.constant(value, t)
    return b.lowest(t) if value < 0 else b.highest(t)


@lowering("pad_window")
def lower_pad_window(cx: LoweringContext) -> list[ir.Value]:
    (x,), (dest,) = cx.inputs, cx.dests
    spatial_dims_static("graph.pad_window", x)
    value = _window_padding_value(cx.attrs["value"], b.element_type(x))
    return [pad(cx, x, cx.attrs["padding"], value, dest)]


@dataclass(frozen=True)
class Window:
    """A 2-D window over an NCHW (or NCHW<c>c) input: kernel size, strides and dilations per
    axis, and the output width."""

    kernel: tuple[int, int]
    strides: tuple[int, int]
    dilation: tuple[int, int]
    out_w: int

    @property
    def split(self) -> bool:
        """Whether the width stride is split into phases (see the module docstring)."""
        return self.strides[1] > 1 and self.out_w > 1

    def phase_columns(self) -> int:
        """Columns per phase of the deinterleaved input: enough for every window."""
        s = self.strides[1]
        needed = (self.out_w - 1) * s + (self.kernel[1] - 1) * self.dilation[1] + 1
        return -(-needed // s)

    def extra_right_padding(self, padded_w: int) -> int:
        """Columns to pad beyond ``padded_w`` so the input splits into whole phases."""
        if not self.split:
            return 0
        return max(0, self.phase_columns() * self.strides[1] - padded_w)

    def phases(self, x: ir.Value,
               phase_input: Callable[[int, int, int], ir.Value] | None = None) -> list[Phase]:
        """The phases of this window over the padded input ``x``: ``x`` itself unsplit, else
        one per residue ``r`` of a tap's column modulo the stride ``s``, reading
        ``phase_input(r, first, length)``: ``length`` columns of phase ``r`` from its column
        ``first``, the input's columns ``(first + j) * s + r``."""
        (_, kw), (_, s), (_, d) = self.kernel, self.strides, self.dilation
        if not self.split:
            return [Phase(x, 0, 1, kw, d, s)]
        g = math.gcd(d, s)
        phases = []
        for r in range(s):
            taps = [k for k in range(kw) if k * d % s == r]
            if not taps:
                continue
            length = self.out_w + (len(taps) - 1) * (d // g)
            view = phase_input(r, (taps[0] * d - r) // s, length)
            phases.append(Phase(view, taps[0], s // g, len(taps), d // g, 1))
        return phases


@dataclass(frozen=True)
class Phase:
    """One op of a (split) window: its input (width stride 1 after a split) and its taps
    ``kw = first + step * j`` for ``j < count``, ``dilation`` apart in that input."""

    input: ir.Value
    first: int
    step: int
    count: int
    dilation: int
    stride: int

    def taps_of(self, w: ir.Value) -> ir.Value:
        """The kernel columns (dim 3: ``[.., KH, KW]``, or a packed ``[.., KH, KW, ..]``) of
        ``w`` this phase reads, a strided view."""
        sizes = _sizes(w)
        if self.first == 0 and self.step == 1 and self.count == sizes[3]:
            return w
        offsets, strides = [0] * len(sizes), [1] * len(sizes)
        offsets[3], sizes[3], strides[3] = self.first, self.count, self.step
        return slice_view(w, offsets, sizes, strides)


def _phases(cx: LoweringContext, x: ir.Value, window: Window) -> list[Phase]:
    """The phases of ``window`` over the padded NCHW input ``x``, each reading a phase of
    its deinterleaved copy."""
    if not window.split:
        return window.phases(x)
    deinterleaved = _deinterleave(cx, x, window.strides[1], window.phase_columns())
    n, c, h = _sizes(x)[:3]
    return window.phases(x, lambda r, first, length: slice_view(
        deinterleaved, [0, 0, 0, r, first], [n, c, h, 1, length], [1] * 5, drop=[3]))


def _phase_view(x: ir.Value, stride: int, columns: int) -> ir.Value:
    """The view ``[N, C, H, columns, stride]`` of the first ``columns * stride`` columns of
    ``x``: column ``j * stride + r`` at ``[j, r]``."""
    n, c, h, _ = _sizes(x)
    width = columns * stride
    if b.shape_of(x)[3] != width:
        x = slice_view(x, [0, 0, 0, 0], [n, c, h, width], [1] * 4)
    dynamic = [v for v in (n, c) if not isinstance(v, int)]
    static = [v if isinstance(v, int) else None for v in (n, c)]
    return b.expand(x, [*static, h, columns, stride], [[0], [1], [2], [3, 4]], dynamic=dynamic)


def _deinterleave(cx: LoweringContext, x: ir.Value, stride: int, columns: int) -> ir.Value:
    """Block ``deinterleave``: ``[N, C, H, columns * stride]`` (the leading columns of ``x``)
    as ``[N, C, H, stride, columns]``, phase ``r`` holding columns ``r, r + stride, …``."""
    view = _phase_view(x, stride, columns)
    n, c, h = b.shape_of(view)[:3]
    dynamic = [v for v in _sizes(view)[:2] if not isinstance(v, int)]
    out = b.empty([n, c, h, stride, columns], b.element_type(x), dynamic=dynamic)
    op = linalg.transpose(view, outs=[out], permutation=[0, 1, 2, 4, 3])
    op = op if isinstance(op, ir.OpView) else op.owner
    tag_block(op.operation, cx.block_name("deinterleave"))
    return op.results[0]


def accumulate_phases(cx: LoweringContext, base: str, init_value: ir.Value, dest: ir.Value,
                      phases: list[Phase],
                      build: Callable[[ir.StringAttr, Phase, ir.Value], ir.Value]) -> ir.Value:
    """``build(name, phase, acc)`` for every phase, the first into a fill of ``dest`` (block
    ``<base>_init``), each next one into the previous result (blocks ``<base>``, ``<base>_1``…)."""
    name = cx.block_name(base)
    acc = b.fill(cx.block_name(f"{name.value}_init"), init_value, dest)
    for i, phase in enumerate(phases):
        acc = build(name if i == 0 else cx.block_name(base), phase, acc)
    return acc


def _nchw_dest_dims(channels_from_w: bool):
    def dest_dims(inputs: Sequence[ir.Value], _attrs: dict, _result: int
                  ) -> list[ir.Value | None]:
        x = inputs[0]
        n, c = b.shape_of(x)[:2]
        dims: list[ir.Value | None] = [b.dim(x, 0) if n is None else None]
        if channels_from_w:
            o = b.shape_of(inputs[1])[0]
            dims.append(b.dim(inputs[1], 0) if o is None else None)
        else:
            dims.append(b.dim(x, 1) if c is None else None)
        return dims + [None, None]  # spatial sizes: static (the lowering requires it)
    return dest_dims


def padded_for(cx: LoweringContext, x: ir.Value, pads: Sequence[int], window: Window,
               value: ir.Value) -> ir.Value:
    """``x`` padded by ``pads``, and on the right as far as the phase split needs."""
    top, left, bottom, right = pads
    right += window.extra_right_padding(b.shape_of(x)[3] + left + right)
    return pad(cx, x, [top, left, bottom, right], value)


@lowering("conv2d", dest_dims=_nchw_dest_dims(channels_from_w=True))
def lower_conv2d(cx: LoweringContext) -> list[ir.Value]:
    x, w = cx.inputs
    (dest,) = cx.dests
    spatial_dims_static("graph.conv2d", x, w)
    elem = b.element_type(dest)
    (sh, sw), (dh, dw), groups = cx.attrs["strides"], cx.attrs["dilation"], cx.attrs["groups"]
    zero = b.constant(0, elem)
    if groups != 1:
        padded = pad(cx, x, cx.attrs["padding"], zero)
        name = cx.block_name("conv2d")
        init = b.fill(cx.block_name(f"{name.value}_init"), zero, dest)
        return [_grouped_conv(name, padded, w, init, (sh, sw), (dh, dw), groups)]
    window = Window(tuple(b.shape_of(w)[2:]), (sh, sw), (dh, dw), b.shape_of(dest)[3])
    phases = _phases(cx, padded_for(cx, x, cx.attrs["padding"], window, zero), window)

    def build(name: ir.StringAttr, phase: Phase, acc: ir.Value) -> ir.Value:
        result = linalg.conv_2d_nchw_fchw(phase.input, phase.taps_of(w), outs=[acc],
                                          strides=[sh, phase.stride],
                                          dilations=[dh, phase.dilation])
        tag_block(result.owner, name)
        return result

    return [accumulate_phases(cx, "conv2d", zero, dest, phases, build)]


def _grouped_conv(name: ir.StringAttr, x: ir.Value, w: ir.Value, init: ir.Value,
                  strides: Sequence[int], dilation: Sequence[int], groups: int) -> ir.Value:
    """One generic over ``(n, o, oh, ow, c, kh, kw)`` (``c`` within the group) reading input
    channel ``(o floordiv (O/G)) * (C/G) + c``: x, w and the destination as they are, so the
    block writes the kernel's destination itself (no reshaped views). The form with the group
    as a dim of its own, vectorized or not, was measured 20-50% slower (docs/tuning.md)."""
    o, cg = b.shape_of(w)[:2]
    if o is None or cg is None:
        raise LoweringError(f"'graph.conv2d' with groups={groups} needs static channel counts, "
                            f"got w {w.type}")
    n, oc, oh, ow, c, kh, kw = (ir.AffineDimExpr.get(i) for i in range(7))
    (sh, sw), (dh, dw) = strides, dilation
    channel = ir.AffineFloorDivExpr.get(oc, ir.AffineConstantExpr.get(o // groups)) * cg + c
    x_map = b.dims_map(7, [n, channel, oh * sh + kh * dh, ow * sw + kw * dw])
    w_map = b.dims_map(7, [oc, c, kh, kw])
    out_map = b.dims_map(7, [n, oc, oh, ow])
    return b.generic(name, [x, w], [init], [x_map, w_map, out_map],
                     [b.PARALLEL] * 4 + [b.REDUCTION] * 3,
                     lambda a, k, acc: b.multiply_add(a, k, acc))[0]


def pool_padding(x: ir.Value, dest: ir.Value, attrs: dict) -> list[int]:
    """The explicit padding plus what ceil mode reads past it (bottom/right)."""
    top, left, bottom, right = attrs["padding"]
    h, w = b.shape_of(x)[2:4]
    oh, ow = b.shape_of(dest)[2:4]
    (kh, kw), (sh, sw), (dh, dw) = attrs["kernel"], attrs["strides"], attrs["dilation"]
    extra_h = max(0, (oh - 1) * sh + dh * (kh - 1) + 1 - (h + top + bottom))
    extra_w = max(0, (ow - 1) * sw + dw * (kw - 1) + 1 - (w + left + right))
    return [top, left, bottom + extra_h, right + extra_w]


def _pool(cx: LoweringContext, kind: str, base: str, fill_value: ir.Value, x: ir.Value,
          dest: ir.Value) -> ir.Value:
    """Blocks ``<base>_init`` and ``<base>``: ``x`` padded with ``fill_value`` (explicit
    padding, ceil mode, what the phase view needs) and pooled by ``kind`` (``max``/``sum``)."""
    a = cx.attrs
    window = Window(tuple(a["kernel"]), tuple(a["strides"]), tuple(a["dilation"]),
                     b.shape_of(dest)[3])
    padded = padded_for(cx, x, pool_padding(x, dest, a), window, fill_value)
    name = cx.block_name(base)
    init = b.fill(cx.block_name(f"{name.value}_init"), fill_value, dest)
    if window.split:
        return _pool_phased(name, kind, fill_value, padded, init, window)
    taps = b.empty(list(window.kernel), b.element_type(dest))
    result = getattr(linalg, f"pooling_nchw_{kind}")(
        padded, taps, outs=[init], strides=list(window.strides), dilations=list(window.dilation))
    tag_block(result.owner, name)
    return result


def _pool_phased(name: ir.StringAttr, kind: str, identity: ir.Value, x: ir.Value,
                 init: ir.Value, window: Window) -> ir.Value:
    """Pooling with a width stride ``s > 1`` as one generic over ``(n, c, oh, ow, kh, kq,
    kr)`` reading ``x`` through the view ``[N, C, H, W/s, s]``: tap ``kw`` is column
    ``kq * s + kr = kw * dilation`` past the window's start ``ow * s``. The phase ``kr`` is read
    inside a vector tile (a contiguous row, deinterleaved in registers): no copy of the input,
    which for a pooling costs as much as the pooling. Where the taps do not fill the
    ``(kq, kr)`` grid (a 3-wide window at stride 2), a constant mask leaves the others out."""
    (kernel_h, kernel_w), (sh, s), (dh, dw) = window.kernel, window.strides, window.dilation
    view = _phase_view(x, s, window.phase_columns())
    taps = {divmod(k * dw, s) for k in range(kernel_w)}
    rows = max(q for q, _ in taps) + 1
    names = ["n", "c", "oh", "ow", "kh"] + (["kq"] if rows > 1 else []) + ["kr"]
    d = {k: ir.AffineDimExpr.get(i) for i, k in enumerate(names)}
    kq = d.get("kq", ir.AffineConstantExpr.get(0))
    x_map = b.dims_map(len(names), [d["n"], d["c"], d["oh"] * sh + d["kh"] * dh,
                                    d["ow"] + kq, d["kr"]])
    window_dims = ["kh"] + (["kq"] if rows > 1 else []) + ["kr"]
    window_shape = [kernel_h] + ([rows] if rows > 1 else []) + [s]
    window_map = b.dims_map(len(names), [d[k] for k in window_dims])
    out_map = b.dims_map(len(names), [d["n"], d["c"], d["oh"], d["ow"]])
    kinds = [b.PARALLEL] * 4 + [b.REDUCTION] * (len(names) - 4)
    # maxnumf, one vmaxps once mlcir-pooling-max drops its NaN checks (passes/pooling_max.py);
    # maximumf's NaN propagation cost 1.3x (328 against 259 us, 3x3/2 of 64 channels at
    # 112x112), as in the blocked pooling (lowerings/nchwc.py).
    combine = (lambda x, y: arith.maxnumf(x, y) if b.is_float(x.type) else b.maximum(x, y)) \
        if kind == "max" else b.add
    if len(taps) == rows * s:  # every (kq, kr) is a tap: the window operand only has a shape
        window_operand = b.empty(window_shape, b.element_type(init))
        body = lambda v, _, acc: combine(acc, v)  # noqa: E731
    else:
        i8 = ir.IntegerType.get_signless(8)
        mask = np.zeros(window_shape, np.int8)
        for q, r in taps:
            mask[(slice(None), q, r) if rows > 1 else (slice(None), r)] = 1
        mask_type = ir.RankedTensorType.get(window_shape, i8)
        window_operand = arith.ConstantOp(mask_type, ir.DenseElementsAttr.get(
            mask, type=mask_type)).result

        def body(v: ir.Value, tap: ir.Value, acc: ir.Value) -> ir.Value:
            counted = arith.cmpi(arith.CmpIPredicate.ne, tap, b.constant(0, i8))
            return combine(acc, arith.select(counted, v, identity))
    return b.generic(name, [view, window_operand], [init], [x_map, window_map, out_map],
                     kinds, body)[0]


@lowering("max_pool2d", dest_dims=_nchw_dest_dims(channels_from_w=False))
def lower_max_pool2d(cx: LoweringContext) -> list[ir.Value]:
    (x,), (dest,) = cx.inputs, cx.dests
    spatial_dims_static("graph.max_pool2d", x)
    return [_pool(cx, "max", "max_pool2d", b.lowest(b.element_type(x)), x, dest)]


@lowering("avg_pool2d", dest_dims=_nchw_dest_dims(channels_from_w=False))
def lower_avg_pool2d(cx: LoweringContext) -> list[ir.Value]:
    (x,), (dest,) = cx.inputs, cx.dests
    spatial_dims_static("graph.avg_pool2d", x)
    elem = b.element_type(x)
    sums = _pool(cx, "sum", "sum_pool", b.constant(0, elem), x, b.empty_like(dest))
    a = cx.attrs
    divisors = pool_divisors(b.shape_of(x)[2:], a["kernel"], a["strides"], a["padding"],
                             a["dilation"], a["ceil_mode"], a["count_include_pad"])
    ident = b.identity_map(4)
    name = cx.block_name("avg_pool2d")
    if (divisors == divisors.flat[0]).all():
        count = b.constant(int(divisors.flat[0]), elem)
        return b.generic(name, [sums], [dest], [ident, ident], [b.PARALLEL] * 4,
                         lambda s, _: b.div(s, count))
    table_type = ir.RankedTensorType.get(list(divisors.shape), elem)
    table = arith.ConstantOp(table_type, ir.DenseElementsAttr.get(
        np.ascontiguousarray(divisors.astype(numpy_dtype(elem))), type=table_type)).result
    return b.generic(name, [sums, table], [dest], [ident, b.dims_map(4, [2, 3]), ident],
                     [b.PARALLEL] * 4, lambda s, d, _: b.div(s, d))
