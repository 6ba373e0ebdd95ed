"""``winograd_input`` and ``winograd_output``: the transforms of a Winograd F(4x4, 3x3)
convolution (``graph-winograd``; the matrices and storage order in dialects/winograd.py).

Both are written here as vector code over the channel block, not as linalg blocks:

- one 6x6 tile of ``c`` channels (NCHW<c>c: 6 rows of 6 contiguous ``c``-vectors) is one
  ``vector.transfer_read``; a transform is its matrix applied to the rows (one ``c``-vector
  add, subtract or FMA per nonzero coefficient, none for 0 and no multiply for +-1),
  a transpose of the two tile axes (renaming registers: the ``c`` lanes do not move) and the
  matrix again; the result is one ``vector.transfer_write``;
- the loops are an ``scf.forall`` over tile rows (and images; for the output transform also
  channel blocks), run on the OpenMP threads, and ``scf.for`` loops along the tile row (and,
  for the input transform, over the channel blocks).

Upstream's ``linalg.winograd_*_transform`` ops decompose into a small matmul per tile and per
channel (``linalg::decomposeWinograd*``), scalar code that this layout does not need; a
``linalg.generic`` cannot yield the 36 values a tile makes into one destination without 35
copies (one-shot bufferization gives every extra result its own buffer). These kernels have no
compute block to schedule: the default schedule and the tuner leave them as they are, and the
36 matmuls between them are ordinary batched ``graph.matmul`` kernels.
"""

from __future__ import annotations

from typing import Sequence

from mlir import ir
from mlir.dialects import arith, scf, tensor, vector

from mlcir.dialects import winograd as wg

from . import builders as b
from .nn import pad, spatial_dims_static
from .rule import LoweringContext, lowering


def _vector(shape: Sequence[int], element: ir.Type) -> ir.VectorType:
    return ir.VectorType.get(list(shape), element)


def _splat(value: float, t: ir.VectorType) -> ir.Value:
    return arith.ConstantOp(t, ir.DenseElementsAttr.get_splat(
        t, ir.FloatAttr.get(t.element_type, value))).result


def _rows(mat: Sequence[Sequence[object]], rows: list[ir.Value]) -> list[ir.Value]:
    """``mat`` applied to ``rows`` (vectors of one type): ``sum_i mat[r][i] * rows[i]`` per row
    ``r`` of ``mat``."""
    t = ir.VectorType(rows[0].type)
    return [wg.combine(coefficients, rows, arith.addf, arith.subf,
                       lambda v, c: arith.mulf(v, _splat(c, t)),
                       lambda v, c, partial: vector.fma(v, _splat(c, t), partial))
            for coefficients in mat]


def _stack(rows: list[ir.Value]) -> ir.Value:
    row = ir.VectorType(rows[0].type)
    t = _vector([len(rows), *row.shape], row.element_type)
    stacked = _splat(0.0, t)
    for i, r in enumerate(rows):
        stacked = vector.insert(r, stacked, [], [i])
    return stacked


def transform_tile(mat: Sequence[Sequence[object]], tile: ir.Value) -> ir.Value:
    """``(mat X mat^T)^T`` of the tile ``X`` (``vector<a x a x c>``), as
    :func:`mlcir.dialects.winograd.transform_2d` computes it: ``vector<m x m x c>``."""
    size = ir.VectorType(tile.type).shape[0]
    once = _stack(_rows(mat, [vector.extract(tile, [], [i]) for i in range(size)]))  # [m, a, c]
    t = ir.VectorType(once.type)
    swapped = vector.transpose(_vector([t.shape[1], t.shape[0], t.shape[2]], t.element_type),
                               once, [1, 0, 2])                                        # [a, m, c]
    return _stack(_rows(mat, [vector.extract(swapped, [], [j]) for j in range(t.shape[1])]))


def _map(rank: int, dims: Sequence[int]) -> ir.AffineMapAttr:
    return ir.AffineMapAttr.get(ir.AffineMap.get(rank, 0, [ir.AffineDimExpr.get(d) for d in dims]))


def _in_bounds(rank: int) -> ir.ArrayAttr:
    return ir.ArrayAttr.get([ir.BoolAttr.get(True)] * rank)


def _read(source: ir.Value, indices: list[ir.Value], shape: Sequence[int],
          dims: Sequence[int]) -> ir.Value:
    """A ``vector<shape>`` read of ``source``'s ``dims`` at ``indices`` (every index in
    bounds)."""
    element = b.element_type(source)
    rank = len(b.shape_of(source))
    return vector.TransferReadOp(_vector(shape, element), source, indices, _map(rank, dims),
                                 b.constant(0.0, element), _in_bounds(len(shape))).result


def _write(value: ir.Value, dest: ir.Value, indices: list[ir.Value],
           dims: Sequence[int]) -> ir.Value:
    rank = len(b.shape_of(dest))
    return vector.TransferWriteOp(dest.type, value, dest, indices, _map(rank, dims),
                                  _in_bounds(len(dims))).result


