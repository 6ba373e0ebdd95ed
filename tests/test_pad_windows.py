"""graph-pad-windows (issue 14, fifth round): a blocked convolution's or max pool's padding is
written by the kernel that makes its input (a ``graph.pad_window`` fused into the producer's
group), so no kernel copies a whole tensor into a padded one. Checked: which ops move their
padding, that the scheduled producer kernels write into the padded tensor with no copy and
no temporary, and the numbers against onnxruntime."""

from __future__ import annotations

import collections

import numpy as np
import pytest
from mlir import ir
from onnx import helper

import mlcir
from mlcir.dialects import graph
from mlcir.dialects.opdef import ShapeError
from mlcir.frontend import from_onnx
from mlcir.passes import run_pipeline
from mlcir.passes.pipelines import cpu_bufferize
from mlcir.testing import onnx_models as om
from mlcir.testing.graph_kernels import build_graph_function
from mlcir.tune import default_schedule
from mlcir.tune.tasks import extract_tasks

GRAPH_PASSES = "graph-fold-constants,graph-layout-nchwc,graph-pack-weights,graph-dce,graph-pad-windows"


def graph_ops(model) -> tuple[collections.Counter, list[ir.Operation], ir.Module]:
    module = from_onnx(model)
    run_pipeline(module, GRAPH_PASSES)
    counts: collections.Counter = collections.Counter()
    ops: list[ir.Operation] = []

    def visit(op: ir.Operation) -> ir.WalkResult:
        if op.name.startswith("graph."):
            counts[op.name[6:]] += 1
            ops.append(op)
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)
    return counts, ops, module


def padding_of(ops, name: str) -> list[list[int]]:
    return [list(ir.DenseI64ArrayAttr(op.attributes["padding"])) for op in ops
            if op.name == f"graph.{name}"]


def check(model, inputs) -> None:
    (want,) = om.reference(model, inputs).values()
    got = mlcir.build(from_onnx(model)).main(**inputs)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def bufferized_padding_kernels(model) -> dict[str, str]:
    """The kernels of ``model`` that compute a pad_window, default-scheduled and bufferized
    as the build does (name -> IR text)."""
    found = {}
    for task in extract_tasks(from_onnx(model)):
        if not task.name.endswith("pad_window"):
            continue
        sch = default_schedule(task.module, "llvm -threads=1")
        module = sch.mod
        with module.context:
            run_pipeline(module, ",".join(cpu_bufferize()))
        found[task.name] = str(module)
    return found


def _rng_weights(rng, **shapes) -> dict[str, np.ndarray]:
    return {k: (rng.standard_normal(s) * 0.3).astype(np.float32) for k, s in shapes.items()}


@pytest.mark.parametrize("stride", [1, 2])
def test_a_depthwise_convolution_reads_the_padded_result_of_its_producer(stride):
    """MobileNetV2's expand -> relu6 -> depthwise: the expand's kernel writes the padded
    tensor the depthwise convolution reads (blocked, 32 channels at 12x12)."""
    rng = np.random.default_rng(0)
    weights = _rng_weights(rng, we=(32, 16, 1, 1), wd=(32, 1, 3, 3))
    weights.update(lo=np.array(0, np.float32), hi=np.array(6, np.float32))
    nodes = [helper.make_node("Conv", ["x", "we"], ["e"]),
             helper.make_node("Clip", ["e", "lo", "hi"], ["r"]),
             helper.make_node("Conv", ["r", "wd"], ["y"], kernel_shape=[3, 3], pads=[1] * 4,
                              strides=[stride] * 2, group=32)]
    model = om.chain(nodes, [1, 16, 12, 12], ["y"], weights)
    counts, ops, _ = graph_ops(model)
    assert counts["pad_window"] == 1, counts
    assert padding_of(ops, "pad_window") == [[1, 1, 1, 1]]
    assert padding_of(ops, "conv2d_nchwc") == [[0, 0, 0, 0], [0, 0, 0, 0]]

    kernels = bufferized_padding_kernels(model)
    (name,) = [k for k in kernels if k.startswith("fused_conv2d_nchwc")]
    text = kernels[name]
    assert "copy" not in text, text
    # The unpadded result is never a buffer of its own (a row tile of the accumulator is).
    allocs = [line for line in text.splitlines() if "memref.alloc" in line]
    assert not any("1x2x12x12x16xf32" in line for line in allocs), allocs
    check(model, {"x": rng.standard_normal((1, 16, 12, 12)).astype(np.float32)})


