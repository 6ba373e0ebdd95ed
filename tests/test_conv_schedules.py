"""Convolution and pooling tiles compile to the register-tile micro-kernel
(docs/measurements/convolutions.md, "How convolutions are scheduled").

A conv2d kernel scheduled like a matmul — output channels x output width vectorized, every
reduction step (input channel, kernel row, kernel column) one at a time around it — must
match numpy for strides, padding, dilation and widths that are not powers of two (the
materializer splits those into power-of-two lane parts: 24 -> 16 + 8, 13 -> 8 + 4 + 1), and its
accumulators must be loop-carried vectors of power-of-two lanes (LLVM scalarizes other lengths
across loop iterations, measured 10x slower) with no copy of the tile in the loop.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

import mlcir
from mlcir.dialects import graph
from mlcir.testing import kernels


def _kernel(inputs, body):
    from mlcir.testing.graph_kernels import build_graph_function
    from mlcir.tune import extract_tasks

    module = build_graph_function(inputs, body)
    with module.context:
        (task,) = extract_tasks(module)
    return task.module


def _run(module, *arrays: np.ndarray) -> np.ndarray:
    """Build and call ``main``; a kernel's destination arguments (after the inputs) get zeros."""
    function = mlcir.build(module)["main"]
    dests = [np.zeros(a.shape, a.dtype) for a in function.signature.args[len(arrays):]]
    return function(*arrays, *dests)


def _conv_micro_kernel(sch: mlcir.Schedule, rows: int, name: str = "conv2d",
                      decompose: bool = True) -> None:
    """The matmul micro-kernel's shape: an (output channels x whole output width) register
    tile, the reduction stepped by one around it, one output row per tile (``decompose``: the
    block's fill moved to the tile, for blocks that have one)."""
    block = sch.get_block(name)
    n, o, oh, ow, c, kh, kw = sch.get_loops(block)
    o0, o1 = sch.split(o, [None, rows])
    oh0, oh1 = sch.split(oh, [None, 1])
    c0, c1 = sch.split(c, [None, 1])
    kh0, kh1 = sch.split(kh, [None, 1])
    kw0, kw1 = sch.split(kw, [None, 1])
    sch.reorder(n, o0, oh0, c0, kh0, kw0, oh1, c1, kh1, kw1, o1, ow)
    sch.vectorize(o1)
    if decompose:
        sch.decompose_reduction(block, c0)


CONVS = {
    # name: (x shape, w shape, conv2d attributes); output widths 24, 13, 16, 6, 10.
    "width24": ((1, 8, 6, 26), (16, 8, 3, 3), dict(strides=[1, 1], padding=[0, 0, 0, 0])),
    "width13_padded": ((1, 4, 5, 13), (8, 4, 3, 3), dict(strides=[1, 1], padding=[1, 1, 1, 1])),
    "width16_single_channel": ((1, 1, 6, 18), (8, 1, 3, 3),
                               dict(strides=[1, 1], padding=[0, 0, 0, 0])),
    "strided_padded": ((1, 4, 11, 11), (8, 4, 3, 3), dict(strides=[2, 2], padding=[1, 1, 1, 1])),
    "dilated": ((1, 4, 9, 14), (8, 4, 3, 3),
                dict(strides=[1, 1], padding=[0, 0, 0, 0], dilation=[2, 2])),
}


@pytest.mark.parametrize("case", sorted(CONVS))
def test_conv_micro_kernel_matches_numpy(case):
    x_shape, w_shape, attrs = CONVS[case]
    attrs = dict(dict(dilation=[1, 1], groups=1), **attrs)
    rng = np.random.default_rng(0)
    x = rng.standard_normal(x_shape).astype(np.float32)
    w = rng.standard_normal(w_shape).astype(np.float32)
    bias = rng.standard_normal((1, w_shape[0], 1, 1)).astype(np.float32)
    kernel = _kernel([x, w, bias], lambda g, x, w, b: g.relu(g.add(g.conv2d(x, w, **attrs), b)))
    sch = mlcir.Schedule(kernel)
    _conv_micro_kernel(sch, rows=8)
    want = np.maximum(graph.OPS["conv2d"].evaluate(x, w, **attrs) + bias, 0)
    got = _run(sch.mod, x, w, bias)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def _loop_carried_vectors(text: str) -> list[str]:
    return re.findall(r"iter_args\([^)]*\) -> \(([^)]*vector[^)]*)\)", text)


