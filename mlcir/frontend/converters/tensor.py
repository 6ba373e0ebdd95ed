"""Shape and data movement: Reshape, Flatten, Squeeze, Unsqueeze, Transpose, Concat, Split,
Slice, Gather, Expand, Shape, ConstantOfShape, Range.

Shape-like operands (Reshape's shape, Slice's starts/ends/axes/steps, Split's split, the axes
of Squeeze/Unsqueeze, Expand's shape, ConstantOfShape's shape, Range's bounds) must be known at
import time, after folding: constants, or symbolic shape values (:mod:`..symbolic`) computed
from the symbolic dims of the model's inputs. A symbolic result is built when it is
expressible (see ``GraphBuilder.reshape_to``, ``expand_to`` and ``iota``), else the node is an
error that says why.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import onnx

from ..builder import GraphBuilder
from ..converter import Converter, Node, Value, converter
from ..symbolic import (Dim, NotExpressible, SymbolicDim, compare, divide_exactly, format_dims,
                        is_symbolic, simplify, symbolic_array)


def _ints(v: np.ndarray) -> list[int]:
    return [int(a) for a in np.asarray(v).reshape(-1)]


def _dims(shape: Sequence[int | None]) -> str:
    return "[" + ", ".join("?" if d is None else str(d) for d in shape) + "]"


def _symbolic(v: np.ndarray) -> list[SymbolicDim]:
    """The elements of a shape-like input (ints, or Dims when symbolic)."""
    return [d if isinstance(d, Dim) else int(d) for d in np.asarray(v).reshape(-1)]


def _is_dynamic(cx: GraphBuilder, *values: Value) -> bool:
    return any(is_symbolic(v) or (not cx.is_constant(v) and None in cx.shape(v))
               for v in values if v is not None)


def _reshape_symbolic(cx: GraphBuilder, x: Value, dims: Sequence[SymbolicDim]) -> Value:
    try:
        return cx.reshape_to(x, dims)
    except NotExpressible as e:
        raise cx.error(str(e)) from None


@converter
class Reshape(Converter):
    """Reshape -> graph.reshape; the shape input is a constant or a symbolic shape value; 0
    copies the input's dim (unless allowzero, opset 14), -1 is inferred."""

    unsigned_inputs = True

    graph_ops = ("reshape",)
    constants = {1: "shape"}

    @classmethod
    def _impl_v13(cls, cx: GraphBuilder, node: Node, inputs: list[Value]) -> Value:
        return _reshape_dims(cx, inputs[0], cls.symbolic_target(cx, node, *inputs))

    _impl_v14 = _impl_v13  # adds allowzero

    @classmethod
    def symbolic_target(cls, cx: GraphBuilder, node: Node, x: Value, shape: Value
                        ) -> list[SymbolicDim]:
        """The result dims over the symbols: 0 copies, -1 is the rest."""
        own, target = cx.dims(x), _symbolic(shape)
        allowzero = int(node.attr("allowzero", 0))
        out: list[SymbolicDim] = []
        for i, d in enumerate(target):
            if isinstance(d, int) and d == 0 and not allowzero:
                if i >= len(own):
                    raise cx.error(f"shape {format_dims(target)}: 0 at position {i} copies a "
                                   f"dim the input (rank {len(own)}) does not have")
                d = own[i]
            elif isinstance(d, int) and d < -1:
                raise cx.error(f"shape {format_dims(target)} has the negative size {d}")
            out.append(d)
        if out.count(-1) > 1:
            raise cx.error(f"shape {format_dims(target)} has more than one -1")
        if -1 in out:
            total: SymbolicDim = 1
            rest: SymbolicDim = 1
            for d in own:
                total = total * d
            for d in out:
                if not (isinstance(d, int) and d == -1):
                    rest = rest * d
            try:
                out[out.index(-1)] = divide_exactly(total, rest)
            except NotExpressible:
                raise cx.error(f"cannot reshape {format_dims(own)} to "
                               f"{format_dims(target)}: {total} is not a multiple of {rest}") \
                    from None
        return out


