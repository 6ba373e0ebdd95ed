"""graph-layout-nchwc (issue 14): convolution chains in NCHW<c>c with filters packed at compile
time. Every model and op against onnxruntime with the layout on (the default) and off
(``layout="none"``); the IR after the pass counted: blocked ops, and layout changes only where
a chain begins and ends."""

from __future__ import annotations

import collections

import numpy as np
import pytest
from mlir import ir
from onnx import TensorProto, helper, numpy_helper, shape_inference

import mlcir
from mlcir.dialects import graph
from mlcir.frontend import from_onnx
from mlcir.passes import run_pipeline
from mlcir.passes.layout_nchwc import channel_block
from mlcir.testing import onnx_models as om
from mlcir.testing.graph_kernels import graph_op_counts


def graph_ops(model) -> collections.Counter:
    """The graph ops of ``model`` after folding, the layout pass and dead-code removal."""
    module = from_onnx(model)
    run_pipeline(module, "graph-fold-constants,graph-layout-nchwc,graph-dce")
    return graph_op_counts(module)


def check(model, inputs, layouts=("packed", "none")) -> None:
    reference = list(om.reference(model, inputs).values())
    for layout in layouts:
        out = mlcir.build(from_onnx(model), layout=layout).main(**inputs)
        outs = out if isinstance(out, (list, tuple)) else [out]
        for got, want in zip(outs, reference):
            # (relative to the result's scale: 3x3 convolutions are Winograd, docs/graph-passes.md)
            np.testing.assert_allclose(got, want, rtol=1e-4,
                                       atol=1e-4 * max(1.0, float(np.abs(want).max())),
                                       err_msg=layout)


@pytest.mark.parametrize("model, inputs, expected", [
    # conv-bn-relu twice and a residual add of the input: one change in, one out.
    (om.resnet_block(), om.resnet_block_inputs(),
     {"conv2d_nchwc": 2, "layout_transform": 2}),
    # 3 input channels: the stem's 7x7/2 and its max pool stay NCHW (measured faster).
    (om.resnet50_stem(hw=32), om.resnet50_stem_inputs(hw=32),
     {"conv2d_nchwc": 0, "max_pool2d_nchwc": 0, "layout_transform": 0}),
    # 24 channels: blocks of 8; depthwise convolutions at strides 1 and 2; relu6 (clip).
    (om.mobilenet_v2_blocks(channels=24, hw=14),
     om.mobilenet_v2_blocks_inputs(channels=24, hw=14),
     {"conv2d_nchwc": 6, "layout_transform": 2}),
    # The chain ends at a flatten: the reshape reads NCHW, the matmuls stay as they are.
    # conv1 reads 1 channel (NCHW); conv2 and the pool run blocked, the flatten reads NCHW.
    (om.mnist_cnn(), om.mnist_cnn_inputs(),
     {"conv2d_nchwc": 1, "max_pool2d_nchwc": 1, "layout_transform": 2, "matmul": 2}),
], ids=["resnet_block", "stem", "mobilenet_v2", "mnist_cnn"])
def test_models_run_blocked_and_match_onnxruntime(model, inputs, expected):
    ops = graph_ops(model)
    for op, count in expected.items():
        assert ops[op] == count, (op, ops)
    check(model, inputs)


def test_the_layout_option_turns_the_pass_off():
    model = om.resnet_block()
    module = from_onnx(model)
    with module.context:
        module.operation.attributes["mlcir.layout"] = ir.StringAttr.get("none")
    run_pipeline(module, "graph-fold-constants,graph-layout-nchwc,graph-dce")
    text = str(module)
    assert "graph.conv2d_nchwc" not in text and "graph.layout_transform" not in text
    assert text.count('"graph.conv2d"') == 2


CONV = {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1]}


