"""pad (pads known only at run time) → one gather block.

The destination is sized from the pads' values (``dim + begin + end`` per axis, read with
``tensor.extract`` where the op is called); the ``pad`` block is a ``linalg.generic`` over it
whose body maps each coordinate back into ``x`` and reads it with ``tensor.extract`` (the
gather form of ``take``). As onnxruntime does, negative pads crop first: along each axis the
kept elements are ``[max(-begin, 0), n - max(-end, 0))``, and a coordinate ``i`` is
``i - max(begin, 0)`` in them, clamped (edge, and constant before it picks the value outside),
mirrored (reflect) or wrapped (wrap). (Pads known at import are not
this op: the frontend writes a ``take`` per padded axis with constant indices.)
"""

from __future__ import annotations

from typing import Sequence

from mlir import ir
from mlir.dialects import arith, linalg, tensor

from . import builders as b
from .rule import LoweringContext, lowering


def _pad_value(pads: ir.Value, position: int) -> ir.Value:
    return arith.index_cast(ir.IndexType.get(), tensor.extract(pads, [b.index(position)]))


def _size(x: ir.Value, axis: int) -> ir.Value:
    size = b.shape_of(x)[axis]
    return b.index(size) if size is not None else b.dim(x, axis)


def _pad_dest_dims(inputs: Sequence[ir.Value], _attrs: dict, _result: int
                   ) -> list[ir.Value | None]:
    x, pads, _ = inputs
    rank = len(b.shape_of(x))
    return [arith.addi(arith.addi(_size(x, a), _pad_value(pads, a)), _pad_value(pads, a + rank))
            for a in range(rank)]


def _nonnegative_remainder(value: ir.Value, divisor: ir.Value) -> ir.Value:
    r = arith.remsi(value, divisor)
    return arith.select(arith.cmpi(arith.CmpIPredicate.slt, r, b.index(0)),
                        arith.addi(r, divisor), r)


@lowering("pad", dest_dims=_pad_dest_dims)
def lower_pad(cx: LoweringContext) -> list[ir.Value]:
    (x, pads, value), (dest,) = cx.inputs, cx.dests
    mode = cx.attrs["mode"]
    rank = len(b.shape_of(x))
    zero, one = b.index(0), b.index(1)
    # per axis: the first kept element, how many are kept, the padding before them
    starts, kept, before = [], [], []
    for axis in range(rank):
        begin, end = _pad_value(pads, axis), _pad_value(pads, axis + rank)
        start = arith.maxsi(arith.subi(zero, begin), zero)
        starts.append(start)
        kept.append(arith.subi(arith.subi(_size(x, axis), start),
                               arith.maxsi(arith.subi(zero, end), zero)))
        before.append(arith.maxsi(begin, zero))
    fill = tensor.extract(value, [])

    def gather(_: ir.Value) -> ir.Value:
        coords, inside = [], None
        for axis in range(rank):
            n = kept[axis]
            i = arith.subi(linalg.IndexOp(axis).result, before[axis])
            last = arith.subi(n, one)
            if mode == "wrap":
                i = _nonnegative_remainder(i, n)
            elif mode == "reflect":
                period = arith.maxsi(arith.muli(last, b.index(2)), one)
                folded = _nonnegative_remainder(i, period)
                i = arith.select(arith.cmpi(arith.CmpIPredicate.slt, folded, n), folded,
                                 arith.subi(period, folded))
            else:
                if mode == "constant":
                    ok = arith.andi(arith.cmpi(arith.CmpIPredicate.sge, i, zero),
                                    arith.cmpi(arith.CmpIPredicate.slt, i, n))
                    inside = ok if inside is None else arith.andi(inside, ok)
                i = arith.minsi(arith.maxsi(i, zero), last)
            coords.append(arith.addi(starts[axis], i))
        element = tensor.extract(x, coords)
        return element if inside is None else arith.select(inside, element, fill)

    return b.generic(cx.block_name("pad"), [], [dest], [b.identity_map(rank)],
                     [b.PARALLEL] * rank, gather)
