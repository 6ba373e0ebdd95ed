"""Small builders for the linalg that lowering rules emit (generic ops, fills, scalar math).

All IR is built with the bindings' builders at the current insertion point and location.
"""

from __future__ import annotations

from typing import Callable, Sequence

from mlir import ir
from mlir.dialects import arith, linalg, math, tensor

from mlcir.dialects.loop import tag_block

PARALLEL = "parallel"
REDUCTION = "reduction"


def is_float(t: ir.Type) -> bool:
    return isinstance(t, (ir.F16Type, ir.F32Type, ir.F64Type, ir.BF16Type))


def is_int(t: ir.Type) -> bool:
    return isinstance(t, ir.IntegerType)


def element_type(v: ir.Value) -> ir.Type:
    return ir.ShapedType(v.type).element_type


def constant(value: float | int | bool, t: ir.Type) -> ir.Value:
    """A scalar ``arith.constant`` of element type ``t``."""
    if is_float(t):
        return arith.ConstantOp(t, ir.FloatAttr.get(t, float(value))).result
    return arith.ConstantOp(t, ir.IntegerAttr.get(t, int(value))).result


def lowest(t: ir.Type) -> ir.Value:
    """The identity of max: -inf for floats, the smallest integer otherwise."""
    if is_float(t):
        return constant(float("-inf"), t)
    width = ir.IntegerType(t).width
    return constant(-(1 << (width - 1)) if width > 1 else 0, t)


def highest(t: ir.Type) -> ir.Value:
    if is_float(t):
        return constant(float("inf"), t)
    width = ir.IntegerType(t).width
    return constant((1 << (width - 1)) - 1 if width > 1 else 1, t)


def identity_map(rank: int) -> ir.AffineMap:
    return ir.AffineMap.get_identity(rank)


def dims_map(num_dims: int, exprs: Sequence[int | ir.AffineExpr]) -> ir.AffineMap:
    """An affine map ``(d0..dn) -> (exprs)``; an int ``i`` means ``d_i``."""
    results = [ir.AffineDimExpr.get(e) if isinstance(e, int) else e for e in exprs]
    return ir.AffineMap.get(num_dims, 0, results)


def broadcast_map(in_shape: Sequence[int | None], out_shape: Sequence[int | None]) -> ir.AffineMap:
    """The map reading an operand of ``in_shape`` broadcast (numpy rules) to ``out_shape``."""
    rank = len(out_shape)
    offset = rank - len(in_shape)
    exprs: list[ir.AffineExpr] = []
    for axis, size in enumerate(in_shape):
        out_size = out_shape[axis + offset]
        if size == 1 and out_size != 1:
            exprs.append(ir.AffineConstantExpr.get(0))
        else:
            exprs.append(ir.AffineDimExpr.get(axis + offset))
    return ir.AffineMap.get(rank, 0, exprs)


def shape_of(v: ir.Value) -> list[int | None]:
    st = ir.ShapedType(v.type)
    return [None if st.is_dynamic_dim(i) else st.shape[i] for i in range(st.rank)]


def generic(name: ir.StringAttr, inputs: Sequence[ir.Value], outputs: Sequence[ir.Value],
            maps: Sequence[ir.AffineMap], iterators: Sequence[str],
            body: Callable[..., ir.Value | Sequence[ir.Value]]) -> list[ir.Value]:
    """A named ``linalg.generic``; ``body(*scalars)`` builds the payload and returns the
    yielded value(s)."""
    op = linalg.GenericOp_(list(inputs), list(outputs), list(maps),
                           ir.ArrayAttr.get([ir.Attribute.parse(f"#linalg.iterator_type<{it}>")
                                             for it in iterators]))
    block = op.regions[0].blocks[0]
    with ir.InsertionPoint(block):
        values = body(*block.arguments)
        if isinstance(values, ir.Value):
            values = [values]
        linalg.YieldOp(list(values))
    tag_block(op.operation, name)
    return list(op.results)


def fill(name: ir.StringAttr, value: ir.Value, dest: ir.Value) -> ir.Value:
    op = linalg.fill(value, outs=[dest])
    owner = op.owner if isinstance(op, ir.Value) else op
    tag_block(owner, name)
    return op if isinstance(op, ir.Value) else op.result


def empty_like(v: ir.Value, element: ir.Type | None = None) -> ir.Value:
    """``tensor.empty`` with ``v``'s shape (dynamic dims read with ``tensor.dim``)."""
    st = ir.ShapedType(v.type)
    return empty(shape_of(v), element or st.element_type, source=v)


def empty(shape: Sequence[int | None], element: ir.Type, source: ir.Value | None = None,
          dynamic: Sequence[ir.Value] = ()) -> ir.Value:
    """``tensor.empty``; dynamic dims are taken from ``dynamic`` in order, else read from
    ``source`` with ``tensor.dim``."""
    dyn = list(dynamic)
    if not dyn and source is not None:
        dyn = [tensor.dim(source, arith.ConstantOp(ir.IndexType.get(), i).result)
               for i, d in enumerate(shape) if d is None]
    it = iter(dyn)
    sizes = [next(it) if d is None else d for d in shape]
    return tensor.EmptyOp(sizes, element).result


# Scalar payloads ------------------------------------------------------------------------------


def add(a: ir.Value, b: ir.Value) -> ir.Value:
    return arith.addf(a, b) if is_float(a.type) else arith.addi(a, b)


def sub(a: ir.Value, b: ir.Value) -> ir.Value:
    return arith.subf(a, b) if is_float(a.type) else arith.subi(a, b)


def mul(a: ir.Value, b: ir.Value) -> ir.Value:
    return arith.mulf(a, b) if is_float(a.type) else arith.muli(a, b)


def div(a: ir.Value, b: ir.Value) -> ir.Value:
    return arith.divf(a, b) if is_float(a.type) else arith.divsi(a, b)


def maximum(a: ir.Value, b: ir.Value) -> ir.Value:
    return arith.maximumf(a, b) if is_float(a.type) else arith.maxsi(a, b)


def minimum(a: ir.Value, b: ir.Value) -> ir.Value:
    return arith.minimumf(a, b) if is_float(a.type) else arith.minsi(a, b)


def neg(a: ir.Value) -> ir.Value:
    return arith.negf(a) if is_float(a.type) else arith.subi(constant(0, a.type), a)


def require_float(op_name: str, v: ir.Value) -> None:
    from mlcir.errors import LoweringError

    t = ir.ShapedType(v.type).element_type if isinstance(v.type, ir.ShapedType) else v.type
    if not is_float(t):
        raise LoweringError(f"'{op_name}' needs a floating-point element type, got {t}")


FLOAT_UNARY = {
    "exp": math.exp,
    "log": math.log,
    "sqrt": math.sqrt,
    "rsqrt": math.rsqrt,
    "tanh": math.tanh,
    "erf": math.erf,
}
