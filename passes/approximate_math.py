"""``mlcir-approximate-math``: f32 ``math.exp`` and ``math.erf`` (scalar or vector) become
inline arithmetic.

LLVM lowers both to calls of libm's ``expf``/``erff``, one element at a time: a vector exp is
scalarised into calls and a loop around a scalar one is not vectorized. Softmax spent nearly
all its time there, a BERT layer's GELU (``erf``) likewise
(docs/measurements/default-schedules.md#inline-exp-and-erf). Inline, each is a few FMAs
that vectorize like any other arithmetic.

``exp``: The approximation is Cephes' ``expf`` (the one
upstream's ``populateMathPolynomialApproximationPatterns`` uses, which is not reachable from
Python): ``exp(x) = 2^n * p(r)`` with ``n = round(x / ln 2)``, ``r = x - n ln 2`` in two
parts, and a degree-7 polynomial ``p``; 2^n is built in the exponent bits. Inputs are
clamped to [-87.3, 88.3], where ``2^n`` stays a normal float: exp of smaller inputs is
~1e-38 instead of 0 (relative error within 2 ulp elsewhere); NaN stays NaN.

``erf``: the odd/even rational approximation of Eigen and XLA on ``x`` clamped to [-4, 4]
(erf is 1 - 1.5e-8 there), absolute error below 5e-7 in f32.
"""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir
from mlir.dialects import arith
from mlir.dialects import math as mathd

from .registry import ModulePass, register_pass

LOW, HIGH = -87.3, 88.3
LOG2E = 1.44269504088896341
LN2_HI, LN2_LO = 0.693359375, -2.12194440e-4
# Cephes expf: exp(r) ~ 1 + r + r^2 * (P0 r^5 + ... + P5).
POLY = (1.9875691500e-4, 1.3981999507e-3, 8.3334519073e-3, 4.1665795894e-2,
        1.6666665459e-1, 5.0000001201e-1)
# erf(x) ~ x * N(x^2) / D(x^2), coefficients from x^0 up (Eigen's generic_fast_erf_float).
ERF_NUMERATOR = (-1.60960333262415e-02, -2.95459980854025e-03, -7.34990630326855e-04,
                 -5.69250639462346e-05, -2.10102402082508e-06, 2.77068142495902e-08,
                 -2.72614225801306e-10)
ERF_DENOMINATOR = (-1.42647390514189e-02, -7.37332916720468e-03, -1.68282697438203e-03,
                   -2.13374055278905e-04, -1.45660718464996e-05)


def _splat(value: float | int, like: ir.Type, element: ir.Type) -> ir.Value:
    """A constant ``value`` of ``element`` type, or a vector of it shaped as ``like``."""
    if isinstance(like, ir.VectorType):
        shape = ir.VectorType(like).shape
        kind = ir.VectorType.get(shape, element)
        attr = (ir.FloatAttr.get(element, value) if isinstance(element, ir.F32Type)
                else ir.IntegerAttr.get(element, value))
        return arith.ConstantOp(kind, ir.DenseElementsAttr.get_splat(kind, attr)).result
    return arith.ConstantOp(element, value).result


def _with_element(like: ir.Type, element: ir.Type) -> ir.Type:
    return ir.VectorType.get(ir.VectorType(like).shape, element) \
        if isinstance(like, ir.VectorType) else element


def _f32(ty: ir.Type) -> bool:
    element = ir.VectorType(ty).element_type if isinstance(ty, ir.VectorType) else ty
    return isinstance(element, ir.F32Type)


def expand_exp(x: ir.Value) -> ir.Value:
    """``exp(x)`` of f32 ``x`` (or a vector of f32) as inline arithmetic at the insertion
    point (module docstring)."""
    ty = x.type
    f32, i32 = ir.F32Type.get(), ir.IntegerType.get_signless(32)

    def c(value: float) -> ir.Value:
        return _splat(value, ty, f32)

    x = arith.minimumf(arith.maximumf(x, c(LOW)), c(HIGH))
    n = mathd.floor(mathd.fma(x, c(LOG2E), c(0.5)))
    r = mathd.fma(n, c(-LN2_HI), x)
    r = mathd.fma(n, c(-LN2_LO), r)
    p = c(POLY[0])
    for coefficient in POLY[1:]:
        p = mathd.fma(p, r, c(coefficient))
    r2 = arith.mulf(r, r)
    y = arith.addf(mathd.fma(p, r2, r), c(1.0))
    exponent = arith.addi(arith.fptosi(_with_element(ty, i32), n), _splat(127, ty, i32))
    scale = arith.bitcast(ty, arith.shli(exponent, _splat(23, ty, i32)))
    return arith.mulf(y, scale)


def expand_erf(x: ir.Value) -> ir.Value:
    """``erf(x)`` of f32 ``x`` (or a vector of f32) as inline arithmetic at the insertion
    point (module docstring)."""
    ty = x.type

    def c(value: float) -> ir.Value:
        return _splat(value, ty, ir.F32Type.get())

    x = arith.minimumf(arith.maximumf(x, c(-4.0)), c(4.0))
    x2 = arith.mulf(x, x)
    p = c(ERF_NUMERATOR[-1])
    for coefficient in reversed(ERF_NUMERATOR[:-1]):
        p = mathd.fma(p, x2, c(coefficient))
    q = c(ERF_DENOMINATOR[-1])
    for coefficient in reversed(ERF_DENOMINATOR[:-1]):
        q = mathd.fma(q, x2, c(coefficient))
    return arith.divf(arith.mulf(p, x), q)


EXPANSIONS = {"math.exp": expand_exp, "math.erf": expand_erf}


def approximate_math(module: ir.Operation) -> int:
    """Replace every f32 ``math.exp`` and ``math.erf`` in ``module``; returns how many."""
    found: list[ir.Operation] = []

    def visit(op: ir.Operation) -> ir.WalkResult:
        if op.name in EXPANSIONS and _f32(op.results[0].type):
            found.append(op)
        return ir.WalkResult.ADVANCE

    module.walk(visit)
    for op in found:
        with ir.InsertionPoint(op), op.location:
            value = EXPANSIONS[op.name](op.operands[0])
        op.results[0].replace_all_uses_with(value)
        op.erase()
    return len(found)


@register_pass
@dataclass
class ApproximateMath(ModulePass):
    name = "mlcir-approximate-math"
    summary = "Replace f32 math.exp and math.erf by inline arithmetic that vectorizes"

    def run(self, module: ir.Operation) -> None:
        approximate_math(module)
