"""Default CPU schedules (mlcir.targets.cpu.defaults): for every kernel kind the graph lowering
produces, the default schedule builds and matches numpy/onnxruntime; it is an ordinary trace
(JSON round trip, transform script applied by ``mlcir-opt``); its decisions follow the target's
facts (golden register tiles for AVX-512 and AVX2, passed explicitly so the test does not
depend on this machine); small kernels stay serial; the kinds the rules leave alone say why.

Whole models are built with the defaults of fixed facts through the tuning-records path (each
kernel's default trace committed as a record); ``mlcir.build`` applies the host's defaults itself
(tests/test_never_slower.py).
"""

from __future__ import annotations

import re
import subprocess
import sys
from dataclasses import replace

import numpy as np
import pytest
from mlir import ir

import mlcir
from mlcir.frontend import from_onnx
from mlcir.schedule import Trace
from mlcir.schedule.materialize import apply_schedule_script
from mlcir.target import Target
from mlcir.targets.cpu.defaults import (decisions, default_schedule, fallback_reason,
                                        parallel_threads)
from mlcir.targets.cpu.facts import AVX2, AVX512, SSE, target_facts
from mlcir.testing import kernels
from mlcir.testing import onnx_models as om
from mlcir.testing.graph_kernels import build_graph_function, models, reference
from mlcir.tune import Database, Record, extract_tasks

TARGET = "llvm -threads=1"
FACTS = replace(AVX512, threads=1)
# Kernels as an AVX-512 build makes them (channel blocks of 16, panels of 32), for the rules'
# AVX-512 figures on any host; extracting them runs nothing.
AVX512_BUILD = "llvm -mcpu=skylake-avx512"

# Kinds the rules schedule; every other graph kernel kind stays unscheduled with a reason.
# Elementwise chains (boolean_mask, elementwise_chain) are inlined into one vectorized nest.
SCHEDULED = {"avg_pool2d", "batch_matmul", "boolean_mask", "conv2d",
             "conv2d_strided_padded_bias_relu", "elementwise_chain",
             "conv2d_stride3_dilated", "matmul_packed_bias_relu", "max_pool2d",
             "max_pool2d_stride3_dilated", "mean", "mean_centered", "sum"}


def _schedules(module, target: str = TARGET):
    with module.context:
        tasks = extract_tasks(module)
    return [(task, default_schedule(task.module, target, FACTS))
            for task in tasks]


def _build_with_defaults(module, tmp_path, target: str = TARGET):
    """``module`` built with the default schedule of each kernel (committed as records)."""
    db = Database(tmp_path)
    scheduled = 0
    for task, sch in _schedules(module, target):
        if sch.trace.insts:
            workload = db.commit_workload(task.module, task.name)
            db.commit_record(Record(workload.hash, Target.parse(target).key,
                                    sch.trace.as_json(), [1e-3]))
            scheduled += 1
    return mlcir.build(module, target=target, records=db), scheduled


@pytest.mark.parametrize("name", sorted(models()))
def test_default_schedule_matches_numpy(name, tmp_path):
    inputs, body = models()[name]
    module = build_graph_function(inputs, body)
    ex, scheduled = _build_with_defaults(module, tmp_path)
    np.testing.assert_allclose(ex.main(*inputs), reference(inputs, body), rtol=1e-4, atol=1e-4)
    assert (scheduled > 0) == (name in SCHEDULED), f"{name}: {scheduled} kernels scheduled"


@pytest.mark.parametrize("name", sorted(set(models()) - SCHEDULED))
def test_unscheduled_kinds_say_why(name):
    inputs, body = models()[name]
    module = build_graph_function(inputs, body)
    for task, sch in _schedules(module):
        assert not sch.trace.insts
        assert fallback_reason(task.module, TARGET, FACTS)


