"""scatter_rows → a copy block and a loop over the updates.

A scatter writes where its indices say, which no ``linalg`` indexing map can express (the
output of a ``linalg.generic`` is indexed affinely by its iterators). So the kernel is the
data copied into the destination (the ``scatter_init`` block, a ``linalg.copy`` that schedules
tile and vectorize like any copy) followed by ``scf.for`` over the updates in order and over
each row's elements, reading with ``tensor.extract`` and writing with ``tensor.insert``
(bufferization makes the writes in place): O(M·K) work for M updates of K elements, whatever
the size of the data. A row number outside ``[0, R)`` is clamped into it, so a bad index never
writes outside the tensor (as ``take`` reads).
"""

from __future__ import annotations

from mlir import ir
from mlir.dialects import arith, linalg, scf, tensor

from mlcir.dialects.loop import tag_block

from . import builders as b
from .rule import LoweringContext, lowering

_COMBINE = {"add": b.add, "mul": b.mul, "max": b.maximum, "min": b.minimum}


def _size(v: ir.Value, axis: int) -> ir.Value:
    size = b.shape_of(v)[axis]
    return b.index(size) if size is not None else b.dim(v, axis)


@lowering("scatter_rows")
def lower_scatter_rows(cx: LoweringContext) -> list[ir.Value]:
    (data, rows, updates), (dest,) = cx.inputs, cx.dests
    combine = _COMBINE.get(cx.attrs["reduction"])
    copy = linalg.copy(data, outs=[dest])
    tag_block(copy.owner, cx.block_name("scatter_init"))
    last_row = arith.subi(_size(data, 0), b.index(1))
    zero, one = b.index(0), b.index(1)
    over_updates = scf.ForOp(zero, _size(updates, 0), one, [copy])
    with ir.InsertionPoint(over_updates.body):
        m = over_updates.induction_variable
        row = arith.index_cast(ir.IndexType.get(), tensor.extract(rows, [m]))
        row = arith.minsi(arith.maxsi(row, zero), last_row)
        over_elements = scf.ForOp(zero, _size(updates, 1), one,
                                  [over_updates.inner_iter_args[0]])
        with ir.InsertionPoint(over_elements.body):
            k = over_elements.induction_variable
            current = over_elements.inner_iter_args[0]
            value = tensor.extract(updates, [m, k])
            if combine is not None:
                value = combine(tensor.extract(current, [row, k]), value)
            scf.YieldOp([tensor.insert(value, current, [row, k])])
        scf.YieldOp(list(over_elements.results))
    return [over_updates.results[0]]
