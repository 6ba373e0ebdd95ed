"""The blocked NCHW<c>c ops of ``graph-layout-nchwc`` → linalg blocks.

- ``layout_transform`` is a view and a transpose: NCHW → NCHW<c>c expands ``C`` into
  ``[C/c, c]`` and moves ``c`` last (block ``layout_transform``, a ``linalg.transpose``);
  back, the transpose writes into the destination viewed as ``[N, C/c, c, H, W]``.
- ``conv2d_nchwc`` is padding (dims 2 and 3, nn.py's blocks), a fill and one generic over
  ``(n, oco, oh, ow, oci, ico, kh, kw, ici)``: the last two spatial loops, which the CPU design
  space tiles into its register tile, are output columns ``ow`` and the output channels of
  one block ``oci`` (contiguous in the result and in the packed filter): MLAS's NCHWc
  micro-kernel, each step a broadcast input value times a filter vector. No phase copy for a
  width stride: ``x[.., ow * s + kw, ici]`` is read one element at a time anyway. A depthwise
  convolution is ``(n, cb, oh, ow, c, kh, kw)``, its channel block in the lanes.
- ``max_pool2d_nchwc``: padding with the lowest value, a fill and one generic over
  ``(n, cb, oh, ow, c, kh, kw)``: the channel block in the lanes, whatever the strides.
"""

from __future__ import annotations

from mlir import ir
from mlir.dialects import arith, linalg

from mlcir.dialects.graph import parse_blocked_layout
from mlcir.dialects.loop import tag_block

from . import builders as b
from .nn import pad, pool_padding, spatial_dims_static
from .rule import LoweringContext, lowering


