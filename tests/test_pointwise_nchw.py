"""Pointwise convolutions in NCHW and results written in place (issue 14, sixth round).

- A 1x1 stride-1 convolution without padding lowers to the matmul it is, over the merged
  ``H*W`` (passes/lowerings/nn.py, ``_pointwise_conv``), so its register tile has whole
  16-wide vectors where a row of 56 gave 8.
- ``graph-layout-nchwc`` leaves such a convolution NCHW when it alone reads an NCHW value,
  into no more channels, over whole vectors of ``H*W``; otherwise it is blocked as before.
- ``mlcir-reshaped-results``: a kernel whose result is a reshaped view of what it wrote (that
  convolution, every layout change) writes its out-parameter through a view, with no copy.
Checked against onnxruntime, and on the IR."""

from __future__ import annotations

import re

import numpy as np
import pytest
from onnx import helper

import mlcir
from mlcir.frontend import from_onnx
from mlcir.passes import run_pipeline
from mlcir.passes.pipelines import cpu_bufferize
from mlcir.testing import onnx_models as om
from mlcir.testing.graph_kernels import graph_op_counts
from mlcir.tune import default_schedule
from mlcir.tune.tasks import extract_tasks


def graph_ops(model):
    module = from_onnx(model)
    run_pipeline(module, "graph-fold-constants,graph-layout-nchwc,graph-dce")
    return graph_op_counts(module)


def pointwise(channels: int, out_channels: int, hw: int, extra_nodes=(), batch=1,
              outputs=("y",)):
    rng = np.random.default_rng(0)
    weights = {"w": (rng.standard_normal((out_channels, channels, 1, 1)) * 0.2).astype(
        np.float32), "bias": rng.standard_normal((1, out_channels, 1, 1)).astype(np.float32)}
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], kernel_shape=[1, 1]),
             helper.make_node("Add", ["c", "bias"], ["y"]), *extra_nodes]
    return om.chain(nodes, [batch, channels, hw, hw], list(outputs), weights)


def bufferized(model, name_prefix: str, threads: int = 1) -> dict[str, str]:
    found = {}
    for task in extract_tasks(from_onnx(model)):
        if task.name.startswith(name_prefix):
            module = default_schedule(task.module, f"llvm -threads={threads}").mod
            with module.context:
                run_pipeline(module, ",".join(cpu_bufferize()))
            found[task.name] = str(module)
    return found


def test_a_pointwise_convolution_of_a_graph_input_stays_nchw():
    ops = graph_ops(pointwise(64, 32, 16))
    assert ops["conv2d"] == 1 and ops["conv2d_nchwc"] == 0 and ops["layout_transform"] == 0


@pytest.mark.parametrize("case, channels, out_channels, hw, extra, outputs", [
    ("expands", 16, 64, 16, (), ("y",)),                  # more channels out than in
    ("rows of 14 x 14", 64, 32, 14, (), ("y",)),          # 196: no whole 16-wide vectors
    ("input read twice", 32, 32, 16,                      # the residual add reads x too
     (helper.make_node("Add", ["y", "x"], ["z"]),), ("z",)),
])
def test_otherwise_it_is_blocked(case, channels, out_channels, hw, extra, outputs):
    ops = graph_ops(pointwise(channels, out_channels, hw, extra, outputs=outputs))
    assert ops["conv2d_nchwc"] == 1 and ops["conv2d"] == 0, (case, ops)


def test_the_kernel_is_one_matmul_over_the_merged_rows():
    """One generic (n, o, p, c) reading the filter [O, C] and x [N, C, H*W]; its default
    register tile is 8 channels x 32 of H*W (8 x 8 with H and W apart); once bufferized, it
    writes the out-parameter through a view (no copy; alone, no allocation either: a bias
    after it reads its result from a temporary, the epilogue does not attach to the tile
    across the reshape)."""
    model = pointwise(64, 32, 16)
    (task,) = [t for t in extract_tasks(from_onnx(model)) if t.name.startswith("fused_conv2d")]
    text = str(task.module)
    assert text.count("linalg.generic") == 2  # the matmul and its bias epilogue
    assert "tensor.collapse_shape %arg0 [[0], [1], [2, 3]]" in text
    assert 'iterator_types = ["parallel", "parallel", "parallel", "reduction"]' in text
    # An AVX-512 CPU's rules (the host may have another ISA).
    trace = str(default_schedule(task.module, "llvm -mcpu=skylake-avx512 -threads=1").trace)
    rows, columns = (int(m) for m in re.findall(r"n=3, max_innermost_factor=\d+, decision="
                                                  r"\[\d+, \d+, (\d+)\]", trace))
    assert (rows, columns) == (8, 32), trace
    (ir_text,) = bufferized(model, "fused_conv2d").values()
    assert "memref.copy" not in ir_text  # (the bias reads the matmul's result from a temporary)
    rng = np.random.default_rng(3)
    alone = om.single_op("Conv", {"x": [1, 64, 16, 16]}, {"kernel_shape": [1, 1]},
                         initializers={"w": rng.standard_normal((32, 64, 1, 1)).astype(
                             np.float32)})
    (ir_text,) = bufferized(alone, "conv2d").values()
    assert "memref.alloc" not in ir_text and "memref.copy" not in ir_text
    assert "memref.collapse_shape %arg2 [[0], [1], [2, 3]]" in ir_text


@pytest.mark.parametrize("batch", [1, 2, None])
@pytest.mark.parametrize("threads", [1, 2])
def test_pointwise_convolutions_match_onnxruntime(batch, threads):
    """Batch 1, 2 and dynamic (the merged H*W keeps N apart), with a relu after the bias."""
    model = pointwise(32, 16, 16, (helper.make_node("Relu", ["y"], ["r"]),),
                      batch=batch or "n", outputs=("r",))
    x = np.random.default_rng(1).standard_normal((batch or 3, 32, 16, 16)).astype(np.float32)
    got = mlcir.build(from_onnx(model), target=f"llvm -threads={threads}").main(x=x)
    np.testing.assert_allclose(got, om.reference(model, {"x": x})["r"], rtol=1e-5, atol=1e-5)


def test_layout_changes_write_their_out_parameter_in_place():
    """Both layout changes of a blocked chain (in: a transpose of [N, C/c, c, H*W]; out: its
    inverse) compute through views of their out-parameters: no allocation, no copy."""
    rng = np.random.default_rng(2)
    w = (rng.standard_normal((32, 32, 1, 1)) * 0.2).astype(np.float32)
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], kernel_shape=[1, 1]),
             helper.make_node("Add", ["c", "x"], ["y"])]  # x read twice: blocked
    model = om.chain(nodes, [1, 32, 16, 16], ["y"], {"w": w})
    kernels = bufferized(model, "layout_transform")
    assert len(kernels) == 2, list(kernels)
    for name, text in kernels.items():
        assert "memref.alloc" not in text and "memref.copy" not in text, (name, text)
    x = rng.standard_normal((1, 32, 16, 16)).astype(np.float32)
    np.testing.assert_allclose(mlcir.build(from_onnx(model)).main(x=x),
                               om.reference(model, {"x": x})["y"], rtol=1e-5, atol=1e-5)
