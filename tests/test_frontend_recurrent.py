"""LSTM, GRU and RNN against onnxruntime (random weights, fixed seeds): directions, initial
states, ``sequence_lens`` (forward and reverse rows of different lengths), ``clip``,
activations with their alphas and betas, ``layout`` 1, GRU's ``linear_before_reset``, LSTM's
``input_forget`` and peepholes; all outputs; a symbolic batch or number of steps. onnxruntime refuses ``layout`` 1, so those cases
compare with its ``layout`` 0 run on transposed inputs and outputs."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from mlir import ir
from onnx import TensorProto, helper

import mlcir
from mlcir.errors import FrontendError
from mlcir.frontend import from_onnx
from mlcir.testing import onnx_models as om

GATES = {"LSTM": 4, "GRU": 3, "RNN": 1}
STEPS, BATCH, WIDTH, HIDDEN = 3, 2, 4, 5


def _model(op: str, attrs: dict, layout: int, inputs: list[str], feeds: dict[str, np.ndarray],
           weights: dict[str, np.ndarray], outputs: list[str]) -> onnx.ModelProto:
    node = helper.make_node(op, inputs, outputs, hidden_size=HIDDEN, layout=layout, **attrs)
    infos = [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(a.dtype), a.shape)
             for n, a in feeds.items()]
    inits = [helper.make_tensor(n, TensorProto.FLOAT, a.shape, a.reshape(-1))
             for n, a in weights.items()]
    graph = helper.make_graph([node], "g", infos, [
        helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in outputs], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)])


def _reference(model_at, feeds: dict[str, np.ndarray], layout: int) -> list[np.ndarray]:
    """onnxruntime's outputs (for layout 1: its layout 0 run, transposed)."""
    if layout:
        feeds = {k: v if k == "lens" else np.ascontiguousarray(v.swapaxes(0, 1))
                 for k, v in feeds.items()}
    session = ort.InferenceSession(model_at(0, feeds).SerializeToString(),
                                   providers=["CPUExecutionProvider"])
    out = session.run(None, feeds)
    if layout:
        out = [out[0].transpose(2, 0, 1, 3)] + [o.swapaxes(0, 1) for o in out[1:]]
    return out


def check(op: str, attrs: dict | None = None, layout: int = 0, bias: bool = True,
          lens: list[int] | None = None, initial: bool = False, peepholes: bool = False,
          outputs: int = 3) -> None:
    attrs = attrs or {}
    directions = 2 if attrs.get("direction") == "bidirectional" else 1
    size = GATES[op] * HIDDEN
    rng = np.random.default_rng(7)

    def rand(*shape: int) -> np.ndarray:
        return (rng.standard_normal(shape) * 0.5).astype(np.float32)

    def batch_major(*shape: int) -> tuple[int, ...]:
        return (shape[1], shape[0], *shape[2:]) if layout else shape

    feeds = {"x": rand(*batch_major(STEPS, BATCH, WIDTH))}
    weights = {"W": rand(directions, size, WIDTH), "R": rand(directions, size, HIDDEN)}
    inputs = ["x", "W", "R", "", "", "", "", ""]
    if bias:
        weights["B"], inputs[3] = rand(directions, 2 * size), "B"
    if lens is not None:
        feeds["lens"], inputs[4] = np.array(lens, np.int32), "lens"
    if initial:
        feeds["h0"], inputs[5] = rand(*batch_major(directions, BATCH, HIDDEN)), "h0"
        if op == "LSTM":
            feeds["c0"], inputs[6] = rand(*batch_major(directions, BATCH, HIDDEN)), "c0"
    if peepholes:
        weights["P"], inputs[7] = rand(directions, 3 * HIDDEN), "P"
    while not inputs[-1]:
        inputs.pop()
    names = ["y", "y_h", "y_c"][:min(outputs, 3 if op == "LSTM" else 2)]

    def model_at(at_layout: int, at_feeds: dict[str, np.ndarray]) -> onnx.ModelProto:
        return _model(op, attrs, at_layout, inputs, at_feeds, weights, names)

    expected = _reference(model_at, feeds, layout)
    model = model_at(layout, feeds)
    for out, want in zip(model.graph.output, expected):
        out.type.tensor_type.shape.Clear()
        for d in want.shape:
            out.type.tensor_type.shape.dim.add().dim_value = d
    got = mlcir.build(from_onnx(model)).main.run(feeds)
    for name, want in zip(names, expected):
        assert got[name].shape == want.shape, name
        np.testing.assert_allclose(got[name], want, rtol=1e-4, atol=1e-5, err_msg=name)


@pytest.mark.parametrize("op", ["RNN", "GRU", "LSTM"])
def test_bidirectional_with_initial_state_and_sequence_lens(op):
    """Both directions, rows of lengths 3 and 1: the reverse direction starts each row at its
    own last step; outputs past a row's length are zero and its state stays."""
    check(op, {"direction": "bidirectional"}, lens=[3, 1], initial=True)


@pytest.mark.parametrize("op", ["RNN", "GRU", "LSTM"])
def test_reverse_clipped_without_bias(op):
    check(op, {"direction": "reverse", "clip": 0.3}, bias=False, lens=[2, 3])


def test_batch_major_layout():
    """layout 1 (shared by the three ops): batch-major X, states and outputs."""
    check("LSTM", {"direction": "bidirectional"}, layout=1, initial=True, peepholes=True)


def test_gru_linear_before_reset():
    check("GRU", {"linear_before_reset": 1, "direction": "bidirectional"}, initial=True)


def test_lstm_input_forget_and_peepholes():
    check("LSTM", {"input_forget": 1, "clip": 0.5}, peepholes=True, initial=True)


