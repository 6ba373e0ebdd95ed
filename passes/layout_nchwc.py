"""``graph-layout-nchwc``: convolution chains in the blocked NCHW<c>c layout.

onnxruntime's MLAS and TVM's x86 schedules run convolutions in NCHWc: the channels of one
block (one vector register of f32: option ``lanes``, the target's) innermost, so a
convolution's register tile is output columns x one channel block, each step a broadcast input
value times a filter vector, whatever the width or stride (docs/decisions.md#channel-blocks).
The layout is chosen once for the graph:

- a ``conv2d`` with a constant filter becomes ``conv2d_nchwc`` with the filter packed at
  compile time (``[O/co, C/ci, KH, KW, ci, co]``, folded as a constant); a depthwise one reads
  ``[C/c, 1, KH, KW, 1, c]``, its channel block in the lanes. Blocks of a vector's lanes,
  else half a vector (24, 40 channels with 16 lanes); a first layer reading fewer channels
  than a block (an image's 3) stays NCHW, and so does a pointwise convolution that alone
  reads an NCHW value, into no more channels (:func:`_pointwise_stays_nchw`);
- elementwise and broadcast ops (bias, batch-norm's scale and shift, activations, a
  residual add) with a blocked operand follow in the blocked layout, constant operands
  rearranged at compile time; ``max_pool2d`` of a blocked tensor becomes ``max_pool2d_nchwc``,
  a ``mean``/``sum``/``max``/``min`` over H and W (global average pooling) reduces the
  blocked tensor, and its ``[N, C/c, 1, 1, c]`` result is ``[N, C, 1, 1]`` by a reshape;
- everything else reads the NCHW tensor: a ``layout_transform`` back to NCHW follows each
  blocked result, used only where an NCHW reader remains (graph outputs, reshapes, matmuls);
  a blocked op reading such a tensor reads the blocked one directly, so back-to-back layout
  changes cancel by construction and a chain has one layout change at each end.

``layout="none"`` turns it off, as it does ``graph-pack-weights``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from mlir import ir

from mlcir.dialects import graph

from .constants import constant_array, make_constant
from .layout_chains import CHAIN_PATTERNS, _kept, batch_shape, rebuilt, relaid_functions
from .pipelines import STANDALONE_LANES
from .registry import ModulePass, register_pass

__all__ = ["LayoutNCHWc", "layout_nchwc", "channel_block"]

_SPATIAL_REDUCTIONS = ("graph.mean", "graph.sum", "graph.max", "graph.min")


def channel_block(channels: int, lanes: int = STANDALONE_LANES) -> int | None:
    """The block for a tensor of ``channels``: a vector of ``lanes`` f32, else half of one
    (not below 4 channels: docs/decisions.md#channel-blocks)."""
    for block in (lanes, lanes // 2):
        if block >= 4 and channels % block == 0:
            return block
    return None


def layout_nchwc(module: ir.Module | ir.Operation, lanes: int = STANDALONE_LANES) -> int:
    """Put the convolution chains of every graph function of ``module`` in NCHW<c>c (in
    place, module docstring) for vectors of ``lanes`` f32; returns how many ops now run
    blocked."""
    return sum(_Converter(lanes).run(fn) for fn in relaid_functions(module))


def _pointwise_stays_nchw(x: ir.Value, x_shape: list[int], w_shape: tuple[int, ...],
                          attrs: dict, lanes: int) -> bool:
    """Whether a convolution of the NCHW value ``x`` stays NCHW: a pointwise one (1x1,
    stride 1, no padding, one group) that alone reads ``x``, into no more channels than it
    reads, over whole vectors of ``H*W`` (``lanes`` wide: the NCHW matmul's columns). NCHW, it is the matmul over
    ``H*W`` its lowering makes (nn.py), as fast as the blocked convolution; blocked, its
    larger input would change layout first, where a blocked reader of its result changes the
    smaller result's layout instead (docs/measurements/lowering-rules.md#pointwise-nchw)."""
    o, c, kh, kw = w_shape
    return ((kh, kw) == (1, 1) and list(attrs["strides"]) == [1, 1]
            and not any(attrs["padding"]) and attrs["groups"] == 1 and o <= c
            and x_shape[2] * x_shape[3] % lanes == 0 and len(list(x.uses)) == 1)


@dataclass
class _Converter:
    lanes: int
    # NCHW value -> (its NCHW<c>c form, c): the blocked tensors this function has so far.
    blocked: dict[ir.Value, tuple[ir.Value, int]] = field(default_factory=dict)
    plain_forms: list[ir.Operation] = field(default_factory=list)

    def run(self, fn: ir.Operation) -> int:
        count = 0
        for op in list(fn.regions[0].blocks[0].operations):
            result = self._convert(op)
            if result is None:
                continue
            new, block = result
            self._replace(op, new, block)
            count += 1
        for op in reversed(self.plain_forms):  # the layout changes nothing reads in NCHW
            if not any(True for _ in op.results[0].uses):
                op.erase()
        return count

    # -- which ops, and how ---------------------------------------------------------------
    def _convert(self, op: ir.Operation) -> tuple[ir.Value, int] | None:
        if len(op.results) != 1 or batch_shape(op.results[0]) is None:
            return None
        if op.name == "graph.conv2d":
            return self._conv(op)
        if op.name == "graph.max_pool2d" and op.operands[0] in self.blocked:
            x, block = self.blocked[op.operands[0]]
            attrs = graph.OPS["max_pool2d"].read_attrs(op)
            with ir.InsertionPoint(op), op.location:
                return graph.max_pool2d_nchwc(x, **attrs), block
        if op.name in _SPATIAL_REDUCTIONS and op.operands[0] in self.blocked:
            return self._spatial_reduction(op)
        short = op.name.split(".", 1)[1] if op.name.startswith("graph.") else ""
        opdef = graph.OPS.get(short)
        if opdef is not None and opdef.pattern in CHAIN_PATTERNS and not any(
                a.kind in ("ints", "dense") for a in opdef.attrs):
            return self._elementwise(op, short)
        return None

    def _conv(self, op: ir.Operation) -> tuple[ir.Value, int] | None:
        x, w = op.operands
        x_shape, w_array = batch_shape(x), constant_array(w)
        attrs = graph.OPS["conv2d"].read_attrs(op)
        if x_shape is None or len(x_shape) != 4 or w_array is None or w_array.ndim != 4:
            return None
        o, c = w_array.shape[0], x_shape[1]
        depthwise = attrs["groups"] != 1
        if depthwise and not (attrs["groups"] == c == o and w_array.shape[1] == 1):
            return None  # grouped convolutions stay NCHW
        out_block = channel_block(o, self.lanes)
        if out_block is None:
            return None
        if x in self.blocked:
            in_block = self.blocked[x][1]
        elif _pointwise_stays_nchw(x, x_shape, w_array.shape, attrs, self.lanes):
            return None
        else:
            # An input of fewer channels than a block (an image's 3) stays NCHW: the stem is
            # faster so (docs/measurements/lowering-rules.md#stem).
            in_block = channel_block(c, self.lanes)
            if in_block is None:
                return None
        if depthwise:  # one block for input and output channels, the same channels
            in_block = out_block
            packed = graph.pack_filter(w_array, 1, out_block)
        else:
            packed = graph.pack_filter(w_array, in_block, out_block)
        elem = ir.RankedTensorType(w.type).element_type
        with ir.InsertionPoint(op), op.location:
            xb = self._blocked_input(x, in_block)
            wb = make_constant(packed, ir.RankedTensorType.get(list(packed.shape), elem))
            return graph.conv2d_nchwc(xb, wb, **attrs), out_block

    def _spatial_reduction(self, op: ir.Operation) -> tuple[ir.Value, int] | None:
        x, block = self.blocked[op.operands[0]]
        short = op.name.split(".", 1)[1]
        attrs = graph.OPS[short].read_attrs(op)
        if list(attrs["axes"]) != [2, 3]:
            return None
        with ir.InsertionPoint(op), op.location:
            return graph.build(short, [x], attrs), block

    def _elementwise(self, op: ir.Operation, short: str) -> tuple[ir.Value, int] | None:
        shape = batch_shape(op.results[0])
        if shape is None or len(shape) != 4:
            return None
        block = next((self.blocked[v][1] for v in op.operands if v in self.blocked
                      and batch_shape(v) == shape), None)
        if block is None:
            return None
        result = rebuilt(op, short, lambda value: self._blocked_operand(value, shape, block))
        return None if result is None else (result, block)

    # -- values in the blocked layout --------------------------------------------------------
    def _blocked_input(self, x: ir.Value, block: int) -> ir.Value:
        """``x`` in NCHW<block>c: its blocked form, or a layout change from NCHW."""
        if x in self.blocked and self.blocked[x][1] == block:
            return self.blocked[x][0]
        blocked = graph.layout_transform(x, src_layout="NCHW", dst_layout=f"NCHW{block}c")
        if x not in self.blocked:  # its later readers (a residual add) read this one
            self.blocked[x] = (blocked, block)
        return blocked

    def _blocked_operand(self, value: ir.Value, shape: list[int], block: int) -> ir.Value | None:
        """An operand of an elementwise op of result ``shape`` (NCHW) in NCHW<block>c, or None
        where it has none: constants are rearranged here, a per-position operand of one channel
        (``[N, 1, H, W]``) is reshaped (a view), a full NCHW one changes layout."""
        own = batch_shape(value)
        if own is None or len(own) > 4:
            return None
        if not own:
            return value  # a scalar broadcasts in any layout
        array = constant_array(value)
        full = [1] * (4 - len(own)) + own
        if array is not None:
            n, c, h, w = full
            array = array.reshape(full)
            if c == 1:
                array = array.reshape(n, 1, h, w, 1)
            else:
                array = array.reshape(n, c // block, block, h, w).transpose(0, 1, 3, 4, 2)
            elem = ir.RankedTensorType(value.type).element_type
            return make_constant(np.ascontiguousarray(array),
                                 ir.RankedTensorType.get(list(array.shape), elem))
        if len(own) != 4:
            return None
        if own[1] == 1:
            return graph.reshape(value, shape=_kept(own) + [1])
        if own == shape:
            return self._blocked_input(value, block)
        return None

    def _replace(self, op: ir.Operation, new: ir.Value, block: int) -> None:
        """``op``'s NCHW result becomes the NCHW form of ``new``: a layout change after it
        (a reshape where H = W = 1 or reduced away), which a later blocked reader skips."""
        shape = batch_shape(op.results[0])
        assert shape is not None
        with ir.InsertionPoint(op), op.location:
            if math.prod(shape[2:]) == 1:  # [N, C/c, (1, 1,) c] is [N, C(, 1, 1)]: a view
                plain = graph.reshape(new, shape=_kept(shape))
            else:
                plain = graph.layout_transform(new, src_layout=f"NCHW{block}c",
                                               dst_layout="NCHW")
        op.results[0].replace_all_uses_with(plain)
        op.erase()
        self.plain_forms.append(plain.owner)
        if len(shape) == 4:
            self.blocked[plain] = (new, block)


@register_pass
@dataclass
class LayoutNCHWc(ModulePass):
    name = "graph-layout-nchwc"
    summary = ("Run convolution chains in the blocked NCHW<c>c layout (filters packed at "
               "compile time); layout changes only where the chains begin and end")
    lanes: int = STANDALONE_LANES  # f32 lanes of a vector: the channel block

    def run(self, module: ir.Operation) -> None:
        layout_nchwc(module, self.lanes)
