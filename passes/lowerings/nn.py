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
    dims ``drop`` from the result; a size None is ``v``'s whole dim (a dynamic batch)."""
    dyn_size = ir.ShapedType.get_dynamic_size()
    sizes = [b.dim(v, i) if s is None else s for i, s in enumerate(sizes)]
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
    axis, the output width, and ``lead`` columns of the input before the first window (a
    pooling's phase view shifted left so that it ends within its input: :func:`_pool`)."""

    kernel: tuple[int, int]
    strides: tuple[int, int]
    dilation: tuple[int, int]
    out_w: int
    lead: int = 0

    @property
    def split(self) -> bool:
        """Whether the width stride is split into phases (see the module docstring)."""
        return self.strides[1] > 1 and self.out_w > 1

    def phase_columns(self) -> int:
        """Columns per phase of the deinterleaved input: enough for every window."""
        s = self.strides[1]
        needed = self.lead + (self.out_w - 1) * s + (self.kernel[1] - 1) * self.dilation[1] + 1
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
    if b.shape_of(w)[2:] == [1, 1] and (sh, sw) == (1, 1) and not any(cx.attrs["padding"]):
        return [_pointwise_conv(cx, x, w, dest, zero)]
    window = Window(tuple(b.shape_of(w)[2:]), (sh, sw), (dh, dw), b.shape_of(dest)[3])
    phases = _phases(cx, padded_for(cx, x, cx.attrs["padding"], window, zero), window)

    def build(name: ir.StringAttr, phase: Phase, acc: ir.Value) -> ir.Value:
        result = linalg.conv_2d_nchw_fchw(phase.input, phase.taps_of(w), outs=[acc],
                                          strides=[sh, phase.stride],
                                          dilations=[dh, phase.dilation])
        tag_block(result.owner, name)
        return result

    return [accumulate_phases(cx, "conv2d", zero, dest, phases, build)]


def _pointwise_conv(cx: LoweringContext, x: ir.Value, w: ir.Value, dest: ir.Value,
                    zero: ir.Value) -> ir.Value:
    """A 1x1 convolution of stride 1 without padding as the matmul it is: one generic over
    ``(n, o, p, c)`` on the views ``x [N, C, H*W]``, ``w [O, C]`` and ``dest [N, O, H*W]``, so
    the register tile's columns run along the merged ``H*W`` (a row of 56 gives no 16-wide
    vector; docs/measurements/lowering-rules.md#pointwise-nchw)."""
    n, c, h, wd = b.shape_of(x)
    o = b.shape_of(w)[0]
    dynamic = [b.dim(x, 0)] if n is None else []
    rows = b.collapse(x, [[0], [1], [2, 3]])
    filters = b.collapse(w, [[0], [1, 2, 3]])
    out = b.collapse(dest, [[0], [1], [2, 3]])
    name = cx.block_name("conv2d")
    init = b.fill(cx.block_name(f"{name.value}_init"), zero, out)
    dn, do, dp, dc = (ir.AffineDimExpr.get(i) for i in range(4))
    # the filter first, as operand and as factor: the contraction's outer products then
    # broadcast its column and stream rows of x (with x first they ran along the 8 output
    # channels, several times slower)
    maps = [b.dims_map(4, m) for m in ([do, dc], [dn, dc, dp], [dn, do, dp])]
    result = b.generic(name, [filters, rows], [init], maps, [b.PARALLEL] * 3 + [b.REDUCTION],
                       lambda k, a, acc: b.multiply_add(k, a, acc))[0]
    return b.expand(result, [n, o, h, wd], [[0], [1], [2, 3]], dynamic=dynamic)


def _grouped_conv(name: ir.StringAttr, x: ir.Value, w: ir.Value, init: ir.Value,
                  strides: Sequence[int], dilation: Sequence[int], groups: int) -> ir.Value:
    """One generic over ``(n, o, oh, ow, c, kh, kw)`` (``c`` within the group) reading input
    channel ``(o floordiv (O/G)) * (C/G) + c``: x, w and the destination as they are, so the
    block writes the kernel's destination itself (no reshaped views). The form with the group
    as a dim of its own, vectorized or not, is slower (docs/measurements/lowering-rules.md#grouped)."""
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
    """Blocks ``<base>_init`` and ``<base>`` (``<base>_1``…): ``x`` pooled by ``kind``
    (``max``/``sum``) into a fill of ``dest`` with ``fill_value``.

    A padded pooling reads no padded copy of ``x``: padding with the combine's identity
    counts for nothing, so each rectangle of outputs whose windows keep the same in-bounds
    taps (:func:`_tap_runs`: for a 3x3/2 pooling padded by 1, the first row, the first
    column and the interior) is a pooling of its own with only those taps, reading ``x`` in
    place; the interior, the largest, is block ``<base>``. A strided pooling's rectangles read
    slices of one phase view of all of ``x`` (:func:`_pool_phased`; the phase view of a
    slice of ``x`` vectorizes worse). The others (one output column, no width stride) are
    named poolings of a slice of ``x``.

    Without a width stride, the padded copy stays: it is no larger than the result, and the
    border columns' rectangles are scalar (a gather per lane in NCHW) and cost more
    (docs/measurements/lowering-rules.md#pooling-padding)."""
    a = cx.attrs
    kernel, strides, dilation = tuple(a["kernel"]), tuple(a["strides"]), tuple(a["dilation"])
    padding = pool_padding(x, dest, a)
    if strides[1] == 1 and any(padding):
        x, padding = pad(cx, x, padding, fill_value), [0, 0, 0, 0]
    top, left, _, _ = padding
    h, w = b.shape_of(x)[2:4]
    oh, ow = b.shape_of(dest)[2:4]
    s = strides[1]
    phased_width = w // s * s
    rows = _tap_runs(oh, h, kernel[0], strides[0], dilation[0], top)
    columns = [fitted for run in _tap_runs(ow, w, kernel[1], s, dilation[1], left)
               for part in _vector_cover(run, s, cx.lanes)
               for fitted in _phase_fitting(part, phased_width, s, dilation[1])]
    rectangles = sorted(((r, c) for r in rows for c in columns),
                        key=lambda rc: -(rc[0].outputs * rc[1].outputs))
    n, c = _sizes(dest)[:2]
    acc, view = dest, None
    for r, col in rectangles:
        block = cx.block_name(base)
        window = Window((r.taps, col.taps), strides, dilation, col.outputs, col.lead)
        offsets, sizes = [0, 0, r.start, col.start], [n, c, r.outputs, col.outputs]
        whole = (r.outputs, col.outputs) == (oh, ow)
        part = acc if whole else b.extract_slice(acc, offsets, sizes, [1] * 4)
        # a fill per rectangle (not one of the whole result, which LLVM left a scalar loop,
        # docs/measurements/lowering-rules.md#pooling-padding): outputs computed twice (_vector_cover) start
        # again from the identity, so a sum counts them once
        part = b.fill(cx.block_name(f"{block.value}_init"), fill_value, part)
        if window.split:
            view = view if view is not None else _phase_view(x, s, phased_width // s)
            rect_view = slice_view(
                view, [0, 0, r.first_input, (col.first_input - col.lead) // s, 0],
                [n, c, r.input_extent(strides[0], dilation[0]), window.phase_columns(), s],
                [1] * 5)
            pooled = _pool_phased(block, kind, fill_value, rect_view, part, window)
        else:
            x_rect = slice_view(x, [0, 0, r.first_input, col.first_input],
                                [n, c, r.input_extent(strides[0], dilation[0]),
                                 col.input_extent(s, dilation[1])], [1] * 4)
            taps = b.empty(list(window.kernel), b.element_type(dest))
            pooled = getattr(linalg, f"pooling_nchw_{kind}")(
                x_rect, taps, outs=[part], strides=list(strides), dilations=list(dilation))
            tag_block(pooled.owner, block)
        acc = pooled if whole else b.insert_slice(pooled, acc, offsets, sizes)
    return acc


@dataclass(frozen=True)
class TapRun:
    """Outputs ``start .. start + outputs - 1`` along one axis whose windows keep taps
    ``first_tap .. first_tap + taps - 1`` in bounds; the first reads input ``first_input``.
    ``lead``: the inputs before it its phase view starts with (:class:`Window`)."""

    start: int
    outputs: int
    first_tap: int
    taps: int
    first_input: int
    lead: int = 0

    def input_extent(self, stride: int, dilation: int) -> int:
        return (self.outputs - 1) * stride + (self.taps - 1) * dilation + 1



def _tap_runs(outputs: int, size: int, kernel: int, stride: int, dilation: int,
              before: int) -> list[TapRun]:
    """The runs of outputs along one axis (``before`` padded in front of ``size`` inputs)
    with the same in-bounds taps; ceil mode's and the explicit padding's taps past the end
    drop out the same way."""
    runs: list[TapRun] = []
    for o in range(outputs):
        taps = [k for k in range(kernel) if 0 <= o * stride + k * dilation - before < size]
        if not taps:
            raise LoweringError(f"pooling window {o} reads only padding")
        first, count = taps[0], len(taps)
        last = runs[-1] if runs else None
        if last is not None and (last.first_tap, last.taps) == (first, count):
            runs[-1] = TapRun(last.start, last.outputs + 1, first, count, last.first_input)
        else:
            runs.append(TapRun(o, 1, first, count, o * stride + first * dilation - before))
    return runs


def _vector_cover(run: TapRun, stride: int, cover: int) -> list[TapRun]:
    """``run`` (outputs along the width, the vector dim) as two runs of whole vectors when
    no power of two from 4 divides its length (55 = 48 + 16, overlapping by 9): an output
    computed twice is written twice with the same value, where a width of 55 would leave the
    vectorizer no tile wider than 1. Runs up to ``cover`` outputs (a vector of the target)
    long stay as they are."""
    n = run.outputs
    if n <= cover or n % 4 == 0:
        return [run]
    tail_start = run.start + n - cover
    return [TapRun(run.start, n - n % cover, run.first_tap, run.taps, run.first_input),
            TapRun(tail_start, cover, run.first_tap, run.taps,
                   run.first_input + (tail_start - run.start) * stride)]


def _phase_fitting(run: TapRun, width: int, stride: int, dilation: int) -> list[TapRun]:
    """``run`` as runs that read whole phases (strides of columns) of the first ``width``
    inputs (a multiple of ``stride``): the phase view starts ``lead = first_input mod
    stride`` inputs early, at a whole phase (3x3/2 over 112 columns padded by 1: the inner
    outputs read columns 1 to 111, pairs from column 0); outputs at the end whose phases would
    pass ``width`` are runs of their own, one output (unsplit) each."""
    if stride == 1:
        return [run]
    lead = run.first_input % stride
    head = run
    while head.outputs > 1:
        window = Window((1, head.taps), (1, stride), (1, dilation), head.outputs, lead)
        if head.first_input - lead + window.phase_columns() * stride <= width:
            head = TapRun(head.start, head.outputs, head.first_tap, head.taps,
                          head.first_input, lead)
            break
        head = TapRun(head.start, head.outputs - 1, head.first_tap, head.taps, head.first_input)
    tail = [TapRun(o, 1, run.first_tap, run.taps, run.first_input + (o - run.start) * stride)
            for o in range(head.start + head.outputs, run.start + run.outputs)]
    return [head, *tail]


def _pool_phased(name: ir.StringAttr, kind: str, identity: ir.Value, view: ir.Value,
                 init: ir.Value, window: Window) -> ir.Value:
    """Pooling with a width stride ``s > 1`` as one generic over ``(n, c, oh, ow, kh, kq,
    kr)`` reading the phase view ``[N, C, H, W/s, s]`` (:func:`_phase_view`): tap ``kw`` is
    column ``kq * s + kr = lead + kw * dilation`` past the window's start ``ow * s``. The phase ``kr`` is read inside a vector tile (a contiguous
    row, deinterleaved in registers): no copy of the input, which for a pooling costs as much
    as the pooling. Where the taps do not fill the ``(kq, kr)`` grid (a 3-wide window at
    stride 2), a constant mask leaves the others out."""
    (kernel_h, kernel_w), (sh, s), (dh, dw) = window.kernel, window.strides, window.dilation
    taps = {divmod(window.lead + k * dw, s) for k in range(kernel_w)}
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
    # maximumf's NaN propagation costs more (docs/measurements/lowering-rules.md#max-pooling),
    # as in the blocked pooling (lowerings/nchwc.py).
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
    """The window sums into the result, divided there in place (block ``avg_pool2d``): the
    sum rectangles of :func:`_pool` are slices of the result, and a temporary of sums read
    into the result cost a copy of it once bufferized."""
    (x,), (dest,) = cx.inputs, cx.dests
    spatial_dims_static("graph.avg_pool2d", x)
    elem = b.element_type(x)
    sums = _pool(cx, "sum", "sum_pool", b.constant(0, elem), x, dest)
    a = cx.attrs
    divisors = pool_divisors(b.shape_of(x)[2:], a["kernel"], a["strides"], a["padding"],
                             a["dilation"], a["ceil_mode"], a["count_include_pad"])
    ident = b.identity_map(4)
    name = cx.block_name("avg_pool2d")
    if (divisors == divisors.flat[0]).all():
        count = b.constant(int(divisors.flat[0]), elem)
        return b.generic(name, [], [sums], [ident], [b.PARALLEL] * 4,
                         lambda s: b.div(s, count))
    table_type = ir.RankedTensorType.get(list(divisors.shape), elem)
    table = arith.ConstantOp(table_type, ir.DenseElementsAttr.get(
        np.ascontiguousarray(divisors.astype(numpy_dtype(elem))), type=table_type)).result
    return b.generic(name, [table], [sums], [b.dims_map(4, [2, 3]), ident],
                     [b.PARALLEL] * 4, lambda d, s: b.div(s, d))
