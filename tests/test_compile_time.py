"""What keeps whole-model compiles fast and lean (issue 21, bench/compile_time.py): weights
reach LLVM as one-dimensional globals that share the imported arrays (never copied, never
printed as text), identical kernels are compiled once, and the saved model's library is
stored as it is."""

from __future__ import annotations

import re
import zipfile

import numpy as np
import pytest
from mlir import ir
from mlir.dialects import func, memref
from onnx import TensorProto, helper, numpy_helper

import mlcir
from mlcir.targets.cpu.facts import target_facts
from mlcir.dialects.dtypes import constant_attr, resource_array
from mlcir.frontend import from_onnx
from mlcir.passes import run_pipeline
from mlcir.testing import onnx_models as om

# 16x16x3x3 convolution weights: a resource blob with rows of 3 elements.
BLOCK = dict(channels=16, hw=8)


@pytest.fixture(scope="module")
def block():
    return om.resnet_block(**BLOCK), om.resnet_block_inputs(**BLOCK)


def _llvm_globals(module: ir.Module) -> dict[str, str]:
    """Each constant LLVM global's name -> its LLVM type."""
    text = module.operation.get_asm(large_elements_limit=4)
    return dict(re.findall(r"llvm\.mlir\.global private constant @(\S+)\(.*\) "
                           r"\{[^}]*\} : (!llvm\.\S+(?: x \S+)*)", text))


def test_weights_are_one_dimensional_llvm_globals(block):
    model, inputs = block
    executable = mlcir.build(from_onnx(model))
    types = _llvm_globals(executable.lowered)
    # The 16x16x3x3 filters, packed for NCHW<c>c (graph-layout-nchwc, c this CPU's vector:
    # 1x1x3x3x16x16 on AVX-512, 2x2x3x3x8x8 on AVX2).
    c = target_facts("llvm").lanes(4)
    packed = f"__constant_{16 // c}x{16 // c}x3x3x{c}x{c}"
    weights = {name: t for name, t in types.items() if name.startswith(packed)}
    assert weights and all(t == "!llvm.array<2304 x f32>" for t in weights.values()), types
    expected = om.reference(model, inputs)["y"]
    np.testing.assert_allclose(executable.main(**inputs), expected, rtol=1e-4, atol=1e-4)


def test_no_weight_is_read_back_from_text(block, monkeypatch):
    """The import's blobs are found by constant_attr's registry: neither constant folding nor
    mlcir-flatten-globals prints one to read it."""
    def printed(*_args, **_kwargs):
        raise AssertionError("a weight was read back from the printed IR")

    monkeypatch.setattr("mlcir.passes.constants.read_resource", printed)
    monkeypatch.setattr("mlcir.passes.flatten_globals.read_resource", printed)
    model, inputs = block
    got = mlcir.build(from_onnx(model)).main(**inputs)
    np.testing.assert_allclose(got, om.reference(model, inputs)["y"], rtol=1e-4, atol=1e-4)


@pytest.mark.usefixtures("ctx")
def test_flattened_global_shares_the_array():
    weights = np.arange(4 * 8 * 3 * 3, dtype=np.float32).reshape(4, 8, 3, 3) * 0.5
    with ir.Location.unknown():
        attr = constant_attr(weights)
        assert np.shares_memory(resource_array(attr), weights)
        t = ir.MemRefType.get([4, 8, 3, 3], ir.F32Type.get())
        module = ir.Module.create()
        with ir.InsertionPoint(module.body):
            memref.GlobalOp("w", ir.TypeAttr.get(t), sym_visibility="private",
                            initial_value=attr, constant=True)
            main = func.FuncOp("main", ([t], []))
            with ir.InsertionPoint(main.add_entry_block()):
                memref.CopyOp(memref.GetGlobalOp(t, "w").result, main.arguments[0])
                func.ReturnOp([])
    run_pipeline(module, "mlcir-flatten-globals")
    flat = module.body.operations[0]
    assert str(ir.TypeAttr(flat.attributes["type"]).value) == "memref<288xf32>"
    held = resource_array(flat.attributes["initial_value"])
    assert held.shape == (288,) and np.shares_memory(held, weights)


def test_blob_parsed_from_text_compiles_in_its_order():
    """A resource written in MLIR text (no array behind it in this process) is read once from
    the printed global and keeps its element order."""
    values = np.arange(300, dtype=np.float32).reshape(20, 15) - 150.0
    blob = "0x04000000" + values.tobytes().hex()
    text = f"""
      func.func @main() -> tensor<20x15xf32> {{
        %w = arith.constant dense_resource<text_blob> : tensor<20x15xf32>
        return %w : tensor<20x15xf32>
      }}
      {{-# dialect_resources: {{ builtin: {{ text_blob: "{blob}" }} }} #-}}"""
    executable = mlcir.build(text)
    assert _llvm_globals(executable.lowered) == {"__constant_20x15xf32": "!llvm.array<300 x f32>"}
    np.testing.assert_array_equal(executable.main(), values)


def test_identical_layers_compile_to_one_kernel(rng):
    """Four MatMul+Relu layers of one shape, each with its own weights: LLVM compiles one
    kernel, called four times."""
    weights = [rng.standard_normal((16, 16)).astype(np.float32) for _ in range(4)]
    nodes, x = [], "x"
    for i in range(4):
        nodes += [helper.make_node("MatMul", [x, f"w{i}"], [f"m{i}"]),
                  helper.make_node("Relu", [f"m{i}"], [f"r{i}"])]
        x = f"r{i}"
    value = helper.make_tensor_value_info
    graph = helper.make_graph(nodes, "layers", [value("x", TensorProto.FLOAT, [2, 16])],
                              [value(x, TensorProto.FLOAT, [2, 16])],
                              [numpy_helper.from_array(w, f"w{i}") for i, w in enumerate(weights)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    executable = mlcir.build(from_onnx(model))
    text = executable.lowered.operation.get_asm(large_elements_limit=4)
    kernels = re.findall(r"llvm\.func @(mlcir\.\S+)\(", text)
    assert len(kernels) == 1
    assert len(re.findall(rf"llvm\.call @{re.escape(kernels[0])}\(", text)) == 4
    data = rng.standard_normal((2, 16)).astype(np.float32)
    expected = data
    for w in weights:
        expected = np.maximum(expected @ w, 0)
    np.testing.assert_allclose(executable.main(data), expected, rtol=1e-4, atol=1e-4)


def test_saved_library_is_stored_not_deflated(block, tmp_path):
    model, inputs = block
    path = tmp_path / "block.mlcir"
    mlcir.compile(from_onnx(model), "llvm", path)
    with zipfile.ZipFile(path) as archive:
        assert archive.getinfo("model.so").compress_type == zipfile.ZIP_STORED
    np.testing.assert_allclose(mlcir.load(path).main(**inputs), om.reference(model, inputs)["y"],
                               rtol=1e-4, atol=1e-4)