def test_odd_width_tile_is_split_into_power_of_two_lanes():
    """The 8 x 24 accumulator tile of a conv is carried as 8 x 16 and 8 x 8 vectors."""
    text, reference = kernels.conv2d(1, 8, 6, 26, 16, 3, 3)
    sch = mlcir.Schedule(text)
    _conv_micro_kernel(sch, rows=8, name="conv")
    scheduled = str(sch.mod)
    carried = _loop_carried_vectors(scheduled)
    assert carried and all("vector<8x16xf32>" in c and "vector<8x8xf32>" in c for c in carried)
    assert "vector<8x24xf32>" not in scheduled
    rng = np.random.default_rng(1)
    x = rng.standard_normal((1, 8, 6, 26)).astype(np.float32)
    k = rng.standard_normal((16, 8, 3, 3)).astype(np.float32)
    np.testing.assert_allclose(mlcir.build(sch.mod).main(x, k), reference(x, k), rtol=1e-4,
                               atol=1e-4)


def test_odd_width_matmul_tile_is_split():
    """The same rule for a matmul register tile of 24 columns (16 + 8)."""
    text, reference = kernels.matmul(32, 48, 16)
    sch = mlcir.Schedule(text)
    c = sch.get_block("C")
    i, j, k = sch.get_loops(c)
    i0, i1 = sch.split(i, [None, 8])
    j0, j1 = sch.split(j, [None, 24])
    k0, k1 = sch.split(k, [None, 1])
    sch.reorder(i0, j0, k0, k1, i1, j1)
    sch.vectorize(i1)
    sch.decompose_reduction(c, k0)
    carried = _loop_carried_vectors(str(sch.mod))
    assert carried and all("vector<8x16xf32>" in c and "vector<8x8xf32>" in c for c in carried)
    rng = np.random.default_rng(2)
    a = rng.standard_normal((32, 16)).astype(np.float32)
    b = rng.standard_normal((16, 48)).astype(np.float32)
    np.testing.assert_allclose(mlcir.build(sch.mod).main(a, b), reference(a, b), rtol=1e-4,
                               atol=1e-4)


def test_conv_tile_accumulators_stay_in_registers():
    """After bufferization the reduction loops carry the 8 x 16 accumulators and nothing is
    allocated or copied inside the loop nest (there was a copy of the tile, through a heap
    buffer, around every register tile)."""
    from mlcir.passes import run_pipeline

    text, _ = kernels.conv2d(1, 8, 6, 18, 16, 3, 3)
    sch = mlcir.Schedule(text)
    _conv_micro_kernel(sch, rows=8, name="conv")
    module = sch.mod
    with module.context:
        run_pipeline(module, "mlcir-cpu-bufferize")
    body = str(module)
    loops = body[body.index("scf.for"):]
    step = loops[loops.index("iter_args"):loops.index("vector.store")]
    assert "-> (vector<8x16xf32>)" in step  # 2-D: no unit dim left over from the 1-D conv
    assert step.count("vector.fma") == 8 and step.count(": vector<16xf32>") >= 8
    assert "memref.alloc" not in loops and "memref.copy" not in loops