@pytest.mark.parametrize("op, attrs", [
    ("LSTM", {"activations": ["HardSigmoid", "LeakyRelu", "ScaledTanh"],
              "activation_alpha": [0.3, 0.1, 0.7], "activation_beta": [0.4, 1.3]}),
    ("GRU", {"activations": ["Affine", "Elu", "ThresholdedRelu", "Softsign"],
             "activation_alpha": [0.6, 0.5, 0.2], "activation_beta": [0.1],
             "direction": "bidirectional"}),
    ("RNN", {"activations": ["Relu", "Softplus"], "direction": "bidirectional"}),
], ids=["LSTM", "GRU", "RNN"])
def test_activations_consume_alphas_and_betas_in_order(op, attrs):
    check(op, attrs)


def test_only_the_first_output():
    check("LSTM", outputs=1)


@pytest.mark.parametrize("symbolic, direction, lens", [
    ("batch", "bidirectional", True), ("batch", "reverse", False),
    ("steps", "bidirectional", True), ("steps", "reverse", False)])
def test_symbolic_steps_or_batch_compile_once_and_run_at_any_size(symbolic, direction, lens):
    """X [T, N, I] with the batch or the number of steps symbolic, with and without a
    run-time sequence_lens: one LSTM build (the loop bound, the slices, the output and the
    result shapes sized at run time), checked at two sizes."""
    op, directions, size = "LSTM", 2 if direction == "bidirectional" else 1, 4 * HIDDEN
    rng = np.random.default_rng(11)
    weights = {n: (rng.standard_normal(s) * 0.5).astype(np.float32) for n, s in (
        ("W", (directions, size, WIDTH)), ("R", (directions, size, HIDDEN)),
        ("B", (directions, 2 * size)))}
    outputs = ["y", "y_h", "y_c"]
    steps, batch = ("T", BATCH) if symbolic == "steps" else (STEPS, "N")
    infos = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [steps, batch, WIDTH])]
    if lens:
        infos.append(helper.make_tensor_value_info("lens", TensorProto.INT32, [batch]))
    node = helper.make_node(op, ["x", "W", "R", "B"] + (["lens"] if lens else []), outputs,
                            hidden_size=HIDDEN, direction=direction)
    graph = helper.make_graph([node], "g", infos, [
        helper.make_tensor_value_info("y", TensorProto.FLOAT,
                                      [steps, directions, batch, HIDDEN])] + [
        helper.make_tensor_value_info(o, TensorProto.FLOAT, [directions, batch, HIDDEN])
        for o in outputs[1:]],
        [helper.make_tensor(n, TensorProto.FLOAT, a.shape, a.reshape(-1))
         for n, a in weights.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)])
    function = mlcir.build(from_onnx(model)).main
    session = ort.InferenceSession(model.SerializeToString(),
                                   providers=["CPUExecutionProvider"])
    for n in (3, 1) if symbolic == "batch" else (5, 2):
        shape = (STEPS, n, WIDTH) if symbolic == "batch" else (n, BATCH, WIDTH)
        feeds = {"x": (rng.standard_normal(shape) * 0.5).astype(np.float32)}
        if lens:
            feeds["lens"] = np.minimum(np.array([2, 3, 1][:shape[1]], np.int32), shape[0])
        got = function.run(feeds)
        for name, want in zip(outputs, session.run(None, feeds)):
            np.testing.assert_allclose(got[name], want, rtol=1e-4, atol=1e-5,
                                       err_msg=f"{name} at {symbolic} {n}")


def _op_names(module) -> list[str]:
    names = []

    def visit(op):
        names.append(op.name)
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)
    return names


def test_the_steps_are_a_loop_not_copies():
    """With a static batch each direction's steps are one scf.for: 4 and 40 steps import to
    the same ops (the issue's "time loop in compiled code, not unrolled per step")."""
    shorter, longer = (_op_names(from_onnx(om.recurrent_layer("LSTM", steps, 1, 4, 3,
                                                                "bidirectional")))
                       for steps in (4, 40))
    assert shorter == longer
    assert shorter.count("scf.for") == 2


def _refused(attrs: dict, x_shape: list) -> str:
    weights = {"W": np.zeros((1, 4, 2), np.float32), "R": np.zeros((1, 4, 4), np.float32)}
    node = helper.make_node("RNN", ["x", "W", "R"], ["y"], name="rnn1", hidden_size=4, **attrs)
    graph = helper.make_graph([node], "g", [
        helper.make_tensor_value_info("x", TensorProto.FLOAT, x_shape)], [
        helper.make_tensor_value_info("y", TensorProto.FLOAT, [x_shape[0], 1, 1, 4])],
        [helper.make_tensor(n, TensorProto.FLOAT, a.shape, a.reshape(-1))
         for n, a in weights.items()])
    with pytest.raises(FrontendError) as info:
        from_onnx(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)]))
    return str(info.value)


def test_unknown_direction_and_activation_are_refused_naming_the_node():
    message = _refused({"direction": "sideways", "activations": ["Swish"]}, [3, 1, 2])
    assert "node 'rnn1' (RNN, opset 14)" in message
    assert "direction 'sideways'" in message and "activation 'Swish'" in message
    message = _refused({"direction": "bidirectional", "activations": ["Tanh"]}, [3, 1, 2])
    assert "node 'rnn1' (RNN, opset 14): 1 activations given, 2 needed (1 per direction)" \
        in message


def test_symbolic_steps_and_batch_together_are_refused():
    """One projection matmul over [T*N, I]: T and N cannot both be symbolic."""
    message = _refused({}, ["steps", "batch", 2])
    assert "'rnn1'" in message and "the input size must be static, and the number of steps " \
        "or the batch" in message and "shape_dict" in message
