"""matmul_packed → one ``linalg.generic`` contraction over the packed panels.

The loops are ``(batch.., panel, m, column, k)``: the last two spatial dims, which the CPU
design space tiles into its register tile, are the rows ``m`` and the panel's ``column``, so
each register tile streams one contiguous ``K x n`` panel of the right operand. The output
is initialised by a ``linalg.fill`` block named ``<name>_init``.
"""

from __future__ import annotations

from typing import Sequence

from mlir import ir
from mlir.dialects import arith, tensor

from .rule import LoweringContext, lowering
from . import builders as b


def _packed_dest_dims(inputs: Sequence[ir.Value], _attrs: dict, _result: int
                      ) -> list[ir.Value | None]:
    """The result ``[batch.., M, N/n, n]`` takes its dynamic dims (batch, rows) from the left
    operand ``[batch.., M, K]``; the packed weight's are static."""
    lhs = inputs[0]
    dims: list[ir.Value | None] = [
        tensor.dim(lhs, arith.ConstantOp(ir.IndexType.get(), axis).result) if d is None else None
        for axis, d in enumerate(b.shape_of(lhs)[:-1])]
    return dims + [None, None]


@lowering("matmul_packed", dest_dims=_packed_dest_dims)
def lower_matmul_packed(cx: LoweringContext) -> list[ir.Value]:
    lhs, packed = cx.inputs
    (dest,) = cx.dests
    init = b.fill(cx.block_name("matmul_packed_init"), b.constant(0, b.element_type(dest)), dest)
    batch = len(b.shape_of(lhs)) - 2
    panel, m, column, k = batch, batch + 1, batch + 2, batch + 3
    num = batch + 4
    batch_dims = list(range(batch))
    maps = [b.dims_map(num, batch_dims + [m, k]),
            b.dims_map(num, [panel, k, column]),
            b.dims_map(num, batch_dims + [m, panel, column])]
    iterators = [b.PARALLEL] * (batch + 3) + [b.REDUCTION]
    return b.generic(cx.block_name("matmul_packed"), [lhs, packed], [init], maps, iterators,
                     lambda x, y, acc: b.multiply_add(x, y, acc))
