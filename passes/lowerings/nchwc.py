"""The blocked NCHW<c>c ops of ``graph-layout-nchwc`` → linalg blocks.

- ``layout_transform`` is views and a transpose: NCHW → NCHW<c>c views the input as
  ``[N, C/c, c, H*W]`` and the destination as ``[N, C/c, H*W, c]`` and transposes each
  block's plane (block ``layout_transform``, a ``linalg.transpose``); back, the same views
  the other way round.
- ``conv2d_nchwc`` is padding (dims 2 and 3, nn.py's blocks), a fill and one generic over
  ``(n, oco, oh, ow, oci, ico, kh, kw, ici)``: the last two spatial loops, which the CPU design
  space tiles into its register tile, are output columns ``ow`` and the output channels of
  one block ``oci`` (contiguous in the result and in the packed filter): MLAS's NCHWc
  micro-kernel, each step a broadcast input value times a filter vector. A width stride
  ``s > 1`` makes one such generic per phase, as NCHW's lowering does (nn.py): phase ``r``
  reads the columns ``r, r + s, …`` through a strided view of the input (no copy: the tile
  reads it one broadcast value at a time) and the filter taps that land on them, and
  accumulates into the previous phase's result. A depthwise convolution is ``(n, cb, oh, ow,
  c, kh, kw)``, its channel block in the lanes.
- ``max_pool2d_nchwc``: padding with the lowest value, a fill and one generic over
  ``(n, cb, oh, ow, c, kh, kw)``: the channel block in the lanes, whatever the strides.
"""

from __future__ import annotations

from typing import Sequence

from mlir import ir
from mlir.dialects import arith, linalg

from mlcir.dialects.graph import parse_blocked_layout
from mlcir.dialects.loop import tag_block

from . import builders as b
from .nn import Phase, Window, accumulate_phases, pad, padded_for, pool_padding, \
    slice_view, spatial_dims_static
from .rule import LoweringContext, lowering


def _batch_dest_dims(inputs: Sequence[ir.Value], _attrs: dict, _result: int
                     ) -> list[ir.Value | None]:
    """A layout change keeps its input's batch, the only dim that may be dynamic (NCHW and
    NCHW<c>c differ in rank, so no trailing dims match)."""
    (x,) = inputs
    rank = 5 if len(b.shape_of(x)) == 4 else 4
    return [b.dim(x, 0) if b.shape_of(x)[0] is None else None] + [None] * (rank - 1)


