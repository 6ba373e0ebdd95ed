"""What converters build with: graph ops that fold when their operands are constants.

A value during import is either a numpy array (known at import time: an initializer, a
Constant, a folded node) or an SSA value of ``main``. :meth:`GraphBuilder.op` builds a graph op
at the current node's location; when every operand is an array it runs the op's ``evaluate``
instead and returns an array, so a converter written once folds whatever is constant (a
BatchNormalization's statistics, a Gemm's transposed weight). Arrays become ``arith.constant``
(large ones ``dense_resource`` blobs) only where a built op uses them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from mlir import ir
from mlir.dialects import arith, tensor

from mlcir.dialects import graph
from mlcir.dialects.dtypes import constant_attr, mlir_element_type, numpy_dtype, signless_dtype
from mlcir.dialects.opdef import ShapeError
from mlcir.errors import FrontendError

from .converter import Node, Value, normalize_axes, normalize_axis
from .loader import Shape

def tensor_type(shape: Shape, dtype: np.dtype) -> ir.RankedTensorType:
    dyn = ir.ShapedType.get_dynamic_size()
    return ir.RankedTensorType.get([dyn if d is None else d for d in shape],
                                   mlir_element_type(signless_dtype(dtype)))


class GraphBuilder:
    """Builds ``main``'s body, one ONNX node at a time (see :meth:`at`)."""

    def __init__(self) -> None:
        self.node: Node | None = None
        self.loc: ir.Location | None = None
        # Arrays already materialised in this function: id(array) -> (array, value).
        self._materialized: dict[int, tuple[np.ndarray, ir.Value]] = {}

    def at(self, node: Node | None, loc: ir.Location) -> None:
        """Make ``node`` the one being converted: ops built from now carry ``loc``."""
        self.node, self.loc = node, loc

    # -- errors ---------------------------------------------------------------------------

    def error(self, message: str) -> FrontendError:
        """A FrontendError naming the node being converted."""
        where = self.node.describe() if self.node else "model"
        return FrontendError(f"{where}: {message}", [(where, message)])

    def axis(self, axis: int, rank: int) -> int:
        """``axis`` of a rank-``rank`` value, negative counting from the end; out of range is
        an error naming the node."""
        try:
            return normalize_axis(int(axis), rank)
        except ValueError as e:
            raise self.error(str(e)) from None

    def axes(self, axes: Sequence[int], rank: int) -> list[int]:
        """:meth:`axis` of each of ``axes`` (repeats are an error too)."""
        try:
            return normalize_axes(axes, rank)
        except ValueError as e:
            raise self.error(str(e)) from None

    # -- what a value is --------------------------------------------------------------------

    @staticmethod
    def is_constant(v: Value | None) -> bool:
        return isinstance(v, np.ndarray)

    @staticmethod
    def shape(v: Value) -> Shape:
        if isinstance(v, np.ndarray):
            return tuple(v.shape)
        t = ir.RankedTensorType(v.type)
        return tuple(None if t.is_dynamic_dim(i) else t.shape[i] for i in range(t.rank))

    def rank(self, v: Value) -> int:
        return len(self.shape(v))

    def static_shape(self, v: Value, why: str) -> tuple[int, ...]:
        """The shape of ``v``; an error (saying ``why`` it must be static) if a dim is ``?``."""
        shape = self.shape(v)
        if any(d is None for d in shape):
            raise self.error(f"{why} needs a static shape, but the input has shape "
                             f"{_fmt(shape)}; give the symbolic dims a size with "
                             "from_onnx(..., shape_dict={input: shape})")
        return tuple(int(d) for d in shape)  # type: ignore[arg-type]

    @staticmethod
    def dtype(v: Value) -> np.dtype:
        if isinstance(v, np.ndarray):
            return v.dtype
        return numpy_dtype(ir.RankedTensorType(v.type).element_type)

    # -- building -----------------------------------------------------------------------------

    def value(self, v: Value) -> ir.Value:
        """``v`` as an SSA value: arrays become an ``arith.constant`` (once per array)."""
        if not isinstance(v, np.ndarray):
            return v
        hit = self._materialized.get(id(v))
        if hit is not None and hit[0] is v:
            return hit[1]
        try:
            attr = constant_attr(v.view(signless_dtype(v.dtype)))
        except TypeError as e:
            raise self.error(f"a constant of type {v.dtype} cannot be used by a graph op: {e}") \
                from None
        result = arith.ConstantOp(attr.type, attr, loc=self.loc).result
        self._materialized[id(v)] = (v, result)
        return result

    def op(self, name: str, *operands: Value, **attrs: Any) -> Value:
        """``graph.<name>(operands, attrs)`` at the node's location, or its value when every
        operand is a constant (the op's ``evaluate``)."""
        opdef = graph.OPS.get(name)
        if opdef is None:
            raise self.error(f"needs the graph op '{name}', which this mlcir does not have")
        if operands and all(isinstance(v, np.ndarray) for v in operands) and opdef.evaluate:
            result = opdef.evaluate(*operands, **attrs)
            return np.asarray(result)
        try:
            return graph.build(name, [self.value(v) for v in operands], attrs, loc=self.loc)
        except ShapeError as e:
            raise self.error(str(e)) from None

    def reshape(self, v: Value, shape: Sequence[int]) -> Value:
        """``v`` reshaped to ``shape`` (numpy for constants; nothing when equal); a -1 is the
        dynamic dim of a dynamic ``v``."""
        shape = [int(d) for d in shape]
        if isinstance(v, np.ndarray):
            return v.reshape(shape)
        if list(self.shape(v)) == shape:
            return v
        return self.op("reshape", v, shape=shape)

    def broadcast_to(self, v: Value, shape: Sequence[int]) -> Value:
        """``v`` broadcast (numpy rules) to the static ``shape``; nothing when equal."""
        shape = [int(d) for d in shape]
        if list(self.shape(v)) == shape:
            return v
        if isinstance(v, np.ndarray):
            return np.ascontiguousarray(np.broadcast_to(v, shape))
        return self.op("broadcast_to", v, shape=shape)

    def scalar(self, value: float | int, like: Value) -> np.ndarray:
        """A 0-d constant of ``like``'s element type."""
        return np.array(value, dtype=self.dtype(like))

    def astype(self, v: Value, dtype: np.dtype) -> Value:
        dtype = np.dtype(dtype)
        if self.dtype(v) == dtype:
            return v
        if isinstance(v, np.ndarray):
            return v.astype(dtype)
        return self.op("astype", v, dtype=mlir_element_type(dtype))

    def concat(self, values: Sequence[Value], axis: int) -> Value:
        """Upstream ``tensor.concat`` (or numpy's, when every input is a constant)."""
        if all(isinstance(v, np.ndarray) for v in values):
            return np.concatenate(values, axis=axis)
        if len(values) == 1:
            return values[0]
        shapes = [self.shape(v) for v in values]
        dtypes = {str(self.dtype(v)) for v in values}
        if len(dtypes) > 1:
            raise self.error(f"inputs have different element types: {', '.join(sorted(dtypes))}")
        out = list(shapes[0])
        for s in shapes[1:]:
            if len(s) != len(out):
                raise self.error(f"inputs of ranks {len(out)} and {len(s)} cannot be "
                                 "concatenated")
            for d, (a, b) in enumerate(zip(out, s)):
                if d == axis:
                    out[d] = None if a is None or b is None else a + b
                elif a is None:
                    out[d] = b
                elif b is not None and a != b:
                    raise self.error(f"inputs of shapes {' and '.join(_fmt(x) for x in shapes)} "
                                     f"differ outside the concatenated axis {axis}")
        result_type = tensor_type(tuple(out), self.dtype(values[0]))
        return tensor.ConcatOp(result_type, axis, [self.value(v) for v in values],
                               loc=self.loc).result


def _fmt(shape: Sequence[int | None]) -> str:
    return "[" + ", ".join("?" if d is None else str(d) for d in shape) + "]"
