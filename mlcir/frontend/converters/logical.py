"""Comparisons, boolean logic, selection, float tests and bit shifts: the ops of attention
masks (their results or operands are boolean tensors, stored as bytes at run time)."""

from __future__ import annotations

from ..builder import GraphBuilder
from ..converter import Converter, Node, Value, converter


class Elementwise(Converter):
    """All inputs (numpy broadcasting): ``graph_op`` of them."""

    @classmethod
    def _impl_v13(cls, cx: GraphBuilder, node: Node, inputs: list[Value]) -> Value:
        return cx.op(cls.graph_op, *inputs)


# ONNX op -> graph op. Equal and Where mean the same on unsigned integers stored as signless
# ones (bit patterns); the ordering comparisons do not.
_ELEMENTWISE = {"Equal": "equal", "Less": "less", "LessOrEqual": "less_equal",
                "Greater": "greater", "GreaterOrEqual": "greater_equal", "And": "logical_and",
                "Or": "logical_or", "Xor": "logical_xor", "Not": "logical_not",
                "Where": "where", "IsNaN": "isnan"}
for _onnx, _graph in _ELEMENTWISE.items():
    converter(type(_onnx, (Elementwise,), {
        "graph_op": _graph, "unsigned_inputs": _onnx in ("Equal", "Where"),
        "__doc__": f"{_onnx} -> graph.{_graph}"}))


@converter
class IsInf(Converter):
    """IsInf(detect_positive, detect_negative) -> graph.isinf."""

    graph_ops = ("isinf",)

    @classmethod
    def _impl_v13(cls, cx: GraphBuilder, node: Node, inputs: list[Value]) -> Value:
        return cx.op("isinf", inputs[0], detect_positive=int(node.attr("detect_positive", 1)),
                     detect_negative=int(node.attr("detect_negative", 1)))


@converter
class BitShift(Converter):
    """BitShift(direction) on unsigned integers -> graph.shift_left / shift_right_logical
    (the unsigned tensors are stored as the signless integers of their width)."""

    graph_ops = ("shift_left", "shift_right_logical")
    unsigned_inputs = True

    @classmethod
    def check(cls, node: Node) -> list[str]:
        direction = node.attr("direction")
        if direction not in ("LEFT", "RIGHT"):
            return [f"direction={direction!r} must be 'LEFT' or 'RIGHT'"]
        return []

    @classmethod
    def _impl_v13(cls, cx: GraphBuilder, node: Node, inputs: list[Value]) -> Value:
        op = "shift_left" if node.attr("direction") == "LEFT" else "shift_right_logical"
        return cx.op(op, inputs[0], inputs[1])