def _tiles(dest: ir.Value, outer: Sequence[int], offsets, sizes: Sequence[int],
           inner: Sequence[int], step) -> ir.Value:
    """``dest`` with every ``(outer..., inner...)`` step written: an ``scf.forall`` over the
    ``outer`` ranges whose iteration owns the slice of ``dest`` at ``offsets(ivs)`` of
    ``sizes``, and nested ``scf.for`` loops over the ``inner`` ranges that update that slice
    with ``step(ivs, inner_ivs, slice)``."""
    forall = scf.ForallOp([0] * len(outer), list(outer), [1] * len(outer), shared_outs=[dest])
    body = forall.regions[0].blocks[0]
    ivs, shared = list(body.arguments)[:len(outer)], body.arguments[len(outer)]
    rank = len(sizes)
    with ir.InsertionPoint(body):
        at = offsets(ivs)
        static = [o if isinstance(o, int) else ir.ShapedType.get_dynamic_stride_or_offset()
                  for o in at]
        dynamic = [o for o in at if not isinstance(o, int)]
        part = b.extract_slice(shared, at, sizes, [1] * rank)
        written = _nest(part, list(inner), [], lambda js, current: step(ivs, js, current))
        terminator = scf.InParallelOp()
        with ir.InsertionPoint(terminator.regions[0].blocks[0]):
            tensor.ParallelInsertSliceOp(written, shared, dynamic, [], [], static,
                                         list(sizes), [1] * rank)
    return forall.results[0]


def _nest(current: ir.Value, counts: list[int], ivs: list[ir.Value], step) -> ir.Value:
    """``current`` updated by ``step(ivs, current)`` in ``scf.for`` loops over ``counts``."""
    if not counts:
        return step(ivs, current)
    loop = scf.ForOp(b.index(0), b.index(counts[0]), b.index(1), [current])
    with ir.InsertionPoint(loop.body):
        scf.YieldOp([_nest(loop.inner_iter_args[0], counts[1:],
                           ivs + [loop.induction_variable], step)])
    return loop.results[0]


def _scaled(i: ir.Value, factor: int) -> ir.Value:
    return arith.muli(i, b.index(factor))


@lowering("winograd_input")
def lower_winograd_input(cx: LoweringContext) -> list[ir.Value]:
    (x,), (dest,) = cx.inputs, cx.dests
    spatial_dims_static("graph.winograd_input", x)
    x = pad(cx, x, cx.attrs["padding"], b.constant(0.0, b.element_type(x)))
    n, cb, hp, wp, c = b.shape_of(x)
    th, tw = (hp - 2) // wg.TILE, (wp - 2) // wg.TILE
    a = wg.ALPHA
    view = b.expand(dest, [a, a, n, th, tw, cb * c], [[0, 1], [2, 3, 4], [5]])

    def step(ivs: list[ir.Value], js: list[ir.Value], part: ir.Value) -> ir.Value:
        (i_n, i_th), (j, i_cb) = ivs, js
        tile = _read(x, [i_n, i_cb, _scaled(i_th, wg.TILE), _scaled(j, wg.TILE), b.index(0)],
                     [a, a, c], [2, 3, 4])
        zero = b.index(0)
        return _write(transform_tile(wg.BT, tile), part,
                      [zero, zero, zero, zero, j, _scaled(i_cb, c)], [0, 1, 5])

    # Each iteration writes a tile's 36 rows for every channel block in turn: whole rows of
    # the 36 outputs, not a 16-channel part of each (measured faster:
    # docs/measurements/layouts.md#notes-moved-from-the-package-code).
    done = _tiles(view, [n, th], lambda ivs: [0, 0, ivs[0], ivs[1], 0, 0],
                  [a, a, 1, 1, tw, cb * c], [tw, cb], step)
    return [b.collapse(done, [[0, 1], [2, 3, 4], [5]])]


@lowering("winograd_output")
def lower_winograd_output(cx: LoweringContext) -> list[ir.Value]:
    (m,), (dest,) = cx.inputs, cx.dests
    th, tw = cx.attrs["tiles"]
    c = cx.attrs["block"]
    n, kb, _, _, _ = b.shape_of(dest)
    a = wg.ALPHA
    products = b.expand(m, [a, a, n, th, tw, kb * c], [[0, 1], [2, 3, 4], [5]])

    def step(ivs: list[ir.Value], js: list[ir.Value], part: ir.Value) -> ir.Value:
        (i_n, i_kb, i_th), (j,) = ivs, js
        tile = _read(products, [b.index(0), b.index(0), i_n, i_th, j, _scaled(i_kb, c)],
                     [a, a, c], [0, 1, 5])
        zero = b.index(0)
        return _write(transform_tile(wg.AT, tile), part,
                      [zero, zero, zero, _scaled(j, wg.TILE), zero], [2, 3, 4])

    return [_tiles(dest, [n, kb, th],
                   lambda ivs: [ivs[0], ivs[1], _scaled(ivs[2], wg.TILE), 0, 0],
                   [1, 1, wg.TILE, tw * wg.TILE, c], [tw], step)]
