"""If, Loop and Scan, flattened at import (mlcir/frontend/control_flow.py), against
onnxruntime: an If on a run-time condition (both branches, one selected) and on one folded
from static shapes (branches of different shapes), a Loop with a constant trip count,
loop-carried and scan outputs and the iteration number, an If nested in a Loop body reading
the body's and the outer graph's values, a Scan in both directions; and the refusals (a while
loop, a run-time trip count, branches whose shapes differ under a run-time condition), each
naming the node and why."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import mlcir
from mlcir.errors import FrontendError
from mlcir.frontend import from_onnx

F32, I64, BOOL = TensorProto.FLOAT, TensorProto.INT64, TensorProto.BOOL
W = np.random.default_rng(3).standard_normal((3, 3)).astype(np.float32) * 0.5


def _model(nodes: list[onnx.NodeProto], outputs: list[tuple[str, list[int]]],
           x_shape: list = (2, 3)) -> onnx.ModelProto:
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", F32, list(x_shape))],
        [helper.make_tensor_value_info(n, F32, s) for n, s in outputs],
        [numpy_helper.from_array(W, "w"), numpy_helper.from_array(np.array(0, np.float32),
                                                                   "zero")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def _branch(name: str, nodes: list[onnx.NodeProto], out: str, shape: list[int]
            ) -> onnx.GraphProto:
    return helper.make_graph(nodes, name, [], [helper.make_tensor_value_info(out, F32, shape)])


def _check(model: onnx.ModelProto, x: np.ndarray) -> None:
    expected = ort.InferenceSession(model.SerializeToString(),
                                    providers=["CPUExecutionProvider"]).run(None, {"x": x})
    got = mlcir.build(from_onnx(model)).main.run({"x": x})
    for out, want in zip(model.graph.output, expected):
        np.testing.assert_allclose(got[out.name], want, rtol=1e-5, atol=1e-6,
                                   err_msg=out.name)


def _select_model() -> onnx.ModelProto:
    """y = x @ w if sum(x) > 0 else x + 1 (branch constant), both read the outer x."""
    then = _branch("then", [helper.make_node("MatMul", ["x", "w"], ["t"])], "t", [2, 3])
    other = _branch("else", [
        helper.make_node("Constant", [], ["one"], value=numpy_helper.from_array(
            np.array(1, np.float32), "one")),
        helper.make_node("Add", ["x", "one"], ["e"])], "e", [2, 3])
    return _model([helper.make_node("ReduceSum", ["x"], ["s"], keepdims=0),
                   helper.make_node("Greater", ["s", "zero"], ["cond"]),
                   helper.make_node("If", ["cond"], ["y"], name="branchy", then_branch=then,
                                    else_branch=other)], [("y", [2, 3])])


@pytest.mark.parametrize("sign", [1, -1])
def test_if_on_a_run_time_condition_selects_a_branch(sign):
    _check(_select_model(), sign * (np.abs(np.random.default_rng(1).standard_normal((2, 3)))
                                    .astype(np.float32) + 0.1))


def test_if_on_a_run_time_condition_with_a_symbolic_batch():
    """Branches of shape [N, 3] (one symbol): selected at run time, built once."""
    then = _branch("then", [helper.make_node("MatMul", ["x", "w"], ["t"])], "t", ["N", 3])
    other = _branch("else", [helper.make_node("Neg", ["x"], ["e"])], "e", ["N", 3])
    model = _model([helper.make_node("ReduceSum", ["x"], ["s"], keepdims=0),
                    helper.make_node("Greater", ["s", "zero"], ["cond"]),
                    helper.make_node("If", ["cond"], ["y"], then_branch=then,
                                     else_branch=other)], [("y", ["N", 3])], x_shape=["N", 3])
    executable = mlcir.build(from_onnx(model))
    session = ort.InferenceSession(model.SerializeToString(),
                                   providers=["CPUExecutionProvider"])
    for rows, sign in ((4, 1), (1, -1)):
        x = sign * np.abs(np.random.default_rng(rows).standard_normal((rows, 3))
                          ).astype(np.float32)
        np.testing.assert_allclose(executable.main.run({"x": x})["y"],
                                   session.run(None, {"x": x})[0], rtol=1e-5, atol=1e-6)


def test_if_on_a_condition_folded_from_shapes_takes_one_branch():
    """Shape(x)[0] == 2 folds at import: only the taken branch (a flatten plus the branch's
    own initializer) is built, so the branches may differ in shape."""
    flat = _branch("then", [helper.make_node("Flatten", ["x"], ["f0"], axis=0),
                            helper.make_node("Add", ["f0", "shift"], ["f"])], "f", [1, 6])
    flat.initializer.append(numpy_helper.from_array(np.arange(6, dtype=np.float32), "shift"))
    same = _branch("else", [helper.make_node("Identity", ["x"], ["i"])], "i", [2, 3])
    two = numpy_helper.from_array(np.array([2], np.int64), "two")
    nodes = [helper.make_node("Shape", ["x"], ["shape"], end=1),
             helper.make_node("Constant", [], ["two"], value=two),
             helper.make_node("Equal", ["shape", "two"], ["eq"]),
             helper.make_node("Squeeze", ["eq"], ["cond"]),
             helper.make_node("If", ["cond"], ["y"], then_branch=flat, else_branch=same)]
    _check(_model(nodes, [("y", [1, 6])]), np.arange(6, dtype=np.float32).reshape(2, 3))


def _loop_body(with_if: bool = False) -> onnx.GraphProto:
    """h' = tanh(h @ w + x) + i (the iteration number); scan output h'. ``with_if``: h' is
    negated on the first two iterations (an If on i < 2, which folds once unrolled)."""
    nodes = [helper.make_node("MatMul", ["h", "w"], ["hw"]),
             helper.make_node("Add", ["hw", "x"], ["pre"]),
             helper.make_node("Tanh", ["pre"], ["act"]),
             helper.make_node("Cast", ["i"], ["fi"], to=F32),
             helper.make_node("Add", ["act", "fi"], ["h2"]),
             helper.make_node("Identity", ["c"], ["c2"])]
    out = "h2"
    if with_if:
        two = numpy_helper.from_array(np.array(2, np.int64), "limit")
        negated = _branch("neg", [helper.make_node("Neg", ["h2"], ["n"])], "n", [2, 3])
        kept = _branch("keep", [helper.make_node("Mul", ["h2", "x"], ["k"])], "k", [2, 3])
        nodes += [helper.make_node("Constant", [], ["limit"], value=two),
                  helper.make_node("Less", ["i", "limit"], ["early"]),
                  helper.make_node("If", ["early"], ["h3"], then_branch=negated,
                                   else_branch=kept)]
        out = "h3"
    nodes.append(helper.make_node("Identity", [out], ["scan"]))
    return helper.make_graph(
        nodes, "body", [helper.make_tensor_value_info("i", I64, []),
                        helper.make_tensor_value_info("c", BOOL, []),
                        helper.make_tensor_value_info("h", F32, [2, 3])],
        [helper.make_tensor_value_info("c2", BOOL, []),
         helper.make_tensor_value_info(out, F32, [2, 3]),
         helper.make_tensor_value_info("scan", F32, [2, 3])])


@pytest.mark.parametrize("with_if", [False, True], ids=["plain", "nested-if"])
def test_loop_with_a_constant_trip_count_is_unrolled(with_if):
    trips = numpy_helper.from_array(np.array(4, np.int64), "trips")
    nodes = [helper.make_node("Constant", [], ["trips"], value=trips),
             helper.make_node("Loop", ["trips", "", "x"], ["h_final", "hs"], name="steps",
                              body=_loop_body(with_if))]
    model = _model(nodes, [("h_final", [2, 3]), ("hs", [4, 2, 3])])
    _check(model, np.random.default_rng(2).standard_normal((2, 3)).astype(np.float32))


def test_scan_over_static_axes_in_both_directions():
    """A running sum of x's rows (axis 0, forwards) times the columns of x^T read along
    axis 1 backwards; scan outputs stacked along axis 0, and reversed along axis -1."""
    body = helper.make_graph(
        [helper.make_node("Add", ["acc", "row"], ["acc2"]),
         helper.make_node("Mul", ["acc2", "col"], ["prod"]),
         helper.make_node("Tanh", ["prod"], ["out"])],
        "body", [helper.make_tensor_value_info("acc", F32, [3]),
                 helper.make_tensor_value_info("row", F32, [3]),
                 helper.make_tensor_value_info("col", F32, [3])],
        [helper.make_tensor_value_info("acc2", F32, [3]),
         helper.make_tensor_value_info("prod", F32, [3]),
         helper.make_tensor_value_info("out", F32, [3])])
    nodes = [helper.make_node("Transpose", ["x"], ["xt"]),
             helper.make_node("Constant", [], ["init"], value=numpy_helper.from_array(
                 np.zeros(3, np.float32), "init")),
             helper.make_node("Scan", ["init", "x", "xt"], ["final", "prods", "outs"],
                              name="scanner", body=body, num_scan_inputs=2,
                              scan_input_axes=[0, 1], scan_input_directions=[0, 1],
                              scan_output_axes=[0, -1], scan_output_directions=[0, 1])]
    model = _model(nodes, [("final", [3]), ("prods", [4, 3]), ("outs", [3, 4])],
                   x_shape=[4, 3])
    _check(model, np.random.default_rng(4).standard_normal((4, 3)).astype(np.float32))


def _refusal(model: onnx.ModelProto) -> str:
    with pytest.raises(FrontendError) as info:
        from_onnx(model)
    return str(info.value)


def test_a_while_loop_and_a_run_time_trip_count_are_refused():
    body = _loop_body()
    body.node[-2].CopyFrom(helper.make_node("Not", ["c"], ["c2"]))  # the body's condition
    trips = numpy_helper.from_array(np.array(3, np.int64), "trips")
    message = _refusal(_model([
        helper.make_node("Constant", [], ["trips"], value=trips),
        helper.make_node("Loop", ["trips", "", "x"], ["h_final", "hs"], name="whiley",
                         body=body)], [("h_final", [2, 3]), ("hs", [3, 2, 3])]))
    assert "node 'whiley' (Loop, opset 17): the body computes its condition" in message
    message = _refusal(_model([
        helper.make_node("ReduceSum", ["x"], ["s"], keepdims=0),
        helper.make_node("Cast", ["s"], ["n"], to=I64),
        helper.make_node("Loop", ["n", "", "x"], ["h_final", "hs"], name="counted",
                         body=_loop_body())], [("h_final", [2, 3]), ("hs", [None, 2, 3])]))
    assert "node 'counted' (Loop, opset 17): the trip count M is known only at run time" \
        in message


def test_branches_of_different_shapes_under_a_run_time_condition_are_refused():
    model = _select_model()
    flat = _branch("then", [helper.make_node("Flatten", ["x"], ["f"], axis=0)], "f", [1, 6])
    next(a for a in model.graph.node[2].attribute if a.name == "then_branch").g.CopyFrom(flat)
    model.graph.output[0].CopyFrom(helper.make_tensor_value_info("y", F32, [None, None]))
    message = _refusal(model)
    assert "node 'branchy' (If, opset 17): output 0 ('y') has the shapes [1, 6] and [2, 3]" \
        in message and "known only at run time" in message