def test_the_input_layout_change_writes_the_padded_tensor():
    """A lone depthwise convolution: the layout change into NCHW16c is the producer, and
    transposes each block's ``[16, H, W]`` into the padded tensor's interior (the 5-D form;
    its usual form merges H and W, which a padded destination cannot)."""
    model = om.depthwise_conv(32, 14, seed=3)
    counts, ops, module = graph_ops(model)
    assert counts["pad_window"] == 1 and padding_of(ops, "conv2d_nchwc") == [[0, 0, 0, 0]]
    kernels = bufferized_padding_kernels(model)
    (text,) = kernels.values()
    assert "copy" not in text
    allocs = [line for line in text.splitlines() if "memref.alloc" in line]
    assert not any("1x2x14x14x16xf32" in line for line in allocs), allocs
    run_pipeline(module, "graph-fuse-ops,graph-to-loop")
    assert "permutation = [0, 1, 3, 4, 2]" in str(module)
    check(model, om.single_op_inputs(model))


@pytest.mark.parametrize("attrs", [
    {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]},
    {"kernel_shape": [3, 2], "strides": [1, 2], "pads": [0, 1, 2, 0], "dilations": [2, 1]},
])
def test_a_max_pool_pads_its_producer_with_the_lowest_value(attrs):
    """No relu before the pool: every value of some windows is negative, so a border of
    zeros instead of -inf would win there."""
    rng = np.random.default_rng(1)
    weights = _rng_weights(rng, w=(16, 16, 3, 3))
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], pads=[1] * 4),
             helper.make_node("Sub", ["c", "shift"], ["s"]),
             helper.make_node("MaxPool", ["s"], ["y"], **attrs)]
    weights["shift"] = np.array(2.0, np.float32)
    model = om.chain(nodes, [1, 16, 11, 11], ["y"], weights)
    counts, ops, _ = graph_ops(model)
    assert counts["pad_window"] == 2, counts  # the convolution's and the pool's
    pads = attrs["pads"]
    assert [pads[0], pads[1], pads[2], pads[3]] in padding_of(ops, "pad_window")
    check(model, {"x": rng.standard_normal((1, 16, 11, 11)).astype(np.float32)})


def test_padding_stays_where_moving_it_does_not_pay():
    """A tensor read twice (a depthwise convolution and a residual add) keeps its reader's
    padding: a pad_window would be a copy of its own. So does a ceil-mode pool whose last
    window the move would shift (its result would change shape)."""
    rng = np.random.default_rng(2)
    weights = _rng_weights(rng, w1=(16, 16, 1, 1), wd=(16, 1, 3, 3), w2=(16, 16, 3, 3))
    nodes = [helper.make_node("Conv", ["x", "w1"], ["a"]),
             helper.make_node("Relu", ["a"], ["r"]),
             helper.make_node("Conv", ["r", "wd"], ["d"], kernel_shape=[3, 3], pads=[1] * 4,
                              group=16),
             helper.make_node("Add", ["d", "r"], ["s"]),
             helper.make_node("Conv", ["s", "w2"], ["c"], pads=[1] * 4),
             helper.make_node("MaxPool", ["c"], ["y"], kernel_shape=[2, 2], strides=[2, 2],
                              pads=[0, 0, 1, 1], ceil_mode=1)]
    model = om.chain(nodes, [1, 16, 8, 8], ["y"], weights)
    counts, ops, _ = graph_ops(model)
    # Only the 3x3 convolution, whose input (the add) it alone reads, reads a pad_window.
    assert counts["pad_window"] == 1, counts
    # (the first 1x1 convolution, alone reading the NCHW input, stays NCHW: graph-layout-nchwc)
    assert padding_of(ops, "conv2d") == [[0, 0, 0, 0]]
    assert padding_of(ops, "conv2d_nchwc") == [[1, 1, 1, 1], [0, 0, 0, 0]]
    assert padding_of(ops, "max_pool2d_nchwc") == [[0, 0, 1, 1]]
    check(model, {"x": rng.standard_normal((1, 16, 8, 8)).astype(np.float32)})