def test_depthwise_tiles_multiply_add_in_fmas():
    """A blocked depthwise convolution's vector tile (output columns x the channel block) has
    no reduction inside: its multiply and add stay elementwise, and they reach LLVM marked
    ``contract``, so each tap is one FMA per vector (it was a vmulps and a vaddps); the
    default-scheduled model matches onnxruntime."""
    from mlcir.frontend import from_onnx
    from mlcir.passes import run_pipeline
    from mlcir.targets.cpu.defaults import default_schedule
    from mlcir.targets.cpu.facts import target_facts
    from mlcir.testing import onnx_models as om
    from mlcir.tune import extract_tasks

    model = om.depthwise_conv(32, 14, seed=5)
    module = from_onnx(model)
    with module.context:
        (task,) = [t for t in extract_tasks(module) if "conv2d_nchwc" in t.name]
    lowered = default_schedule(task.module, "llvm -threads=1").mod
    with lowered.context:
        run_pipeline(lowered, "mlcir-cpu{threads=1}")
    text = str(lowered)
    lanes = target_facts("llvm").lanes()  # the channel block is one vector of the host's
    fmul = re.findall(r"llvm.fmul .*\{fastmathFlags = #llvm.fastmath<contract>\} : "
                      rf"vector<{lanes}xf32>", text)
    fadd = re.findall(r"llvm.fadd .*\{fastmathFlags = #llvm.fastmath<contract>\} : "
                      rf"vector<{lanes}xf32>", text)
    assert fmul and len(fmul) == len(fadd)
    assert not re.findall(rf"llvm.fmul [^{{]*: vector<{lanes}xf32>", text)  # none without the flag
    inputs = om.single_op_inputs(model)
    np.testing.assert_allclose(mlcir.build(module).main(**inputs),
                               om.reference(model, inputs)["y"], rtol=1e-4, atol=1e-4)


def test_the_vectorized_pooling_max_reaches_llvm_without_nan_checks():
    """The default-scheduled 3x3/2 max pool's vector max, rebuilt by vectorization from the
    reduction, reaches LLVM as ``maxnum`` with ``nnan`` (mlcir-pooling-max runs after the
    vector lowering): one vmaxps, no compare and blend; it matches onnxruntime."""
    from mlcir.frontend import from_onnx
    from mlcir.passes import run_pipeline
    from mlcir.targets.cpu.defaults import default_schedule
    from mlcir.testing import onnx_models as om
    from mlcir.tune import extract_tasks

    model = om.single_op("MaxPool", {"x": [1, 8, 20, 20]},
                         {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1], "strides": [2, 2]})
    module = from_onnx(model)
    with module.context:
        (task,) = extract_tasks(module)
    lowered = default_schedule(task.module, "llvm -threads=1").mod
    with lowered.context:
        run_pipeline(lowered, "mlcir-cpu{threads=1}")
    maxima = re.findall(r"llvm.intr.maxnum\(.*", str(lowered))
    assert any("vector<" in m for m in maxima)
    assert all("#llvm.fastmath<nnan>" in m for m in maxima), maxima
    inputs = om.single_op_inputs(model)
    np.testing.assert_allclose(mlcir.build(module).main(**inputs),
                               om.reference(model, inputs)["y"], rtol=1e-6)


@pytest.mark.parametrize("kind", ["max_pool2d", "avg_pool2d"])
def test_pooling_odd_width_matches_numpy(kind):
    attrs = dict(kernel=[3, 3], strides=[2, 2], padding=[1, 1, 1, 1], dilation=[1, 1],
                 ceil_mode=0)
    if kind == "avg_pool2d":
        attrs["count_include_pad"] = 0
    rng = np.random.default_rng(3)
    x = rng.standard_normal((1, 8, 12, 26)).astype(np.float32)  # output width 13: 8 + 4 + 1
    kernel = _kernel([x], lambda g, x: getattr(g, kind)(x, **attrs))
    sch = mlcir.Schedule(kernel)
    block_name = "max_pool2d" if kind == "max_pool2d" else "sum_pool"
    block = sch.get_block(block_name)
    # A width stride reads the input as [.., W/2, 2]: the window is (kh, kq, kr), tap
    # kw = 2 * kq + kr (passes/lowerings/nn.py).
    n, c, oh, ow, *window = sch.get_loops(block)
    assert len(window) == 3
    oh0, oh1 = sch.split(oh, [None, 1])
    sch.reorder(n, c, oh0, *window, oh1, ow)
    sch.vectorize(ow)
    want = graph.OPS[kind].evaluate(x, **attrs)
    np.testing.assert_allclose(_run(sch.mod, x), want, rtol=1e-5, atol=1e-5)


