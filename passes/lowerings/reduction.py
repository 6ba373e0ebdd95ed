"""Reductions, softmax and layer_norm → ``linalg.fill`` + ``linalg.generic`` blocks.

A reduction is a fill of its accumulator (``<block>_init``) and a generic whose reduced loops
are ``reduction`` iterators, exactly the form the schedule's ``decompose_reduction`` and the
default design space expect (see ``mlcir/testing/kernels.py:softmax``). With ``keepdims`` the
output map writes the kept size-1 dims at index 0 (``(i, j, k) -> (i, 0, k)``), so every block
writes the kernel's destination itself: a reshaped view of it would be returned as another
buffer, which bufferization then copies (and cannot do at all for a dynamic shape). Division by
an element count (mean, layer_norm) reads the count as a constant, or from ``tensor.dim`` when
the reduced dims are dynamic.

Float reductions may reassociate (``fastmath<reassoc,nsz>`` on the combining ops): LLVM then
vectorizes an unscheduled reduction along the contiguous axis, which otherwise stays a
scalar chain, several times slower (docs/measurements/default-schedules.md#kinds-left-unscheduled).
"""

from __future__ import annotations

from typing import Callable, Sequence

from mlir import ir
from mlir.dialects import arith
from mlir.dialects import math as mathd

from .rule import LoweringContext, lowering
from . import builders as b

Combine = Callable[[ir.Value, ir.Value], ir.Value]
REASSOCIATE = "#arith.fastmath<reassoc,nsz>"
FLOAT_COMBINING = ("arith.addf", "arith.mulf", "arith.maximumf", "arith.minimumf")


def _names(cx: LoweringContext, base: str) -> tuple[ir.StringAttr, ir.StringAttr]:
    """A block name and the name of its init fill (``<name>_init``)."""
    name = cx.block_name(base)
    return name, cx.block_name(f"{name.value}_init")


def reduce_into(cx: LoweringContext, base: str, x: ir.Value, axes: Sequence[int], out: ir.Value,
                identity: ir.Value, combine: Combine, keepdims: int = 0) -> ir.Value:
    """``out[kept dims] = combine(... combine(identity, x[...]) ...)`` over ``axes`` of ``x``:
    a fill block ``<base>_init`` and a reduction block ``<base>``. With ``keepdims``, ``out``
    has x's rank and size 1 along ``axes``."""
    name, init_name = _names(cx, base)
    out_rank = len(b.shape_of(x))
    x, axes = _collapse_trailing(x, axes)
    rank = len(b.shape_of(x))
    if keepdims:
        zero = ir.AffineConstantExpr.get(0)
        out_map = b.dims_map(rank, [d if d < rank and d not in axes else zero
                                    for d in range(out_rank)])
    else:
        out_map = b.dims_map(rank, [d for d in range(rank) if d not in axes])
    init = b.fill(init_name, identity, out)
    iterators = [b.REDUCTION if d in axes else b.PARALLEL for d in range(rank)]
    result = b.generic(name, [x], [init], [b.identity_map(rank), out_map], iterators,
                       lambda v, acc: combine(acc, v))[0]
    for op in result.owner.regions[0].blocks[0].operations:
        if op.operation.name in FLOAT_COMBINING:
            op.attributes["fastmath"] = ir.Attribute.parse(REASSOCIATE)
    return result


def _collapse_trailing(x: ir.Value, axes: Sequence[int]) -> tuple[ir.Value, list[int]]:
    """Several reduced axes that are ``x``'s innermost merged into one (a view): a global
    average pool's 7x7 window becomes one contiguous row of 49, which the default schedule
    reads as vector rows (``targets/cpu/defaults.py``, ``_short_rows``)."""
    rank, axes = len(b.shape_of(x)), sorted(axes)
    first = rank - len(axes)
    if len(axes) < 2 or axes != list(range(first, rank)):
        return x, axes
    return b.collapse(x, [[d] for d in range(first)] + [axes]), [first]


def reduced_empty(x: ir.Value, axes: Sequence[int]) -> ir.Value:
    """A ``tensor.empty`` of ``x``'s shape without ``axes`` (dynamic dims read from ``x``)."""
    shape = b.shape_of(x)
    kept = [d for d in range(len(shape)) if d not in axes]
    out_shape = [shape[d] for d in kept]
    return b.empty(out_shape, b.element_type(x), dynamic=b.size_values(out_shape, x, kept))


_COMBINE: dict[str, tuple[Callable[[ir.Type], ir.Value], Combine]] = {
    "sum": (lambda t: b.constant(0, t), b.add),
    "max": (b.lowest, b.maximum),
    "min": (b.highest, b.minimum),
    "prod": (lambda t: b.constant(1, t), b.mul),
}


def _reduction_dest_dims(inputs: Sequence[ir.Value], attrs: dict, _result: int
                         ) -> list[ir.Value | None]:
    (x,) = inputs
    dims: list[ir.Value | None] = []
    for axis, size in enumerate(b.shape_of(x)):
        if axis in attrs["axes"]:
            if attrs["keepdims"]:
                dims.append(None)
        else:
            dims.append(b.dim(x, axis) if size is None else None)
    return dims