@pytest.mark.parametrize("dtype, value", [(np.float32, 0.5), (np.float32, float("-inf")),
                                          (np.int32, float("-inf")), (np.int32, 3.0)])
def test_the_pad_window_op(dtype, value):
    rng = np.random.default_rng(3)
    x = (rng.standard_normal((1, 2, 3, 4, 8)) * 10).astype(dtype)
    padding = [1, 2, 0, 3]
    module = build_graph_function([x], lambda g, a: g.pad_window(a, padding=padding,
                                                                  value=value))
    got = mlcir.build(module).main(x)
    fill = value if np.isfinite(value) or dtype != np.int32 else np.iinfo(dtype).min
    want = np.full((1, 2, 4, 9, 8), fill, dtype)
    want[:, :, 1:4, 2:6] = x
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(graph.OPS["pad_window"].evaluate(x, padding, value), want)


def test_pad_window_errors_name_the_op():
    x = np.zeros((1, 2, 3, 4), np.float32)
    with pytest.raises(ShapeError, match=r"'graph.pad_window'.*padding must be 4 sizes >= 0"):
        build_graph_function([x], lambda g, a: g.pad_window(a, padding=[1, -1, 0, 0], value=0))
    with pytest.raises(ShapeError, match=r"'graph.pad_window'.*NCHW or NCHW<c>c"):
        build_graph_function([np.zeros((2, 3), np.float32)],
                             lambda g, a: g.pad_window(a, padding=[1, 1, 1, 1], value=0))


def test_the_stems_nchw_max_pool_reads_the_padded_result_of_its_convolution():
    """ResNet's stem stays NCHW (3 input channels): its max pool's padding moves into the
    convolution's kernel all the same; its convolution reads the graph's input, which keeps
    the padding. With the layouts off (``layout="none"``) nothing moves."""
    model, inputs = om.resnet50_stem(hw=32), om.resnet50_stem_inputs(hw=32)
    counts, ops, _ = graph_ops(model)
    assert counts["pad_window"] == 1 and counts["conv2d_nchwc"] == 0, counts
    assert padding_of(ops, "max_pool2d") == [[0, 0, 0, 0]]
    assert padding_of(ops, "conv2d") == [[3, 3, 3, 3]]
    (want,) = om.reference(model, inputs).values()
    for layout in ("packed", "none"):
        got = mlcir.build(from_onnx(model), layout=layout).main(**inputs)
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4, err_msg=layout)
    module = from_onnx(model)
    with module.context:
        module.operation.attributes["mlcir.layout"] = ir.StringAttr.get("none")
    run_pipeline(module, GRAPH_PASSES)
    assert "graph.pad_window" not in str(module)


def test_a_dynamic_batch_is_blocked_and_padded_by_the_producer():
    """A symbolic batch (only the batch: each image is blocked on its own) takes the blocked
    layout and the hoisted padding like a static one: conv -> relu -> max pool builds
    blocked, its padding written by the producers, and matches at several batches."""
    rng = np.random.default_rng(4)
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], pads=[1] * 4),
             helper.make_node("Relu", ["c"], ["r"]),
             helper.make_node("MaxPool", ["r"], ["y"], kernel_shape=[3, 3], strides=[2, 2],
                              pads=[1] * 4)]
    model = om.chain(nodes, ["N", 16, 9, 9], ["y"], _rng_weights(rng, w=(16, 16, 3, 3)))
    counts, _, _ = graph_ops(model)
    assert counts["pad_window"] == 2 and counts["conv2d_nchwc"] == 1, counts
    for batch in (1, 2, 5):
        check(model, {"x": rng.standard_normal((batch, 16, 9, 9)).astype(np.float32)})
