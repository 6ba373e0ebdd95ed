"""A padded, strided NCHW pooling reads its input in place (issue 14, sixth round): each
rectangle of outputs whose windows keep the same in-bounds taps is a pooling of its own
(passes/lowerings/nn.py, ``_pool``), so no kernel copies the input into a padded tensor.
Checked: the runs and rectangles the lowering chooses, that the kernel has no padding block and
no copy once bufferized, its default schedule (vectorized interior, scalar one-column borders,
small rectangles serial on two threads), and the numbers against onnxruntime and numpy under
the default schedule and sampled ones."""

from __future__ import annotations

import numpy as np
import pytest

import mlcir
from mlcir.frontend import from_onnx
from mlcir.passes import run_pipeline
from mlcir.passes.lowerings.nn import TapRun, _phase_fitting, _tap_runs, _vector_cover
from mlcir.passes.pipelines import cpu_bufferize
from mlcir.schedule import Schedule, ScheduleError
from mlcir.targets.cpu.defaults import fallback_reason
from mlcir.testing import onnx_models as om
from mlcir.testing.kernels import random_inputs
from mlcir.tune import default_schedule
from mlcir.tune.space import default_space
from mlcir.tune.tasks import extract_tasks


def pool_model(op: str, channels: int, hw: int, kernel: int, stride: int, pad: int, **extra):
    return om.single_op(op, {"x": [1, channels, hw, hw]},
                        {"kernel_shape": [kernel, kernel], "pads": [pad] * 4,
                         "strides": [stride, stride], **extra})


def only_task(model):
    (task,) = extract_tasks(from_onnx(model))
    return task


def test_the_runs_of_resnets_max_pool():
    """3x3/2 padded by 1 over 112: output 0 keeps taps 1 and 2, outputs 1..55 all three
    (reading from input 1); the 55 inner columns are covered by whole vectors, 48 and 16
    overlapping, and each reads whole pairs of columns from column 0 or 78 (lead 1)."""
    runs = _tap_runs(56, 112, kernel=3, stride=2, dilation=1, before=1)
    assert runs == [TapRun(0, 1, 1, 2, 0), TapRun(1, 55, 0, 3, 1)]
    cover = _vector_cover(runs[1], stride=2, cover=16)
    assert cover == [TapRun(1, 48, 0, 3, 1), TapRun(40, 16, 0, 3, 79)]
    fitted = [f for part in cover for f in _phase_fitting(part, 112, stride=2, dilation=1)]
    assert fitted == [TapRun(1, 48, 0, 3, 1, lead=1), TapRun(40, 16, 0, 3, 79, lead=1)]


def test_runs_past_the_end_and_what_does_not_fit():
    """Ceil mode's last window keeps the taps in bounds; a run whose whole pairs would pass
    the input's last even column ends in one-output runs (unsplit); a run with a power of two
    from 4 in its length, or shorter than a vector, is not covered again; a window of padding
    alone is refused."""
    assert _tap_runs(5, 10, kernel=3, stride=2, dilation=1, before=0) == [
        TapRun(0, 4, 0, 3, 0), TapRun(4, 1, 0, 2, 8)]
    # 5 outputs over 11 columns (10 in whole pairs) reading columns 0..10: the last output
    # reads column 10, past the pairs, so it is a run of its own.
    assert _phase_fitting(TapRun(0, 5, 0, 3, 0), 10, stride=2, dilation=1) == [
        TapRun(0, 4, 0, 3, 0, lead=0), TapRun(4, 1, 0, 3, 8)]
    assert _vector_cover(TapRun(0, 56, 0, 3, 0), stride=2, cover=16) == [TapRun(0, 56, 0, 3, 0)]
    assert _vector_cover(TapRun(0, 13, 0, 3, 0), stride=2, cover=16) == [TapRun(0, 13, 0, 3, 0)]
    with pytest.raises(mlcir.LoweringError, match="reads only padding"):
        _tap_runs(3, 2, kernel=2, stride=1, dilation=1, before=2)


