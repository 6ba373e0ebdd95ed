"""graph-pack-weights (passes/pack_weights.py): constant matmul weights packed into panels at
compile time, epilogues kept blocked; models built packed and unpacked (``layout="none"``)
match onnxruntime and numpy; ``mlcir compile --layout`` chooses."""

from __future__ import annotations

import numpy as np
import pytest
from mlir import ir

import mlcir
from mlcir.frontend import from_onnx
from mlcir.ir import clone_module
from mlcir.passes import run_pipeline
from mlcir.passes.pack_weights import LAYOUT_ATTR, pack_weights
from mlcir.runtime.compile import as_module
from mlcir.testing import onnx_models as om


def _kernel_text(module, layout: str) -> str:
    with module.context:
        kernels = clone_module(module)
        kernels.operation.attributes[LAYOUT_ATTR] = ir.StringAttr.get(layout)
        run_pipeline(kernels, "mlcir-kernels")
    return str(kernels)


@pytest.mark.parametrize("layout", ["packed", "none"])
def test_mlp_weights_packed_match_onnxruntime(layout):
    model, inputs = om.mlp(batch=8), om.mlp_inputs(batch=8)
    expected = list(om.reference(model, inputs).values())
    module = from_onnx(model)
    ex = mlcir.build(module, "llvm -threads=1", layout=layout)
    np.testing.assert_allclose(ex.main(**inputs), expected[0], rtol=1e-4, atol=1e-5)
    # 784x128 is packed into 4 panels of 32 columns; the 128x10 weight has no two panels.
    kernels = _kernel_text(module, layout)
    assert ("tensor<4x784x32xf32>" in kernels) == (layout == "packed")
    assert ('"matmul_packed"' in kernels) == (layout == "packed") and '"matmul"' in kernels


def test_unknown_layout_is_a_value_error():
    with pytest.raises(ValueError, match="layout must be one of packed, direct, none, got 'nchwc'"):
        mlcir.build(from_onnx(om.mlp(batch=1)), "llvm", layout="nchwc")


def _array(a: np.ndarray) -> str:
    return f"dense<{a.tolist()}> : tensor<{'x'.join(map(str, a.shape))}xf32>"


def test_chain_residual_and_tied_weight_match_numpy():
    """Bias, relu and a residual add of an argument follow the blocked shape; a weight two
    matmuls share is packed once; a softmax ends the chain."""
    rng = np.random.default_rng(0)
    w = rng.standard_normal((16, 64)).astype(np.float32)
    b = rng.standard_normal(64).astype(np.float32)
    x, x2 = (rng.standard_normal((2, 4, 16)).astype(np.float32) for _ in range(2))
    r = rng.standard_normal((2, 4, 64)).astype(np.float32)
    text = f"""
    func.func @main(%x: tensor<2x4x16xf32>, %x2: tensor<2x4x16xf32>, %r: tensor<2x4x64xf32>)
        -> (tensor<2x4x64xf32>, tensor<2x4x64xf32>) {{
      %w = arith.constant {_array(w)}
      %b = arith.constant {_array(b)}
      %two = arith.constant dense<2.0> : tensor<f32>
      %m = "graph.matmul"(%x, %w) : (tensor<2x4x16xf32>, tensor<16x64xf32>) -> tensor<2x4x64xf32>
      %a = "graph.add"(%m, %b) : (tensor<2x4x64xf32>, tensor<64xf32>) -> tensor<2x4x64xf32>
      %y = "graph.relu"(%a) : (tensor<2x4x64xf32>) -> tensor<2x4x64xf32>
      %s = "graph.add"(%r, %y) : (tensor<2x4x64xf32>, tensor<2x4x64xf32>) -> tensor<2x4x64xf32>
      %sm = "graph.softmax"(%s) {{axis = 2 : i64}} : (tensor<2x4x64xf32>) -> tensor<2x4x64xf32>
      %m2 = "graph.matmul"(%x2, %w) : (tensor<2x4x16xf32>, tensor<16x64xf32>) -> tensor<2x4x64xf32>
      %z = "graph.multiply"(%m2, %two) : (tensor<2x4x64xf32>, tensor<f32>) -> tensor<2x4x64xf32>
      return %sm, %z : tensor<2x4x64xf32>, tensor<2x4x64xf32>
    }}"""
    s = r + np.maximum(x @ w + b, 0)
    e = np.exp(s - s.max(axis=2, keepdims=True))
    want = (e / e.sum(axis=2, keepdims=True), (x2 @ w) * 2)
    module = as_module(text)
    with module.context:
        packed = clone_module(module)
        assert pack_weights(packed) == 2
        run_pipeline(packed, "graph-dce")
    ir_text = str(packed)
    assert ir_text.count("> : tensor<2x16x32xf32>") == 1  # one constant for both matmuls
    assert ir_text.count('"graph.matmul_packed"') == 2 and '"graph.matmul"' not in ir_text
    assert ir_text.count('"graph.reshape"') == 3  # r in, each chain's end out
    got = mlcir.build(module, "llvm -threads=1").main(x, x2, r)
    for g, e in zip(got, want):
        np.testing.assert_allclose(g, e, rtol=1e-4, atol=1e-5)


def test_compile_layout_flag(tmp_path):
    import subprocess
    import sys
    from pathlib import Path

    import onnx

    model = tmp_path / "mlp.onnx"
    onnx.save(om.mlp(batch=2), model)
    mlcir_cli = Path(sys.executable).with_name("mlcir")
    for layout, packed in (("packed", True), ("none", False)):
        out = subprocess.run([str(mlcir_cli), "compile", str(model), "-o",
                              str(tmp_path / f"{layout}.mlcir"), "--layout", layout,
                              "--target", "llvm -mcpu=skylake-avx512",  # panels of 32
                              "--dump-mlir", "kernels", "-"], capture_output=True, text=True,
                             timeout=600, check=True).stdout
        assert ('tensor<4x784x32xf32>' in out) == packed
