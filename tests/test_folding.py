"""Constant folding at import trusts mlcir's own numpy semantics (``OpDef.evaluate`` through
the converters) and uses ``onnx.reference`` only for ops without a converter (docs/frontend.md,
"Constant folding"); GatherElements folds right on long axes and runs on runtime values."""

from __future__ import annotations

import numpy as np
import onnx.reference
import pytest
from onnx import TensorProto as T
from onnx import helper, numpy_helper

import mlcir
from mlcir.frontend import from_onnx
from mlcir.testing import onnx_models as om


def _gather_elements_model(length: int) -> tuple[onnx.ModelProto, np.ndarray, np.ndarray]:
    """A (1, length) table gathered with (1, 128) constant indices (a BERT exporter's
    position ids), added to a runtime input: the GatherElements node folds at import."""
    rng = np.random.default_rng(0)
    table = rng.standard_normal((1, length)).astype(np.float32)
    indices = rng.integers(-length, length, (1, 128)).astype(np.int64)
    nodes = [helper.make_node("GatherElements", ["table", "indices"], ["picked"], axis=1),
             helper.make_node("Add", ["x", "picked"], ["y"])]
    graph = helper.make_graph(
        nodes, "gather", [helper.make_tensor_value_info("x", T.FLOAT, [1, 128])],
        [helper.make_tensor_value_info("y", T.FLOAT, [1, 128])],
        [numpy_helper.from_array(table, "table"), numpy_helper.from_array(indices, "indices")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    return model, table, indices


@pytest.mark.parametrize("length", [512, 32, 7])
def test_gather_elements_folds_right_on_long_axes(length):
    """onnx.reference's GatherElements reads only the first element once the axis is longer
    than 32 (np.choose); mlcir's evaluator matches onnxruntime at any length."""
    model, table, indices = _gather_elements_model(length)
    x = np.random.default_rng(1).standard_normal((1, 128)).astype(np.float32)
    module = from_onnx(model)
    assert "GatherElements" not in str(module) and "graph.take" not in str(module)
    got = mlcir.build(module).main(x)
    want = om.reference(model, {"x": x})["y"]
    np.testing.assert_allclose(got, want, rtol=1e-6)
    np.testing.assert_allclose(got, x + np.take_along_axis(table, indices % length, axis=1),
                               rtol=1e-6)


def test_gather_elements_out_of_range_is_an_error_naming_the_node():
    model, _, _ = _gather_elements_model(512)
    model.graph.node[0].name = "positions"
    bad = numpy_helper.from_array(np.full((1, 128), 512, np.int64), "indices")
    model.graph.initializer[1].CopyFrom(bad)
    with pytest.raises(mlcir.FrontendError, match=r"node 'positions' \(GatherElements.*"
                                                  r"out of range for an axis of 512"):
        from_onnx(model)


def test_ops_with_a_converter_fold_without_onnx_reference(monkeypatch):
    """Constants through Transpose, Mul, comparisons and Where fold by the graph ops' own
    numpy; onnx.reference is never asked."""

    def refuse(*_args, **_kwargs):
        raise AssertionError("onnx.reference was used to fold an op mlcir can evaluate")

    monkeypatch.setattr(onnx.reference, "ReferenceEvaluator", refuse)
    w = np.arange(12, dtype=np.float32).reshape(3, 4) - 5
    nodes = [helper.make_node("Transpose", ["w"], ["wt"], perm=[1, 0]),
             helper.make_node("Mul", ["wt", "two"], ["w2"]),
             helper.make_node("Less", ["w2", "zero"], ["negative"]),
             helper.make_node("Where", ["negative", "zero", "w2"], ["relu"]),
             helper.make_node("MatMul", ["x", "relu"], ["y"])]
    graph = helper.make_graph(
        nodes, "fold", [helper.make_tensor_value_info("x", T.FLOAT, [2, 4])],
        [helper.make_tensor_value_info("y", T.FLOAT, [2, 3])],
        [numpy_helper.from_array(w, "w"), numpy_helper.from_array(np.float32(2), "two"),
         numpy_helper.from_array(np.float32(0), "zero")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    x = np.random.default_rng(2).standard_normal((2, 4)).astype(np.float32)
    got = mlcir.build(from_onnx(model)).main(x)
    np.testing.assert_allclose(got, x @ np.maximum(w.T * 2, 0), rtol=1e-6)


@pytest.mark.parametrize("dtype", [np.float32, np.int64, np.bool_])
def test_gather_elements_at_run_time_against_onnxruntime(dtype):
    """Data and indices (int32, negative ones) known only at run time, an axis of 512."""
    elem = {np.float32: T.FLOAT, np.int64: T.INT64, np.bool_: T.BOOL}[dtype]
    graph = helper.make_graph(
        [helper.make_node("GatherElements", ["table", "indices"], ["y"], axis=-1)], "gather",
        [helper.make_tensor_value_info("table", elem, [2, 512]),
         helper.make_tensor_value_info("indices", T.INT32, [2, 128])],
        [helper.make_tensor_value_info("y", elem, [2, 128])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    rng = np.random.default_rng(3)
    feeds = {"table": (rng.standard_normal((2, 512)) * 10).astype(dtype),
             "indices": rng.integers(-512, 512, (2, 128)).astype(np.int32)}
    got = mlcir.build(from_onnx(model)).main(**feeds)
    np.testing.assert_array_equal(got, om.reference(model, feeds)["y"])