def test_a_grouped_convolution_tile_stays_scalar_and_says_why():
    """The grouped convolution's generic reads its input channel through a floordiv: its
    tiles do not vectorize, so vectorize leaves scalar loops (TVM's fallback) and the reason
    on the block's op; the result still matches numpy."""
    rng = np.random.default_rng(4)
    x = rng.standard_normal((1, 8, 6, 6)).astype(np.float32)
    w = rng.standard_normal((8, 2, 3, 3)).astype(np.float32)
    kernel = _kernel([x, w], lambda g, x, w: g.conv2d(x, w, strides=[1, 1], padding=[0] * 4,
                                                      dilation=[1, 1], groups=4))
    sch = mlcir.Schedule(kernel)
    n, o, oh, ow, c, kh, kw = sch.get_loops(sch.get_block("conv2d"))
    sch.reorder(n, oh, c, kh, kw, o, ow)
    sch.vectorize(o)
    assert 'loop.not_vectorized = "its tile reads an operand through a stride' in str(sch.mod)
    attrs = dict(strides=[1, 1], padding=[0] * 4, dilation=[1, 1], groups=4)
    np.testing.assert_allclose(_run(sch.mod, x, w), graph.OPS["conv2d"].evaluate(x, w, **attrs),
                               rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("stride, dilation", [(2, 1), (2, 2), (3, 2), (4, 1)])
def test_strided_conv_phases_match_numpy(stride, dilation):
    """A width stride splits the input into phases (block ``deinterleave``) and the
    convolution into one stride-1 convolution per phase, each scheduled as the micro-kernel."""
    attrs = dict(strides=[2, stride], padding=[1, 1, 1, 1], dilation=[1, dilation], groups=1)
    rng = np.random.default_rng(stride * 10 + dilation)
    x = rng.standard_normal((1, 4, 9, 23)).astype(np.float32)
    w = rng.standard_normal((8, 4, 3, 3)).astype(np.float32)
    kernel = _kernel([x, w], lambda g, x, w: g.conv2d(x, w, **attrs))
    sch = mlcir.Schedule(kernel)
    phases = [name for name in ("conv2d", "conv2d_1", "conv2d_2", "conv2d_3")
              if f'loop.block = "{name}"' in str(sch.mod)]
    assert 'loop.block = "deinterleave"' in str(sch.mod)
    assert len(phases) == len({kw * dilation % stride for kw in range(3)})
    for name in phases:  # the later phases accumulate into the first: no fill of their own
        _conv_micro_kernel(sch, rows=8, name=name, decompose=name == "conv2d")
    assert len(_loop_carried_vectors(str(sch.mod))) >= len(phases)
    want = graph.OPS["conv2d"].evaluate(x, w, **attrs)
    np.testing.assert_allclose(_run(sch.mod, x, w), want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("stride, dilation, threads", [(2, 1, 1), (3, 2, 1), (2, 1, 2)])
def test_default_schedule_computes_earlier_phases_at_the_last_ones_tile(stride, dilation,
                                                                        threads):
    """The default schedule tiles a strided convolution's last phase first and, for two
    phases, computes the first at its outer tile, tiled inside it: the phases accumulate into
    one tile, with the epilogue (a ReLU) after them, instead of passing a whole-result buffer
    (bench/phase_fusion.py). Three phases (stride 3) stay apart: the middle one's init, the
    first's result, cannot move. The kernel matches numpy either way."""
    from mlcir.targets.cpu.defaults import default_schedule

    attrs = dict(strides=[2, stride], padding=[1, 1, 1, 1], dilation=[1, dilation], groups=1)
    rng = np.random.default_rng(stride * 10 + dilation + threads)
    x = rng.standard_normal((1, 4, 9, 35)).astype(np.float32)
    w = rng.standard_normal((16, 4, 3, 3)).astype(np.float32)
    kernel = _kernel([x, w], lambda g, x, w: g.relu(g.conv2d(x, w, **attrs)))
    sch = default_schedule(kernel, f"llvm -threads={threads}")
    trace = str(sch.trace)
    phases = len({kw * dilation % stride for kw in range(3)})
    last = f"conv2d_{phases - 1}"
    # The last phase is tiled first; with two phases the first is computed at its tile.
    assert trace.index(f'name="{last}"') < trace.index('name="conv2d"')
    assert trace.count("sch.compute_at(") == (1 if phases == 2 else 0)
    assert "sch.reverse_compute_at(" in trace
    want = np.maximum(graph.OPS["conv2d"].evaluate(x, w, **attrs), 0)
    np.testing.assert_allclose(_run(sch.mod, x, w), want, rtol=1e-4, atol=1e-4)
