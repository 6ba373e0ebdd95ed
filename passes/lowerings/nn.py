"""conv2d, max_pool2d and avg_pool2d → padding, fill and convolution/pooling blocks.

- **Padding** is a block of its own: ``pad_init`` fills a tensor of the padded shape with the
  padding value (0, or the lowest value for max pooling) and ``pad`` (a ``linalg.copy``) writes
  the input into its interior, an ``extract_slice``/``insert_slice`` pair that bufferizes in
  place (upstream's ``tensor.pad`` decomposes to the same; as blocks the schedule sees and
  tiles them). Ceil-mode pooling pads the bottom/right further so every window is in bounds.
- ``groups == 1`` is ``linalg.conv_2d_nchw_fchw``; grouped and depthwise convolutions are one
  ``linalg.generic`` with conv_2d_nchw_fchw's loops ``(n, o, oh, ow, c, kh, kw)`` (``c``
  within the group) that reads input channel ``(o floordiv (O/G)) * (C/G) + c``. Upstream's
  grouped/depthwise NCHW ops neither decompose nor vectorize either, and reshaping the
  destination into groups would make the kernel return a view that bufferization copies; this
  form tiles like any block, and the default design space leaves it scalar.
- Pooling is ``linalg.pooling_nchw_max`` / ``linalg.pooling_nchw_sum``; average pooling
  divides the window sums by the number of counted taps in a ``avg_pool2d`` block: a scalar
  when every window counts the same, else a constant ``[OH, OW]`` tensor of divisors.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
from mlir import ir
from mlir.dialects import arith, linalg

from mlcir.dialects.graph import numpy_dtype, pool_divisors
from mlcir.dialects.loop import tag_block
from mlcir.errors import LoweringError

from . import LoweringContext, lowering
from . import builders as b


def _spatial_dims_static(op: str, *values: ir.Value) -> None:
    for v in values:
        shape = b.shape_of(v)
        if shape[2] is None or shape[3] is None:
            raise LoweringError(f"'{op}' needs static spatial dims (H, W and the kernel's), got "
                                f"{v.type}")


def pad(cx: LoweringContext, x: ir.Value, pads: Sequence[int], value: ir.Value) -> ir.Value:
    """``x`` (NCHW) padded by ``pads = [top, left, bottom, right]`` with ``value``: blocks
    ``pad_init`` (a fill) and ``pad`` (a copy into the interior). No padding: ``x`` itself."""
    if not any(pads):
        return x
    top, left, bottom, right = pads
    n, c, h, w = b.shape_of(x)
    shape = [n, c, h + top + bottom, w + left + right]
    name = cx.block_name("pad")
    padded = b.fill(cx.block_name(f"{name.value}_init"), value,
                    b.empty(shape, b.element_type(x), source=x))
    sizes = [n if n is not None else b.dim(x, 0), c if c is not None else b.dim(x, 1), h, w]
    interior = b.extract_slice(padded, [0, 0, top, left], sizes, [1, 1, 1, 1])
    copy = linalg.copy(x, outs=[interior])
    tag_block(copy.owner, name)
    return b.insert_slice(copy, padded, [0, 0, top, left], sizes)


def _nchw_dest_dims(channels_from_w: bool):
    def dest_dims(inputs: Sequence[ir.Value], attrs: dict, result: int) -> list[ir.Value | None]:
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


@lowering("conv2d", dest_dims=_nchw_dest_dims(channels_from_w=True))
def lower_conv2d(cx: LoweringContext) -> list[ir.Value]:
    x, w = cx.inputs
    (dest,) = cx.dests
    _spatial_dims_static("graph.conv2d", x, w)
    elem = b.element_type(dest)
    strides, dilation, groups = cx.attrs["strides"], cx.attrs["dilation"], cx.attrs["groups"]
    padded = pad(cx, x, cx.attrs["padding"], b.constant(0, elem))
    name = cx.block_name("conv2d")
    init_name = cx.block_name(f"{name.value}_init")
    if groups == 1:
        init = b.fill(init_name, b.constant(0, elem), dest)
        result = linalg.conv_2d_nchw_fchw(padded, w, outs=[init], strides=list(strides),
                                          dilations=list(dilation))
        tag_block(result.owner, name)
        return [result]
    return [_grouped_conv(name, init_name, padded, w, dest, strides, dilation, groups)]


def _grouped_conv(name: ir.StringAttr, init_name: ir.StringAttr, x: ir.Value, w: ir.Value,
                  dest: ir.Value, strides: Sequence[int], dilation: Sequence[int],
                  groups: int) -> ir.Value:
    """One generic over ``(n, o, oh, ow, c, kh, kw)`` (``c`` within the group) reading input
    channel ``(o floordiv (O/G)) * (C/G) + c``: x, w and the destination as they are, so the
    block writes the kernel's destination itself (no reshaped views)."""
    o, cg = b.shape_of(w)[:2]
    if o is None or cg is None:
        raise LoweringError(f"'graph.conv2d' with groups={groups} needs static channel counts, "
                            f"got w {w.type}")
    init = b.fill(init_name, b.constant(0, b.element_type(dest)), dest)
    n, oc, oh, ow, c, kh, kw = (ir.AffineDimExpr.get(i) for i in range(7))
    (sh, sw), (dh, dw) = strides, dilation
    channel = ir.AffineFloorDivExpr.get(oc, ir.AffineConstantExpr.get(o // groups)) * cg + c
    x_map = b.dims_map(7, [n, channel, oh * sh + kh * dh, ow * sw + kw * dw])
    w_map = b.dims_map(7, [oc, c, kh, kw])
    out_map = b.dims_map(7, [n, oc, oh, ow])
    return b.generic(name, [x, w], [init], [x_map, w_map, out_map],
                     [b.PARALLEL] * 4 + [b.REDUCTION] * 3,
                     lambda a, k, acc: b.add(acc, b.mul(a, k)))[0]


def _pool_padding(x: ir.Value, dest: ir.Value, attrs: dict) -> list[int]:
    """The explicit padding plus what ceil mode reads past it (bottom/right)."""
    top, left, bottom, right = attrs["padding"]
    h, w = b.shape_of(x)[2:]
    oh, ow = b.shape_of(dest)[2:]
    (kh, kw), (sh, sw), (dh, dw) = attrs["kernel"], attrs["strides"], attrs["dilation"]
    extra_h = max(0, (oh - 1) * sh + dh * (kh - 1) + 1 - (h + top + bottom))
    extra_w = max(0, (ow - 1) * sw + dw * (kw - 1) + 1 - (w + left + right))
    return [top, left, bottom + extra_h, right + extra_w]


def _pool(cx: LoweringContext, kind: str, fill_value: ir.Value, out: ir.Value, padded: ir.Value,
          name: ir.StringAttr) -> ir.Value:
    window = b.empty(list(cx.attrs["kernel"]), b.element_type(out))
    init = b.fill(cx.block_name(f"{name.value}_init"), fill_value, out)
    pool = getattr(linalg, f"pooling_nchw_{kind}")
    result = pool(padded, window, outs=[init], strides=list(cx.attrs["strides"]),
                  dilations=list(cx.attrs["dilation"]))
    tag_block(result.owner, name)
    return result


@lowering("max_pool2d", dest_dims=_nchw_dest_dims(channels_from_w=False))
def lower_max_pool2d(cx: LoweringContext) -> list[ir.Value]:
    (x,), (dest,) = cx.inputs, cx.dests
    _spatial_dims_static("graph.max_pool2d", x)
    lowest = b.lowest(b.element_type(x))
    padded = pad(cx, x, _pool_padding(x, dest, cx.attrs), lowest)
    return [_pool(cx, "max", lowest, dest, padded, cx.block_name("max_pool2d"))]


@lowering("avg_pool2d", dest_dims=_nchw_dest_dims(channels_from_w=False))
def lower_avg_pool2d(cx: LoweringContext) -> list[ir.Value]:
    (x,), (dest,) = cx.inputs, cx.dests
    _spatial_dims_static("graph.avg_pool2d", x)
    elem = b.element_type(x)
    zero = b.constant(0, elem)
    padded = pad(cx, x, _pool_padding(x, dest, cx.attrs), zero)
    sums = _pool(cx, "sum", zero, b.empty_like(dest), padded, cx.block_name("sum_pool"))
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
