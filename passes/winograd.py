"""``graph-winograd``: 3x3 stride-1 convolutions in NCHW<c>c as Winograd F(4x4, 3x3).

Direct 3x3 convolution already runs near the FMA peak (docs/decisions.md), so the way past
that roof is fewer multiplications: F(4x4, 3x3) (dialects/winograd.py) makes a 4x4 output
tile from a 6x6 input tile with 36 multiplications per channel pair instead of 144:

    conv2d_nchwc(x, w)  ->  winograd_output(matmul(winograd_input(x), U))

- ``U = G g G^T`` of the constant filter is computed at compile time, folded as a constant
  ``[36, C, K]`` (a packed weight);
- ``winograd_input`` makes the 36 left operands ``[36, tiles, C]`` (padding left after
  graph-pad-windows is a copy in its kernel);
- the 36 matmuls ``[tiles, C] x [C, K]`` are one batched ``graph.matmul`` kernel, scheduled
  and tuned like any matmul;
- ``winograd_output`` makes the NCHW<c>c result, which the epilogue then reads.

Which convolutions: ``conv2d_nchwc`` with a constant 3x3 filter, strides and dilation 1, one
group, an f32 result whose H and W are multiples of 4, and at least :data:`MIN_CHANNELS` input
and output channels (fewer: the transforms cost more than they save). The rounding error is
about 1e-5 of the result's scale in f32 (both measured in docs/graph-passes.md). Off with
``layout="none"`` and ``layout="direct"``; CUDA's build plan leaves this pass out.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from mlir import ir

from mlcir.dialects import graph
from mlcir.dialects import winograd as wg
from mlcir.ir import ops_named

from .constants import constant_array, make_constant
from .layout_chains import module_layout, relaid_functions, static_shape
from .registry import ModulePass, register_pass

__all__ = ["MIN_CHANNELS", "Winograd", "winograd"]

# Fewest input and output channels a convolution needs for Winograd to pay (measured).
MIN_CHANNELS = 32
DIRECT = "direct"


def _eligible(op: ir.Operation, attrs: dict) -> bool:
    x, w = op.operands
    x_shape, w_shape, y_shape = static_shape(x), static_shape(w), static_shape(op.results[0])
    if None in (x_shape, w_shape, y_shape):
        return False
    if not isinstance(ir.RankedTensorType(op.results[0].type).element_type, ir.F32Type):
        return False
    _, cb, kh, kw, ci, co = w_shape
    channels_in, channels_out = cb * ci, w_shape[0] * co
    return ((kh, kw) == (wg.KERNEL, wg.KERNEL) and list(attrs["strides"]) == [1, 1]
            and list(attrs["dilation"]) == [1, 1] and attrs["groups"] == 1
            and y_shape[2] % wg.TILE == 0 and y_shape[3] % wg.TILE == 0
            and min(channels_in, channels_out) >= MIN_CHANNELS)


def _rewrite(op: ir.Operation, transformed: dict[ir.Value, ir.Value]) -> bool:
    attrs = graph.OPS["conv2d_nchwc"].read_attrs(op)
    if not _eligible(op, attrs):
        return False
    x, w = op.operands
    u = transformed.get(w)
    if u is None:
        packed = constant_array(w)
        if packed is None:
            return False
        if np.array_equal(packed, np.round(packed)):
            # integer weights: an exact integer convolution computed in float32 (a quantized
            # model's, frontend/converters/quantize.py), which Winograd's fractions would round
            return False
        oihw = graph.unpack_filter(packed)
        k, c = oihw.shape[:2]
        elem = ir.RankedTensorType(w.type).element_type
        with ir.InsertionPoint(w.owner), w.owner.location:
            u = make_constant(wg.filter_transform(oihw),
                              ir.RankedTensorType.get([wg.ALPHA ** 2, c, k], elem))
        transformed[w] = u
    n, kb, h, wd, co = static_shape(op.results[0])
    with ir.InsertionPoint(op), op.location:
        tiles = graph.winograd_input(x, padding=list(attrs["padding"]))
        products = graph.matmul(tiles, u)
        y = graph.winograd_output(products, tiles=[h // wg.TILE, wd // wg.TILE], block=co)
    op.results[0].replace_all_uses_with(y)
    op.erase()
    return True


def winograd(module: ir.Module | ir.Operation) -> int:
    """Rewrite the eligible 3x3 convolutions of every graph function of ``module`` as Winograd
    F(4x4, 3x3) (in place, module docstring); returns how many."""
    root = module.operation if hasattr(module, "operation") else module
    if module_layout(root) == DIRECT:
        return 0
    transformed: dict[ir.Value, ir.Value] = {}
    return sum(_rewrite(op, transformed) for fn in relaid_functions(root)
               for op in ops_named(fn, "graph.conv2d_nchwc"))


@register_pass
@dataclass
class Winograd(ModulePass):
    name = "graph-winograd"
    summary = ("3x3 stride-1 NCHW<c>c convolutions with constant filters as Winograd "
               "F(4x4, 3x3): input transform, 36 matmuls with the filter transformed at "
               "compile time, output transform")

    def run(self, module: ir.Module | ir.Operation) -> None:
        winograd(module)

