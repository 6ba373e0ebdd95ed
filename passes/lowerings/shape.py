"""reshape, broadcast_to, strided_slice, take, gather_elements and iota → views and
copy/gather blocks.

- ``reshape`` is a *view*, lowered where it stands (in the graph function, or in a fused
  kernel), never a kernel of its own: ``tensor.expand_shape`` or ``tensor.collapse_shape`` when
  the dims regroup, else a collapse to 1-D followed by an expand.
- ``iota`` is a block writing its index (a range whose length is a dim of its operand).
- ``broadcast_to`` is a copy block (``linalg.generic`` with numpy's broadcasting map).
- ``strided_slice`` with positive strides is ``tensor.extract_slice`` (a strided view) copied
  into the destination by a ``strided_slice`` block (``linalg.copy``); with a negative stride
  it is a gather: a ``linalg.generic`` that computes ``begin + stride * i`` per axis and reads
  with ``tensor.extract`` (a negative coefficient in an indexing map makes upstream tiling
  assert, so reversal is never an affine map).
- ``take`` is a gather block: a ``linalg.generic`` over the result reading the indices (an
  operand) and ``x`` with ``tensor.extract``; negative indices count from the end and indices
  are clamped into the axis, so a bad index never reads outside ``x``.
- ``gather_elements`` is the same kind of gather block, over the indices' shape, replacing
  the coordinate of its axis by the index.
"""

from __future__ import annotations

import math
from typing import Callable, Sequence

from mlir import ir
from mlir.dialects import arith, linalg, tensor

from mlcir.dialects import graph
from mlcir.dialects.loop import tag_block

from .rule import LoweringContext, lowering
from . import builders as b


def regrouping(big: Sequence[int], small: Sequence[int]) -> list[list[int]] | None:
    """Groups of consecutive dims of ``big`` whose products are the dims of ``small`` (the
    reassociation of ``expand_shape``/``collapse_shape``), or None when there is none."""
    if not small:
        return [] if all(d == 1 for d in big) else None
    groups: list[list[int]] = []
    i = 0
    for target in small:
        group: list[int] = []
        product = 1
        while i < len(big) and not (group and product == target):
            group.append(i)
            product *= big[i]
            i += 1
            if product > target:
                return None
        if not group or product != target:
            return None
        groups.append(group)
    if i < len(big):  # trailing unit dims join the last group
        if any(big[j] != 1 for j in range(i, len(big))):
            return None
        groups[-1].extend(range(i, len(big)))
    return groups


@lowering("reshape", view=True)
def lower_reshape(cx: LoweringContext) -> list[ir.Value]:
    (x,) = cx.inputs
    shape = b.shape_of(x)
    target = graph.reshape_result(shape, cx.attrs["shape"])
    if None in target:
        # The 0s and a -1 that stays dynamic (a static one made its size).
        return [_reshape_dynamic(x, [t if d == -1 and t is not None else d
                                     for d, t in zip(cx.attrs["shape"], target)])]
    if None in shape:
        # A dynamic source: flatten, then state the (verified) static element count.
        flat = b.collapse(x, [list(range(len(shape)))]) if len(shape) != 1 else x
        flat_type = b.tensor_type([math.prod(target)], b.element_type(x))
        x, shape = tensor.CastOp(flat_type, flat).result, [math.prod(target)]
    if shape == target:
        return [x]
    if len(target) > len(shape) and (groups := regrouping(target, shape)) is not None:
        return [b.expand(x, target, groups)]
    if len(target) < len(shape) and (groups := regrouping(shape, target)) is not None:
        return [b.collapse(x, groups)]
    flat = b.collapse(x, [list(range(len(shape)))]) if len(shape) > 1 else x
    if len(target) == 0:
        return [b.collapse(flat, [])]
    return [b.expand(flat, target, [list(range(len(target)))])]


def _reshape_dynamic(x: ir.Value, target: Sequence[int]) -> ir.Value:
    """A dynamic reshape. With dims kept from ``x`` (0, or -2 - j; in x's order): the x dims
    between two kept ones collapsed and expanded to the target dims between them, unit dims
    joining a kept dim's group, so every expand group has one dynamic dim at most
    (expand-strided-metadata asserts on more). Else ``x`` flattened to 1-D and expanded (the
    one dynamic dim, a -1, the element count over the product of the others)."""
    shape = b.shape_of(x)
    regrouped = _regroup_keeping(x, target)
    if regrouped is not None:
        return regrouped
    flat = b.collapse(x, [list(range(len(shape)))]) if len(shape) != 1 else x
    out: list[int | None] = []
    sizes: list[ir.Value] = []
    rest = b.index(1)
    for p, d in enumerate(target):  # one dynamic dim at most (reshape_result checks)
        j = graph.reshape_source_axis(d, p)
        size = shape[j] if j is not None else None if d == -1 else d
        out.append(size)
        if j is not None and size is None:
            sizes.append(b.dim(x, j))
        if d != -1:
            rest = arith.muli(rest, sizes[-1] if size is None else b.index(size))
    if -1 in target:
        sizes.append(arith.divsi(tensor.dim(flat, b.index(0)), rest))
    return b.expand(flat, out, [list(range(len(out)))], sizes)