def _reshape_dims(cx: GraphBuilder, x: Value, dims: Sequence[SymbolicDim]) -> Value:
    """A reshape to ``dims`` (static: ints; else over the symbols)."""
    if _is_dynamic(cx, x) or any(isinstance(d, Dim) for d in dims):
        return _reshape_symbolic(cx, x, dims)
    return cx.reshape(x, [int(d) for d in dims])


@converter
class Flatten(Converter):
    """Flatten(axis) -> graph.reshape to [prod(dims[:axis]), prod(dims[axis:])]."""

    unsigned_inputs = True

    graph_ops = ("reshape",)

    @classmethod
    def _impl_v13(cls, cx: GraphBuilder, node: Node, inputs: list[Value]) -> Value:
        x = inputs[0]
        shape = cx.shape(x)
        axis = int(node.attr("axis", 1))
        if not -len(shape) <= axis <= len(shape):
            raise cx.error(f"axis {axis} is out of range for rank {len(shape)}")
        axis = axis + len(shape) if axis < 0 else axis
        dims = cx.dims(x)
        head: SymbolicDim = 1
        tail: SymbolicDim = 1
        for d in dims[:axis]:
            head = head * d
        for d in dims[axis:]:
            tail = tail * d
        return _reshape_dims(cx, x, [head, tail])


@converter
class Squeeze(Converter):
    """Squeeze -> graph.reshape without the given size-1 axes (an input since opset 13;
    without it, every size-1 dim)."""

    unsigned_inputs = True

    graph_ops = ("reshape",)
    constants = {1: "axes"}

    @classmethod
    def _impl_v13(cls, cx: GraphBuilder, node: Node, inputs: list[Value]) -> Value:
        x = inputs[0]
        shape = cx.shape(x)
        if len(inputs) > 1 and inputs[1] is not None:
            axes = cx.axes(_ints(inputs[1]), len(shape))
            for a in axes:
                if shape[a] not in (1, None):
                    raise cx.error(f"cannot squeeze axis {a} of size {shape[a]}")
        else:
            if None in shape:
                raise cx.error("Squeeze without axes needs a static input shape, got "
                               f"{list(shape)}")
            axes = [a for a, d in enumerate(shape) if d == 1]
        return _reshape_dims(cx, x, [d for a, d in enumerate(cx.dims(x)) if a not in axes])


@converter
class Unsqueeze(Converter):
    """Unsqueeze -> graph.reshape with size-1 dims inserted at the axes (an input since 13)."""

    unsigned_inputs = True

    graph_ops = ("reshape",)
    constants = {1: "axes"}

    @classmethod
    def _impl_v13(cls, cx: GraphBuilder, node: Node, inputs: list[Value]) -> Value:
        x, raw = inputs[0], _ints(inputs[1])
        shape = list(cx.dims(x))
        axes = cx.axes(raw, len(shape) + len(raw))
        for a in axes:
            shape.insert(a, 1)
        return _reshape_dims(cx, x, shape)


@converter
class Transpose(Converter):
    """Transpose(perm) -> graph.permute_dims (default: the dims reversed)."""

    unsigned_inputs = True

    graph_ops = ("permute_dims",)

    @classmethod
    def _impl_v13(cls, cx: GraphBuilder, node: Node, inputs: list[Value]) -> Value:
        x = inputs[0]
        perm = node.attr("perm") or list(reversed(range(cx.rank(x))))
        if list(perm) == list(range(cx.rank(x))):
            return x
        return cx.op("permute_dims", x, axes=[int(p) for p in perm])


@converter
class Concat(Converter):
    """Concat(axis) -> upstream tensor.concat."""

    unsigned_inputs = True

    @classmethod
    def _impl_v13(cls, cx: GraphBuilder, node: Node, inputs: list[Value]) -> Value:
        present = [v for v in inputs if v is not None]
        axis = cx.axis(node.attr("axis"), cx.rank(present[0]))
        return cx.concat(present, axis)


#: The end of a slice through the end of a dynamic axis (clamped at run time).
_THROUGH_END = 2**62


