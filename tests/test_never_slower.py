"""Default schedules in builds and tuning: ``mlcir.build``/``mlcir compile`` give every kernel
without a record its default (``schedule="none"`` / ``--no-default-schedule``: the naive
kernels), and tuning is never slower than the default: the default is the first candidate of
every task, its record is marked, and a build keeps it where it measured fastest."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest

import mlcir
from mlcir.target import Target
from mlcir.testing import kernels, onnx_models
from mlcir.testing.graph_kernels import build_graph_function, models, reference
from mlcir.testing.fake_tuning import NothingBuilt
from mlcir.tune import (Database, RunResult, default_schedule, extract_tasks,
                        tune_kernel, tune_module, workload_hash)
from mlcir.driver import staged_module
from mlcir.tune.database import trace_key

TARGET = "llvm -threads=1"
KINDS = ["batch_matmul", "conv2d", "sum"]  # matmul, convolution, reduction


def _model(name: str):
    inputs, body = models()[name]
    return inputs, body, build_graph_function(inputs, body)


@pytest.mark.parametrize("name", KINDS)
def test_build_applies_defaults_and_none_gives_the_naive_kernels(name):
    inputs, body, module = _model(name)
    defaulted = staged_module(module, TARGET, until="scheduled").schedule_sources
    naive = staged_module(module, TARGET, schedule="none", until="scheduled").schedule_sources
    assert set(defaulted.values()) == {"default"} and naive == {}
    for schedule in ("default", "none"):
        ex = mlcir.build(module, TARGET, schedule=schedule)
        np.testing.assert_allclose(ex.main(*inputs), reference(inputs, body), rtol=1e-4,
                                   atol=1e-4)
    with pytest.raises(ValueError, match="schedule"):
        mlcir.build(module, TARGET, schedule="fast")


def test_default_schedule_is_public_and_printable():
    text, _ = kernels.matmul(64, 64, 64)
    sch = default_schedule(text, TARGET)
    assert "sch.vectorize" in str(sch.trace) and "transform.named_sequence" in str(
        sch.as_transform())


class DefaultFastest:
    """Times every candidate without running it: the default schedules (by trace key) at
    0.1 ms, every other candidate slower."""

    cores = 0

    def __init__(self, defaults: set[str]):
        self.defaults = defaults
        self.keys: list[str] = []

    def prepare(self, workload, kernel):
        pass

    def run_candidate(self, _workload, trace, _build):
        key = trace_key(trace)
        self.keys.append(key)
        return RunResult([1e-4 if key in self.defaults else 1e-3 + 1e-5 * len(self.keys)])

    def close(self):
        pass


@pytest.mark.parametrize("name", KINDS)
def test_tuning_keeps_the_default_where_it_is_fastest(name, tmp_path):
    _, _, module = _model(name)
    with module.context:
        tasks = extract_tasks(module)
        defaults = {trace_key(default_schedule(t.module, TARGET).trace.as_json()) for t in tasks}
        runner = DefaultFastest(defaults)
        db = tune_module(module, TARGET, tmp_path, max_trials_global=6 * len(tasks),
                         num_trials_per_iter=3, verbose=0, builder=NothingBuilt(),
                         runner=runner, strategy="evolutionary")
        # The default is each task's first candidate, measured once, marked in its record.
        assert runner.keys[0] in defaults and len(runner.keys) > len(tasks)
        assert sorted(k for k in runner.keys if k in defaults) == sorted(defaults)
        for task in tasks:
            best = db.best(task.workload, Target.parse(TARGET).key)[0]
            assert best.default_schedule and best.trace_key in defaults
        # A build with the records gives exactly what a build without records gives.
        with_records = staged_module(module, TARGET, records=db, until="scheduled")
        assert set(with_records.schedule_sources.values()) == {"record"}
        without = staged_module(module, TARGET, until="scheduled")
        assert str(with_records.prepared.work) == str(without.prepared.work)


def test_measured_tuning_is_never_slower_than_the_default(tmp_path):
    text, _ = kernels.matmul(48, 64, 32)
    with mlcir.make_context():
        kernel = mlcir.parse(text)
        result = tune_kernel(kernel, TARGET, tmp_path, max_trials=4, num_trials_per_iter=4,
                             verbose=0)
    db = Database(tmp_path)
    records = db.records(workload_hash(kernel), Target.parse(TARGET).key)
    (default,) = [r for r in records if r.default_schedule]
    assert default.ok and result.latency <= default.mean_secs
    assert default.trace == default_schedule(kernel, TARGET).trace.as_json()


def test_cli_no_default_schedule_dumps_the_naive_kernels(tmp_path):
    model = tmp_path / "mlp.onnx"
    onnx.save(onnx_models.mlp(), model)
    mlcir_cli = Path(sys.executable).with_name("mlcir")
    dumped = {}
    for flags in ([], ["--no-default-schedule"]):
        out = tmp_path / f"kernels{len(flags)}.mlir"
        subprocess.run([str(mlcir_cli), "compile", str(model), "-o", str(tmp_path / "m.mlcir"),
                        "--dump-mlir", "scheduled", str(out), "-q", *flags], check=True,
                       timeout=600)
        dumped[bool(flags)] = out.read_text()
    assert dumped[False] != dumped[True]
