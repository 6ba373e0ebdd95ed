"""The ONNX model builders (mlcir.testing.onnx_models) and the trained digits model.

Every builder's model must pass ``check_model(full_check=True)`` and run in onnxruntime with
outputs of the expected shapes and finite values; ``examples/models/digits_mlp.onnx`` must
classify ``digits_test.npz`` with at least 95% accuracy in onnxruntime.
"""

from __future__ import annotations

import importlib.util
import math
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import numpy_helper

ROOT = Path(__file__).resolve().parents[1]

try:
    from mlcir.testing import onnx_models as om
except ImportError:  # mlcir not installed: the module is self-contained, load it by path
    _spec = importlib.util.spec_from_file_location(
        "mlcir_testing_onnx_models", ROOT / "mlcir" / "testing" / "onnx_models.py")
    om = importlib.util.module_from_spec(_spec)
    _spec.loader.exec_module(om)


def _check_and_run(model: onnx.ModelProto, inputs: dict[str, np.ndarray],
                   expected: dict[str, tuple[int, ...]]) -> dict[str, np.ndarray]:
    onnx.checker.check_model(model, full_check=True)
    graph_inputs = [i.name for i in model.graph.input
                    if i.name not in {t.name for t in model.graph.initializer}]
    assert graph_inputs == list(inputs)
    assert all(a.dtype == np.float32 for a in inputs.values())
    out = om.reference(model, inputs)
    assert list(out) == list(expected) == [o.name for o in model.graph.output]
    for name, shape in expected.items():
        assert out[name].shape == shape, name
        assert out[name].dtype == np.float32, name
        assert np.isfinite(out[name]).all(), name
    return out


BUILDERS = {
    "mlp": (lambda: om.mlp(), lambda: om.mlp_inputs(), {"logits": (1, 10)}),
    "mlp_batch4": (lambda: om.mlp(batch=4), lambda: om.mlp_inputs(batch=4),
                   {"logits": (4, 10)}),
    "mlp_symbolic_batch": (lambda: om.mlp(batch="N"), lambda: om.mlp_inputs(batch=3),
                           {"logits": (3, 10)}),
    "mnist_cnn": (lambda: om.mnist_cnn(), lambda: om.mnist_cnn_inputs(),
                  {"probabilities": (1, 10)}),
    "mnist_cnn_batch2": (lambda: om.mnist_cnn(batch=2), lambda: om.mnist_cnn_inputs(batch=2),
                         {"probabilities": (2, 10)}),
    "resnet_block": (lambda: om.resnet_block(), lambda: om.resnet_block_inputs(),
                     {"y": (1, 16, 16, 16)}),
    "resnet_block_downsample": (lambda: om.resnet_block(downsample=True),
                                lambda: om.resnet_block_inputs(), {"y": (1, 32, 8, 8)}),
    "resnet_block_downsample_odd": (
        lambda: om.resnet_block(batch=2, channels=8, hw=15, downsample=True, out_channels=12),
        lambda: om.resnet_block_inputs(batch=2, channels=8, hw=15), {"y": (2, 12, 8, 8)}),
    "transformer_encoder_opset17": (lambda: om.transformer_encoder(),
                                    lambda: om.transformer_encoder_inputs(),
                                    {"y": (1, 16, 64)}),
    "transformer_encoder_opset20": (lambda: om.transformer_encoder(opset=20),
                                    lambda: om.transformer_encoder_inputs(),
                                    {"y": (1, 16, 64)}),
    "transformer_encoder_symbolic_batch": (
        lambda: om.transformer_encoder(batch="B", seq=8, d_model=32, heads=2, ffn=64),
        lambda: om.transformer_encoder_inputs(batch=2, seq=8, d_model=32),
        {"y": (2, 8, 32)}),
    "recurrent_layer_lstm": (lambda: om.recurrent_layer("LSTM", 5, 2, 3, 4),
                             lambda: om.recurrent_layer_inputs(5, 2, 3),
                             {"y": (5, 1, 2, 4), "y_h": (1, 2, 4), "y_c": (1, 2, 4)}),
    "recurrent_layer_gru_bidirectional": (
        lambda: om.recurrent_layer("GRU", 5, 2, 3, 4, "bidirectional"),
        lambda: om.recurrent_layer_inputs(5, 2, 3), {"y": (5, 2, 2, 4), "y_h": (2, 2, 4)}),
}


@pytest.mark.parametrize("name", list(BUILDERS))
def test_builder_checks_and_runs(name):
    build, make_inputs, expected = BUILDERS[name]
    model = build()
    out = _check_and_run(model, make_inputs(), expected)
    # Deterministic: the same model bytes, inputs and outputs every time.
    assert build().SerializeToString() == model.SerializeToString()
    again = om.reference(build(), make_inputs())
    for key in out:
        np.testing.assert_array_equal(again[key], out[key])
    # The generic example-input helper agrees with the builder's own on names and shapes.
    generic = om.example_inputs(model, dims={"N": 3, "B": 2})
    assert {k: v.shape for k, v in generic.items()} == {k: v.shape
                                                         for k, v in make_inputs().items()}