def _slice_along(cx: GraphBuilder, x: Value, ranges: dict[int, tuple[int, int, int]]) -> Value:
    """graph.strided_slice of ``x`` with ``(begin, end, step)`` per axis in ``ranges`` and the
    whole of every other axis."""
    shape = cx.shape(x)
    begin, end, strides = [], [], []
    full = []
    for axis, size in enumerate(shape):
        whole = (0, _THROUGH_END if size is None else size, 1)
        b, e, s = ranges.get(axis, whole)
        begin.append(b)
        end.append(e)
        strides.append(s)
        full.append((b, e, s) == whole)
    if all(full):
        return x
    return cx.op("strided_slice", x, begin=begin, end=end, strides=strides)


@converter
class Split(Converter):
    """Split -> one graph.strided_slice per output. Sizes from the ``split`` input (opset 13,
    a constant), else equal parts; from opset 18 ``num_outputs`` (the last part smaller)."""

    graph_ops = ("strided_slice",)
    constants = {1: "split"}

    @classmethod
    def split(cls, cx: GraphBuilder, node: Node, x: Value, sizes: list[int] | None) -> list[Value]:
        shape = cx.shape(x)  # only the split dimension needs a size
        axis = cx.axis(node.attr("axis", 0), len(shape))
        dim = shape[axis]
        if dim is None:
            raise cx.error(f"Split along dimension {axis}, which is symbolic, needs a size: "
                           "give it one with from_onnx(..., shape_dict={input: shape})")
        count = len(node.outputs)
        if sizes is None:
            parts = int(node.attr("num_outputs", count))
            if parts != count:
                raise cx.error(f"num_outputs={parts} but the node has {count} outputs")
            if node.opset >= 18 and node.attr("num_outputs") is not None:
                chunk = -(-dim // parts)
                sizes = [chunk] * (parts - 1) + [dim - chunk * (parts - 1)]
            elif dim % parts:
                raise cx.error(f"dimension {axis} of size {dim} does not split into {parts} "
                               "equal parts")
            else:
                sizes = [dim // parts] * parts
        if len(sizes) != count or sum(sizes) != dim or min(sizes) < 0:
            raise cx.error(f"split sizes {sizes} do not cut dimension {axis} of size {dim} into "
                           f"{count} parts")
        out, start = [], 0
        for size in sizes:
            out.append(_slice_along(cx, x, {axis: (start, start + size, 1)}))
            start += size
        return out

    @classmethod
    def _impl_v13(cls, cx: GraphBuilder, node: Node, inputs: list[Value]) -> list[Value]:
        split = inputs[1] if len(inputs) > 1 and inputs[1] is not None else None
        return cls.split(cx, node, inputs[0], None if split is None else _ints(split))

    _impl_v18 = _impl_v13  # adds num_outputs, read by split()


def onnx_slice_range(start: int, end: int, step: int, dim: int) -> tuple[int, int, int]:
    """ONNX Slice's clamping of one axis: (begin, end, step) with 0 <= begin; for a negative
    step ``end`` may be -1, meaning "through index 0"."""
    if step == 0:
        raise ValueError("a step of 0")
    start = start + dim if start < 0 else start
    end = end + dim if end < 0 else end
    if step > 0:
        return min(max(start, 0), dim), min(max(end, 0), dim), step
    return min(max(start, 0), dim - 1), min(max(end, -1), dim - 1), step


@converter
class Slice(Converter):
    """Slice -> graph.strided_slice; starts, ends, axes and steps are constants. Over symbolic
    dims: a bound at or past a dynamic axis's end slices through its end (clamped at run
    time); ``x[start:S]`` with ``S`` a symbolic size (a dim of another value) is a
    graph.take of ``start + iota(S)``."""

    graph_ops = ("strided_slice", "take", "iota")
    constants = {1: "starts", 2: "ends", 3: "axes", 4: "steps"}

    @classmethod
    def _impl_v13(cls, cx: GraphBuilder, node: Node, inputs: list[Value]) -> Value:
        x = inputs[0]
        dims = cx.dims(x)
        starts, ends = _symbolic(inputs[1]), _symbolic(inputs[2])
        axes = _ints(inputs[3]) if len(inputs) > 3 and inputs[3] is not None \
            else list(range(len(starts)))
        steps = _ints(inputs[4]) if len(inputs) > 4 and inputs[4] is not None \
            else [1] * len(starts)
        if not len(starts) == len(ends) == len(axes) == len(steps):
            raise cx.error(f"starts {format_dims(starts)}, ends {format_dims(ends)}, axes {axes} "
                           f"and steps {steps} have different lengths")
        ranges: dict[int, tuple[int, int, int]] = {}
        gathers: dict[int, tuple[int, Dim]] = {}
        for start, end, axis, step in zip(starts, ends, axes, steps):
            axis = cx.axis(axis, len(dims))
            if axis in ranges or axis in gathers:
                raise cx.error(f"axis {axis} is sliced twice")
            try:
                if all(isinstance(v, int) for v in (start, end, dims[axis])):
                    ranges[axis] = onnx_slice_range(start, end, step, dims[axis])
                else:
                    found = _symbolic_slice(start, end, step, dims[axis])
                    if isinstance(found[1], Dim):
                        gathers[axis] = (found[0], found[1])
                    else:
                        ranges[axis] = found  # type: ignore[assignment]
            except ValueError as e:
                raise cx.error(f"axis {axis}: {e}") from None
        out = _slice_along(cx, x, ranges)
        for axis, (start, length) in gathers.items():
            try:
                positions = cx.iota(length)
            except NotExpressible as e:
                raise cx.error(f"axis {axis}: {e}") from None
            if start:
                positions = cx.op("add", positions, np.array(start, np.int64))
            out = cx.op("take", out, positions, axis=axis)
        return out


def _symbolic_slice(start: SymbolicDim, end: SymbolicDim, step: int, size: SymbolicDim
                    ) -> tuple[int, SymbolicDim, int]:
    """One axis of a Slice over symbols: ``(begin, end, step)`` for graph.strided_slice (the
    end ``_THROUGH_END`` past a dynamic end), or ``(begin, length)`` with a symbolic length
    for a gather; NotExpressible otherwise."""
    if step == 0:
        raise ValueError("a step of 0")
    if isinstance(start, int) and start < 0:
        start = size + start
    if isinstance(end, int) and end < 0:
        end = size + end
    if not isinstance(start, int) or start < 0 or step < 0:
        raise NotExpressible(f"a slice from {start} by {step} of a dim of size {size}")
    try:
        through = compare(end, size) >= 0
    except NotExpressible:
        through = False  # S of a static axis: taken to be within it (graph.take clamps)
    if through:
        return (start, _THROUGH_END if isinstance(size, Dim) else size, step)
    if step != 1:
        raise NotExpressible(f"a slice to {end} by {step} of a dim of size {size}")
    return (start, end - start if isinstance(end, Dim) else end, 1)  # type: ignore[return-value]


def _check_index_type(cx: GraphBuilder, indices: Value) -> None:
    """Gather-like ops take int32 or int64 indices (ONNX's tensor(int32), tensor(int64))."""
    if cx.dtype(indices) not in (np.int32, np.int64):
        raise cx.error(f"indices of type {cx.dtype(indices)} (int32 or int64 expected)")


@converter
class Gather(Converter):
    """Gather(axis) -> graph.take (numpy.take; negative indices count from the end)."""

    graph_ops = ("take",)

    @classmethod
    def _impl_v13(cls, cx: GraphBuilder, node: Node, inputs: list[Value]) -> Value:
        x, indices = inputs
        axis = cx.axis(node.attr("axis", 0), cx.rank(x))
        _check_index_type(cx, indices)
        size = cx.shape(x)[axis]
        if cx.is_constant(indices) and size is not None and indices.size and (
                indices.min() < -size or indices.max() >= size):
            raise cx.error(f"indices {_ints(indices)} are out of range for axis {axis} of "
                           f"size {size}")
        return cx.op("take", x, indices, axis=axis)


@converter
class GatherElements(Converter):
    """GatherElements(axis) -> graph.gather_elements (numpy.take_along_axis)."""

    graph_ops = ("gather_elements",)

    @classmethod
    def _impl_v13(cls, cx: GraphBuilder, node: Node, inputs: list[Value]) -> Value:
        x, indices = inputs
        axis = cx.axis(node.attr("axis", 0), cx.rank(x))
        _check_index_type(cx, indices)
        return cx.op("gather_elements", x, indices, axis=axis)


@converter
class Expand(Converter):
    """Expand -> graph.broadcast_to the (bidirectional) broadcast of x's shape and the shape
    input (a constant); over symbolic dims, ``GraphBuilder.expand_to``."""

    graph_ops = ("broadcast_to",)
    constants = {1: "shape"}

    @classmethod
    def _impl_v13(cls, cx: GraphBuilder, node: Node, inputs: list[Value]) -> Value:
        x = inputs[0]
        if _is_dynamic(cx, *inputs):
            target = _symbolic(inputs[1])
            target = [1] * (cx.rank(x) - len(target)) + target
            try:
                return cx.expand_to(x, target)
            except NotExpressible as e:
                raise cx.error(str(e)) from None
        target = _ints(inputs[1])
        shape = cx.static_shape(x, "Expand")
        try:
            out = np.broadcast_shapes(shape, tuple(target))
        except ValueError:
            raise cx.error(f"the input shape {list(shape)} does not broadcast to {target}") \
                from None
        return cx.broadcast_to(x, out)


@converter
class ConstantOfShape(Converter):
    """ConstantOfShape -> a constant; with a symbolic shape, the value broadcast to it
    (``GraphBuilder.expand_to``)."""

    graph_ops = ("broadcast_to", "iota", "multiply", "reshape", "add", "astype")
    constants = {0: "shape"}

    @classmethod
    def _impl_v13(cls, cx: GraphBuilder, node: Node, inputs: list[Value]) -> Value:
        value = node.attr("value")
        scalar = (np.zeros((), np.float32) if value is None
                  else onnx.numpy_helper.to_array(value).reshape(()))
        dims = _symbolic(inputs[0])
        if not any(isinstance(d, Dim) for d in dims):
            return np.full(dims, scalar, dtype=scalar.dtype)
        try:
            return cx.expand_to(scalar, dims)
        except NotExpressible as e:
            raise cx.error(str(e)) from None


@converter
class Range(Converter):
    """Range -> a constant; with a symbolic limit ``start + delta * iota(n)`` where ``n``
    (``(limit - start) / delta``) must be a symbolic size (a dim of a value)."""

    graph_ops = ("iota", "multiply", "add", "astype")
    constants = {0: "start", 1: "limit", 2: "delta"}

    @classmethod
    def _impl_v13(cls, cx: GraphBuilder, node: Node, inputs: list[Value]) -> Value:
        start, limit, delta = (_symbolic(v)[0] for v in inputs)
        found = node.input(0).type
        dtype = found[1] if found is not None else np.dtype(np.int64)
        if not any(isinstance(v, Dim) for v in (start, limit, delta)):
            return np.arange(start, limit, delta, dtype=dtype)
        try:
            if not isinstance(start, int) or not isinstance(delta, int) or delta == 0:
                raise NotExpressible(f"a range from {start} by {delta}")
            positions = cx.iota(divide_exactly(limit - start, delta))
        except NotExpressible as e:
            raise cx.error(f"{e} (the length must be a symbolic size)") from None
        if delta != 1:
            positions = cx.op("multiply", positions, np.array(delta, np.int64))
        if start:
            positions = cx.op("add", positions, np.array(start, np.int64))
        return cx.astype(positions, dtype)


@converter
class Shape(Converter):
    """Shape -> a constant when the dims asked for (start/end, opset 15) are static, else a
    symbolic shape value (over the symbolic dims of ``GraphBuilder.dims``)."""

    unsigned_inputs = True

    @classmethod
    def _impl_v13(cls, cx: GraphBuilder, node: Node, inputs: list[Value]) -> Value:
        dims = cx.dims(inputs[0])[slice(node.attr("start", 0), node.attr("end", None))]
        return simplify(symbolic_array(dims))

    _impl_v15 = _impl_v13  # adds start and end


@converter
class Size(Converter):
    """Size -> a constant, or a symbolic one (the product of the symbolic dims)."""

    unsigned_inputs = True

    @classmethod
    def _impl_v13(cls, cx: GraphBuilder, node: Node, inputs: list[Value]) -> Value:
        total: SymbolicDim = 1
        for d in cx.dims(inputs[0]):
            total = total * d
        return simplify(symbolic_array([total])).reshape(())
