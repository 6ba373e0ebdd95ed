"""Elementwise ops: unary math, broadcasting binary arithmetic, activations, casts."""

from __future__ import annotations

import numpy as np
import onnx

from mlcir.dialects.dtypes import mlir_element_type

from ..builder import GraphBuilder
from ..converter import Converter, Node, Value, converter, require

# ONNX op -> graph op (the same function, elementwise)
_UNARY = {"Relu": "relu", "Neg": "negative", "Exp": "exp", "Log": "log", "Sqrt": "sqrt",
          "Tanh": "tanh", "Sigmoid": "sigmoid", "Erf": "erf", "Abs": "abs"}
# ONNX op -> graph op (numpy broadcasting)
_BINARY = {"Add": "add", "Sub": "subtract", "Mul": "multiply", "Div": "divide"}


class Unary(Converter):
    """One input: ``graph_op`` of it."""

    @classmethod
    def _impl_v13(cls, cx: GraphBuilder, node: Node, inputs: list[Value]) -> Value:
        return cx.op(cls.graph_op, inputs[0])


class Binary(Converter):
    """Two inputs (numpy broadcasting): ``graph_op`` of them."""

    @classmethod
    def _impl_v13(cls, cx: GraphBuilder, node: Node, inputs: list[Value]) -> Value:
        return cx.op(cls.graph_op, inputs[0], inputs[1])


for _onnx, _graph in _UNARY.items():
    converter(type(_onnx, (Unary,), {"graph_op": _graph,
                                     "__doc__": f"{_onnx} -> graph.{_graph}"}))
for _onnx, _graph in _BINARY.items():
    converter(type(_onnx, (Binary,), {"graph_op": _graph,
                                      "__doc__": f"{_onnx} -> graph.{_graph}"}))


@converter
class Pow(Converter):
    """Pow -> graph.power; the exponent is converted to the base's type (ONNX allows both)."""

    graph_ops = ("power",)

    @classmethod
    def _impl_v13(cls, cx: GraphBuilder, node: Node, inputs: list[Value]) -> Value:
        base, exponent = inputs
        return cx.op("power", base, cx.astype(exponent, cx.dtype(base)))


@converter
class Reciprocal(Converter):
    """Reciprocal -> graph.divide(1, x)."""

    graph_ops = ("divide",)

    @classmethod
    def _impl_v13(cls, cx: GraphBuilder, node: Node, inputs: list[Value]) -> Value:
        return cx.op("divide", cx.scalar(1, inputs[0]), inputs[0])


class Variadic(Converter):
    """Max/Min/Sum/Mean of any number of inputs: a chain of the binary graph op."""


    @classmethod
    def _impl_v13(cls, cx: GraphBuilder, node: Node, inputs: list[Value]) -> Value:
        result = inputs[0]
        for other in inputs[1:]:
            result = cx.op(cls.graph_op, result, other)
        if node.op_type == "Mean" and len(inputs) > 1:
            result = cx.op("divide", result, cx.scalar(len(inputs), result))
        return result


for _onnx, _graph in {"Max": "maximum", "Min": "minimum", "Sum": "add", "Mean": "add"}.items():
    converter(type(_onnx, (Variadic,), {
        "graph_op": _graph, "graph_ops": (_graph,) + (("divide",) if _onnx == "Mean" else ()),
        "__doc__": f"{_onnx} of its inputs -> a chain of graph.{_graph}"}))


@converter
class LeakyRelu(Converter):
    """LeakyRelu(alpha) -> graph.leaky_relu."""

    graph_ops = ("leaky_relu",)

    @classmethod
    def _impl_v13(cls, cx: GraphBuilder, node: Node, inputs: list[Value]) -> Value:
        return cx.op("leaky_relu", inputs[0], alpha=float(node.attr("alpha", 0.01)))


def _scalar(value: np.ndarray | None) -> np.generic | None:
    return None if value is None else np.asarray(value).reshape(-1)[0]


