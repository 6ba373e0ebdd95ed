"""Models written at ai.onnx opsets 7 to 12 (most of the ONNX zoo) import by conversion to
opset 13 (mlcir/frontend/opset_upgrade.py), each op whose signature changed checked against
onnxruntime on the original file, through ``mlcir.build`` and the CLI; IR version 3 files
whose initializers are also graph inputs take only their true inputs."""

from __future__ import annotations

import warnings

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import mlcir
from mlcir.frontend import from_onnx
from mlcir.frontend.opset_upgrade import OpsetConverted
from mlcir.testing import onnx_models as om

from test_cli import run_cli

F = TensorProto.FLOAT
RNG = np.random.default_rng(0)
X = RNG.standard_normal((1, 3, 6, 6)).astype(np.float32)


def _vi(name, shape, elem=F):
    return helper.make_tensor_value_info(name, elem, shape)


def _t(name, array):
    return numpy_helper.from_array(np.asarray(array), name)


def _f32(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def _positive(*shape):
    return RNG.uniform(0.5, 2.0, shape).astype(np.float32)


# name: (opset, nodes, output infos, initializers)
CASES = {
    "BatchNormalization-spatial": (7, [helper.make_node(
        "BatchNormalization", ["x", "s", "b", "m", "v"], ["y"], spatial=1, epsilon=1e-5)],
        [_vi("y", [1, 3, 6, 6])], [_t("s", _positive(3)), _t("b", _f32(3)), _t("m", _f32(3)),
                                   _t("v", _positive(3))]),
    "Clip-attributes": (7, [helper.make_node("Clip", ["x"], ["y"], min=-0.5, max=0.7)],
                        [_vi("y", [1, 3, 6, 6])], []),
    "Slice-attributes": (9, [helper.make_node("Slice", ["x"], ["y"], starts=[1, 0], ends=[5, 4],
                                              axes=[2, 3])], [_vi("y", [1, 3, 4, 4])], []),
    "Pad-attributes": (9, [helper.make_node("Pad", ["x"], ["y"], pads=[0, 0, 1, 2, 0, 0, 2, 1],
                                            value=0.5)], [_vi("y", [1, 3, 9, 9])], []),
    "Pad-reflect": (9, [helper.make_node("Pad", ["x"], ["y"], pads=[0, 0, 1, 1, 0, 0, 1, 1],
                                         mode="reflect")], [_vi("y", [1, 3, 8, 8])], []),
    "Pad-11": (11, [helper.make_node("Pad", ["x", "p"], ["y"], mode="edge")],
               [_vi("y", [1, 3, 8, 7])], [_t("p", np.array([0, 0, 1, 0, 0, 0, 1, 1]))]),
    "Upsample-7": (7, [helper.make_node("Upsample", ["x"], ["y"], scales=[1.0, 1.0, 2.0, 2.0],
                                        mode="nearest")], [_vi("y", [1, 3, 12, 12])], []),
    "Upsample-9": (9, [helper.make_node("Upsample", ["x", "sc"], ["y"], mode="nearest")],
                   [_vi("y", [1, 3, 12, 12])], [_t("sc", np.array([1, 1, 2, 2], np.float32))]),
    "Resize-10": (10, [helper.make_node("Resize", ["x", "sc"], ["y"], mode="nearest")],
                  [_vi("y", [1, 3, 12, 12])], [_t("sc", np.array([1, 1, 2, 2], np.float32))]),
    "Resize-11": (11, [helper.make_node("Resize", ["x", "roi", "sc"], ["y"], mode="linear",
                                        coordinate_transformation_mode="half_pixel")],
                  [_vi("y", [1, 3, 12, 12])], [_t("roi", np.array([], np.float32)),
                                                _t("sc", np.array([1, 1, 2, 2], np.float32))]),
    "Squeeze-Unsqueeze-axes": (11, [helper.make_node("Unsqueeze", ["x"], ["u"], axes=[0]),
                                    helper.make_node("Squeeze", ["u"], ["y"], axes=[0])],
                               [_vi("y", [1, 3, 6, 6])], []),
    "ReduceMean-axes": (11, [helper.make_node("ReduceMean", ["x"], ["y"], axes=[2, 3])],
                        [_vi("y", [1, 3, 1, 1])], []),
    "ReduceSum-axes": (12, [helper.make_node("ReduceSum", ["x"], ["y"], axes=[1], keepdims=0)],
                       [_vi("y", [1, 6, 6])], []),
    "ReduceMax-axes": (10, [helper.make_node("ReduceMax", ["x"], ["y"], axes=[3])],
                       [_vi("y", [1, 3, 6, 1])], []),
    "Split-attribute": (11, [helper.make_node("Split", ["x"], ["a", "b"], axis=1, split=[1, 2])],
                        [_vi("a", [1, 1, 6, 6]), _vi("b", [1, 2, 6, 6])], []),
    "TopK-k-attribute": (9, [helper.make_node("TopK", ["x"], ["v", "i"], k=2, axis=-1)],
                         [_vi("v", [1, 3, 6, 2]), _vi("i", [1, 3, 6, 2], TensorProto.INT64)], []),
    "Dropout-ratio": (7, [helper.make_node("Dropout", ["x"], ["y"], ratio=0.3)],
                      [_vi("y", [1, 3, 6, 6])], []),
    "Softmax-2d-semantics": (11, [helper.make_node("Softmax", ["x"], ["y"], axis=1)],
                             [_vi("y", [1, 3, 6, 6])], []),
    "Flatten-Gemm": (7, [helper.make_node("Flatten", ["x"], ["f"], axis=1),
                         helper.make_node("Gemm", ["f", "w", "c"], ["y"], transB=1)],
                     [_vi("y", [1, 5])], [_t("w", _f32(5, 108)), _t("c", _f32(5))]),
    "MaxPool": (7, [helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=[3, 3],
                                     strides=[2, 2], pads=[1, 1, 1, 1])],
                [_vi("y", [1, 3, 3, 3])], []),
    "AveragePool-count_include_pad": (7, [helper.make_node(
        "AveragePool", ["x"], ["y"], kernel_shape=[3, 3], pads=[1, 1, 1, 1],
        count_include_pad=1)], [_vi("y", [1, 3, 6, 6])], []),
    "Sum-Max-variadic": (8, [helper.make_node("Sum", ["x", "x", "x"], ["s"]),
                             helper.make_node("Max", ["s", "x"], ["y"])],
                         [_vi("y", [1, 3, 6, 6])], []),
    "LeakyRelu-Concat-Reshape": (7, [helper.make_node("LeakyRelu", ["x"], ["l"], alpha=0.2),
                                     helper.make_node("Concat", ["l", "x"], ["c"], axis=1),
                                     helper.make_node("Reshape", ["c", "sh"], ["y"])],
                                 [_vi("y", [6, 36])], [_t("sh", np.array([6, 36], np.int64))]),
    "Conv-without-bias": (7, [helper.make_node("Conv", ["x", "w"], ["y"], kernel_shape=[3, 3],
                                               pads=[1, 1, 1, 1])],
                          [_vi("y", [1, 4, 6, 6])], [_t("w", _f32(4, 3, 3, 3))]),
}


