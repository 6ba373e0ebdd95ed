"""Elementwise graph ops → one ``linalg.generic`` block with numpy-broadcasting maps."""

from __future__ import annotations

import math
from typing import Callable

from mlir import ir
from mlir.dialects import arith
from mlir.dialects import math as mathd


from .rule import LoweringContext, lowering
from . import builders as b

# op name -> scalar payload
_PAYLOADS: dict[str, Callable[..., ir.Value]] = {
    "add": b.add,
    "subtract": b.sub,
    "multiply": b.mul,
    "divide": b.div,
    "maximum": b.maximum,
    "minimum": b.minimum,
    "power": lambda x, y: mathd.powf(x, y),
    "negative": b.neg,
    # integers: max(x, -x) in arith (a math.absi left in some fused kernels was refused by
    # the LLVM lowering: "failed to legalize operation 'math.absi'", fuzz seed 6 case 2289)
    "abs": lambda x: mathd.absf(x) if b.is_float(x.type) else b.maximum(x, b.neg(x)),
    "relu": lambda x: b.maximum(x, b.constant(0, x.type)),
    "sigmoid": lambda x: arith.divf(b.constant(1.0, x.type),
                                    arith.addf(b.constant(1.0, x.type),
                                               mathd.exp(arith.negf(x)))),
    "ewise_fma": lambda x, y, z: b.add(b.mul(x, y), z),
    **{name: fn for name, fn in b.FLOAT_UNARY.items()},
}
_FLOAT_ONLY = {"power", "sigmoid", *b.FLOAT_UNARY}


# The ONNX elementwise math family ------------------------------------------------------------


def _less(a: ir.Value, b_: ir.Value) -> ir.Value:
    if b.is_float(a.type):
        return arith.cmpf(arith.CmpFPredicate.OLT, a, b_)
    return arith.cmpi(arith.CmpIPredicate.slt, a, b_)


def _sign(x: ir.Value) -> ir.Value:
    """-1, 0 or 1; a float NaN (neither below nor above 0) stays itself."""
    zero = b.constant(0, x.type)
    below = arith.select(_less(x, zero), b.constant(-1, x.type),
                         x if b.is_float(x.type) else zero)
    return arith.select(_less(zero, x), b.constant(1, x.type), below)


def _fmod(x: ir.Value, y: ir.Value) -> ir.Value:
    """Remainder with the dividend's sign (C fmod; integers: remsi)."""
    return arith.remf(x, y) if b.is_float(x.type) else arith.remsi(x, y)


def _mod(x: ir.Value, y: ir.Value) -> ir.Value:
    """Remainder with the divisor's sign (numpy.mod): fmod, plus the divisor when the two
    signs differ and the remainder is not 0."""
    r = _fmod(x, y)
    zero = b.constant(0, x.type)
    if b.is_float(x.type):
        nonzero = arith.cmpf(arith.CmpFPredicate.ONE, r, zero)
    else:
        nonzero = arith.cmpi(arith.CmpIPredicate.ne, r, zero)
    differ = arith.xori(_less(r, zero), _less(y, zero))
    return arith.select(arith.andi(nonzero, differ), b.add(r, y), r)


_FLOAT_MATH = ("sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh",
               "atanh", "floor", "ceil")
_MATH_PAYLOADS: dict[str, Callable[..., ir.Value]] = {
    **{name: getattr(mathd, name) for name in _FLOAT_MATH},
    "round": mathd.roundeven,  # halves to even, as ONNX Round
    "sign": _sign,
    "mod": _mod,
    "fmod": _fmod,
    "bitwise_not": lambda x: arith.xori(x, b.constant(-1, x.type)),
    "bitwise_and": arith.andi,
    "bitwise_or": arith.ori,
    "bitwise_xor": arith.xori,
}
_FLOAT_ONLY |= {*_FLOAT_MATH, "round"}
_PAYLOADS.update(_MATH_PAYLOADS)


# Comparisons, boolean logic and selection (boolean tensors: docs/graph-ops.md) -----------------

_FLOAT_PREDICATES = {"equal": arith.CmpFPredicate.OEQ, "less": arith.CmpFPredicate.OLT,
                     "less_equal": arith.CmpFPredicate.OLE, "greater": arith.CmpFPredicate.OGT,
                     "greater_equal": arith.CmpFPredicate.OGE}
