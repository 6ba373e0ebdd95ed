"""Small models quantized by onnxruntime.quantization as a user would (quantize_static over a
seeded calibration reader, QDQ and QOperator formats; quantize_dynamic), imported, built and
compared with onnxruntime's int8 session on the same file; once through ``mlcir compile`` and
``mlcir run`` (docs/quantized.md)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest

import mlcir
from mlcir.errors import FrontendError
from mlcir.frontend import from_onnx
from mlcir.frontend.loader import load
from mlcir.frontend.qdq import fuse_qdq
from mlcir.testing import onnx_models as om
from mlcir.testing import quantized as qm

MODELS = {
    "mlp": (om.mlp, om.mlp_inputs),
    "cnn": (om.mnist_cnn, om.mnist_cnn_inputs),
    "resnet_block": (om.resnet_block, om.resnet_block_inputs),
}
QUANTIZE = {
    "qdq": qm.quantize_static,
    "qoperator": lambda m: qm.quantize_static(m, qdq=False),
    "qdq-int8-activations": lambda m: qm.quantize_static(m, activation="int8"),
    "dynamic": qm.quantize_dynamic,
}


def _output_unit(model: onnx.ModelProto) -> float:
    """The scale of the DequantizeLinear that gives the model's output (0: a float op does):
    a result one quantization step off onnxruntime's is one of these."""
    producers = {o: n for n in model.graph.node for o in n.output}
    node = producers[model.graph.output[0].name]
    if node.op_type != "DequantizeLinear":
        return 0.0
    inits = {i.name: onnx.numpy_helper.to_array(i) for i in model.graph.initializer}
    return float(np.max(inits[node.input[1]]))


@pytest.mark.parametrize("how", list(QUANTIZE))
@pytest.mark.parametrize("name", list(MODELS))
def test_quantized_model_matches_onnxruntime(name, how):
    build, inputs_of = MODELS[name]
    model = QUANTIZE[how](build())
    if name == "cnn" and how == "qoperator":  # its Softmax becomes com.microsoft QLinearSoftmax
        with pytest.raises(FrontendError, match=r"QLinearSoftmax.*not supported yet"):
            from_onnx(model)
        return
    inputs = inputs_of(seed=5)
    got = mlcir.build(from_onnx(model)).main(*inputs.values())
    want = next(iter(om.reference(model, inputs).values()))
    # Bit for bit through the integer ops; the float ops between them (BatchNormalization,
    # Softmax: a different float order than onnxruntime's) may move a requantized value by one
    # step, which the last DequantizeLinear scales to one unit of the output.
    unit = _output_unit(model)
    atol = 1e-5 * float(np.abs(want).max()) + unit * 1.0001
    assert np.abs(got - want).max() <= atol, (np.abs(got - want).max(), unit)


def test_qdq_model_top1_agrees_with_onnxruntime():
    """The int8 QDQ CNN's class equals onnxruntime's int8 session's on 50 seeded inputs."""
    model = qm.quantize_static(om.mnist_cnn())
    ex = mlcir.build(from_onnx(model))
    agree = 0
    for seed in range(50):
        inputs = om.mnist_cnn_inputs(seed=1000 + seed)
        got = ex.main(*inputs.values())
        want = next(iter(om.reference(model, inputs).values()))
        agree += int(np.argmax(got) == np.argmax(want))
    assert agree >= 49


def test_cli_compile_and_run_a_quantized_file(tmp_path):
    model = qm.quantize_static(om.resnet_block())
    onnx.save(model, tmp_path / "int8.onnx")
    inputs = om.resnet_block_inputs(seed=9)
    np.savez(tmp_path / "in.npz", **inputs)
    cli = [str(Path(sys.executable).with_name("mlcir"))]
    for args in (["compile", tmp_path / "int8.onnx", "-o", tmp_path / "int8.mlcir"],
                 ["run", tmp_path / "int8.mlcir", "--inputs", tmp_path / "in.npz",
                  "--outputs", tmp_path / "out.npz"]):
        result = subprocess.run(cli + [str(a) for a in args], capture_output=True, text=True,
                                timeout=600)
        assert result.returncode == 0, result.stderr
    want = next(iter(om.reference(model, inputs).values()))
    with np.load(tmp_path / "out.npz") as out:
        np.testing.assert_allclose(out[out.files[0]], want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("name", list(MODELS))
def test_qdq_fusion_makes_integer_ops_and_matches_onnxruntimes_fused_session(name):
    """Every QDQ Conv/MatMul/Gemm group becomes its integer op (none is left in float), and the
    result equals onnxruntime's with its own QDQ fusion on, bit for bit."""
    build, inputs_of = MODELS[name]
    model = qm.quantize_static(build())
    loaded = load(model)
    fused = fuse_qdq(loaded)
    ops = {n.op_type for n in loaded.model.graph.node}
    assert fused >= 2 and not ops & {"Conv", "MatMul", "Gemm"}, ops
    module = from_onnx(model)
    inputs = inputs_of(seed=6)
    got = mlcir.build(module).main(*inputs.values())
    want = next(iter(om.reference(model, inputs, optimize=True).values()))
    np.testing.assert_array_equal(got, want)


def test_qdq_fusion_leaves_the_users_model_alone():
    model = qm.quantize_static(om.mlp())
    before = model.SerializeToString()
    from_onnx(model)
    assert model.SerializeToString() == before
