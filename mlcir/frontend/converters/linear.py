"""Gemm and MatMul -> graph.matmul (with permute_dims, scaling and the bias add for Gemm)."""

from __future__ import annotations

from ..builder import GraphBuilder
from ..converter import Converter, Node, Value, converter


@converter
class MatMul(Converter):
    """MatMul -> graph.matmul (numpy.matmul: batched, broadcast, 1-D operands promoted)."""

    graph_ops = ("matmul",)

    @classmethod
    def _impl_v13(cls, cx: GraphBuilder, node: Node, inputs: list[Value]) -> Value:
        return cx.op("matmul", inputs[0], inputs[1])


@converter
class Gemm(Converter):
    """Gemm: ``alpha * A' @ B' + beta * C`` -> permute_dims (transA/transB), matmul, multiply
    (only when alpha or beta is not 1) and add (C broadcast). Constant operands fold: a
    transposed weight is stored transposed."""

    graph_ops = ("matmul", "add")

    @classmethod
    def check(cls, node: Node) -> list[str]:
        problems = []
        for i, role in ((0, "A"), (1, "B")):
            rank = node.input(i).rank
            if rank is not None and rank != 2:
                problems.append(f"input {role} must be a matrix, got rank {rank}")
        return problems

    @classmethod
    def _impl_v13(cls, cx: GraphBuilder, node: Node, inputs: list[Value]) -> Value:
        a, b = inputs[0], inputs[1]
        c = inputs[2] if len(inputs) > 2 else None
        if node.attr("transA", 0):
            a = cx.op("permute_dims", a, axes=[1, 0])
        if node.attr("transB", 0):
            b = cx.op("permute_dims", b, axes=[1, 0])
        alpha, beta = float(node.attr("alpha", 1.0)), float(node.attr("beta", 1.0))
        if alpha != 1.0 and cx.is_constant(b):
            b = cx.op("multiply", b, cx.scalar(alpha, b))  # folded into the weight
            alpha = 1.0
        y = cx.op("matmul", a, b)
        if alpha != 1.0:
            y = cx.op("multiply", y, cx.scalar(alpha, y))
        if c is not None:
            if beta != 1.0:
                c = cx.op("multiply", c, cx.scalar(beta, c))
            y = cx.op("add", y, c)
        return y