_INT_PREDICATES = {"equal": "eq", "less": "lt", "less_equal": "le", "greater": "gt",
                   "greater_equal": "ge"}


def _comparison(name: str) -> Callable[[ir.Value, ir.Value], ir.Value]:
    """Ordered float comparisons (false with a NaN, as numpy); signed integer ones, unsigned
    for booleans (true is 1)."""

    def payload(x: ir.Value, y: ir.Value) -> ir.Value:
        if b.is_float(x.type):
            return arith.cmpf(_FLOAT_PREDICATES[name], x, y)
        predicate = _INT_PREDICATES[name]
        if predicate != "eq":
            predicate = ("u" if ir.IntegerType(x.type).width == 1 else "s") + predicate
        return arith.cmpi(getattr(arith.CmpIPredicate, predicate), x, y)

    return payload


def _shift(shift: Callable[[ir.Value, ir.Value], ir.Value]) -> Callable[..., ir.Value]:
    """A shift that gives 0 for counts of the bit width or more (LLVM: poison), as numpy."""

    def payload(x: ir.Value, n: ir.Value) -> ir.Value:
        width = b.constant(ir.IntegerType(x.type).width, x.type)
        in_range = arith.cmpi(arith.CmpIPredicate.ult, n, width)
        return arith.select(in_range, shift(x, n), b.constant(0, x.type))

    return payload


_PAYLOADS.update({
    **{name: _comparison(name) for name in _FLOAT_PREDICATES},
    "logical_and": arith.andi,
    "logical_or": arith.ori,
    "logical_xor": arith.xori,
    "logical_not": lambda x: arith.xori(x, b.constant(1, x.type)),
    "where": arith.select,
    "isnan": lambda x: arith.cmpf(arith.CmpFPredicate.UNO, x, x),
    "shift_left": _shift(arith.shli),
    "shift_right_logical": _shift(arith.shrui),
})


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


# Elementwise ops with attributes: the payload depends on them ------------------------------------


def _unary_block(cx: LoweringContext, payload: Callable[[ir.Value], ir.Value]) -> list[ir.Value]:
    (x,) = cx.inputs
    (dest,) = cx.dests
    rank = len(b.shape_of(dest))
    return b.generic(cx.block_name(cx.op_name), [x], [dest],
                     [b.identity_map(rank), b.identity_map(rank)], [b.PARALLEL] * rank,
                     lambda v, _out: payload(v))


@lowering("leaky_relu")
def lower_leaky_relu(cx: LoweringContext) -> list[ir.Value]:
    b.require_float("graph.leaky_relu", cx.inputs[0])

    def payload(x: ir.Value) -> ir.Value:
        nonnegative = arith.cmpf(arith.CmpFPredicate.OGE, x, b.constant(0.0, x.type))
        return arith.select(nonnegative, x, arith.mulf(x, b.constant(cx.attrs["alpha"], x.type)))

    return _unary_block(cx, payload)


@lowering("thresholded_relu")
def lower_thresholded_relu(cx: LoweringContext) -> list[ir.Value]:
    b.require_float("graph.thresholded_relu", cx.inputs[0])

    def payload(x: ir.Value) -> ir.Value:
        above = arith.cmpf(arith.CmpFPredicate.OGT, x, b.constant(cx.attrs["alpha"], x.type))
        return arith.select(above, x, b.constant(0.0, x.type))

    return _unary_block(cx, payload)


@lowering("shrink")
def lower_shrink(cx: LoweringContext) -> list[ir.Value]:
    b.require_float("graph.shrink", cx.inputs[0])
    lambd, bias = cx.attrs["lambd"], cx.attrs["bias"]

    def payload(x: ir.Value) -> ir.Value:
        t = x.type
        below = arith.cmpf(arith.CmpFPredicate.OLT, x, b.constant(-lambd, t))
        above = arith.cmpf(arith.CmpFPredicate.OGT, x, b.constant(lambd, t))
        inner = arith.select(above, arith.subf(x, b.constant(bias, t)), b.constant(0.0, t))
        return arith.select(below, arith.addf(x, b.constant(bias, t)), inner)

    return _unary_block(cx, payload)