def test_default_opset_and_float32_initializers():
    for model in (om.mlp(), om.mnist_cnn(), om.resnet_block(), om.transformer_encoder()):
        assert [(o.domain, o.version) for o in model.opset_import] == [("", 17)]
        for t in model.graph.initializer:
            assert t.data_type in (onnx.TensorProto.FLOAT, onnx.TensorProto.INT64), t.name


def test_mlp_matches_numpy():
    model = om.mlp(batch=2)
    p = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    assert p["w0"].shape == (128, 784) and p["w1"].shape == (10, 128)
    x = om.mlp_inputs(batch=2)["x"]
    want = np.maximum(x @ p["w0"].T + p["b0"], 0) @ p["w1"].T + p["b1"]
    np.testing.assert_allclose(om.reference(model, {"x": x})["logits"], want,
                               rtol=1e-4, atol=1e-4)


def test_mnist_cnn_softmax_rows_sum_to_one():
    out = om.reference(om.mnist_cnn(batch=3), om.mnist_cnn_inputs(batch=3))["probabilities"]
    np.testing.assert_allclose(out.sum(axis=1), 1.0, rtol=1e-5)
    assert (out >= 0).all()


def test_resnet_block_structure():
    ops = [n.op_type for n in om.resnet_block().graph.node]
    assert ops == ["Conv", "BatchNormalization", "Relu", "Conv", "BatchNormalization",
                   "Add", "Relu"]
    down = om.resnet_block(downsample=True).graph.node
    projection = [n for n in down if n.op_type == "Conv" and n.input[0] == "x"]
    strides = {n.name: onnx.helper.get_node_attr_value(n, "strides") for n in projection}
    kernels = {n.name: onnx.helper.get_node_attr_value(n, "kernel_shape") for n in projection}
    assert strides == {"conv1": [2, 2], "downsample.0": [2, 2]}
    assert kernels["downsample.0"] == [1, 1]
    with pytest.raises(ValueError):
        om.resnet_block(out_channels=8)


def test_transformer_gelu_forms_agree():
    m17, m20 = om.transformer_encoder(opset=17), om.transformer_encoder(opset=20)
    ops17 = {n.op_type for n in m17.graph.node}
    ops20 = {n.op_type for n in m20.graph.node}
    assert "Erf" in ops17 and "Gelu" not in ops17
    assert "Gelu" in ops20 and "Erf" not in ops20
    for op in ("LayerNormalization", "Reshape", "Transpose", "Softmax", "MatMul", "Div"):
        assert op in ops17 and op in ops20
    x = om.transformer_encoder_inputs()
    np.testing.assert_allclose(om.reference(m17, x)["y"], om.reference(m20, x)["y"],
                               rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError):
        om.transformer_encoder(opset=16)


