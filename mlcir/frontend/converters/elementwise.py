"""Elementwise ops: unary math, broadcasting binary arithmetic, activations, casts."""

from __future__ import annotations

import numpy as np
import onnx

from mlcir.dialects.dtypes import mlir_element_type

from ..builder import GraphBuilder
from ..converter import Converter, Node, Value, converter, require

# ONNX op -> graph op (the same function, elementwise)
_UNARY = {"Relu": "relu", "Neg": "negative", "Exp": "exp", "Log": "log", "Sqrt": "sqrt",
          "Tanh": "tanh", "Sigmoid": "sigmoid", "Erf": "erf", "Abs": "abs",
          "Sin": "sin", "Cos": "cos", "Tan": "tan", "Asin": "asin", "Acos": "acos",
          "Atan": "atan", "Sinh": "sinh", "Cosh": "cosh", "Asinh": "asinh", "Acosh": "acosh",
          "Atanh": "atanh", "Floor": "floor", "Ceil": "ceil", "Round": "round", "Sign": "sign"}
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
    converter(type(_onnx, (Binary,), {"graph_op": _graph, "unsigned_inputs": _onnx != "Div",
                                      "__doc__": f"{_onnx} -> graph.{_graph}"}))


class Bitwise(Converter):
    """BitwiseAnd/Or/Xor (opset 18): ``graph_op`` of two integer tensors, broadcasting."""

    unsigned_inputs = True

    @classmethod
    def _impl_v18(cls, cx: GraphBuilder, node: Node, inputs: list[Value]) -> Value:
        return cx.op(cls.graph_op, inputs[0], inputs[1])


for _onnx, _graph in {"BitwiseAnd": "bitwise_and", "BitwiseOr": "bitwise_or",
                      "BitwiseXor": "bitwise_xor"}.items():
    converter(type(_onnx, (Bitwise,), {"graph_op": _graph,
                                       "__doc__": f"{_onnx} -> graph.{_graph}"}))


@converter
class BitwiseNot(Converter):
    """BitwiseNot (opset 18) -> graph.bitwise_not."""

    graph_op = "bitwise_not"
    unsigned_inputs = True

    @classmethod
    def _impl_v18(cls, cx: GraphBuilder, node: Node, inputs: list[Value]) -> Value:
        return cx.op("bitwise_not", inputs[0])


@converter
class Mod(Converter):
    """Mod -> graph.mod (fmod=0: the divisor's sign, integers only in ONNX) or graph.fmod
    (fmod=1: the dividend's sign, C fmod)."""

    graph_ops = ("mod", "fmod")

    @classmethod
    def check(cls, node: Node) -> list[str]:
        fmod = node.attr("fmod", 0)
        if fmod not in (0, 1):
            return [f"fmod={fmod} must be 0 or 1"]
        info = node.input(0).type
        if fmod == 0 and info is not None and np.issubdtype(info[1], np.floating):
            return ["fmod=0 on floating-point inputs is not allowed by ONNX (set fmod=1)"]
        return []

    @classmethod
    def _impl_v13(cls, cx: GraphBuilder, node: Node, inputs: list[Value]) -> Value:
        return cx.op("fmod" if node.attr("fmod", 0) else "mod", inputs[0], inputs[1])


@converter
class ThresholdedRelu(Converter):
    """ThresholdedRelu(alpha) -> graph.thresholded_relu."""

    graph_ops = ("thresholded_relu",)

    @classmethod
    def _impl_v13(cls, cx: GraphBuilder, node: Node, inputs: list[Value]) -> Value:
        return cx.op("thresholded_relu", inputs[0], alpha=float(node.attr("alpha", 1.0)))


@converter
class Shrink(Converter):
    """Shrink(lambd, bias) -> graph.shrink (float tensors)."""

    graph_ops = ("shrink",)

    @classmethod
    def _impl_v13(cls, cx: GraphBuilder, node: Node, inputs: list[Value]) -> Value:
        return cx.op("shrink", inputs[0], lambd=float(node.attr("lambd", 0.5)),
                     bias=float(node.attr("bias", 0.0)))


# Activations decomposed into graph ops at import (each is a short elementwise chain, which
# graph-fuse-ops makes one kernel) ----------------------------------------------------------


def _softplus(cx: GraphBuilder, x: Value) -> Value:
    """log(1 + e^x) as max(x, 0) + log(1 + e^-|x|): no overflow for large x."""
    tail = cx.op("exp", cx.op("negative", cx.op("abs", x)))
    return cx.op("add", cx.op("relu", x), cx.op("log", cx.op("add", cx.scalar(1, x), tail)))


def _elu(cx: GraphBuilder, x: Value, alpha: float) -> Value:
    """x if x > 0 else alpha (e^x - 1), as max(x, 0) + alpha (e^min(x, 0) - 1)."""
    negative_part = cx.op("subtract", cx.op("exp", cx.op("minimum", x, cx.scalar(0, x))),
                          cx.scalar(1, x))
    return cx.op("add", cx.op("relu", x), cx.op("multiply", cx.scalar(alpha, x), negative_part))


