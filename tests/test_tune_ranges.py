"""Tuning dynamic kernels over input ranges (issue 40, item 2): the sizes drawn from the
ranges, the kernels' operand shapes at each, a dynamic kernel called alone, and a tuned build
whose records serve every size."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from mlir import ir

import mlcir
from mlcir.driver import staged_module
from mlcir.errors import TuningError
from mlcir.frontend import from_onnx
from mlcir.passes.layout_chains import module_layout
from mlcir.targets import build_plan, compile_module
from mlcir.targets.kernels import extract_kernel, kernel_functions, workload_hash
from mlcir.targets.stages import run_stages
from mlcir.testing import onnx_models
from mlcir.tune import kernel_sizes, tune_module
from mlcir.tune.tasks import extract_tasks

MLCIR = str(Path(sys.executable).with_name("mlcir"))


def _lowered_main(model: onnx.ModelProto):
    module = from_onnx(model)
    plan = build_plan("llvm", module_layout(module))
    with module.context, ir.Location.unknown():
        lowered = run_stages(module, plan, schedule="none", until="kernels").prepared.work
    main = next(op for op in lowered.body.operations if op.operation.name == "func.func"
                and ir.StringAttr(op.attributes["sym_name"]).value == "main")
    return module, lowered, main


def test_sizes_are_stratified_over_each_range_and_shared_symbols_agree():
    symbols = {"ids": ["N", "S"], "mask": ["N", "S"], "w": [4], "bias": [3]}
    sizes = kernel_sizes.sample_sizes(
        symbols, {"ids": [(1, 8), (16, 512)], "mask": [(1, 8), (16, 512)], "w": [4]}, 4, seed=3)
    assert len(sizes) == 4
    for size in sizes:
        assert size["ids"] == size["mask"] and size["w"] == (4,) and size["bias"] == (3,)
        assert 1 <= size["ids"][0] <= 8 and 16 <= size["ids"][1] <= 512
    # One value in each quarter of the range.
    quarters = sorted((s["ids"][1] - 16) * 4 // (512 - 16 + 1) for s in sizes)
    assert quarters == [0, 1, 2, 3]
    assert sizes == kernel_sizes.sample_sizes(
        symbols, {"ids": [(1, 8), (16, 512)], "mask": [(1, 8), (16, 512)], "w": [4]}, 4, seed=3)


@pytest.mark.parametrize("ranges, message", [
    ({"x": [(1, 8), 784], "y": [3]}, "'y', which is not an input"),
    ({}, "input 'x' has dynamic dims: give its range"),
    ({"x": [(1, 8)]}, "has 1 dims; the input has 2"),
    ({"x": [(8, 1), 784]}, "bad dim (8, 1)"),
    ({"x": [(1, 8), 785]}, "dim 1 is 785; the input's dim 1 is static, 784"),
])
def test_bad_ranges_name_the_input(ranges, message):
    with pytest.raises(TuningError, match=message.replace("(", r"\(").replace(")", r"\)")):
        kernel_sizes.sample_sizes({"x": ["N", 784]}, ranges, 2)


def test_operand_shapes_of_each_kernel_call_at_a_size():
    _, lowered, main = _lowered_main(onnx_models.mnist_cnn(batch="N"))
    with lowered.context:
        shapes = kernel_sizes.call_shapes(main, {"x": (3, 1, 28, 28)})
        kernels = {fn.sym_name.value: fn for fn in kernel_functions(lowered)}
        assert set(shapes) == set(kernels)
        for name, operands in shapes.items():
            types = [ir.RankedTensorType(t) for t in kernels[name].type.inputs]
            assert len(operands) == len(types)
            for shape, t in zip(operands, types):  # static dims as typed, the batch at 3
                assert shape == tuple(3 if t.is_dynamic_dim(i) else t.shape[i]
                                      for i in range(t.rank)), name
    # The second convolution (blocked: 64 channels in 8 blocks of 8) writes 24x24 at batch 3.
    assert [operands[-1] for name, operands in shapes.items()
            if "conv2d_nchwc" in name] == [(3, 8, 24, 24, 8)]


def test_a_dynamic_kernel_alone_sizes_its_result_from_its_destination():
    _, lowered, _ = _lowered_main(onnx_models.mlp(batch="N"))
    with lowered.context:
        kernel = extract_kernel(kernel_functions(lowered)[-1])
        ex = compile_module(kernel)
    rng = np.random.default_rng(0)
    for rows in (1, 5):
        args = [rng.standard_normal([rows if d is None else d for d in a.shape]
                                    ).astype(np.float32) for a in ex["main"].signature.args]
        got = ex.main(*args)
        assert got.shape == (rows, 10)
        np.testing.assert_allclose(got, args[0] @ args[1] + args[2], rtol=1e-5, atol=1e-5)


def test_measurement_attributes_are_not_part_of_the_workload():
    _, lowered, _ = _lowered_main(onnx_models.mlp(batch="N"))
    with lowered.context:
        kernel = extract_kernel(kernel_functions(lowered)[0])
        before = workload_hash(kernel)
        kernel_sizes.attach(kernel, [[(2, 784)], [(9, 784)]], [0.5, 0.5])
        assert workload_hash(kernel) == before
        assert kernel_sizes.attached(kernel) == ([[(2, 784)], [(9, 784)]], [0.5, 0.5])


def test_dynamic_kernels_are_tasks_only_with_sizes():
    module = from_onnx(onnx_models.mlp(batch="N"))
    assert extract_tasks(module) == []
    tasks = extract_tasks(module, sizes=[{"x": (2, 784)}, {"x": (40, 784)}])
    assert len(tasks) == 2
    with module.context:
        shapes, weights = kernel_sizes.attached(tasks[0].module)
    assert [s[0] for s in shapes] == [(2, 784), (40, 784)] and weights == [0.5, 0.5]


@pytest.fixture(scope="module")
def tuned_over_range(tmp_path_factory):
    work_dir = tmp_path_factory.mktemp("ranges")
    db = tune_module(from_onnx(onnx_models.mlp(batch="N")), work_dir=work_dir,
                     max_trials_global=6, num_trials_per_iter=3, verbose=0,
                     input_ranges={"x": [(1, 48), 784]}, range_samples=2)
    return work_dir, db


def test_tuning_over_a_range_gives_records_that_serve_every_size(tuned_over_range):
    work_dir, db = tuned_over_range
    records = [json.loads(line) for line in
               (work_dir / "database" / "records.json").read_text().splitlines()]
    assert len({r["workload"] for r in records}) == 2
    assert any(r.get("run_secs") for r in records)
    staged = staged_module(from_onnx(onnx_models.mlp(batch="N")), "llvm", records=db,
                           until="scheduled")
    assert set(staged.schedule_sources.values()) == {"record"}
    tuned = mlcir.build(from_onnx(onnx_models.mlp(batch="N")), records=db)
    model = onnx_models.mlp(batch="N")
    for batch in (1, 7, 37, 100):  # inside the range, a prime, beyond it
        inputs = onnx_models.mlp_inputs(batch, seed=batch)
        want = onnx_models.reference(model, inputs)["logits"]
        np.testing.assert_allclose(tuned.main(**inputs), want, rtol=1e-4, atol=1e-4)


def test_weighted_sizes_and_their_errors(tmp_path):
    module = from_onnx(onnx_models.mlp(batch="N"))
    with pytest.raises(TuningError, match="input_ranges or range_sizes, not both"):
        tune_module(module, work_dir=tmp_path, max_trials_global=1, verbose=0,
                    input_ranges={"x": [(1, 4), 784]}, range_sizes=[({"x": [1, 784]}, 1.0)])
    with pytest.raises(TuningError, match="weights must be >= 0"):
        tune_module(module, work_dir=tmp_path, max_trials_global=1, verbose=0,
                    range_sizes=[({"x": [1, 784]}, -1.0)])


def test_cli_tunes_over_a_range(tmp_path):
    path = tmp_path / "mlp.onnx"
    onnx.save(onnx_models.mlp(batch="N"), path)
    records = tmp_path / "records.json"
    run = subprocess.run([MLCIR, "tune", str(path), "--trials", "2",
                          "--input-shapes", "x:[1..16,784]", "-o", str(records), "--quiet"],
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    staged = staged_module(from_onnx(str(path)), "llvm", records=str(records),
                           until="scheduled")
    assert "record" in set(staged.schedule_sources.values())
    bad = subprocess.run([MLCIR, "compile", str(path),
                          "--input-shapes", "x:[1..16,784]", "-o", str(tmp_path / "m.mlcir")],
                         capture_output=True, text=True)
    assert bad.returncode == 1 and "a range ('low..high') is for `mlcir tune`" in bad.stderr
