"""Elementwise graph ops → one ``linalg.generic`` block with numpy-broadcasting maps."""

from __future__ import annotations

from typing import Callable

from mlir import ir
from mlir.dialects import arith, math

from . import LoweringContext, lowering
from . import builders as b

# op name -> scalar payload
_PAYLOADS: dict[str, Callable[..., ir.Value]] = {
    "add": b.add,
    "subtract": b.sub,
    "multiply": b.mul,
    "divide": b.div,
    "maximum": b.maximum,
    "minimum": b.minimum,
    "power": lambda x, y: math.powf(x, y),
    "negative": b.neg,
    "abs": lambda x: math.absf(x) if b.is_float(x.type) else math.absi(x),
    "relu": lambda x: b.maximum(x, b.constant(0, x.type)),
    "sigmoid": lambda x: arith.divf(b.constant(1.0, x.type),
                                    arith.addf(b.constant(1.0, x.type),
                                               math.exp(arith.negf(x)))),
    "ewise_fma": lambda x, y, z: b.add(b.mul(x, y), z),
    **{name: fn for name, fn in b.FLOAT_UNARY.items()},
}
_FLOAT_ONLY = {"power", "sigmoid", *b.FLOAT_UNARY}


def lower_elementwise(cx: LoweringContext) -> list[ir.Value]:
    (dest,) = cx.dests
    out_shape = b.shape_of(dest)
    maps = [b.broadcast_map(b.shape_of(v), out_shape) for v in cx.inputs]
    maps.append(b.identity_map(len(out_shape)))
    payload = _PAYLOADS[cx.op_name]
    if cx.op_name in _FLOAT_ONLY:
        b.require_float(f"graph.{cx.op_name}", dest)
    n = len(cx.inputs)
    return b.generic(cx.block_name(cx.op_name), cx.inputs, [dest], maps,
                     [b.PARALLEL] * len(out_shape), lambda *args: payload(*args[:n]))


lowering(*_PAYLOADS)(lower_elementwise)