@lowering("sum", "max", "min", "prod", dest_dims=_reduction_dest_dims)
def lower_reduction(cx: LoweringContext) -> list[ir.Value]:
    (x,), (dest,) = cx.inputs, cx.dests
    make_identity, combine = _COMBINE[cx.op_name]
    return [reduce_into(cx, cx.op_name, x, cx.attrs["axes"], dest,
                        make_identity(b.element_type(x)), combine, cx.attrs["keepdims"])]


@lowering("mean", dest_dims=_reduction_dest_dims)
def lower_mean(cx: LoweringContext) -> list[ir.Value]:
    """A sum block into a temporary, then ``mean`` divides by the element count (integers:
    with truncation, like the sum's ``arith.divsi``)."""
    (x,), (dest,) = cx.inputs, cx.dests
    axes = cx.attrs["axes"]
    elem = b.element_type(x)
    total = reduce_into(cx, "sum", x, axes, reduced_empty(x, axes), b.constant(0, elem), b.add)
    count = b.count_scalar(b.element_count(x, axes), elem)
    rank = len(b.shape_of(dest))
    # With keepdims the reduced dims of dest have size 1: read the sums without them.
    kept = [d for d in range(rank) if not (cx.attrs["keepdims"] and d in axes)]
    return b.generic(cx.block_name("mean"), [total], [dest],
                     [b.dims_map(rank, kept), b.identity_map(rank)], [b.PARALLEL] * rank,
                     lambda s, _: b.div(s, count))


@lowering("softmax", "log_softmax")
def lower_softmax(cx: LoweringContext) -> list[ir.Value]:
    """Four blocks (and two fills): ``max`` reduction, ``exp`` of x - max, ``sum`` reduction,
    then ``softmax`` = exp / sum, or ``log_softmax`` = x - max - log(sum)."""
    (x,), (dest,) = cx.inputs, cx.dests
    b.require_float(f"graph.{cx.op_name}", x)
    axis = cx.attrs["axis"]
    elem = b.element_type(x)
    rank = len(b.shape_of(x))
    ident = b.identity_map(rank)
    row = b.dims_map(rank, [d for d in range(rank) if d != axis])
    parallel = [b.PARALLEL] * rank
    largest = reduce_into(cx, "max", x, [axis], reduced_empty(x, [axis]), b.lowest(elem),
                          b.maximum)
    exps = b.generic(cx.block_name("exp"), [x, largest], [b.empty_like(x)], [ident, row, ident],
                     parallel, lambda v, m, _: mathd.exp(arith.subf(v, m)))[0]
    total = reduce_into(cx, "sum", exps, [axis], reduced_empty(x, [axis]), b.constant(0, elem),
                        b.add)
    if cx.op_name == "log_softmax":
        return b.generic(cx.block_name("log_softmax"), [x, largest, total], [dest],
                         [ident, row, row, ident], parallel,
                         lambda v, m, s, _: arith.subf(arith.subf(v, m), mathd.log(s)))
    return b.generic(cx.block_name("softmax"), [exps, total], [dest], [ident, row, ident],
                     parallel, lambda e, s, _: arith.divf(e, s))


@lowering("layer_norm")
def lower_layer_norm(cx: LoweringContext) -> list[ir.Value]:
    """``mean`` (a sum reduction), ``center`` (x - sum / n), ``var`` (sum of squares of the
    centered values), then ``layer_norm`` = centered * rsqrt(var / n + epsilon) * gamma + beta.
    The two-pass variance keeps float32 accurate for large means."""
    (x, gamma, beta), (dest,) = cx.inputs, cx.dests
    b.require_float("graph.layer_norm", x)
    axes = list(cx.attrs["axes"])
    elem = b.element_type(x)
    rank = len(b.shape_of(x))
    outer = [d for d in range(rank) if d not in axes]
    ident, row, inner = b.identity_map(rank), b.dims_map(rank, outer), b.dims_map(rank, axes)
    parallel = [b.PARALLEL] * rank
    count = b.count_scalar(b.element_count(x, axes), elem)
    epsilon = b.constant(cx.attrs["epsilon"], elem)

    total = reduce_into(cx, "mean", x, axes, reduced_empty(x, axes), b.constant(0, elem), b.add)
    centered = b.generic(cx.block_name("center"), [x, total], [b.empty_like(x)],
                         [ident, row, ident], parallel,
                         lambda v, s, _: arith.subf(v, arith.divf(s, count)))[0]
    squares = reduce_into(cx, "var", centered, axes, reduced_empty(x, axes), b.constant(0, elem),
                          lambda acc, v: arith.addf(acc, arith.mulf(v, v)))

    def normalise(c: ir.Value, v: ir.Value, g: ir.Value, s: ir.Value, _: ir.Value) -> ir.Value:
        scale = mathd.rsqrt(arith.addf(arith.divf(v, count), epsilon))
        return arith.addf(arith.mulf(arith.mulf(c, scale), g), s)

    return b.generic(cx.block_name("layer_norm"), [centered, squares, gamma, beta], [dest],
                     [ident, row, inner, inner, ident], parallel, normalise)