@lowering("layout_transform", dest_dims=_batch_dest_dims)
def lower_layout_transform(cx: LoweringContext) -> list[ir.Value]:
    """A transpose of each channel block's ``[c, H*W]`` plane, rows and columns both contiguous
    (views of the NCHW and NCHW<c>c tensors merge H and W): the schedule tiles the long ``H*W``
    by 16 where it divides, a 16 x 16 register transpose
    (docs/measurements/layouts.md#fourth-round). Read by a ``pad_window`` of the same kernel,
    the result goes into the interior of a padded tensor, whose rows are not contiguous: then
    each block's ``[c, H, W]`` is transposed to ``[H, W, c]``, W the long dim
    (docs/measurements/layouts.md#fifth-round-padding-written-by-the-producer)."""
    (x,), (dest,) = cx.inputs, cx.dests
    block = parse_blocked_layout(cx.attrs["dst_layout"])
    name = cx.block_name("layout_transform")
    if block is not None and cx.readers == ("graph.pad_window",):
        n, c, h, w = b.shape_of(x)
        channels = b.expand(x, [n, c // block, block, h, w], [[0], [1, 2], [3], [4]])
        op = linalg.transpose(channels, outs=[dest], permutation=[0, 1, 3, 4, 2])
        tag_block(op.operation, name)
        return [op.results[0]]
    if block is not None:  # NCHW -> [N, C/c, c, HW] (a view) -> [N, C/c, HW, c]
        n, c, h, w = b.shape_of(x)
        planes = b.expand(b.collapse(x, [[0], [1], [2, 3]]), [n, c // block, block, h * w],
                          [[0], [1, 2], [3]])
        out = b.collapse(dest, [[0], [1], [2, 3], [4]])
        op = linalg.transpose(planes, outs=[out], permutation=[0, 1, 3, 2])
        tag_block(op.operation, name)
        return [b.expand(op.results[0], b.shape_of(dest), [[0], [1], [2, 3], [4]])]
    n, cb, h, w, c = b.shape_of(x)
    rows = b.collapse(x, [[0], [1], [2, 3], [4]])
    out = b.expand(b.collapse(dest, [[0], [1], [2, 3]]), [n, cb, c, h * w], [[0], [1, 2], [3]])
    op = linalg.transpose(rows, outs=[out], permutation=[0, 1, 3, 2])
    tag_block(op.operation, name)
    return [b.expand(b.collapse(op.results[0], [[0], [1, 2], [3]]), [n, cb * c, h, w],
                     [[0], [1], [2, 3]])]


def _dims(names: str) -> dict[str, ir.AffineExpr]:
    return {k: ir.AffineDimExpr.get(i) for i, k in enumerate(names.split())}


def _window_read(d: dict[str, ir.AffineExpr], channel: str, block: str,
                 strides: Sequence[int], dilation: Sequence[int]) -> list[ir.AffineExpr]:
    """The input read of a window block: ``[n, channel, oh*sh + kh*dh, ow*sw + kw*dw,
    block]``."""
    (sh, sw), (dh, dw) = strides, dilation
    return [d["n"], d[channel], d["oh"] * sh + d["kh"] * dh, d["ow"] * sw + d["kw"] * dw,
            d[block]]


def _phases(x: ir.Value, window: Window) -> list[Phase]:
    """The phases of ``window`` over the padded blocked input ``x`` ``[N, Cb, H, W, c]``,
    each a strided view of it: phase ``r``'s columns ``(first + j) * s + r`` through the view
    ``[N, Cb, H, W/s, s, c]`` (no copy: a register tile reads the input one broadcast value
    at a time, whatever its stride)."""
    if not window.split:
        return window.phases(x)
    s, columns = window.strides[1], window.phase_columns()
    n, cb, h, width, c = b.shape_of(x)
    if width != columns * s:
        x = b.extract_slice(x, [0] * 5, [n, cb, h, columns * s, c], [1] * 5)
    view = b.expand(x, [n, cb, h, columns, s, c], [[0], [1], [2], [3, 4], [5]])
    return window.phases(x, lambda r, first, length: slice_view(
        view, [0, 0, 0, first, r, 0], [n, cb, h, length, 1, c], [1] * 6, drop=[4]))


@lowering("conv2d_nchwc")
def lower_conv2d_nchwc(cx: LoweringContext) -> list[ir.Value]:
    """One generic per width-stride phase (:class:`.nn.Window`), each accumulating into the
    previous one's result: a stride-1 window over its phase, its filter the taps it reads (a
    strided view of the packed constant). Widening the filter to taps a multiple of the
    stride instead put a quarter of a 3x3/2's FMAs on zeros
    (docs/measurements/layouts.md#third-round)."""
    x, w = cx.inputs
    (dest,) = cx.dests
    spatial_dims_static("graph.conv2d_nchwc", x)
    zero = b.constant(0, b.element_type(dest))
    (sh, sw), (dh, dw) = cx.attrs["strides"], cx.attrs["dilation"]
    window = Window(tuple(b.shape_of(w)[2:4]), (sh, sw), (dh, dw), b.shape_of(dest)[3])
    phases = _phases(padded_for(cx, x, cx.attrs["padding"], window, zero), window)
    depthwise = cx.attrs["groups"] != 1
    d = _dims("n cb oh ow c kh kw" if depthwise else "n oco oh ow oci ico kh kw ici")
    num = len(d)
    kinds = [b.PARALLEL] * 5 + [b.REDUCTION] * (num - 5)

    def build(name: ir.StringAttr, phase: Phase, acc: ir.Value) -> ir.Value:
        strides, dilation = (sh, phase.stride), (dh, phase.dilation)
        if depthwise:  # w [C/c, 1, KH, KW, 1, c]
            zero_expr = ir.AffineConstantExpr.get(0)
            x_map = _window_read(d, "cb", "c", strides, dilation)
            w_map = [d["cb"], zero_expr, d["kh"], d["kw"], zero_expr, d["c"]]
            out_map = [d["n"], d["cb"], d["oh"], d["ow"], d["c"]]
        else:
            x_map = _window_read(d, "ico", "ici", strides, dilation)
            w_map = [d["oco"], d["ico"], d["kh"], d["kw"], d["ici"], d["oci"]]
            out_map = [d["n"], d["oco"], d["oh"], d["ow"], d["oci"]]
        maps = [b.dims_map(num, m) for m in (x_map, w_map, out_map)]
        return b.generic(name, [phase.input, phase.taps_of(w)], [acc], maps, kinds,
                         lambda a, k, acc: b.multiply_add(a, k, acc))[0]

    return [accumulate_phases(cx, "conv2d_nchwc", zero, dest, phases, build)]


@lowering("max_pool2d_nchwc")
def lower_max_pool2d_nchwc(cx: LoweringContext) -> list[ir.Value]:
    """Loops ``(n, cb, oh, ow, kh, kw, c)``: the channel block innermost, so the plain loops
    vectorize along it (LLVM's loop vectorizer; the default leaves the strided window to it).
    The max is ``arith.maxnumf``, one ``vmaxps`` once the CPU pipeline's
    ``mlcir-pooling-max`` drops its NaN checks (NaN inputs unspecified, as in onnxruntime's
    ``maxps`` kernels); ``maximumf``'s NaN propagation took twice the time
    (docs/measurements/layouts.md#notes-moved-from-the-package-code)."""
    (x,), (dest,) = cx.inputs, cx.dests
    spatial_dims_static("graph.max_pool2d_nchwc", x)
    elem = b.element_type(x)
    lowest = b.lowest(elem)
    a = cx.attrs
    padded = pad(cx, x, pool_padding(x, dest, a), lowest)
    name = cx.block_name("max_pool2d_nchwc")
    init = b.fill(cx.block_name(f"{name.value}_init"), lowest, dest)
    d = _dims("n cb oh ow kh kw c")
    x_map = _window_read(d, "cb", "c", a["strides"], a["dilation"])
    out_map = [d["n"], d["cb"], d["oh"], d["ow"], d["c"]]
    maps = [b.dims_map(7, m) for m in (x_map, [d["kh"], d["kw"]], out_map)]
    kinds = [b.PARALLEL] * 4 + [b.REDUCTION] * 2 + [b.PARALLEL]
    return b.generic(name, [padded, b.empty(list(a["kernel"]), elem)], [init], maps, kinds,
                     lambda v, _, acc: arith.maxnumf(acc, v))