@converter
class Clip(Converter):
    """Clip(x, min, max) -> graph.clip; min and max (inputs since opset 11) must be constants;
    a missing bound is infinite. Integer tensors use maximum/minimum."""

    graph_ops = ("clip",)
    constants = {1: "min", 2: "max"}

    @classmethod
    def check(cls, node: Node) -> list[str]:
        problems: list[str] = []
        for i in (1, 2):
            value = node.input(i).constant
            if value is not None:
                require(value.size == 1, f"input {i} ('{cls.constants[i]}') must be a scalar, "
                        f"got shape {list(value.shape)}", problems)
        return problems

    @classmethod
    def _impl_v13(cls, cx: GraphBuilder, node: Node, inputs: list[Value]) -> Value:
        x = inputs[0]
        lo, hi = (_scalar(inputs[i]) if len(inputs) > i else None for i in (1, 2))
        if np.issubdtype(cx.dtype(x), np.floating):
            return cx.op("clip", x, min=float(lo) if lo is not None else float("-inf"),
                         max=float(hi) if hi is not None else float("inf"))
        if lo is not None:
            x = cx.op("maximum", x, cx.scalar(lo, x))
        if hi is not None:
            x = cx.op("minimum", x, cx.scalar(hi, x))
        return x


@converter
class Gelu(Converter):
    """Gelu (opset 20) -> graph.gelu, approximate "none" or "tanh"."""

    graph_ops = ("gelu",)

    @classmethod
    def check(cls, node: Node) -> list[str]:
        approximate = node.attr("approximate", "none")
        if approximate not in ("none", "tanh"):
            return [f"approximate={approximate!r} is not supported (only 'none', 'tanh')"]
        return []

    @classmethod
    def _impl_v20(cls, cx: GraphBuilder, node: Node, inputs: list[Value]) -> Value:
        return cx.op("gelu", inputs[0], approximate=node.attr("approximate", "none"))


#: ONNX element types a Cast may produce.
CAST_TYPES = {onnx.TensorProto.FLOAT: np.float32, onnx.TensorProto.DOUBLE: np.float64,
              onnx.TensorProto.FLOAT16: np.float16, onnx.TensorProto.INT8: np.int8,
              onnx.TensorProto.INT16: np.int16, onnx.TensorProto.INT32: np.int32,
              onnx.TensorProto.INT64: np.int64, onnx.TensorProto.BOOL: np.bool_}


@converter
class Cast(Converter):
    """Cast(to) -> graph.astype (nothing when the type does not change)."""

    graph_ops = ("astype",)

    @classmethod
    def check(cls, node: Node) -> list[str]:
        to = node.attr("to")
        if to not in CAST_TYPES:
            name = onnx.TensorProto.DataType.Name(to) if to is not None else "nothing"
            return [f"to={name} is not supported (supported: "
                    f"{', '.join(onnx.TensorProto.DataType.Name(t) for t in CAST_TYPES)})"]
        return []

    @classmethod
    def _impl_v13(cls, cx: GraphBuilder, node: Node, inputs: list[Value]) -> Value:
        return cx.astype(inputs[0], np.dtype(CAST_TYPES[node.attr("to")]))


@converter
class CastLike(Converter):
    """CastLike(x, like) -> graph.astype to like's type."""

    graph_ops = ("astype",)

    @classmethod
    def _impl_v15(cls, cx: GraphBuilder, node: Node, inputs: list[Value]) -> Value:
        dtype = cx.dtype(inputs[1])
        try:
            mlir_element_type(dtype)
        except TypeError as e:
            raise cx.error(str(e)) from None
        return cx.astype(inputs[0], dtype)


@converter
class Identity(Converter):
    """Identity -> its input."""

    @classmethod
    def _impl_v13(cls, cx: GraphBuilder, node: Node, inputs: list[Value]) -> Value:
        return inputs[0]


@converter
class Dropout(Converter):
    """Dropout in inference -> its input (training_mode must be absent or false; no mask)."""

    constants = {2: "training_mode"}

    @classmethod
    def check(cls, node: Node) -> list[str]:
        problems: list[str] = []
        training = node.input(2).constant
        require(training is None or not bool(training), "training_mode=true is not supported "
                "(mlcir imports models for inference)", problems)
        require(len(node.outputs) < 2 or not node.outputs[1], "the mask output is not supported",
                problems)
        return problems

    @classmethod
    def _impl_v13(cls, cx: GraphBuilder, node: Node, inputs: list[Value]) -> Value:
        return inputs[0]
