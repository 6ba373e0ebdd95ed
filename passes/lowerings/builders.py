"""Small builders for the linalg that lowering rules emit (generic ops, fills, scalar math).

All IR is built with the bindings' builders at the current insertion point and location.
"""

from __future__ import annotations

from typing import Callable, Sequence

import numpy as np
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


CONTRACT = "#arith.fastmath<contract>"


def multiply_add(x: ir.Value, y: ir.Value, acc: ir.Value) -> ir.Value:
    """``acc + x * y``; for floats marked ``contract``, so LLVM fuses the pair into one FMA
    where vectorization leaves them elementwise (a depthwise convolution's tile: without it,
    a vmulps and a vaddps per tap)."""
    if not is_float(x.type):
        return arith.addi(acc, arith.muli(x, y))
    flags = ir.Attribute.parse(CONTRACT)
    return arith.addf(acc, arith.mulf(x, y, fastmath=flags), fastmath=flags)


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


# Index values, views and slices ---------------------------------------------------------------


def index(value: int) -> ir.Value:
    return arith.ConstantOp(ir.IndexType.get(), value).result


def dim(v: ir.Value, axis: int) -> ir.Value:
    """``tensor.dim``: the size of ``v`` along ``axis`` (an index)."""
    return tensor.dim(v, index(axis))


def size_values(shape: Sequence[int | None], source: ir.Value,
                axes: Sequence[int] | None = None) -> list[ir.Value]:
    """The dynamic sizes of ``shape`` read from ``source`` (its dim ``axes[i]`` for result dim
    ``i``; the same position by default), for ``tensor.empty``/``expand_shape``."""
    axes = list(range(len(shape))) if axes is None else list(axes)
    return [dim(source, axes[i]) for i, d in enumerate(shape) if d is None]


def _reassociation(groups: Sequence[Sequence[int]]) -> ir.ArrayAttr:
    i64 = ir.IntegerType.get_signless(64)
    return ir.ArrayAttr.get([ir.ArrayAttr.get([ir.IntegerAttr.get(i64, d) for d in g])
                             for g in groups])


def tensor_type(shape: Sequence[int | None], element: ir.Type) -> ir.RankedTensorType:
    dyn = ir.ShapedType.get_dynamic_size()
    return ir.RankedTensorType.get([dyn if d is None else d for d in shape], element)


def collapse(v: ir.Value, groups: Sequence[Sequence[int]]) -> ir.Value:
    """``tensor.collapse_shape`` of ``v`` merging each group of dims (a view)."""
    shape = shape_of(v)
    out: list[int | None] = []
    for g in groups:
        sizes = [shape[d] for d in g]
        out.append(None if None in sizes else int(np.prod(sizes, dtype=np.int64)))
    return tensor.collapse_shape(tensor_type(out, element_type(v)), v, _reassociation(groups))


def expand(v: ir.Value, shape: Sequence[int | None], groups: Sequence[Sequence[int]],
           dynamic: Sequence[ir.Value] = ()) -> ir.Value:
    """``tensor.expand_shape`` of ``v`` to ``shape`` (a view); ``dynamic`` gives the sizes of
    its dynamic dims in order, else each is read from ``v``: the one dynamic dim of its group,
    ``v``'s dim over the group's static ones (a dynamic batch kept through a reshape)."""
    if not dynamic and None in shape:
        dynamic = _expanded_sizes(v, shape, groups)
    dyn = iter(dynamic)
    values = [next(dyn) for d in shape if d is None]
    static = [ir.ShapedType.get_dynamic_size() if d is None else d for d in shape]
    return tensor.expand_shape(tensor_type(shape, element_type(v)), v, _reassociation(groups),
                               values, static)


def _expanded_sizes(v: ir.Value, shape: Sequence[int | None],
                    groups: Sequence[Sequence[int]]) -> list[ir.Value]:
    sizes: list[ir.Value] = []
    for axis, group in enumerate(groups):
        dynamic = [d for d in group if shape[d] is None]
        if not dynamic:
            continue
        if len(dynamic) > 1:
            raise ValueError(f"expand: group {list(group)} of {list(shape)} has several "
                             "dynamic dims; give their sizes")
        static = int(np.prod([shape[d] for d in group if shape[d] is not None], dtype=np.int64))
        size = dim(v, axis)
        sizes.append(size if static == 1 else arith.divui(size, index(static)))
    return sizes


def extract_slice(v: ir.Value, offsets: Sequence[int | ir.Value],
                  sizes: Sequence[int | ir.Value], strides: Sequence[int]) -> ir.Value:
    """``tensor.extract_slice`` (a view); offsets/sizes may be index values, a size None is
    ``v``'s whole dim (a dynamic batch)."""
    sizes = [dim(v, i) if s is None else s for i, s in enumerate(sizes)]
    dyn_off = ir.ShapedType.get_dynamic_stride_or_offset()
    dyn_size = ir.ShapedType.get_dynamic_size()
    out_shape = [s if isinstance(s, int) else None for s in sizes]
    dynamic_offsets = [o for o in offsets if not isinstance(o, int)]
    dynamic_sizes = [s for s in sizes if not isinstance(s, int)]
    return tensor.extract_slice(
        tensor_type(out_shape, element_type(v)), v, dynamic_offsets, dynamic_sizes, [],
        [o if isinstance(o, int) else dyn_off for o in offsets],
        [s if isinstance(s, int) else dyn_size for s in sizes], list(strides))


def insert_slice(source: ir.Value, dest: ir.Value, offsets: Sequence[int],
                 sizes: Sequence[int | ir.Value]) -> ir.Value:
    """``tensor.insert_slice`` of ``source`` into ``dest`` at static offsets, unit strides."""
    dyn_size = ir.ShapedType.get_dynamic_size()
    dynamic_sizes = [s for s in sizes if not isinstance(s, int)]
    return tensor.insert_slice(source, dest, [], dynamic_sizes, [], list(offsets),
                               [s if isinstance(s, int) else dyn_size for s in sizes],
                               [1] * len(offsets))


def count_scalar(count: ir.Value | int, t: ir.Type) -> ir.Value:
    """An element count (an int, or an index value) as a scalar of element type ``t``, the
    divisor of a mean."""
    if isinstance(count, int):
        return constant(count, t)
    as_i64 = arith.index_cast(ir.IntegerType.get_signless(64), count)
    if is_float(t):
        return arith.sitofp(t, as_i64)
    return as_i64 if ir.IntegerType(t).width == 64 else arith.trunci(t, as_i64)


def element_count(v: ir.Value, axes: Sequence[int]) -> ir.Value | int:
    """The number of elements of ``v`` over ``axes``: an int when static, else an index."""
    shape = shape_of(v)
    static = int(np.prod([shape[a] for a in axes if shape[a] is not None], dtype=np.int64))
    dynamic = [dim(v, a) for a in axes if shape[a] is None]
    if not dynamic:
        return static
    total = index(static)
    for d in dynamic:
        total = arith.muli(total, d)
    return total