def test_transformer_matches_numpy():
    b, s, d, heads = 2, 8, 32, 4
    model = om.transformer_encoder(batch=b, seq=s, d_model=d, heads=heads, ffn=48)
    p = {t.name: numpy_helper.to_array(t).astype(np.float64) for t in model.graph.initializer}
    x = om.transformer_encoder_inputs(batch=b, seq=s, d_model=d)["x"]

    def ln(z, name):
        mu = z.mean(-1, keepdims=True)
        var = ((z - mu) ** 2).mean(-1, keepdims=True)
        return (z - mu) / np.sqrt(var + 1e-5) * p[f"{name}.weight"] + p[f"{name}.bias"]

    def lin(z, name):
        return z @ p[f"{name}.weight"] + p[f"{name}.bias"]

    def split(z):
        return z.reshape(b, s, heads, d // heads).transpose(0, 2, 1, 3)

    xd = x.astype(np.float64)
    h = ln(xd, "ln1")
    q, k, v = (split(lin(h, n)) for n in ("q_proj", "k_proj", "v_proj"))
    scores = q @ k.transpose(0, 1, 3, 2) / math.sqrt(d // heads)
    e = np.exp(scores - scores.max(-1, keepdims=True))
    a = (e / e.sum(-1, keepdims=True)) @ v
    r = xd + lin(a.transpose(0, 2, 1, 3).reshape(b, s, d), "out_proj")
    f = lin(ln(r, "ln2"), "ffn.fc1")
    erf = np.vectorize(math.erf)
    want = r + lin(f * 0.5 * (1 + erf(f / math.sqrt(2))), "ffn.fc2")
    np.testing.assert_allclose(om.reference(model, {"x": x})["y"], want, rtol=1e-4, atol=1e-4)


SINGLE_OPS = [
    (("Relu", [[2, 3]]), {}, (2, 3), lambda x: np.maximum(x, 0)),
    (("Add", [[2, 3], [3]]), {}, (2, 3), lambda a, b: a + b),
    (("MatMul", [[2, 3], [3, 4]]), {}, (2, 4), lambda a, b: a @ b),
    (("Softmax", [[2, 5]]), {"attrs": {"axis": -1}}, (2, 5), None),
    (("Conv", {"x": [1, 3, 8, 8]}),
     {"attrs": {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1], "strides": [2, 2]},
      "initializers": {"w": np.full((4, 3, 3, 3), 0.1, np.float32)}}, (1, 4, 4, 4), None),
    (("Reshape", [[2, 6]]), {"initializers": {"shape": np.array([3, -1], np.int64)}}, (3, 4),
     lambda x: x.reshape(3, 4)),
    (("Transpose", [[2, 3, 4]]), {"attrs": {"perm": [2, 0, 1]}}, (4, 2, 3),
     lambda x: x.transpose(2, 0, 1)),
    (("ReduceSum", [[2, 3, 4]]),
     {"attrs": {"keepdims": 0}, "initializers": {"axes": np.array([1], np.int64)}}, (2, 4),
     lambda x: x.sum(axis=1)),
    (("Clip", [[6]]), {"initializers": {"min": None, "max": np.array(0.5, np.float32)}}, (6,),
     lambda x: np.minimum(x, 0.5)),
    (("Gelu", [[2, 8]]), {"opset": 20}, (2, 8), None),
    (("MaxPool", [[1, 2, 6, 6]]), {"attrs": {"kernel_shape": [2, 2], "strides": [2, 2]}},
     (1, 2, 3, 3), None),
]


@pytest.mark.parametrize("args,kwargs,shape,numpy_fn", SINGLE_OPS,
                         ids=[case[0][0] for case in SINGLE_OPS])
def test_single_op(args, kwargs, shape, numpy_fn):
    model = om.single_op(*args, **kwargs)
    inferred = [d.dim_value for d in model.graph.output[0].type.tensor_type.shape.dim]
    assert tuple(inferred) == shape
    inputs = om.single_op_inputs(model)
    out = _check_and_run(model, inputs, {"y": shape})
    if numpy_fn is not None:
        np.testing.assert_allclose(out["y"], numpy_fn(*inputs.values()), rtol=1e-5, atol=1e-5)


def test_single_op_symbolic_dims_and_other_dtypes():
    model = om.single_op("ArgMax", [["N", 5]], {"axis": 1, "keepdims": 0})
    out_type = model.graph.output[0].type.tensor_type
    assert out_type.elem_type == onnx.TensorProto.INT64
    assert out_type.shape.dim[0].dim_param == "N"
    x = om.single_op_inputs(model, dims={"N": 3})
    np.testing.assert_array_equal(om.reference(model, x)["y"], x["x0"].argmax(axis=1))


def test_single_op_multiple_outputs():
    model = om.single_op("Split", [[6, 2]], {"axis": 0}, opset=18, num_outputs=2,
                         initializers={"split": np.array([2, 4], np.int64)})
    _check_and_run(model, om.single_op_inputs(model), {"y0": (2, 2), "y1": (4, 2)})


def test_reference_accepts_paths_bytes_and_threads(tmp_path):
    model = om.mlp()
    x = om.mlp_inputs()
    want = om.reference(model, x)["logits"]
    path = tmp_path / "mlp.onnx"
    onnx.save(model, path)
    for source in (path, str(path), model.SerializeToString()):
        np.testing.assert_array_equal(om.reference(source, x)["logits"], want)
    np.testing.assert_allclose(
        om.reference(model, x, intra_op_num_threads=2, optimize=True)["logits"], want,
        rtol=1e-5, atol=1e-5)


# --------------------------------------------------------------------------------------------
# The trained digits model (examples/models/train_digits_mlp.py)
# --------------------------------------------------------------------------------------------

DIGITS = ROOT / "examples" / "models"


def test_digits_mlp_accuracy():
    model_path, data_path = DIGITS / "digits_mlp.onnx", DIGITS / "digits_test.npz"
    assert model_path.stat().st_size < 100_000 and data_path.stat().st_size < 100_000
    model = onnx.load(model_path)
    onnx.checker.check_model(model, full_check=True)
    (inp,) = model.graph.input
    assert inp.name == "image"
    assert [d.dim_value for d in inp.type.tensor_type.shape.dim] == [1, 64]
    assert [o.name for o in model.graph.output] == ["probabilities"]
    assert model.graph.node[-1].op_type == "Softmax"

    with np.load(data_path) as data:
        images, labels = data["images"], data["labels"]
    assert images.dtype == np.float32 and images.shape == (len(labels), 64)
    assert labels.dtype == np.int64 and len(labels) == 360
    assert images.min() >= 0.0 and images.max() <= 1.0

    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    session = ort.InferenceSession(str(model_path), options,
                                   providers=["CPUExecutionProvider"])
    probs = np.concatenate([session.run(["probabilities"], {"image": img[None]})[0]
                            for img in images])
    assert np.isfinite(probs).all()
    np.testing.assert_allclose(probs.sum(axis=1), 1.0, rtol=1e-5)
    accuracy = float((probs.argmax(axis=1) == labels).mean())
    assert accuracy >= 0.95, accuracy
