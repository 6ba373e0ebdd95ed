"""Confirmation in the model (mlcir.confirm_in_model, issue 39): a tuned record that measured
faster alone but is not faster inside the model gives way to the default schedule, the verdict
is kept in the database and read back, and builds and exported records follow it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest

import mlcir
from mlcir.confirm import confirm_in_model
from mlcir.driver import staged_module
from mlcir.frontend import from_onnx
from mlcir.schedule import Schedule
from mlcir.target import Target
from mlcir.testing import onnx_models
from mlcir.tune import Database, Record, default_schedule, extract_tasks
from mlcir.tune.database import Confirmation
from mlcir.tune.records_file import RecordsFile, export_best_records

TARGET = "llvm -threads=1"
KEY = Target.parse(TARGET).key


def _records(db: Database, module, slow_claims_fast: bool = True) -> list:
    """Per kernel: its default schedule's record, and the unscheduled kernel (scalar loops,
    much slower) recorded as if it measured 100x faster alone."""
    tasks = extract_tasks(module, TARGET)
    for task in tasks:
        db.commit_workload(task.module, task.name)
        default = default_schedule(task.module, TARGET)
        db.commit_record(Record(task.workload, KEY, default.trace.as_json(), [1e-4],
                                default_schedule=True))
        naive = Schedule(task.module)
        db.commit_record(Record(task.workload, KEY, naive.trace.as_json(),
                                [1e-6 if slow_claims_fast else 1e-3]))
    return tasks


@pytest.fixture(scope="module")
def mlp():
    return from_onnx(onnx_models.mlp())


def test_a_record_slower_in_the_model_gives_way_to_the_default(mlp, tmp_path):
    db = Database(tmp_path)
    tasks = _records(db, mlp)
    assert all(not db.best(t.workload, KEY)[0].default_schedule for t in tasks)
    report = confirm_in_model(mlp, db, TARGET, rounds=3)
    assert {v.workload for v in report.verdicts} == {t.workload for t in tasks}
    assert all(not v.kept and v.tuned_secs > v.default_secs for v in report.verdicts)
    assert report.tuned_secs > report.default_secs and report.written
    # The verdicts are in the database, and read back by a new one on the same work dir.
    for database in (db, Database(tmp_path)):
        for task in tasks:
            assert database.best(task.workload, KEY)[0].default_schedule
    # A build with the records schedules every kernel by its default's record; so does the
    # exported records file.
    with_records = staged_module(mlp, TARGET, records=db, until="scheduled")
    assert set(with_records.schedule_sources.values()) == {"record"}
    defaults = {t.workload: default_schedule(t.module, TARGET).trace.as_json() for t in tasks}
    assert all(db.best(w, KEY)[0].trace == trace for w, trace in defaults.items())
    export_best_records(db, tmp_path / "best.json")
    exported = RecordsFile(tmp_path / "best.json")
    assert all(exported.best(t.workload, KEY)[0].default_schedule for t in tasks)
    assert "default" in report.table() and "whole model" in report.table()


def test_a_kept_verdict_keeps_the_record_and_a_new_best_is_judged_anew(mlp, tmp_path):
    db = Database(tmp_path)
    (task, *_) = _records(db, mlp)
    tuned = db.best(task.workload, KEY)[0]
    db.commit_confirmation(Confirmation(task.workload, KEY, tuned.trace_key, True, 1e-5, 2e-5))
    assert db.best(task.workload, KEY)[0].trace_key == tuned.trace_key
    # A verdict is about one record: a faster record found later is not affected by it.
    db.commit_confirmation(Confirmation(task.workload, KEY, "another-record", False, 2e-5, 1e-5))
    assert db.best(task.workload, KEY)[0].trace_key == tuned.trace_key
    db.commit_confirmation(Confirmation(task.workload, KEY, tuned.trace_key, False, 2e-5, 1e-5))
    assert Database(tmp_path).best(task.workload, KEY)[0].default_schedule


def test_nothing_to_confirm_builds_nothing(mlp, tmp_path):
    db = Database(tmp_path)
    for task in extract_tasks(mlp, TARGET):
        db.commit_workload(task.module, task.name)
        db.commit_record(Record(task.workload, KEY,
                                default_schedule(task.module, TARGET).trace.as_json(), [1e-4],
                                default_schedule=True))
    report = confirm_in_model(mlp, db, TARGET)
    assert report.verdicts == [] and report.tuned_secs == 0.0
    assert not (tmp_path / "database" / "confirmations.json").exists()


def test_a_corrupt_confirmation_line_is_reported_with_its_file_and_line(mlp, tmp_path):
    db = Database(tmp_path)
    (task, *_) = _records(db, mlp)
    tuned = db.best(task.workload, KEY)[0]
    db.commit_confirmation(Confirmation(task.workload, KEY, tuned.trace_key, False, 2.0, 1.0))
    path = tmp_path / "database" / "confirmations.json"
    with open(path, "a") as f:
        f.write(json.dumps({"version": 1, "workload": task.workload}) + "\n")
    with pytest.warns(RuntimeWarning, match=r"confirmations.json:2: skipped a confirmation"):
        again = Database(tmp_path)
    assert again.best(task.workload, KEY)[0].default_schedule


def test_a_records_file_is_only_reported_on(mlp, tmp_path):
    db = Database(tmp_path / "work")
    tasks = _records(db, mlp)
    export_best_records(db, tmp_path / "best.json")
    report = confirm_in_model(mlp, tmp_path / "best.json", TARGET, rounds=1)
    assert len(report.verdicts) == len(tasks) and not report.written


def test_cli_tune_confirms_in_the_model(tmp_path):
    model = tmp_path / "mlp.onnx"
    onnx.save(onnx_models.mlp(), model)
    mlcir_cli = Path(sys.executable).with_name("mlcir")
    out = tmp_path / "records.json"
    done = subprocess.run([str(mlcir_cli), "tune", str(model), "-o", str(out), "--trials", "6",
                           "--trials-per-round", "3", "--work-dir", str(tmp_path / "work"),
                           "--target", TARGET], capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr
    db = Database(tmp_path / "work")
    confirmations = tmp_path / "work" / "database" / "confirmations.json"
    # Whatever the search found, every record the export kept was confirmed or is a default.
    exported = RecordsFile(out)
    for workload in exported.workloads:
        best = exported.best(workload, KEY)[0]
        if not best.default_schedule:
            assert confirmations.exists()
            assert db.confirmations[(workload, KEY, best.trace_key)].kept
    ex = mlcir.build(from_onnx(onnx.load(model)), TARGET, records=out)
    x = np.random.default_rng(0).standard_normal((1, 784)).astype(np.float32)
    np.testing.assert_allclose(ex.main(x), mlcir.build(from_onnx(onnx.load(model)),
                                                        TARGET).main(x), rtol=1e-4, atol=1e-5)
