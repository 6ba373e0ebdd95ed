"""Shape arithmetic on symbolic dims at import (mlcir/frontend/symbolic.py, dialects/dims.py):
Shape/Size/Gather/Concat/Unsqueeze/Slice/Cast/arithmetic chains fold into symbolic shape
values; Reshape, Expand, Slice, ConstantOfShape and Range with computed arguments import when
the result is expressible (and run at several sizes against onnxruntime), and are an error
naming the node when not."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import mlcir
from mlcir.dialects.dims import Dim, NotExpressible, compare, divide_exactly
from mlcir.errors import FrontendError
from mlcir.frontend import from_onnx

ort = pytest.importorskip("onnxruntime")

F32, I64 = TensorProto.FLOAT, TensorProto.INT64
N, S = Dim.symbol("N"), Dim.symbol("S")


# ----------------------------------------------------------------------------------------------
# Dims as polynomials

def test_dims_are_polynomials_over_the_symbols():
    assert str(N * S * 4) == "4*N*S"
    assert divide_exactly(N * S * 4, S * 2) == 2 * N
    assert divide_exactly(N * 6, 3) == 2 * N
    assert (N + 1) - 1 == N and (N - N) == 0 and isinstance(N - N, int)
    assert str(S - 1) == "S - 1"
    assert compare(N * S + N, N) == 1 and compare(N, -1) == 1 and compare(N + 2, N) == 1
    with pytest.raises(NotExpressible, match="not divisible"):
        divide_exactly(N * 4, 3)
    with pytest.raises(NotExpressible, match="cannot divide"):
        divide_exactly(N * S, N + S)
    with pytest.raises(NotExpressible, match="compare differently"):
        compare(N, 4)
    with pytest.raises(NotExpressible, match="compare differently"):
        compare(N * S, N)  # equal when S is 1


def test_dim_text_is_what_the_runtime_parses():
    from mlcir.runtime.shapes import compile_expression

    for dim in (N * S * 4, S - 1, N * N + 3 * S - 2):
        value = compile_expression(str(dim))({"N": 5, "S": 7})
        assert value == dim.evaluate({"N": 5, "S": 7})


# ----------------------------------------------------------------------------------------------
# Models with symbolic inputs, run at several sizes against onnxruntime

def _model(nodes, inputs, outputs, initializers=()) -> onnx.ModelProto:
    graph = helper.make_graph(nodes, "symbolic", inputs, outputs, initializer=list(initializers))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def _ints(name: str, values) -> onnx.TensorProto:
    return numpy_helper.from_array(np.array(values, np.int64), name)


def _check_sizes(model: onnx.ModelProto, make_inputs, sizes) -> None:
    """Build once, then compare every output with onnxruntime at each size."""
    ex = mlcir.build(from_onnx(model))
    session = ort.InferenceSession(model.SerializeToString(),
                                   providers=["CPUExecutionProvider"])
    for size in sizes:
        inputs = make_inputs(*size)
        got = ex.main.run(inputs)
        for value, want in zip(got.values(), session.run(None, inputs)):
            assert value.shape == want.shape
            np.testing.assert_allclose(value, want, rtol=1e-5, atol=1e-6)


def _f32(*shape: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def test_computed_reshape_keeps_two_dynamic_dims():
    """x.view(x.shape[0], x.shape[1], 2, 3): Shape -> Gather -> Unsqueeze -> Concat."""
    nodes = [helper.make_node("Shape", ["x"], ["s"]),
             helper.make_node("Gather", ["s", "zero"], ["n"], axis=0),
             helper.make_node("Gather", ["s", "one"], ["m"], axis=0),
             helper.make_node("Unsqueeze", ["n", "axes"], ["n1"]),
             helper.make_node("Unsqueeze", ["m", "axes"], ["m1"]),
             helper.make_node("Concat", ["n1", "m1", "tail"], ["target"], axis=0),
             helper.make_node("Reshape", ["x", "target"], ["y"], name="split_heads")]
    model = _model(nodes, [helper.make_tensor_value_info("x", F32, ["N", "S", 6])],
                   [helper.make_tensor_value_info("y", F32, ["N", "S", 2, 3])],
                   [_ints("zero", 0), _ints("one", 1), _ints("axes", [0]),
                    _ints("tail", [2, 3])])
    _check_sizes(model, lambda n, s: {"x": _f32(n, s, 6)}, [(1, 4), (3, 7)])


def test_unsqueeze_in_front_of_two_dynamic_dims():
    """[N, S, 6] -> [1, N, S, 2, 3] (nn.MultiheadAttention's unflatten): the dims of x kept
    at other positions (-2 - j in graph.reshape)."""
    nodes = [helper.make_node("Unsqueeze", ["x", "zero"], ["u"]),
             helper.make_node("Shape", ["x"], ["s"]),
             helper.make_node("Slice", ["s", "zero", "two"], ["ns"]),
             helper.make_node("Concat", ["one", "ns", "tail"], ["target"], axis=0),
             helper.make_node("Reshape", ["u", "target"], ["y"])]
    model = _model(nodes, [helper.make_tensor_value_info("x", F32, ["N", "S", 6])],
                   [helper.make_tensor_value_info("y", F32, [1, "N", "S", 2, 3])],
                   [_ints("zero", [0]), _ints("one", [1]), _ints("two", [2]),
                    _ints("tail", [2, 3])])
    _check_sizes(model, lambda n, s: {"x": _f32(n, s, 6)}, [(1, 4), (3, 2)])


def test_flatten_and_unflatten_restart_from_the_first_reshape():
    """[N, S, 4] -> [N*S, 4] -> [N, S, 4] (the input's own shape): the second reshape
    restarts from the first one's input; with an op between them it cannot (graph.reshape
    has no operand that could give S), an error naming the node."""
    nodes = [helper.make_node("Reshape", ["x", "flat"], ["f"]),
             helper.make_node("Shape", ["x"], ["s"]),
             helper.make_node("Reshape", ["f", "s"], ["y"]),
             helper.make_node("Size", ["x"], ["count"])]
    model = _model(nodes, [helper.make_tensor_value_info("x", F32, ["N", "S", 4])],
                   [helper.make_tensor_value_info("y", F32, ["N", "S", 4]),
                    helper.make_tensor_value_info("count", I64, []),
                    helper.make_tensor_value_info("f", F32, [None, 4])],
                   [_ints("flat", [-1, 4])])
    _check_sizes(model, lambda n, s: {"x": _f32(n, s, 4)}, [(2, 3), (5, 1)])
    model.graph.node.insert(1, helper.make_node("Relu", ["f"], ["r"]))
    model.graph.node[3].input[0] = "r"
    model.graph.node[3].name = "unflatten"
    with pytest.raises(FrontendError, match=r"unflatten.*\[N\*S, 4\] to \[N, S, 4\].*more "
                                            "than one dynamic dim"):
        from_onnx(model)


def test_constant_of_shape_range_and_expand_with_symbolic_shapes():
    """The attention-mask idioms: ConstantOfShape(Shape(x)), Range(0, S), Expand to [N, S]."""
    value = numpy_helper.from_array(np.array([1.5], np.float32))
    nodes = [helper.make_node("Shape", ["x"], ["s"]),
             helper.make_node("ConstantOfShape", ["s"], ["ones"], value=value),
             helper.make_node("Gather", ["s", "one"], ["len"], axis=0),
             helper.make_node("Range", ["start", "len", "step"], ["positions"]),
             helper.make_node("Range", ["two", "len", "step"], ["shifted"], name="shifted"),
             helper.make_node("Cast", ["positions"], ["pf"], to=F32),
             helper.make_node("Expand", ["pf", "s"], ["grid"]),
             helper.make_node("Add", ["grid", "ones"], ["y"]),
             helper.make_node("Mul", ["y", "x"], ["z"])]
    model = _model(nodes, [helper.make_tensor_value_info("x", F32, ["N", "S"])],
                   [helper.make_tensor_value_info("z", F32, ["N", "S"])],
                   [_ints("one", 1), _ints("start", 0), _ints("step", 1), _ints("two", 2)])
    with pytest.raises(FrontendError, match=r"shifted.*a range of length S - 2.*symbolic size"):
        from_onnx(model)
    model.graph.node.remove(model.graph.node[4])  # the Range from 2
    _check_sizes(model, lambda n, s: {"x": _f32(n, s)}, [(1, 1), (3, 5)])


def test_slice_with_symbolic_bounds():
    """table[:, :S] (a static axis cut at a symbolic size: a gather of an iota) and
    x[:, 1:] (through the end of a dynamic axis)."""
    table = numpy_helper.from_array(np.arange(32, dtype=np.float32).reshape(1, 32), "table")
    nodes = [helper.make_node("Shape", ["x"], ["s"]),
             helper.make_node("Slice", ["s", "one", "two"], ["len"]),
             helper.make_node("Slice", ["table", "zero", "len", "one"], ["t"]),
             helper.make_node("Slice", ["x", "one", "big", "one"], ["rest"]),
             helper.make_node("Add", ["x", "t"], ["y"])]
    model = _model(nodes, [helper.make_tensor_value_info("x", F32, ["N", "S"])],
                   [helper.make_tensor_value_info("y", F32, ["N", "S"]),
                    helper.make_tensor_value_info("rest", F32, ["N", None])],
                   [table, _ints("zero", [0]), _ints("one", [1]), _ints("two", [2]),
                    _ints("big", [2**62])])
    _check_sizes(model, lambda n, s: {"x": _f32(n, s)}, [(2, 5), (1, 9)])


def test_shape_arithmetic_that_does_not_fold_is_an_error_naming_the_reshape():
    """N == 4 cannot be decided on the symbols: the Where is computed at run time, and the
    Reshape that needs its value says so, naming both nodes."""
    nodes = [helper.make_node("Shape", ["x"], ["s"]),
             helper.make_node("Equal", ["s", "four"], ["is4"], name="is_four"),
             helper.make_node("Where", ["is4", "s", "s"], ["t"], name="pick"),
             helper.make_node("Reshape", ["x", "t"], ["y"], name="reshape_by_pick")]
    model = _model(nodes, [helper.make_tensor_value_info("x", F32, ["N", 3])],
                   [helper.make_tensor_value_info("y", F32, ["N", 3])], [_ints("four", 4)])
    with pytest.raises(FrontendError, match=r"reshape_by_pick.*computed at run time.*"
                                            r"'is_four': N and 4 compare differently"):
        from_onnx(model)
