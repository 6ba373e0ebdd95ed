"""The one compile path (mlcir/targets/stages.py): a build, its ``--dump-mlir`` stages and the
tuner's tasks are the same kernels, specialisations and records included; the backend's build
plan sizes layouts from the target's facts, and builds for other vector widths still compute
onnxruntime's numbers."""

from __future__ import annotations

import re

import numpy as np
import onnx
import onnxruntime as ort
import pytest

import mlcir
from mlcir.cli import _asm
from mlcir.cli import main as cli
from mlcir.driver import staged_module
from mlcir.frontend import from_onnx
from mlcir.passes.specialize import add_specializations
from mlcir.ir import clone_module
from mlcir.target import Target
from mlcir.targets import build_plan
from mlcir.targets.kernels import extract_kernel, kernel_functions, workload_hash, workload_kernel
from mlcir.testing import onnx_models as om
from mlcir.tune import default_schedule
from mlcir.tune.database import Database, Record, Specialization
from mlcir.tune.tasks import extract_tasks

AVX512, AVX2, NEON = "llvm -mcpu=skylake-avx512", "llvm -mcpu=x86-64-v3", \
    "llvm -mtriple=aarch64-linux-gnu"
LANES = {AVX512: 16, AVX2: 8, NEON: 4}
FIVE_D = re.compile(r"tensor<1x\d+x\d+x\d+x(\d+)xf32>")


@pytest.mark.parametrize("target", list(LANES))
def test_the_plan_sizes_layouts_for_the_targets_vectors(target):
    lanes = LANES[target]
    plan = build_plan(target)
    assert f"graph-layout-nchwc{{lanes={lanes}}}" in plan.kernels
    assert f"graph-pack-weights{{panel={2 * lanes}}}" in plan.kernels
    assert f"graph-to-loop{{lanes={lanes}}}" in plan.kernels
    assert not any(p in plan.codegen for p in ("graph-fold-constants", "graph-fuse-ops",
                                               "graph-to-loop"))  # graph passes run once
    # The blocked tensors of a ResNet block (32 channels) carry one vector of channels.
    kernels = str(staged_module(from_onnx(om.resnet_block(channels=32, hw=8)), target,
                                until="kernels").prepared.work)
    assert set(FIVE_D.findall(kernels)) == {str(lanes)}
    # An MLP's 784 x 128 weight is packed in panels of two vectors.
    mlp = str(staged_module(from_onnx(om.mlp()), target, until="kernels").prepared.work)
    assert f"x784x{2 * lanes}xf32>" in mlp


def test_layouts_off_and_direct_leave_passes_out():
    assert "graph-layout-nchwc" not in build_plan("llvm", "none").kernels
    assert "graph-pack-weights" not in build_plan("llvm", "none").kernels
    direct = build_plan("llvm", "direct").kernels
    assert "graph-layout-nchwc" in direct and "graph-winograd" not in direct
    with pytest.raises(ValueError, match="layout must be one of"):
        build_plan("llvm", "blocked")


FAMILIES = {
    "mlp": (om.mlp, om.mlp_inputs, {}),
    "cnn": (om.mnist_cnn, om.mnist_cnn_inputs, {}),
    "resnet_block": (om.resnet_block, om.resnet_block_inputs, {"channels": 32, "hw": 16}),
    "mobilenet_block": (om.mobilenet_v2_blocks, om.mobilenet_v2_blocks_inputs, {"hw": 16}),
    "transformer": (om.transformer_encoder, om.transformer_encoder_inputs, {}),
}


@pytest.mark.parametrize("name", list(FAMILIES))
def test_an_avx2_build_runs_and_matches_onnxruntime(name):
    """``-mcpu=x86-64-v3`` (AVX2, 8 lanes) runs on any x86-64 machine with AVX2: natively."""
    make, inputs_of, sizes = FAMILIES[name]
    model, inputs = make(**sizes), inputs_of(**sizes)
    expected = ort.InferenceSession(model.SerializeToString()).run(None, inputs)
    ex = mlcir.build(from_onnx(model), AVX2)
    got = ex.main(**inputs)
    got = list(got.values()) if isinstance(got, dict) else \
        list(got) if isinstance(got, (tuple, list)) else [got]
    for g, e in zip(got, expected):
        np.testing.assert_allclose(g, e, rtol=1e-4, atol=1e-4 * max(1.0, np.abs(e).max()))