def _model(opset: int, nodes, outputs, initializers) -> onnx.ModelProto:
    """As the zoo's files are: IR version 3 (opset < 9) lists the initializers as inputs."""
    inputs = [_vi("x", [1, 3, 6, 6])]
    ir = 3 if opset < 9 else 6
    if ir == 3:
        inputs += [helper.make_tensor_value_info(t.name, t.data_type, t.dims)
                   for t in initializers]
    model = helper.make_model(helper.make_graph(nodes, "g", inputs, outputs, initializers),
                              opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = ir
    return model


def _reference(model: onnx.ModelProto, feeds: dict) -> list[np.ndarray]:
    return ort.InferenceSession(model.SerializeToString(),
                                providers=["CPUExecutionProvider"]).run(None, feeds)


@pytest.mark.parametrize("name", list(CASES))
def test_older_opset_op_matches_onnxruntime(name):
    model = _model(*CASES[name])
    expected = _reference(model, {"x": X})
    with pytest.warns(OpsetConverted, match=rf"opset {CASES[name][0]} model converted to "
                      "opset 13"):
        module = from_onnx(model)
    got = mlcir.build(module).main(X)
    got = got if isinstance(got, tuple) else (got,)
    for ours, theirs in zip(got, expected):
        assert ours.dtype == theirs.dtype and ours.shape == theirs.shape
        np.testing.assert_allclose(ours, theirs, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("opset", [7, 9, 10, 11, 12])
def test_zoo_style_resnet_v2_at_old_opsets(opset):
    """Pre-activation bottlenecks with BatchNormalization nodes, convolutions without bias,
    Flatten + Gemm, input ``data``; at opset 7 IR version 3 with every initializer an input:
    ``main`` takes ``data`` alone."""
    model = om.zoo_resnet_v2(opset)
    data = RNG.standard_normal((1, 3, 32, 32)).astype(np.float32)
    expected = _reference(model, {"data": data})[0]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ex = mlcir.build(from_onnx(model))
    assert [str(w.message).count("converted") for w in caught] == [1]  # said once
    assert [a.name for a in ex.main.signature.args] == ["data"]
    np.testing.assert_allclose(ex.main(data), expected, rtol=1e-4, atol=1e-5)


def test_ir3_initializer_missing_from_inputs_is_tolerated():
    """onnxruntime runs an IR-3 file whose initializer is not listed as an input; so do we."""
    model = _model(*CASES["Conv-without-bias"])
    del model.graph.input[1:]
    expected = _reference(model, {"x": X})[0]
    with pytest.warns(OpsetConverted):
        got = mlcir.build(from_onnx(model)).main(X)
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-5)


def test_cli_compiles_and_runs_an_opset7_model(tmp_path):
    """The tvmc walkthrough's steps on a zoo-style opset 7 file: the conversion said once on
    stderr, the predictions equal onnxruntime's."""
    model = om.zoo_resnet_v2(7)
    path = tmp_path / "resnet_v2_7.onnx"
    onnx.save(model, path)
    data = RNG.standard_normal((1, 3, 32, 32)).astype(np.float32)
    np.savez(tmp_path / "in.npz", data=data)
    compiled = run_cli("compile", path, "-o", tmp_path / "m.mlcir")
    assert compiled.stderr.count("converted to opset 13") == 1
    run_cli("run", tmp_path / "m.mlcir", "--inputs", tmp_path / "in.npz",
            "--outputs", tmp_path / "out.npz")
    with np.load(tmp_path / "out.npz") as out:
        got = out["resnetv24_dense0_fwd"]
    np.testing.assert_allclose(got, _reference(model, {"data": data})[0], rtol=1e-4, atol=1e-5)