@lowering("layout_transform")
def lower_layout_transform(cx: LoweringContext) -> list[ir.Value]:
    (x,), (dest,) = cx.inputs, cx.dests
    block = parse_blocked_layout(cx.attrs["dst_layout"])
    name = cx.block_name("layout_transform")
    if block is not None:  # NCHW -> [N, C/c, c, H, W] (a view) -> [N, C/c, H, W, c]
        n, c, h, w = b.shape_of(x)
        grouped = b.expand(x, [n, c // block, block, h, w], [[0], [1, 2], [3], [4]])
        op = linalg.transpose(grouped, outs=[dest], permutation=[0, 1, 3, 4, 2])
        tag_block(op.operation, name)
        return [op.results[0]]
    n, cb, h, w, c = b.shape_of(x)
    grouped = b.expand(dest, [n, cb, c, h, w], [[0], [1, 2], [3], [4]])
    op = linalg.transpose(x, outs=[grouped], permutation=[0, 1, 4, 2, 3])
    tag_block(op.operation, name)
    return [b.collapse(op.results[0], [[0], [1, 2], [3], [4]])]


def _dims(names: str) -> dict[str, ir.AffineExpr]:
    return {k: ir.AffineDimExpr.get(i) for i, k in enumerate(names.split())}


def _phased(cx: LoweringContext, x: ir.Value, pads: list[int], value: ir.Value, stride: int,
            out_w: int, span: int) -> ir.Value:
    """``x`` ``[N, Cb, H, W, c]`` padded, and for a width stride ``s > 1`` viewed as ``[N, Cb,
    H', W'/s, s, c]`` (padded further or cut on the right: whole phases covering the
    windows, ``span`` columns each)."""
    if stride == 1:
        return pad(cx, x, pads, value)
    top, left, bottom, right = pads
    columns = -(-((out_w - 1) * stride + span) // stride)
    width = b.shape_of(x)[3] + left + right
    padded = pad(cx, x, [top, left, bottom, right + max(0, columns * stride - width)], value)
    n, cb, h, full, c = b.shape_of(padded)
    if full != columns * stride:
        padded = b.extract_slice(padded, [0] * 5, [n, cb, h, columns * stride, c], [1] * 5)
    return b.expand(padded, [n, cb, h, columns, stride, c], [[0], [1], [2], [3, 4], [5]])


def _window_read(d: dict[str, ir.AffineExpr], channel: str, block: str, strides: list[int],
                 dilation: list[int], phased: bool) -> list[ir.AffineExpr]:
    """The input read of a window block: ``[n, channel, oh*sh + kh*dh, ow*sw + kw*dw,
    block]``, or through the phase view ``[.., ow + kq, kr, block]``."""
    (sh, sw), (dh, dw) = strides, dilation
    row = d["oh"] * sh + d["kh"] * dh
    if phased:
        return [d["n"], d[channel], row, d["ow"] + d["kq"], d["kr"], d[block]]
    return [d["n"], d[channel], row, d["ow"] * sw + d["kw"] * dw, d[block]]


@lowering("conv2d_nchwc")
def lower_conv2d_nchwc(cx: LoweringContext) -> list[ir.Value]:
    x, w = cx.inputs
    (dest,) = cx.dests
    spatial_dims_static("graph.conv2d_nchwc", x)
    elem = b.element_type(dest)
    zero = b.constant(0, elem)
    strides, dilation = list(cx.attrs["strides"]), list(cx.attrs["dilation"])
    kw = b.shape_of(w)[3]
    # graph-layout-nchwc makes strided filters so: taps a multiple of the stride, no dilation.
    phased = strides[1] > 1 and dilation[1] == 1 and kw % strides[1] == 0
    padded = _phased(cx, x, list(cx.attrs["padding"]), zero, strides[1] if phased else 1,
                     b.shape_of(dest)[3], kw)
    name = cx.block_name("conv2d_nchwc")
    init = b.fill(cx.block_name(f"{name.value}_init"), zero, dest)
    taps = "kq kr" if phased else "kw"
    depthwise = cx.attrs["groups"] != 1
    d = _dims(f"n cb oh ow c kh {taps}" if depthwise else f"n oco oh ow oci ico kh {taps} ici")
    column = d["kq"] * strides[1] + d["kr"] if phased else d["kw"]
    if depthwise:  # w [C/c, 1, KH, KW, 1, c]
        zero_expr = ir.AffineConstantExpr.get(0)
        x_map = _window_read(d, "cb", "c", strides, dilation, phased)
        w_map = [d["cb"], zero_expr, d["kh"], column, zero_expr, d["c"]]
        out_map = [d["n"], d["cb"], d["oh"], d["ow"], d["c"]]
    else:
        x_map = _window_read(d, "ico", "ici", strides, dilation, phased)
        w_map = [d["oco"], d["ico"], d["kh"], column, d["ici"], d["oci"]]
        out_map = [d["n"], d["oco"], d["oh"], d["ow"], d["oci"]]
    num = len(d)
    kinds = [b.PARALLEL] * 5 + [b.REDUCTION] * (num - 5)
    maps = [b.dims_map(num, m) for m in (x_map, w_map, out_map)]
    if not phased:
        return b.generic(name, [padded, w], [init], maps, kinds,
                         lambda a, k, acc: b.add(acc, b.mul(a, k)))
    # kq and kr index no operand plainly: an unread tensor of the tap grid bounds them.
    grid = b.empty([b.shape_of(w)[2], kw // strides[1], strides[1]], elem)
    maps.insert(2, b.dims_map(num, [d["kh"], d["kq"], d["kr"]]))
    return b.generic(name, [padded, w, grid], [init], maps, kinds,
                     lambda a, k, _, acc: b.add(acc, b.mul(a, k)))


@lowering("max_pool2d_nchwc")
def lower_max_pool2d_nchwc(cx: LoweringContext) -> list[ir.Value]:
    """Loops ``(n, cb, oh, ow, kh, kw, c)``: the channel block innermost, so the plain loops
    vectorize along it (LLVM's loop vectorizer; the default leaves the strided window to it).
    The max is ``arith.maxnumf`` (a NaN input is skipped, as onnxruntime's ``maxps`` kernels
    do): LLVM vectorizes it to ``vmaxps``, where ``maximumf``'s NaN propagation took 2.2x the
    time (1578 against 736 us, 64 channels at 112x112, 3x3/2)."""
    (x,), (dest,) = cx.inputs, cx.dests
    spatial_dims_static("graph.max_pool2d_nchwc", x)
    elem = b.element_type(x)
    lowest = b.lowest(elem)
    a = cx.attrs
    padded = pad(cx, x, pool_padding(x, dest, a), lowest)
    name = cx.block_name("max_pool2d_nchwc")
    init = b.fill(cx.block_name(f"{name.value}_init"), lowest, dest)
    d = _dims("n cb oh ow kh kw c")
    x_map = _window_read(d, "cb", "c", list(a["strides"]), list(a["dilation"]), phased=False)
    out_map = [d["n"], d["cb"], d["oh"], d["ow"], d["c"]]
    maps = [b.dims_map(7, m) for m in (x_map, [d["kh"], d["kw"]], out_map)]
    kinds = [b.PARALLEL] * 4 + [b.REDUCTION] * 2 + [b.PARALLEL]
    return b.generic(name, [padded, b.empty(list(a["kernel"]), elem)], [init], maps, kinds,
                     lambda v, _, acc: arith.maxnumf(acc, v))
