"""matmul and permute_dims → linalg blocks.

2-D matmul becomes ``linalg.matmul`` (what people write and what the vectorizer knows best);
batched, broadcast and 1-D forms become a ``linalg.generic`` contraction with numpy.matmul's
indexing. The output is initialised by a ``linalg.fill`` block named ``<name>_init``.
"""

from __future__ import annotations

from typing import Sequence

from mlir import ir
from mlir.dialects import arith, linalg, tensor

from mlcir.dialects.loop import tag_block

from .rule import LoweringContext, lowering
from . import builders as b


def _dim(v: ir.Value, axis: int) -> ir.Value:
    return tensor.dim(v, arith.ConstantOp(ir.IndexType.get(), axis).result)


def _matmul_dest_dims(inputs: Sequence[ir.Value], _attrs: dict, _result: int
                      ) -> list[ir.Value | None]:
    lhs, rhs = inputs
    ls, rs = b.shape_of(lhs), b.shape_of(rhs)
    a = [1] + ls if len(ls) == 1 else ls
    r = rs + [1] if len(rs) == 1 else rs
    batch_rank = max(len(a), len(r)) - 2
    dims: list[ir.Value | None] = []
    dim = _dim
    for i in range(batch_rank):
        la, ra = i - batch_rank + len(a) - 2, i - batch_rank + len(r) - 2
        if la >= 0 and a[la] is None:
            dims.append(dim(lhs, la))
        elif ra >= 0 and r[ra] is None:
            dims.append(dim(rhs, ra))
        else:
            dims.append(None)
    if len(ls) > 1:
        dims.append(dim(lhs, len(ls) - 2) if ls[-2] is None else None)
    if len(rs) > 1:
        dims.append(dim(rhs, len(rs) - 1) if rs[-1] is None else None)
    return dims


@lowering("matmul", dest_dims=_matmul_dest_dims)
def lower_matmul(cx: LoweringContext) -> list[ir.Value]:
    lhs, rhs = cx.inputs
    (dest,) = cx.dests
    elem = b.element_type(dest)
    init = b.fill(cx.block_name("matmul_init"), b.constant(0, elem), dest)
    name = cx.block_name("matmul")
    ls, rs = b.shape_of(lhs), b.shape_of(rhs)
    if len(ls) == 2 and len(rs) == 2:
        result = linalg.matmul(lhs, rhs, outs=[init])
        tag_block(result.owner, name)
        return [result]
    # General numpy.matmul: loops (batch..., m?, n?, k).
    out_rank = len(b.shape_of(dest))
    has_m, has_n = len(ls) > 1, len(rs) > 1
    batch_rank = out_rank - int(has_m) - int(has_n)
    m = batch_rank if has_m else None
    n = batch_rank + int(has_m) if has_n else None
    k = out_rank
    num = out_rank + 1
    out_shape = b.shape_of(dest)[:batch_rank]

    def operand_map(shape: list[int | None], own_rows: int | None, own_cols: int | None) -> ir.AffineMap:
        exprs: list[ir.AffineExpr] = []
        lead = len(shape) - 2
        for axis in range(lead):
            out_axis = axis + batch_rank - lead
            if shape[axis] == 1 and out_shape[out_axis] != 1:
                exprs.append(ir.AffineConstantExpr.get(0))
            else:
                exprs.append(ir.AffineDimExpr.get(out_axis))
        for d in (own_rows, own_cols):
            exprs.append(ir.AffineDimExpr.get(d))
        return ir.AffineMap.get(num, 0, exprs)

    lhs_map = operand_map(ls, m, k) if has_m else b.dims_map(num, [k])
    rhs_map = operand_map(rs, k, n) if has_n else b.dims_map(num, [k])
    out_map = b.dims_map(num, list(range(out_rank)))
    iterators = [b.PARALLEL] * out_rank + [b.REDUCTION]
    return b.generic(name, [lhs, rhs], [init], [lhs_map, rhs_map, out_map], iterators,
                     lambda x, y, acc: b.multiply_add(x, y, acc))


def _permute_dest_dims(inputs: Sequence[ir.Value], attrs: dict, _result: int
                       ) -> list[ir.Value | None]:
    (x,) = inputs
    shape = b.shape_of(x)
    return [_dim(x, a) if shape[a] is None else None for a in attrs["axes"]]


@lowering("permute_dims", dest_dims=_permute_dest_dims)
def lower_permute_dims(cx: LoweringContext) -> list[ir.Value]:
    (x,) = cx.inputs
    (dest,) = cx.dests
    op = linalg.transpose(x, outs=[dest], permutation=list(cx.attrs["axes"]))
    tag_block(op.operation, cx.block_name("transpose"))
    return [op.results[0]]