def test_row_reductions_are_left_to_llvm_with_reassociable_adds():
    """A reduction along its input's contiguous axis with rows of 64 elements or more stays
    unscheduled (LLVM vectorizes the row); its float adds are marked reassociable so that it
    may."""
    model = om.single_op("ReduceSum", {"x": [4, 8, 64]}, {"keepdims": 0},
                         initializers={"axes": np.array([2], np.int64)})
    module = from_onnx(model)
    with module.context:
        (task,) = extract_tasks(module)
    assert "contiguous axis" in fallback_reason(task.module, TARGET, FACTS)
    assert "fastmath<reassoc,nsz>" in str(task.module)
    across = om.single_op("ReduceSum", {"x": [4, 8, 32]}, {"keepdims": 0},
                          initializers={"axes": np.array([1], np.int64)})
    module = from_onnx(across)
    with module.context:
        (task,) = extract_tasks(module)
    assert fallback_reason(task.module, TARGET, FACTS) is None


@pytest.mark.parametrize("facts, rows", [(AVX512, 16), (AVX2, 8)])
def test_short_rows_are_read_as_vector_rows(facts, rows, tmp_path):
    """A global average pool's 7x7 window is one contiguous row of 49 (the lowering merges the
    trailing reduced axes), shorter than 64: its default tiles a vector's worth of
    rows by the whole row as one vector tile, and the result matches onnxruntime."""
    model = om.single_op("GlobalAveragePool", {"x": [1, 48, 7, 7]})
    module = from_onnx(model)
    with module.context:
        (task,) = extract_tasks(module)
    sch = default_schedule(task.module, TARGET, replace(facts, threads=1))
    assert [i.kind.name for i in sch.trace.insts] == ["get_block", "get_loops", "split",
                                                       "vectorize"]
    assert sch.trace.insts[2].inputs[1] == [None, rows]
    assert "vector.transfer_read" in str(sch.mod) and "vector.multi_reduction" in str(sch.mod)
    ex, scheduled = _build_with_defaults(module, tmp_path)
    assert scheduled == 1
    inputs = om.single_op_inputs(model)
    np.testing.assert_allclose(ex.main(**inputs), om.reference(model, inputs)["y"],
                               rtol=1e-5, atol=1e-6)
    long_rows = om.single_op("GlobalAveragePool", {"x": [1, 8, 8, 8]})  # rows of 64
    module = from_onnx(long_rows)
    with module.context:
        (task,) = extract_tasks(module)
    assert "contiguous axis" in fallback_reason(task.module, TARGET, FACTS)


def test_scheduled_kinds_have_no_fallback_reason():
    inputs, body = models()["conv2d"]
    module = build_graph_function(inputs, body)
    with module.context:
        (task,) = extract_tasks(module)
    assert fallback_reason(task.module, TARGET, FACTS) is None