@pytest.mark.parametrize("channels, out_channels, attrs, blocked", [
    (16, 32, CONV, True),
    (16, 16, {**CONV, "strides": [2, 2]}, True),
    (16, 16, {"kernel_shape": [3, 3], "pads": [2, 1, 2, 3], "dilations": [2, 2]}, True),
    (16, 16, {"kernel_shape": [5, 3], "pads": [0, 2, 1, 0], "strides": [1, 3],
              "dilations": [1, 2]}, True),
    (3, 16, {"kernel_shape": [7, 7], "pads": [3, 3, 3, 3], "strides": [2, 2]}, False),
    (16, 16, {"kernel_shape": [7, 7], "pads": [3, 3, 3, 3], "strides": [2, 2]}, True),
    (24, 40, {"kernel_shape": [1, 1]}, True),
    (32, 32, {**CONV, "group": 32}, True),                  # depthwise
    (32, 32, {**CONV, "group": 32, "strides": [2, 2]}, True),
    (32, 32, {**CONV, "group": 2}, False),                  # grouped: stays NCHW
    (12, 16, CONV, False),                                  # fewer than a block: NCHW
    (20, 16, CONV, False),                                  # 20 channels: no block
    (16, 20, CONV, False),                                  # 20 outputs: no block
])
def test_convolutions_of_every_kind(channels, out_channels, attrs, blocked):
    """Each kind after a 3x3 convolution in the same chain (its input blocked by then)."""
    rng = np.random.default_rng(0)
    groups = attrs.get("group", 1)
    kh, kw = attrs["kernel_shape"]
    lead = rng.standard_normal((channels, channels, 3, 3)).astype(np.float32) * 0.3
    w = rng.standard_normal((out_channels, channels // groups, kh, kw)).astype(np.float32)
    nodes = [helper.make_node("Conv", ["x", "lead"], ["a"], **CONV),
             helper.make_node("Conv", ["a", "w"], ["y"], **{
                 k: v for k, v in {**attrs, "group": groups}.items()})]
    model = om.chain(nodes, [1, channels, 13, 14], ["y"], {"lead": lead, "w": w})
    ops = graph_ops(model)
    lead_blocked = channel_block(channels) is not None and channels >= 8
    assert ops["conv2d_nchwc"] == lead_blocked + blocked, ops
    check(model, {"x": rng.standard_normal((1, channels, 13, 14)).astype(np.float32)})


@pytest.mark.parametrize("kinds", [
    ["1x1"], ["dw"], ["dw/2"], ["1x1", "dw"], ["dw", "1x1"], ["3x3"], ["1x1", "1x1"],
    ["1x1", "dw", "1x1"], ["dw", "3x3/2"],
])
def test_every_chain_runs_blocked_with_one_layout_change_each_way(kinds):
    """A lone depthwise convolution too: with its layout changes transposed in registers it
    measured 0.92-1.09x against NCHW, and every longer chain gained (python
    bench/nchwc_chains.py). Pointwise convolutions at the start of a chain, each alone reading
    an NCHW value, stay NCHW: a matmul over H*W as fast as the blocked convolution, without
    its input's layout change (layout_nchwc._pointwise_stays_nchw)."""
    rng = np.random.default_rng(2)
    shapes = {"1x1": ([1, 1], 1, 1), "3x3": ([3, 3], 1, 1), "3x3/2": ([3, 3], 2, 1),
              "dw": ([3, 3], 1, 16), "dw/2": ([3, 3], 2, 16)}
    nodes, weights, x = [], {}, "x"
    for i, kind in enumerate(kinds):
        kernel, stride, groups = shapes[kind]
        weights[f"w{i}"] = rng.standard_normal((16, 16 // groups, *kernel)).astype(
            np.float32) * 0.2
        nodes.append(helper.make_node("Conv", [x, f"w{i}"], [f"c{i}"], kernel_shape=kernel,
                                      strides=[stride] * 2, group=groups,
                                      pads=[kernel[0] // 2] * 4))
        x = f"c{i}"
    model = om.chain(nodes, [1, 16, 12, 12], [x], weights)
    ops = graph_ops(model)
    leading_pointwise = next((i for i, k in enumerate(kinds) if k != "1x1"), len(kinds))
    assert ops["conv2d_nchwc"] == len(kinds) - leading_pointwise, ops
    assert ops["conv2d"] == leading_pointwise, ops
    assert ops["layout_transform"] == (2 if leading_pointwise < len(kinds) else 0), ops
    check(model, {"x": rng.standard_normal((1, 16, 12, 12)).astype(np.float32)})


@pytest.mark.parametrize("attrs", [
    {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]},
    {"kernel_shape": [2, 2], "strides": [2, 2]},
    {"kernel_shape": [3, 3], "strides": [2, 2], "ceil_mode": 1},
    {"kernel_shape": [3, 2], "strides": [1, 1], "dilations": [2, 1], "pads": [0, 1, 2, 0]},
])
def test_max_pooling_after_a_blocked_convolution(attrs):
    """Conv -> MaxPool -> GlobalAveragePool: the pools run blocked, and the global average's
    [N, C/c, 1, 1, c] result is [N, C, 1, 1] by a reshape (no layout change at the end)."""
    rng = np.random.default_rng(1)
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
             helper.make_node("MaxPool", ["c"], ["p"], **attrs),
             helper.make_node("GlobalAveragePool", ["p"], ["y"])]
    model = om.chain(nodes, [1, 8, 15, 15], ["y"],
                        {"w": rng.standard_normal((16, 8, 3, 3)).astype(np.float32)})
    ops = graph_ops(model)
    assert ops["max_pool2d_nchwc"] == 1 and ops["layout_transform"] == 1, ops
    check(model, om.example_inputs(model))


def test_a_tensor_read_blocked_and_plain_changes_layout_once_each_way():
    """relu(conv(x)) feeds a second convolution and is also a graph output: the second
    convolution reads the blocked tensor; one change back serves the output."""
    rng = np.random.default_rng(2)
    nodes = [helper.make_node("Conv", ["x", "w1"], ["c"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c"], ["r"]),
             helper.make_node("Conv", ["r", "w2"], ["y"])]
    model = om.chain(nodes, [1, 16, 8, 8], ["r", "y"], {
        "w1": rng.standard_normal((16, 16, 3, 3)).astype(np.float32),
        "w2": rng.standard_normal((16, 16, 1, 1)).astype(np.float32)})
    ops = graph_ops(model)
    assert ops["conv2d_nchwc"] == 2 and ops["layout_transform"] == 3, ops  # in, r, y
    check(model, om.example_inputs(model))


def test_the_blocked_ops_evaluate_as_their_nchw_originals():
    """The numpy semantics constant folding uses: layout changes are inverse, conv2d_nchwc of
    packed operands is conv2d."""
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 32, 7, 9)).astype(np.float32)
    w = rng.standard_normal((16, 32, 3, 3)).astype(np.float32)
    blocked = graph.OPS["layout_transform"].evaluate(x, src_layout="NCHW", dst_layout="NCHW8c")
    assert blocked.shape == (2, 4, 7, 9, 8)
    np.testing.assert_array_equal(
        graph.OPS["layout_transform"].evaluate(blocked, src_layout="NCHW8c", dst_layout="NCHW"), x)
    attrs = {"strides": [1, 2], "padding": [1, 0, 1, 2], "dilation": [1, 1], "groups": 1}
    got = graph.OPS["conv2d_nchwc"].evaluate(blocked, graph.pack_filter(w, 8, 16), **attrs)
    want = graph.OPS["conv2d"].evaluate(x, w, **attrs)
    np.testing.assert_allclose(graph.from_blocked(got), want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("src, dst, message", [
    ("NCHW", "NCHW", "goes between NCHW and NCHW<c>c"),
    ("NCHW", "NHWC", "neither NCHW nor NCHW<c>c"),
    ("NCHW", "NCHW5c", "16 channels do not split into blocks of 5"),
])
def test_layout_transform_errors(src, dst, message):
    from mlcir.dialects.opdef import TensorSpec

    with pytest.raises(graph.ShapeError, match=message):
        graph.OPS["layout_transform"].infer([TensorSpec((1, 16, 4, 4), ir.F32Type.get(
            ir.Context()))], {"src_layout": src, "dst_layout": dst})


def test_channel_blocks():
    assert [channel_block(c) for c in (16, 64, 24, 40, 8, 12, 3)] == [16, 16, 8, 8, 8, None,
                                                                         None]


@pytest.mark.parametrize("model", [
    om.resnet_block(),                                        # 3x3/1 dense, bias, relu, add
    om.mobilenet_v2_blocks(channels=16, hw=10),               # 1x1, depthwise /1 and /2
    om.resnet_basic_block(channels=32, hw=16),                # Winograd: the 36 matmuls
], ids=["resnet_block", "mobilenet_v2", "winograd_basic_block"])
def test_sampled_schedules_of_the_blocked_kernels_build_and_match(model):
    """The default design space on every blocked kernel (fixed seeds): each sample builds and
    matches the unscheduled kernel, or is refused with a ScheduleError; each kernel gets at
    least one valid sample, and its default schedule (the rules' choice) matches too."""
    from mlcir.schedule import ScheduleError, Schedule
    from mlcir.testing.kernels import random_inputs
    from mlcir.tune.space import default_schedule, default_space
    from mlcir.tune.tasks import extract_tasks

    # (a Winograd convolution's blocked kernel is its 36 matmuls, graph-winograd)
    tasks = [t for t in extract_tasks(from_onnx(model))
             if "nchwc" in t.name or t.name.startswith("matmul")]
    assert tasks
    for task in tasks:
        reference = mlcir.build(task.module, schedule="none")
        inputs = random_inputs(str(task.module))
        expected = reference.main(*inputs)
        got = mlcir.build(default_schedule(task.module).mod).main(*inputs)
        np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4, err_msg=task.name)
        valid = 0
        for seed in range(3):
            sch = Schedule(task.module, seed=seed)
            try:
                default_space("llvm")(sch)
                got = mlcir.build(sch.mod).main(*inputs)
            except ScheduleError:
                continue
            np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4,
                                       err_msg=f"{task.name}, seed {seed}:\n{sch.trace}")
            valid += 1
        assert valid, f"no valid schedule of {task.name} in 3 samples"


def test_a_spatial_mean_without_kept_dims_reads_the_blocked_tensor():
    """ReduceMean over H and W with keepdims=0 after a blocked convolution: the blocked
    [N, C/c, c] result is [N, C] by a reshape, no layout change at the end."""
    rng = np.random.default_rng(4)
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
             helper.make_node("ReduceMean", ["c"], ["y"], axes=[2, 3], keepdims=0)]
    opsets = [helper.make_opsetid("", 13)]
    graph_proto = helper.make_graph(
        nodes, "mean", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 16, 6, 6])],
        [helper.make_empty_tensor_value_info("y")],
        initializer=[numpy_helper.from_array(
            rng.standard_normal((32, 16, 3, 3)).astype(np.float32), "w")])
    model = shape_inference.infer_shapes(
        helper.make_model(graph_proto, opset_imports=opsets,
                          ir_version=helper.find_min_ir_version_for(opsets)), strict_mode=True)
    ops = graph_ops(model)
    assert ops["conv2d_nchwc"] == 1 and ops["layout_transform"] == 1 and ops["mean"] == 1, ops
    check(model, om.example_inputs(model))