def _regroup_keeping(x: ir.Value, target: Sequence[int]) -> ir.Value | None:
    """The reshape as a collapse and an expand around the kept dims
    (:func:`mlcir.dialects.graph.reshape_groups`), or None when it is no such regrouping."""
    shape = b.shape_of(x)
    found = graph.reshape_groups(shape, target)
    if found is None:
        return None
    collapse, expand, mid = found
    source = b.collapse(x, collapse) if len(collapse) != len(shape) else x
    out: list[int | None] = []
    sizes: list[ir.Value] = []
    for m, group in enumerate(expand):
        for p in group:
            d = target[p]
            j = graph.reshape_source_axis(d, p)
            if j is not None:
                out.append(shape[j])
                if shape[j] is None:
                    sizes.append(b.dim(x, j))
            elif d == -1:
                static = math.prod(target[q] for q in group if target[q] != -1)
                if mid[m] is not None:
                    out.append(mid[m] // static)
                else:
                    out.append(None)
                    sizes.append(arith.divsi(b.dim(source, m), b.index(static)))
            else:
                out.append(d)
    if len(expand) == len(target):
        return source
    return b.expand(source, out, expand, sizes)


def _iota_dest_dims(inputs: Sequence[ir.Value], attrs: dict, _result: int
                    ) -> list[ir.Value | None]:
    (x,) = inputs
    axis = attrs["axis"]
    return [b.dim(x, axis) if b.shape_of(x)[axis] is None else None]


@lowering("iota", dest_dims=_iota_dest_dims)
def lower_iota(cx: LoweringContext) -> list[ir.Value]:
    (dest,) = cx.dests

    def position(_: ir.Value) -> ir.Value:
        return arith.index_cast(b.element_type(dest), linalg.IndexOp(0).result)

    return b.generic(cx.block_name("iota"), [], [dest], [b.identity_map(1)], [b.PARALLEL],
                     position)


@lowering("broadcast_to")
def lower_broadcast_to(cx: LoweringContext) -> list[ir.Value]:
    (x,), (dest,) = cx.inputs, cx.dests
    out_shape = b.shape_of(dest)
    maps = [b.broadcast_map(b.shape_of(x), out_shape), b.identity_map(len(out_shape))]
    return b.generic(cx.block_name("broadcast_to"), [x], [dest], maps,
                     [b.PARALLEL] * len(out_shape), lambda v, _: v)


def _slice_begin(n: int | ir.Value, begin: int, stride: int) -> int | ir.Value:
    """The first index read: ``begin``, clamped to ``n - 1`` for a negative stride."""
    if stride > 0:
        return begin
    if isinstance(n, int):
        return min(begin, n - 1)
    return arith.minsi(b.index(begin), arith.subi(n, b.index(1)))


def _strided_slice_dest_dims(inputs: Sequence[ir.Value], attrs: dict, _result: int
                             ) -> list[ir.Value | None]:
    """Dynamic axes: ``max(0, ceil((hi - lo) / |stride|))`` on index values."""
    (x,) = inputs
    dims: list[ir.Value | None] = []
    for axis, (size, begin, end, stride) in enumerate(zip(b.shape_of(x), attrs["begin"],
                                                           attrs["end"], attrs["strides"])):
        if size is not None:
            dims.append(None)
            continue
        n = b.dim(x, axis)
        if stride > 0:
            lo, hi = arith.minsi(b.index(begin), n), arith.minsi(b.index(end), n)
        else:
            lo, hi = b.index(end), _slice_begin(n, begin, stride)
        span = arith.ceildivsi(arith.subi(hi, lo), b.index(abs(stride)))
        dims.append(arith.maxsi(span, b.index(0)))
    return dims


@lowering("strided_slice", dest_dims=_strided_slice_dest_dims)
def lower_strided_slice(cx: LoweringContext) -> list[ir.Value]:
    (x,), (dest,) = cx.inputs, cx.dests
    begin, strides = cx.attrs["begin"], cx.attrs["strides"]
    name = cx.block_name("strided_slice")
    if all(s > 0 for s in strides):
        sizes = [d if d is not None else b.dim(dest, i) for i, d in enumerate(b.shape_of(dest))]
        view = b.extract_slice(x, list(begin), sizes, list(strides))
        copy = linalg.copy(view, outs=[dest])
        tag_block(copy.owner, name)
        return [copy]
    shape = b.shape_of(x)
    starts = [_slice_begin(n if n is not None else b.dim(x, axis), bg, s)
              for axis, (n, bg, s) in enumerate(zip(shape, begin, strides))]
    rank = len(shape)

    def gather(_: ir.Value) -> ir.Value:
        coords = []
        for axis, (start, stride) in enumerate(zip(starts, strides)):
            i = linalg.IndexOp(axis).result
            offset = arith.muli(i, b.index(stride))
            coords.append(arith.addi(start if isinstance(start, ir.Value) else b.index(start),
                                     offset))
        return tensor.extract(x, coords)

    return b.generic(name, [], [dest], [b.identity_map(rank)], [b.PARALLEL] * rank, gather)


def _take_dest_dims(inputs: Sequence[ir.Value], attrs: dict, _result: int
                    ) -> list[ir.Value | None]:
    x, indices = inputs
    axis = attrs["axis"]
    xs, js = b.shape_of(x), b.shape_of(indices)
    dims = [b.dim(x, a) if xs[a] is None else None for a in range(axis)]
    dims += [b.dim(indices, a) if d is None else None for a, d in enumerate(js)]
    dims += [b.dim(x, a) if xs[a] is None else None for a in range(axis + 1, len(xs))]
    return dims


def _axis_index(x: ir.Value, axis: int) -> Callable[[ir.Value], ir.Value]:
    """``position`` (an integer read from the indices) as an index into ``axis`` of ``x``:
    negative counts from the end, clamped into the axis (an out-of-range index reads the
    nearest element instead of memory outside the tensor)."""
    size = b.shape_of(x)[axis]
    n = b.index(size) if size is not None else b.dim(x, axis)
    last = arith.subi(n, b.index(1))

    def index(position: ir.Value) -> ir.Value:
        i = arith.index_cast(ir.IndexType.get(), position)
        negative = arith.cmpi(arith.CmpIPredicate.slt, i, b.index(0))
        i = arith.select(negative, arith.addi(i, n), i)
        return arith.minsi(arith.maxsi(i, b.index(0)), last)

    return index


@lowering("take", dest_dims=_take_dest_dims)
def lower_take(cx: LoweringContext) -> list[ir.Value]:
    (x, indices), (dest,) = cx.inputs, cx.dests
    axis = cx.attrs["axis"]
    x_rank, k = len(b.shape_of(x)), len(b.shape_of(indices))
    rank = len(b.shape_of(dest))
    axis_index = _axis_index(x, axis)

    def gather(position: ir.Value, _: ir.Value) -> ir.Value:
        i = axis_index(position)
        coords = [linalg.IndexOp(d).result for d in range(axis)] + [i] + \
            [linalg.IndexOp(d).result for d in range(axis + k, rank)]
        assert len(coords) == x_rank
        return tensor.extract(x, coords)

    maps = [b.dims_map(rank, list(range(axis, axis + k))), b.identity_map(rank)]
    return b.generic(cx.block_name("take"), [indices], [dest], maps, [b.PARALLEL] * rank, gather)


def _gather_elements_dest_dims(inputs: Sequence[ir.Value], _attrs: dict, _result: int
                               ) -> list[ir.Value | None]:
    indices = inputs[1]
    return [b.dim(indices, a) if d is None else None
            for a, d in enumerate(b.shape_of(indices))]


@lowering("gather_elements", dest_dims=_gather_elements_dest_dims)
def lower_gather_elements(cx: LoweringContext) -> list[ir.Value]:
    """A gather block over the result: the indices are an operand (same shape), ``x`` is read
    with ``tensor.extract`` at the result's coordinates with the axis replaced by the index
    (negative counts from the end, clamped into the axis as ``take``)."""
    (x, indices), (dest,) = cx.inputs, cx.dests
    axis = cx.attrs["axis"]
    rank = len(b.shape_of(dest))
    axis_index = _axis_index(x, axis)

    def gather(position: ir.Value, _: ir.Value) -> ir.Value:
        i = axis_index(position)
        coords = [i if d == axis else linalg.IndexOp(d).result for d in range(rank)]
        return tensor.extract(x, coords)

    return b.generic(cx.block_name("gather_elements"), [indices], [dest],
                     [b.identity_map(rank), b.identity_map(rank)], [b.PARALLEL] * rank, gather)