@pytest.mark.parametrize("op", ["MaxPool", "AveragePool"])
def test_a_strided_pooling_of_a_graph_argument_copies_nothing(op):
    """The kernel has no padding block, reads the input through one phase view, and once
    scheduled and bufferized allocates and copies nothing of the size of the input."""
    task = only_task(pool_model(op, 16, 30, 3, 2, 1))
    text = str(task.module)
    assert 'loop.block = "pad' not in text
    assert text.count("tensor.expand_shape %arg0") == 1
    assert fallback_reason(task.module, "llvm -threads=1") is None
    module = default_schedule(task.module, "llvm -threads=1").mod
    with module.context:
        run_pipeline(module, ",".join(cpu_bufferize()))
    bufferized = str(module)
    assert "memref.copy" not in bufferized and "linalg.copy" not in bufferized
    assert "memref.alloc() {alignment = 64 : i64} : memref<1x16" not in bufferized


def test_without_a_width_stride_the_padded_copy_stays():
    """3x3/1: the copy is no larger than the result, and the border columns would be scalar
    rectangles costing more (module docstring of the lowering)."""
    text = str(only_task(pool_model("AveragePool", 8, 12, 3, 1, 1)).module)
    assert 'loop.block = "pad"' in text
    assert text.count('loop.block = "sum_pool"') == 1 and "sum_pool_1" not in text


def test_the_default_schedule_of_resnets_max_pool():
    """The interior (55 x 48 outputs) is vectorized 48 wide; the 16-wide cover and the first
    row too; the one-column rectangles stay scalar (there is no vector dim: the kernel keeps
    its default schedule). On two threads the interior runs parallel and the small rectangles
    serial."""
    task = only_task(pool_model("MaxPool", 64, 112, 3, 2, 1))
    trace = str(default_schedule(task.module, "llvm -threads=2").trace)
    blocks = trace.split("sch.get_block(")[1:]
    by_name = {b.split('"')[1]: b for b in blocks}
    assert "decision=[1, 1, 48]" in by_name["max_pool2d"] and \
        "sch.parallel" in by_name["max_pool2d"]
    columns = [name for name, b in by_name.items() if "sch.vectorize" not in b]
    assert len(columns) == 2  # the first column and the corner
    assert all("sch.parallel" not in by_name[name] for name in columns)


@pytest.mark.parametrize("op, hw, kernel, stride, pad, extra", [
    ("MaxPool", 112, 3, 2, 1, {}),                      # ResNet-50's: 55 inner columns
    ("MaxPool", 23, 3, 2, 1, {"ceil_mode": 1}),         # ceil mode, an odd width
    ("AveragePool", 40, 3, 2, 1, {}),                   # 19 inner columns: 16 + 16 overlapping
    ("AveragePool", 37, 3, 2, 1, {"count_include_pad": 1}),
    ("MaxPool", 20, 2, 3, 1, {"dilations": [2, 2]}),    # dilated, stride 3
])
@pytest.mark.parametrize("threads", [1, 2])
def test_the_pooling_matches_onnxruntime(op, hw, kernel, stride, pad, extra, threads):
    model = pool_model(op, 16, hw, kernel, stride, pad, **extra)
    inputs = om.single_op_inputs(model)
    got = mlcir.build(from_onnx(model), target=f"llvm -threads={threads}").main(**inputs)
    np.testing.assert_allclose(got, om.reference(model, inputs)["y"], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("op", ["MaxPool", "AveragePool"])
def test_sampled_schedules_of_the_rectangles_match(op):
    """The default design space (fixed seeds): each sample builds and matches the unscheduled
    kernel (overlapping rectangles of a sum count once), or is refused with a ScheduleError;
    at least one is valid."""
    task = only_task(pool_model(op, 8, 38, 3, 2, 1))
    inputs = random_inputs(str(task.module))
    expected = mlcir.build(task.module, schedule="none").main(*inputs)
    valid = 0
    for seed in range(3):
        sch = Schedule(task.module, seed=seed)
        try:
            default_space("llvm -threads=2")(sch)
            got = mlcir.build(sch.mod, target="llvm -threads=2").main(*inputs)
        except ScheduleError:
            continue
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5,
                                   err_msg=f"seed {seed}:\n{sch.trace}")
        valid += 1
    assert valid