def _dynamic_mlp(tmp_path):
    model = om.mlp(batch="n")
    path = tmp_path / "mlp_n.onnx"
    onnx.save(model, path)
    return model, path


def _records(tmp_path, module, target: str) -> Database:
    """A database with two tuned sizes of ``main`` and one record: the default schedule of
    the first matmul kernel of batch 8, as if measured fastest."""
    db = Database(tmp_path / "work")
    specs = [Specialization.of({"x": [1, 784]}), Specialization.of({"x": [8, 784]})]
    for spec in specs:
        db.commit_specialization(spec)
    tasks = extract_tasks(_specialized(module, specs), target)
    task = next(t for t in tasks if "matmul" in t.name)
    db.commit_workload(task.module, task.name)
    trace = default_schedule(task.module, target).trace.as_json()
    db.commit_record(Record(task.workload, Target.parse(target).key, trace, [1e-5]))
    return db


def _specialized(module, specs):
    with module.context:
        copy = clone_module(module)
        add_specializations(copy, [s.shape_dict() for s in specs])
    return copy


def _same_names(text: str) -> str:
    """``text`` with its constants' resource handles numbered alike (each import counts on)."""
    return re.sub(r"ir_param_\d+", "ir_param", text)


def test_dumps_builds_and_tasks_are_the_same_kernels(tmp_path, capsys):
    target = "llvm -threads=1"
    model, path = _dynamic_mlp(tmp_path)
    module = from_onnx(model)
    db = _records(tmp_path, module, target)
    # The CLI's dumps (the build's own stages, passing by)
    dumps = {stage: tmp_path / f"{stage}.mlir" for stage in ("graph", "kernels", "scheduled")}
    args = ["compile", str(path), "--target", target, "--tuning-records", str(tmp_path / "work"),
            "-o", str(tmp_path / "m.mlcir"), "-q"]
    for stage, file in dumps.items():
        args += ["--dump-mlir", stage, str(file)]
    assert cli(args) == 0
    capsys.readouterr()
    # ... are what the Python API's stages give, specialisations and the record included,
    for stage, file in dumps.items():
        staged = staged_module(from_onnx(model), target, records=db, until=stage)
        assert _same_names(file.read_text()) == _same_names(_asm(staged.prepared.work)), stage
    scheduled = staged_module(from_onnx(model), target, records=db, until="scheduled")
    assert "main__8x784" in dumps["scheduled"].read_text()
    assert sorted(set(scheduled.schedule_sources.values())) == ["default", "record"]
    # ... and the tuner's tasks are the static kernels of the kernels stage.
    kernels = staged_module(from_onnx(model), target, records=db, until="kernels")
    with kernels.prepared.work.context:
        static = {workload_hash(workload_kernel(extract_kernel(fn)))
                  for fn in kernel_functions(kernels.prepared.work)
                  if "?" not in str(fn.type)}
    specs = [Specialization.of({"x": [1, 784]}), Specialization.of({"x": [8, 784]})]
    assert {t.workload for t in extract_tasks(_specialized(module, specs), target)} == static
    # The build with the records dispatches to the tuned sizes and computes the same.
    ex = mlcir.build(from_onnx(model), target, records=db)
    for batch in (1, 8, 3):
        inputs = om.mlp_inputs(batch)
        expected = ort.InferenceSession(model.SerializeToString()).run(None, inputs)[0]
        np.testing.assert_allclose(ex.main(**inputs), expected, rtol=1e-4, atol=1e-4)


def test_stages_are_checked_by_name():
    module = from_onnx(om.mlp())
    with pytest.raises(ValueError, match="until must be one of graph, kernels, scheduled, "
                                         "lowered"):
        staged_module(module, "llvm", until="llvm")
    with pytest.raises(ValueError, match="schedule must be one of"):
        staged_module(module, "llvm", schedule="fast")