def _attention_scores(batch: int = 2, tokens: int = 16, depth: int = 8):
    """``q @ k^T`` spelled as exporters spell attention (Transpose then MatMul)."""
    import onnx
    from onnx import TensorProto, helper

    shape = [batch, tokens, depth]
    nodes = [helper.make_node("Transpose", ["k"], ["kt"], perm=[0, 2, 1]),
             helper.make_node("MatMul", ["q", "kt"], ["y"])]
    graph = helper.make_graph(
        nodes, "scores", [helper.make_tensor_value_info("q", TensorProto.FLOAT, shape),
                          helper.make_tensor_value_info("k", TensorProto.FLOAT, shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [batch, tokens, tokens])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                              ir_version=8)
    onnx.checker.check_model(model, full_check=True)
    return model


MODELS = {
    "matmul_transposed_rhs": (_attention_scores, {}),
    "gemm": (lambda: om.single_op("Gemm", [[16, 48]], {"transB": 1},
                                  initializers={"w": np.ones((32, 48), np.float32) * 0.1}), {}),
    "resnet50_stem": (om.resnet50_stem, {"hw": 32}),
    "resnet50_bottleneck": (om.resnet50_bottleneck, {"channels": 32, "width": 8, "hw": 8}),
    "resnet_basic_block": (om.resnet_basic_block, {"channels": 8, "hw": 8}),
    "mobilenet_v2_blocks": (om.mobilenet_v2_blocks, {"channels": 8, "hw": 8,
                                                     "out_channels": 16}),
    "bert_encoder_layer": (om.bert_encoder_layer, {"seq": 16, "width": 32, "heads": 2}),
}


@pytest.mark.parametrize("name", sorted(MODELS))
def test_models_with_defaults_match_onnxruntime(name, tmp_path):
    builder, sizes = MODELS[name]
    model = builder(**sizes)
    feeds = om.example_inputs(model)
    want = om.reference(model, feeds)
    ex, scheduled = _build_with_defaults(from_onnx(model), tmp_path)
    assert scheduled > 0
    got = ex.main(**feeds)
    got = got if isinstance(got, tuple) else (got,)
    for g, w in zip(got, want.values()):
        np.testing.assert_allclose(g, w, rtol=1e-3, atol=1e-3)


def _weights(*shape: int) -> np.ndarray:
    return np.random.default_rng(1).standard_normal(shape).astype(np.float32) * 0.1


ODD_SIZES = {  # prime and unit extents: tiles must still divide them
    "matmul_7x97x13": ("MatMul", [[7, 97]], {}, {"w": _weights(97, 13)}),
    "matmul_row_vector": ("MatMul", [[1, 512]], {}, {"w": _weights(512, 1000)}),
    "batch_matmul_unit_dims": ("MatMul", [[2, 1, 64], [2, 64, 1]], {}, {}),
    "conv_5x5_stride2_odd": ("Conv", [[1, 5, 13, 13]], {"kernel_shape": [5, 5], "strides": [2, 2],
                                                         "pads": [2, 2, 2, 2]},
                             {"w": _weights(7, 5, 5, 5)}),
    "reduce_sum_axis0": ("ReduceSum", [[17, 5, 3]], {"keepdims": 1},
                         {"axes": np.array([0], np.int64)}),
}


@pytest.mark.parametrize("name", sorted(ODD_SIZES))
def test_odd_sizes_match_onnxruntime(name, tmp_path):
    op, shapes, attrs, initializers = ODD_SIZES[name]
    model = om.single_op(op, shapes, attrs, opset=18, initializers=initializers)
    feeds = om.example_inputs(model)
    ex, scheduled = _build_with_defaults(from_onnx(model), tmp_path)
    assert scheduled == 1
    np.testing.assert_allclose(ex.main(**feeds), om.reference(model, feeds)["y"],
                               rtol=1e-3, atol=1e-4)


@pytest.fixture(scope="module")
def conv_kernel():
    inputs, body = models()["conv2d_strided_padded_bias_relu"]
    module = build_graph_function(inputs, body)
    with module.context:
        (task,) = extract_tasks(module)
    return task.module


def test_trace_round_trips_and_replays(conv_kernel):
    sch = default_schedule(conv_kernel, TARGET, FACTS)
    assert sch.trace.insts
    again = Trace.from_json(sch.trace.to_json_string())
    assert again.as_json() == sch.trace.as_json()
    replay = mlcir.Schedule(conv_kernel)
    again.apply_to_schedule(replay)
    assert str(replay.mod) == str(sch.mod)
    namespace: dict = {"mlcir": mlcir}
    exec(sch.trace.as_python(), namespace)
    printed = mlcir.Schedule(conv_kernel)
    namespace["apply_trace"](printed)
    assert str(printed.mod) == str(sch.mod)


def test_transform_script_applies_with_mlcir_opt(conv_kernel, tmp_path):
    sch = default_schedule(conv_kernel, TARGET, FACTS)
    script = sch.as_transform()
    payload = mlcir.parse(str(conv_kernel), context=sch.context)
    with sch.context, ir.Location.unknown():
        apply_schedule_script(payload, script)
    assert str(payload) == str(sch.mod)
    kernel_file, script_file = tmp_path / "kernel.mlir", tmp_path / "schedule.mlir"
    kernel_file.write_text(str(conv_kernel))
    script_file.write_text(str(script))
    out = subprocess.run([sys.executable, "-m", "mlcir.tools.mlcir_opt", str(kernel_file),
                          f"--transform-script={script_file}"], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    with sch.context:
        assert str(mlcir.parse(out.stdout)) == str(mlcir.parse(str(sch.mod)))


def _register_tile(facts, m: int = 256, n: int = 256, k: int = 256) -> tuple[int, int, int]:
    text, _ = kernels.matmul(m, n, k)
    found = decisions(default_schedule(text, TARGET, facts))
    (rows, cols, reduction) = [d for kind, d in found if kind == "sample_perfect_tile"]
    return rows[-1], cols[-1], reduction[-1]


def test_golden_matmul_register_tiles():
    # AVX-512 (32 zmm, 16 f32): IREE's 8 x 32, the reduction whole (K = 256).
    assert _register_tile(replace(AVX512, threads=1)) == (8, 32, 256)
    # K slivers of (8 + 32) x K f32 within a quarter of L2: 1024 of 3072 in 1 MiB (the space's
    # cap), 384 in 256 KiB.
    assert _register_tile(replace(AVX512, threads=1), k=3072)[2] == 1024
    assert _register_tile(replace(AVX512, threads=1, l2_bytes=256 << 10), k=3072)[2] == 384
    # AVX2 (16 ymm, 8 f32): 8 accumulators, one column vector, one broadcast; 6 x 16 (BLIS's
    # Haswell kernel) where 6 divides the rows.
    assert _register_tile(replace(AVX2, threads=1)) == (8, 8, 256)
    assert _register_tile(replace(AVX2, threads=1), m=96, n=48, k=64)[:2] == (6, 16)
    # SSE (16 xmm, 4 f32).
    assert _register_tile(replace(SSE, threads=1)) == (8, 4, 256)
    # Columns stay whole vectors: 48 = 3 zmm.
    assert _register_tile(replace(AVX512, threads=1), m=96, n=48, k=64)[:2] == (8, 48)


def test_small_kernels_stay_serial_large_ones_run_parallel():
    small, _ = kernels.matmul(32, 32, 32)
    large, _ = kernels.matmul(512, 512, 512)
    two = replace(AVX512, threads=2)
    for text, parallel in [(small, False), (large, True)]:
        sch = default_schedule(text, "llvm -threads=2", two)
        assert any(inst.kind.name == "parallel" for inst in sch.trace.insts) == parallel
    # The outer loop of a parallel schedule has at least one iteration per thread.
    sch = default_schedule(large, "llvm -threads=2", two)
    outer = next(inst.inputs[0] for inst in sch.trace.insts if inst.kind.name == "parallel")
    assert sch.get(outer).extent >= 2


def test_parallel_iterations_share_evenly_among_threads():
    """A matrix-vector product with packed weights (24 panels of 32 columns): 3 parallel
    iterations of 8 panels left one of two threads twice the work; the register tile's rows
    give way until the iterations split evenly (6 of 4 panels). The two-thread build still
    matches numpy."""
    w = np.random.default_rng(0).standard_normal((3072, 768)).astype(np.float32) / 55
    model = om.single_op("MatMul", {"x": [1, 3072]}, initializers={"w": w})
    (task,) = extract_tasks(from_onnx(model), AVX512_BUILD)
    two = replace(AVX512, threads=2)
    sch = default_schedule(task.module, "llvm -threads=2", two)
    outer = next(inst.inputs[0] for inst in sch.trace.insts if inst.kind.name == "parallel")
    assert sch.get(outer).extent == 6
    panels = [d for kind, d in decisions(sch) if kind == "sample_perfect_tile"][0]
    assert panels == [6, 1, 4]
    inputs = om.single_op_inputs(model)
    got = mlcir.build(from_onnx(model), "llvm -threads=2").main(**inputs)
    np.testing.assert_allclose(got, inputs["x"] @ w, rtol=1e-4, atol=1e-4)


def test_vectorized_reduction_is_unrolled_in_parallel_builds():
    """A packed matmul built for 2 threads: the reduction loop around its 8 x 32 register
    tile carries the accumulators as a vector (hoisted) and is unrolled by the sampled 4, and
    the init, its reduction whole, fills each register tile. The pattern sets after
    vectorization rewrote the loops of this parallel kernel, which dropped their transform
    handles: the unroll and the hoisting were applied to nothing. It matches numpy."""
    w = np.random.default_rng(0).standard_normal((256, 256)).astype(np.float32)
    model = om.single_op("MatMul", {"x": [32, 256]}, initializers={"w": w})
    (task,) = extract_tasks(from_onnx(model), AVX512_BUILD)
    sch = default_schedule(task.module, "llvm -threads=2", replace(AVX512, threads=2))
    assert "sch.parallel" in str(sch.trace) and "factor=v" in str(sch.trace)
    text = str(sch.mod)
    loop = re.search(r"scf\.for %\w+ = %c0 to %c256 step %c4 iter_args\(.*\) -> "
                     r"\(tensor<8x1x32xf32>, vector<8x1x32xf32>\)(.*?)loop\.name = "
                     r'"matmul_packed\.l_1"', text, re.S)
    assert loop and loop.group(1).count("vector.contract") == 4
    assert re.search(r"linalg\.fill .*outs\(.*tensor<8x1x32xf32>\)", text)
    inputs = om.single_op_inputs(model)
    got = mlcir.build(from_onnx(model), "llvm -threads=2").main(**inputs)
    np.testing.assert_allclose(got, inputs["x"] @ w, rtol=1e-4, atol=1e-4)


def test_padding_copies_run_parallel_over_batch_and_channels(tmp_path):
    """A padded convolution's copy into its padded input is parallel at 2 threads, its batch
    of 1 fused with the channels so that every thread gets rows (serial, it kept a MobileNetV2
    depthwise kernel from getting any faster on 2 threads); the model matches onnxruntime.
    (With the layouts on, this convolution's padding is written by its input's layout change,
    graph-pad-windows; NCHW, it copies.)"""
    model = om.depthwise_conv(32, 56, seed=3)
    module = from_onnx(model)
    with module.context:
        module.operation.attributes["mlcir.layout"] = ir.StringAttr.get("none")
        tasks = extract_tasks(module)
    (task,) = [t for t in tasks if 'loop.block = "pad"' in str(t.module)]
    two = replace(AVX512, threads=2)
    trace = str(default_schedule(task.module, "llvm -threads=2", two).trace)
    pad = trace[trace.index('get_block(name="pad"'):]
    n, c = re.search(r"(l\d+), (l\d+), l\d+, l\d+.* = sch.get_loops", pad).groups()
    fused = re.search(rf"(l\d+) = sch.fuse\({n}, {c}\)", pad).group(1)
    assert f"sch.parallel(loop={fused})" in pad
    serial = str(default_schedule(task.module, TARGET, FACTS).trace)
    assert "parallel" not in serial
    ex, _ = _build_with_defaults(module, tmp_path, "llvm -threads=2")
    inputs = om.single_op_inputs(model)
    np.testing.assert_allclose(ex.main(**inputs), om.reference(model, inputs)["y"],
                               rtol=1e-4, atol=1e-4)


def test_memory_bound_matrix_vector_products_run_parallel(tmp_path):
    """A matrix-vector product with 4 MB of packed weights has little arithmetic but takes
    the time of reading them (estimated_serial_ns streams the arguments): at 2 threads it
    runs parallel, over the weight panels its register tile had taken whole (the MNIST CNN's
    dense layer: 52.9 -> 34.3 us); with 64 KB of weights it stays serial. Both match numpy."""
    rng = np.random.default_rng(11)
    two = replace(AVX512, threads=2)
    for k, n, parallel in [(4096, 256, True), (128, 128, False)]:
        w = rng.standard_normal((k, n)).astype(np.float32)
        model = om.single_op("MatMul", {"x": [1, k]}, initializers={"w": w})
        module = from_onnx(model)
        with module.context:
            (task,) = extract_tasks(module)
        sch = default_schedule(task.module, "llvm -threads=2", two)
        loops = [inst.inputs[0] for inst in sch.trace.insts if inst.kind.name == "parallel"]
        assert bool(loops) == parallel, (k, n)
        assert all(sch.get(loop).extent >= 2 for loop in loops)
        ex, _ = _build_with_defaults(module, tmp_path / str(k), "llvm -threads=2")
        x = rng.standard_normal((1, k)).astype(np.float32)
        np.testing.assert_allclose(ex.main(x), x @ w, rtol=1e-4, atol=1e-3)


def test_parallel_only_when_the_target_threads_save_several_fork_joins():
    assert parallel_threads(1e9, 1) == 1  # one thread: serial, whatever the size
    assert parallel_threads(8_000, 2) == 1  # saves 4 us: one fork/join
    assert parallel_threads(32_000, 2) == 1  # saves 16 us
    assert parallel_threads(32_000, 4) == 4  # saves 24 us
    assert parallel_threads(48_000, 2) == 2


def test_target_facts_from_cpu_names():
    def cpu(**options: str) -> Target:
        return Target(kind="llvm", options=tuple(options.items()))

    assert target_facts(cpu(mcpu="skylake-avx512")).isa == "avx512"
    assert target_facts(cpu(mcpu="haswell")).vector_bits == 256
    assert target_facts(cpu(mattr="+avx2,+fma")).vector_registers == 16
    assert target_facts(cpu(mtriple="aarch64-linux-gnu")).isa == "neon"
    assert target_facts("llvm -threads=3").threads == 3
    host = target_facts("llvm")
    assert host.threads >= 1 and host.l1d_bytes > 0 and host.lanes() >= 4


@pytest.mark.parametrize("channels, hw, tile, padded_tile",
                         [(64, 20, 16, 5), (32, 14, 7, 7), (64, 16, 16, 16), (24, 12, None, None)])
def test_a_layout_change_to_or_from_a_channel_block_is_a_register_transpose(channels, hw,
                                                                             tile, padded_tile):
    """NCHW <-> NCHW16c: a tile of the merged H*W (16 where 16 divides it: 20x20 = 400; else
    its largest divisor up to 8: 14x14 = 196 takes 7) by the 16 channels of a block, transposed in registers
    (measured 1.6-2.2x faster than LLVM's strided loops); blocks of 8 are left to LLVM
    (measured slower tiled). The change into NCHW16c writes the padded tensor the convolution
    reads (graph-pad-windows): there the tile is of W alone, the interior's rows being apart,
    and the border strips are plain fills."""
    vectorized = tile is not None
    rng = np.random.default_rng(3)
    w = (rng.standard_normal((channels, channels, 3, 3)) * 0.1).astype(np.float32)
    model = om.single_op("Conv", {"x": [1, channels, hw, hw]},
                         {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1]}, initializers={"w": w})
    tasks = [t for t in extract_tasks(from_onnx(model), AVX512_BUILD)
             if "layout_transform" in t.name]
    assert sorted(t.name for t in tasks) == ["fused_layout_transform_pad_window",
                                             "layout_transform"]
    for task in tasks:
        sch = default_schedule(task.module, TARGET, FACTS)
        assert ("sch.vectorize(" in str(sch.trace)) == vectorized, sch.trace
        if vectorized:
            expected = padded_tile if "pad_window" in task.name else tile
            assert f"factors=[None, {expected}]" in str(sch.trace), sch.trace
            assert fallback_reason(task.module, TARGET, FACTS) is None
        args = kernels.random_inputs(str(task.module), 0)
        want = mlcir.build(task.module, target=TARGET, schedule="none").main(*args)
        np.testing.assert_array_equal(mlcir.build(task.module, target=TARGET).main(*args), want)