@lowering("isinf")
def lower_isinf(cx: LoweringContext) -> list[ir.Value]:
    positive, negative = cx.attrs["detect_positive"], cx.attrs["detect_negative"]

    def payload(x: ir.Value) -> ir.Value:
        found = b.constant(0, ir.IntegerType.get_signless(1))
        for detect, value in ((positive, math.inf), (negative, -math.inf)):
            if detect:
                hit = arith.cmpf(arith.CmpFPredicate.OEQ, x, b.constant(value, x.type))
                found = arith.ori(found, hit)
        return found

    return _unary_block(cx, payload)


@lowering("clip")
def lower_clip(cx: LoweringContext) -> list[ir.Value]:
    """min(max(x, lo), hi); an infinite bound is no bound. Integer tensors clip to the
    integers inside [min, max] (ceil of min, floor of max, within the type's range)."""
    lo, hi = cx.attrs["min"], cx.attrs["max"]

    def payload(x: ir.Value) -> ir.Value:
        t = x.type
        low, high = lo, hi
        if b.is_int(t):
            width = ir.IntegerType(t).width
            tmin, tmax = -(1 << (width - 1)), (1 << (width - 1)) - 1
            low = -math.inf if lo == -math.inf else max(tmin, min(tmax, math.ceil(lo)))
            high = math.inf if hi == math.inf else max(tmin, min(tmax, math.floor(hi)))
        if low != -math.inf:
            x = b.maximum(x, b.constant(low, t))
        if high != math.inf:
            x = b.minimum(x, b.constant(high, t))
        return x

    return _unary_block(cx, payload)


@lowering("gelu")
def lower_gelu(cx: LoweringContext) -> list[ir.Value]:
    b.require_float("graph.gelu", cx.inputs[0])
    tanh_form = cx.attrs["approximate"] == "tanh"

    def payload(x: ir.Value) -> ir.Value:
        t = x.type
        if tanh_form:  # 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
            cube = arith.mulf(arith.mulf(x, x), x)
            inner = arith.addf(x, arith.mulf(b.constant(0.044715, t), cube))
            g = mathd.tanh(arith.mulf(b.constant(math.sqrt(2 / math.pi), t), inner))
        else:  # 0.5 x (1 + erf(x / sqrt 2))
            g = mathd.erf(arith.mulf(x, b.constant(1 / math.sqrt(2), t)))
        half_x = arith.mulf(b.constant(0.5, t), x)
        return arith.mulf(half_x, arith.addf(b.constant(1.0, t), g))

    return _unary_block(cx, payload)


def convert(x: ir.Value, target: ir.Type) -> ir.Value:
    """Scalar conversion with numpy's ``astype`` meaning: float to int truncates toward zero,
    anything to i1 is ``!= 0``, i1 converts as unsigned (true is 1)."""
    source = x.type
    if source == target:
        return x
    if b.is_int(target) and ir.IntegerType(target).width == 1:
        if b.is_float(source):
            return arith.cmpf(arith.CmpFPredicate.UNE, x, b.constant(0.0, source))
        return arith.cmpi(arith.CmpIPredicate.ne, x, b.constant(0, source))
    bool_source = b.is_int(source) and ir.IntegerType(source).width == 1
    if b.is_float(source) and b.is_float(target):
        wider = _float_width(target) > _float_width(source)
        return arith.extf(target, x) if wider else arith.truncf(target, x)
    if b.is_float(source):
        return arith.fptosi(target, x)
    if b.is_float(target):
        return arith.uitofp(target, x) if bool_source else arith.sitofp(target, x)
    if ir.IntegerType(target).width > ir.IntegerType(source).width:
        return arith.extui(target, x) if bool_source else arith.extsi(target, x)
    return arith.trunci(target, x)


def _float_width(t: ir.Type) -> int:
    return {"f16": 16, "bf16": 16, "f32": 32, "f64": 64}[str(t)]


@lowering("astype")
def lower_astype(cx: LoweringContext) -> list[ir.Value]:
    target = b.element_type(cx.dests[0])
    source = b.element_type(cx.inputs[0])
    if {str(source), str(target)} == {"f16", "bf16"}:
        # extf/truncf need different widths; go through f32.
        return _unary_block(cx, lambda x: convert(convert(x, ir.F32Type.get()), target))
    return _unary_block(cx, lambda x: convert(x, target))
