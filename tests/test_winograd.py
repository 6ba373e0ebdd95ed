"""graph-winograd (issue 14, sixth round): 3x3 stride-1 NCHW<c>c convolutions as Winograd
F(4x4, 3x3). Checked: the transforms against direct convolution in float64 (exact up to
rounding), which convolutions the pass rewrites and which it leaves, the two new ops (numpy,
lowering, errors), and whole models against onnxruntime with the rounding error bounded
relative to direct convolution's."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import helper

import mlcir
from mlcir.dialects import graph
from mlcir.dialects import winograd as wg
from mlcir.dialects.opdef import ShapeError
from mlcir.frontend import from_onnx
from mlcir.passes import run_pipeline
from mlcir.passes.layout_chains import set_module_layout
from mlcir.testing import onnx_models as om
from mlcir.testing.graph_kernels import build_graph_function, graph_op_counts
from mlcir.tune import default_schedule
from mlcir.tune.tasks import extract_tasks

GRAPH_PASSES = ("graph-fold-constants,graph-layout-nchwc,graph-pack-weights,graph-dce,"
                "graph-pad-windows,graph-winograd")


def graph_ops(model, layout: str | None = None):
    """The graph ops of ``model`` (counted) after the graph passes up to graph-winograd."""
    module = from_onnx(model)
    if layout is not None:
        set_module_layout(module, layout)
    run_pipeline(module, GRAPH_PASSES)
    return graph_op_counts(module)


def conv_model(channels: int, out_channels: int, hw: int | tuple[int, int], *, stride: int = 1,
               pads: int = 1, kernel: int = 3, batch: int = 1, seed: int = 0):
    h, w = (hw, hw) if isinstance(hw, int) else hw
    rng = np.random.default_rng(seed)
    weights = {"w": (rng.standard_normal((out_channels, channels, kernel, kernel))
                     / np.sqrt(channels * kernel * kernel)).astype(np.float32),
               "b": (rng.standard_normal(out_channels) * 0.1).astype(np.float32)}
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], kernel_shape=[kernel, kernel],
                              strides=[stride, stride], pads=[pads] * 4),
             helper.make_node("Relu", ["c"], ["y"])]
    model = om.chain(nodes, [batch, channels, h, w], ["y"], weights)
    inputs = {"x": rng.standard_normal((batch, channels, h, w)).astype(np.float32)}
    return model, inputs, weights


def direct_conv(x: np.ndarray, w: np.ndarray, pads: int) -> np.ndarray:
    return graph._np_conv2d(x, w, [1, 1], [pads] * 4, [1, 1], 1)


@pytest.mark.parametrize("n, c, k, h, w, block", [(1, 16, 16, 4, 4, 16), (2, 32, 48, 8, 12, 16),
                                                   (1, 8, 24, 12, 8, 8)])
def test_the_transforms_compute_the_convolution(n, c, k, h, w, block):
    """input_transform -> 36 matmuls with filter_transform -> output_transform is the 3x3
    convolution (padding 1) up to float64 rounding."""
    rng = np.random.default_rng(1)
    x = rng.standard_normal((n, c, h, w))
    f = rng.standard_normal((k, c, 3, 3))
    tiles = wg.input_transform(graph.to_blocked(np.pad(x, [(0, 0), (0, 0), (1, 1), (1, 1)]),
                                                block))
    assert tiles.shape == (36, n * (h // 4) * (w // 4), c)
    products = np.matmul(tiles, wg.filter_transform(f))
    y = graph.from_blocked(wg.output_transform(products, (h // 4, w // 4), block))
    np.testing.assert_allclose(y, direct_conv(x, f, 1), rtol=1e-12, atol=1e-12)


def test_the_pass_rewrites_3x3_stride_1_convolutions_only():
    """ResNet's basic block: both 3x3 convolutions become input transform, matmul and output
    transform; ``layout="direct"`` and ``layout="none"`` keep them direct."""
    model = om.resnet_basic_block(channels=32, hw=16)
    counts = graph_ops(model)
    assert counts["conv2d_nchwc"] == 0, counts
    assert counts["winograd_input"] == counts["winograd_output"] == counts["matmul"] == 2, counts
    assert graph_ops(model, "direct")["conv2d_nchwc"] == 2
    assert graph_ops(model, "none")["winograd_input"] == 0


@pytest.mark.parametrize("kwargs, why", [
    ({"stride": 2, "hw": 16}, "stride 2"),
    ({"kernel": 1, "pads": 0, "hw": 16}, "1x1"),
    ({"hw": 14}, "14 rows are not whole 4-row tiles"),
    ({"channels": 8, "hw": 16}, "fewer than MIN_CHANNELS input channels"),
])
def test_the_pass_leaves_other_convolutions_direct(kwargs, why):
    args = {"channels": 32, "out_channels": 32, **kwargs}
    model, inputs, _ = conv_model(args.pop("channels"), args.pop("out_channels"),
                                  args.pop("hw"), **args)
    counts = graph_ops(model)
    assert counts["winograd_input"] == 0, why
    (want,) = om.reference(model, inputs).values()
    np.testing.assert_allclose(mlcir.build(from_onnx(model)).main(**inputs), want,
                               rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("channels, out_channels, hw, pads, batch", [
    (32, 48, 8, 1, 2),     # padded graph input: the padding is winograd_input's own copy
    (32, 32, (14, 10), 0, 1),  # no padding, H != W (a 12x8 result)
    (64, 64, 16, 1, 1),
])
def test_winograd_convolutions_match_onnxruntime(channels, out_channels, hw, pads, batch):
    """Against onnxruntime (direct, f32): the error stays within 20x direct convolution's
    and under 1e-5 of the result's scale."""
    model, inputs, weights = conv_model(channels, out_channels, hw, pads=pads, batch=batch)
    assert graph_ops(model)["winograd_input"] == 1
    (want,) = om.reference(model, inputs).values()
    got = mlcir.build(from_onnx(model)).main(**inputs)
    direct = mlcir.build(from_onnx(model), layout="direct").main(**inputs)
    exact = np.maximum(direct_conv(inputs["x"].astype(np.float64),
                                   weights["w"].astype(np.float64), pads)
                       + weights["b"][None, :, None, None], 0)
    scale = np.abs(exact).max()
    error, direct_error = np.abs(got - exact).max(), np.abs(direct - exact).max()
    assert error <= 1e-5 * scale, (error, scale)
    assert error <= 20 * max(direct_error, 1e-7 * scale), (error, direct_error)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * scale)