def _hard_sigmoid(cx: GraphBuilder, x: Value, alpha: float, beta: float) -> Value:
    """max(0, min(1, alpha x + beta))."""
    linear = cx.op("add", cx.op("multiply", x, cx.scalar(alpha, x)), cx.scalar(beta, x))
    return cx.op("clip", linear, min=0.0, max=1.0)


class Activation(Converter):
    """An activation built from other graph ops by ``build(cx, node, x)``."""

    @classmethod
    def _impl_v13(cls, cx: GraphBuilder, node: Node, inputs: list[Value]) -> Value:
        return cls.build(cx, node, inputs[0])


@converter
class Softplus(Activation):
    """Softplus -> relu(x) + log(1 + exp(-abs(x)))."""

    graph_ops = ("relu", "add", "log", "exp", "negative", "abs")

    @staticmethod
    def build(cx: GraphBuilder, node: Node, x: Value) -> Value:
        return _softplus(cx, x)


@converter
class Softsign(Activation):
    """Softsign -> x / (1 + abs(x))."""

    graph_ops = ("divide", "add", "abs")

    @staticmethod
    def build(cx: GraphBuilder, node: Node, x: Value) -> Value:
        return cx.op("divide", x, cx.op("add", cx.scalar(1, x), cx.op("abs", x)))


@converter
class Mish(Activation):
    """Mish -> x * tanh(softplus(x))."""

    graph_ops = ("multiply", "tanh", *Softplus.graph_ops)

    @staticmethod
    def build(cx: GraphBuilder, node: Node, x: Value) -> Value:
        return cx.op("multiply", x, cx.op("tanh", _softplus(cx, x)))


@converter
class Elu(Activation):
    """Elu(alpha) -> relu(x) + alpha * (exp(min(x, 0)) - 1)."""

    graph_ops = ("relu", "add", "multiply", "subtract", "exp", "minimum")

    @staticmethod
    def build(cx: GraphBuilder, node: Node, x: Value) -> Value:
        return _elu(cx, x, float(node.attr("alpha", 1.0)))


@converter
class Selu(Activation):
    """Selu(alpha, gamma) -> gamma * elu_alpha(x)."""

    graph_ops = Elu.graph_ops

    @staticmethod
    def build(cx: GraphBuilder, node: Node, x: Value) -> Value:
        alpha = float(node.attr("alpha", 1.67326319217681884765625))
        gamma = float(node.attr("gamma", 1.05070102214813232421875))
        return cx.op("multiply", cx.scalar(gamma, x), _elu(cx, x, alpha))


@converter
class Celu(Activation):
    """Celu(alpha) -> relu(x) + min(0, alpha * (exp(x / alpha) - 1))."""

    graph_ops = ("relu", "add", "minimum", "multiply", "subtract", "exp", "divide")

    @staticmethod
    def build(cx: GraphBuilder, node: Node, x: Value) -> Value:
        alpha = float(node.attr("alpha", 1.0))
        scaled = cx.op("subtract", cx.op("exp", cx.op("divide", x, cx.scalar(alpha, x))),
                       cx.scalar(1, x))
        negative_part = cx.op("minimum", cx.scalar(0, x),
                              cx.op("multiply", cx.scalar(alpha, x), scaled))
        return cx.op("add", cx.op("relu", x), negative_part)


@converter
class HardSigmoid(Activation):
    """HardSigmoid(alpha, beta) -> clip(alpha * x + beta, 0, 1)."""

    graph_ops = ("add", "multiply", "clip")

    @staticmethod
    def build(cx: GraphBuilder, node: Node, x: Value) -> Value:
        return _hard_sigmoid(cx, x, float(node.attr("alpha", 0.2)), float(node.attr("beta", 0.5)))


@converter
class HardSwish(Activation):
    """HardSwish -> x * clip(x / 6 + 1/2, 0, 1)."""

    graph_ops = HardSigmoid.graph_ops

    @staticmethod
    def build(cx: GraphBuilder, node: Node, x: Value) -> Value:
        return cx.op("multiply", x, _hard_sigmoid(cx, x, 1 / 6, 0.5))


@converter
class Swish(Converter):
    """Swish(alpha) (opset 24) -> x * sigmoid(alpha * x)."""

    graph_ops = ("multiply", "sigmoid")

    @classmethod
    def _impl_v24(cls, cx: GraphBuilder, node: Node, inputs: list[Value]) -> Value:
        x = inputs[0]
        alpha = float(node.attr("alpha", 1.0))
        scaled = x if alpha == 1.0 else cx.op("multiply", x, cx.scalar(alpha, x))
        return cx.op("multiply", x, cx.op("sigmoid", scaled))


@converter
class PRelu(Converter):
    """PRelu(x, slope) -> relu(x) + slope * min(x, 0)."""

    graph_ops = ("relu", "add", "multiply", "minimum")

    @classmethod
    def _impl_v13(cls, cx: GraphBuilder, node: Node, inputs: list[Value]) -> Value:
        x, slope = inputs
        negative_part = cx.op("multiply", slope, cx.op("minimum", x, cx.scalar(0, x)))
        return cx.op("add", cx.op("relu", x), negative_part)


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

    unsigned_inputs = True

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
