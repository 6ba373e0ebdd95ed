"""A function that returns one computed value as two results (mlcir-distinct-results).

``buffer-results-to-out-params`` aborted the process on a buffer returned twice; the shrunk
model from shared/repros (an attention block whose Gather is an output and also feeds a
full-range Slice, another output, folded to the same value) is kept here.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest

import mlcir
from mlcir.frontend import from_onnx

FUZZ = Path(__file__).parent / "models" / "fuzz"

TWICE = """
func.func @main(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
  %y = "graph.relu"(%x) : (tensor<4xf32>) -> tensor<4xf32>
  return %y, %x, %y : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}
"""


def test_value_returned_twice_gives_two_equal_arrays():
    """Both results hold relu(x) in arrays of their own; the argument comes back as it was."""
    x = np.arange(4, dtype=np.float32) - 2
    first, same_x, second = mlcir.build(TWICE).main(x)
    np.testing.assert_array_equal(first, np.maximum(x, 0))
    np.testing.assert_array_equal(second, np.maximum(x, 0))
    np.testing.assert_array_equal(same_x, x)
    assert not np.shares_memory(first, second)


@pytest.mark.parametrize("target", ["llvm", "llvm -threads=2"])
@pytest.mark.parametrize("layout", ["packed", "direct", "none"])
def test_attention_gather_slice_repro_matches_onnxruntime(target, layout):
    path = FUZZ / "abort-attention-gather-slice.onnx"
    x = np.load(FUZZ / "abort-attention-gather-slice.x.npy")
    expected = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(
        None, {"x": x})
    got = mlcir.build(from_onnx(path), target=target, layout=layout).main(x)
    assert len(got) == len(expected) == 2
    for ours, theirs in zip(got, expected):
        np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-5)


def test_kernel_whose_result_is_its_input_returned_twice():
    """A cast to float64 and back is no computation: bufferization makes its kernel's result
    its input, and main returned one buffer twice (found by the model fuzzer: it crashed)."""
    from onnx import TensorProto, helper

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 16, 64])
    outs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, [1, 16]) for n in ("c2", "s")]
    nodes = [helper.make_node("ReduceSum", ["x", "axes"], ["s"], keepdims=0),
             helper.make_node("Cast", ["s"], ["c1"], to=TensorProto.DOUBLE),
             helper.make_node("Cast", ["c1"], ["c2"], to=TensorProto.FLOAT)]
    axes = helper.make_tensor("axes", TensorProto.INT64, [1], [2])
    model = helper.make_model(helper.make_graph(nodes, "g", [x], outs, [axes]),
                              opset_imports=[helper.make_opsetid("", 17)])
    data = np.random.default_rng(0).standard_normal((1, 16, 64)).astype(np.float32)
    expected = ort.InferenceSession(model.SerializeToString(),
                                    providers=["CPUExecutionProvider"]).run(None, {"x": data})
    for target in ("llvm", "llvm -threads=2"):
        got = mlcir.build(from_onnx(model), target=target, layout="direct").main(data)
        for ours, theirs in zip(got, expected):
            np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-5)
        assert not np.shares_memory(got[0], got[1])