@pytest.mark.parametrize("make, inputs", [
    (lambda: om.resnet_basic_block(channels=32, hw=16),
     lambda: om.resnet_basic_block_inputs(channels=32, hw=16)),
    (om.mnist_cnn, om.mnist_cnn_inputs),
    (lambda: om.resnet50_bottleneck(channels=128, hw=8),
     lambda: om.resnet50_bottleneck_inputs(channels=128, hw=8)),
])
def test_models_with_winograd_convolutions_match_onnxruntime(make, inputs):
    model, x = make(), inputs()
    assert graph_ops(model)["winograd_input"] >= 1
    (want,) = om.reference(model, x).values()
    for threads in (1, 2):
        got = mlcir.build(from_onnx(model), f"llvm -threads={threads}").main(**x)
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * np.abs(want).max())


def test_the_ops_evaluate_and_lower_alike():
    """winograd_input (with its own padding) and winograd_output built alone match their
    numpy forms, at 2 images and channel blocks of 8."""
    rng = np.random.default_rng(2)
    x = rng.standard_normal((2, 3, 8, 12, 8)).astype(np.float32)
    padding = [1, 1, 1, 1]
    got = mlcir.build(build_graph_function(
        [x], lambda g, a: g.winograd_input(a, padding=padding))).main(x)
    want = graph.OPS["winograd_input"].evaluate(x, padding)
    assert want.shape == (36, 2 * 2 * 3, 24)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-4)
    m = rng.standard_normal((36, 2 * 2 * 3, 16)).astype(np.float32)
    got = mlcir.build(build_graph_function(
        [m], lambda g, a: g.winograd_output(a, tiles=[2, 3], block=8))).main(m)
    want = graph.OPS["winograd_output"].evaluate(m, [2, 3], 8)
    assert want.shape == (2, 2, 8, 12, 8)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-4)


