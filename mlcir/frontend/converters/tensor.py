"""Shape and data movement: Reshape, Flatten, Squeeze, Unsqueeze, Transpose, Concat, Split,
Slice, Gather, Expand, Shape.

Shape-like operands (Reshape's shape, Slice's starts/ends/axes/steps, Split's split, the axes
of Squeeze/Unsqueeze, Expand's shape) must be known at import time, after folding; the results
of reshapes and slices must have static shapes (the graph ops take them as attributes).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from ..builder import GraphBuilder
from ..converter import Converter, Node, Value, converter


def _ints(v: np.ndarray) -> list[int]:
    return [int(a) for a in np.asarray(v).reshape(-1)]


def _dims(shape: Sequence[int | None]) -> str:
    return "[" + ", ".join("?" if d is None else str(d) for d in shape) + "]"


def _reshape(cx: GraphBuilder, x: Value, shape: Sequence[int | None]) -> Value:
    """A reshape to ``shape``; one dynamic dim (the rest of a dynamic ``x``) is a -1."""
    if sum(d is None for d in shape) > 1:
        raise cx.error(f"the result shape {_dims(shape)} has more than one dynamic dim; give "
                       "the model's symbolic dims a size with "
                       "from_onnx(..., shape_dict={input: shape})")
    return cx.reshape(x, [-1 if d is None else d for d in shape])


@converter
class Reshape(Converter):
    """Reshape -> graph.reshape; the shape input is a constant; 0 copies the input's dim
    (unless allowzero, opset 14), -1 is inferred."""

    unsigned_inputs = True

    graph_ops = ("reshape",)
    constants = {1: "shape"}

    @classmethod
    def _impl_v13(cls, cx: GraphBuilder, node: Node, inputs: list[Value]) -> Value:
        x, target = inputs[0], _ints(inputs[1])
        in_shape = cx.shape(x)
        allowzero = int(node.attr("allowzero", 0))
        out: list[int | None] = []
        for i, d in enumerate(target):
            if d == 0 and not allowzero:
                if i >= len(in_shape):
                    raise cx.error(f"shape {target}: 0 at position {i} copies a dim the input "
                                   f"(rank {len(in_shape)}) does not have")
                out.append(in_shape[i])
            elif d < -1:
                raise cx.error(f"shape {target} has the negative size {d}")
            else:
                out.append(d)
        if out.count(-1) > 1:
            raise cx.error(f"shape {target} has more than one -1")
        if -1 in out:
            known = [d for d in out if d != -1]
            if any(d is None for d in known):
                raise cx.error(f"shape {target}: -1 next to a dynamic dim")
            if None in cx.shape(x):  # the -1 is the dynamic dim of a dynamic input
                return _reshape(cx, x, [None if d == -1 else d for d in out])
            total = math.prod(cx.static_shape(x, "a Reshape with -1"))
            rest = math.prod(known)  # type: ignore[arg-type]
            if rest == 0 or total % rest:
                raise cx.error(f"cannot reshape {_dims(cx.shape(x))} to {target}")
            out[out.index(-1)] = total // rest
        return _reshape(cx, x, out)

    _impl_v14 = _impl_v13  # adds allowzero


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
        head, tail = shape[:axis], shape[axis:]
        out = [None if None in head else math.prod(head),  # type: ignore[arg-type]
               None if None in tail else math.prod(tail)]  # type: ignore[arg-type]
        return _reshape(cx, x, out)


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
        return _reshape(cx, x, [d for a, d in enumerate(shape) if a not in axes])


@converter
class Unsqueeze(Converter):
    """Unsqueeze -> graph.reshape with size-1 dims inserted at the axes (an input since 13)."""

    unsigned_inputs = True

    graph_ops = ("reshape",)
    constants = {1: "axes"}

    @classmethod
    def _impl_v13(cls, cx: GraphBuilder, node: Node, inputs: list[Value]) -> Value:
        x, raw = inputs[0], _ints(inputs[1])
        shape = list(cx.shape(x))
        axes = cx.axes(raw, len(shape) + len(raw))
        for a in axes:
            shape.insert(a, 1)
        return _reshape(cx, x, shape)


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


def _slice_along(cx: GraphBuilder, x: Value, ranges: dict[int, tuple[int, int, int]]) -> Value:
    """graph.strided_slice of ``x`` with ``(begin, end, step)`` per axis in ``ranges`` and the
    whole of every other axis."""
    shape = cx.static_shape(x, "slicing")
    begin, end, strides = [], [], []
    for axis, size in enumerate(shape):
        b, e, s = ranges.get(axis, (0, size, 1))
        begin.append(b)
        end.append(e)
        strides.append(s)
    if all((b, e, s) == (0, size, 1) for b, e, s, size in zip(begin, end, strides, shape)):
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
        shape = cx.static_shape(x, "Split")
        axis = cx.axis(node.attr("axis", 0), len(shape))
        dim = shape[axis]
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
    """Slice -> graph.strided_slice; starts, ends, axes and steps are constants."""

    graph_ops = ("strided_slice",)
    constants = {1: "starts", 2: "ends", 3: "axes", 4: "steps"}

    @classmethod
    def _impl_v13(cls, cx: GraphBuilder, node: Node, inputs: list[Value]) -> Value:
        x = inputs[0]
        shape = cx.static_shape(x, "Slice")
        starts, ends = _ints(inputs[1]), _ints(inputs[2])
        axes = _ints(inputs[3]) if len(inputs) > 3 and inputs[3] is not None \
            else list(range(len(starts)))
        steps = _ints(inputs[4]) if len(inputs) > 4 and inputs[4] is not None \
            else [1] * len(starts)
        if not len(starts) == len(ends) == len(axes) == len(steps):
            raise cx.error(f"starts {starts}, ends {ends}, axes {axes} and steps {steps} have "
                           "different lengths")
        ranges = {}
        for start, end, axis, step in zip(starts, ends, axes, steps):
            axis = cx.axis(axis, len(shape))
            if axis in ranges:
                raise cx.error(f"axis {axis} is sliced twice")
            try:
                ranges[axis] = onnx_slice_range(start, end, step, shape[axis])
            except ValueError as e:
                raise cx.error(f"axis {axis}: {e}") from None
        return _slice_along(cx, x, ranges)


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
    input (a constant)."""

    graph_ops = ("broadcast_to",)
    constants = {1: "shape"}

    @classmethod
    def _impl_v13(cls, cx: GraphBuilder, node: Node, inputs: list[Value]) -> Value:
        x, target = inputs[0], _ints(inputs[1])
        shape = cx.static_shape(x, "Expand")
        try:
            out = np.broadcast_shapes(shape, tuple(target))
        except ValueError:
            raise cx.error(f"the input shape {list(shape)} does not broadcast to {target}") \
                from None
        return cx.broadcast_to(x, out)


@converter
class Shape(Converter):
    """Shape -> a constant, when the dims asked for (start/end, opset 15) are static."""

    @classmethod
    def check(cls, node: Node) -> list[str]:
        shape = node.input(0).shape
        if shape is not None:
            return [f"the shape of '{node.proto.input[0]}' is not static ({_dims(shape)}); give "
                    "its symbolic dims a size with from_onnx(..., shape_dict={input: shape})"]
        return []

    @classmethod
    def _impl_v13(cls, cx: GraphBuilder, node: Node, inputs: list[Value]) -> Value:
        shape = cx.shape(inputs[0])
        dims = shape[slice(node.attr("start", 0), node.attr("end", None))]
        if None in dims:
            raise cx.error(f"the shape of '{node.proto.input[0]}' is not static "
                           f"({_dims(shape)}); give its symbolic dims a size with "
                           "from_onnx(..., shape_dict={input: shape})")
        return np.array(dims, dtype=np.int64)

    _impl_v15 = _impl_v13  # adds start and end