def test_winograd_op_errors_name_the_op():
    with pytest.raises(ShapeError, match=r"'graph.winograd_input'.*must be 4 t \+ 2"):
        build_graph_function([np.zeros((1, 1, 7, 6, 16), np.float32)],
                             lambda g, a: g.winograd_input(a, padding=[0, 0, 0, 0]))
    with pytest.raises(ShapeError, match=r"'graph.winograd_input'.*NCHW<c>c"):
        build_graph_function([np.zeros((1, 16, 6, 6), np.float32)],
                             lambda g, a: g.winograd_input(a, padding=[0, 0, 0, 0]))
    with pytest.raises(ShapeError, match=r"'graph.winograd_output'.*is not \[36, N x 2 x 2"):
        build_graph_function([np.zeros((36, 6, 16), np.float32)],
                             lambda g, a: g.winograd_output(a, tiles=[2, 2], block=16))
    with pytest.raises(ShapeError, match=r"'graph.winograd_output'.*floating-point"):
        build_graph_function([np.zeros((36, 4, 16), np.int32)],
                             lambda g, a: g.winograd_output(a, tiles=[2, 2], block=16))


def test_the_kernels_of_a_winograd_convolution():
    """The transforms are their own kernels (vector code, left unscheduled), the 36 matmuls a
    scheduled batched matmul, and the epilogue chain one inlined, vectorized loop nest."""
    model = om.resnet_basic_block(channels=32, hw=16)
    for cpu, lanes in (("skylake-avx512", 16), ("haswell", 8)):  # channel blocks of a vector
        tasks = {t.name: t for t in extract_tasks(from_onnx(model), f"llvm -mcpu={cpu}")}
        assert {"winograd_input", "winograd_output", "matmul"} <= set(tasks), sorted(tasks)
        text = str(tasks["winograd_input"].module)
        assert "scf.forall" in text and f"vector<6x6x{lanes}xf32>" in text
        assert f"vector<4x4x{lanes}xf32>" in str(tasks["winograd_output"].module)
    assert "sch.split" in str(default_schedule(tasks["matmul"].module, "llvm").trace)
    # The last layout change stands alone (graph-fuse-ops): its register transpose is scheduled.
    assert "layout_transform" in tasks and not [
        name for name in tasks if name.startswith("fused_") and "layout_transform" in name]
    epilogue = [name for name in tasks if name.startswith("fused_multiply_add_relu")]
    assert epilogue, sorted(tasks)
    trace = str(default_schedule(tasks[epilogue[0]].module, "llvm").trace)
    assert "sch.compute_inline" in trace and "sch.vectorize" in trace, trace



def test_cuda_builds_and_their_kernels_keep_convolutions_direct():
    """The transforms are CPU OpenMP code: a CUDA build plan leaves ``graph-winograd`` out
    where the CPU's has it, and the kernels of the build (``mlcir compile --dump-mlir
    kernels``) and of its tuning agree."""
    from mlcir.driver import staged_module
    from mlcir.targets import build_plan

    assert "graph-winograd" in build_plan("llvm").kernels
    assert "graph-winograd" not in build_plan("cuda").kernels
    assert "graph-winograd" not in build_plan("llvm", layout="direct").kernels
    module = from_onnx(om.resnet_basic_block(channels=32, hw=16))
    cpu = str(staged_module(module, "llvm", until="kernels").prepared.work)
    cuda = str(staged_module(module, "cuda", until="kernels").prepared.work)
    assert "@winograd_input" in cpu and "@winograd_input" not in cuda
    assert "conv2d_nchwc" in cuda
    assert not any("winograd" in task.name for task in extract_tasks(module, "cuda"))
