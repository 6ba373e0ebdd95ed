"""Hardware fingerprints and the records of distributed tuning, without a cluster."""

from __future__ import annotations

import json

import pytest

from mlcir.ir import parse
from mlcir.target import Target
from mlcir.testing.kernels import matmul
from mlcir.tune import tune_kernel
from mlcir.tune.database import Database, Record
from mlcir.tune.distributed import host_fingerprint, resource_name, target_fingerprint
from mlcir.tune.distributed.__main__ import main as fingerprint_main


def test_a_target_needs_this_machines_hardware_at_its_thread_count():
    fingerprint = target_fingerprint(Target.parse("llvm -threads=3"))
    assert fingerprint == host_fingerprint(3)
    assert set(fingerprint) == {"triple", "cpu", "features", "threads"}
    assert fingerprint["triple"] and fingerprint["cpu"]


def test_resource_names_tell_fingerprints_apart():
    one, two = host_fingerprint(1), host_fingerprint(2)
    assert resource_name(one) == resource_name(dict(one))
    assert resource_name(one) != resource_name(two)
    assert resource_name(one) != resource_name({**one, "cpu": "another-cpu"})
    assert resource_name(one).startswith("mlcir-hw-")


def test_the_command_prints_ray_starts_resources(capsys):
    assert fingerprint_main(["--threads", "2"]) == 0
    assert json.loads(capsys.readouterr().out) == {resource_name(host_fingerprint(2)): 1}


@pytest.mark.usefixtures("ctx")
def test_records_keep_their_node_and_old_records_still_load(tmp_path):
    db = Database(tmp_path)
    w = db.commit_workload(parse(matmul(8, 8, 8)[0])).hash
    here = Record(w, "llvm", {"insts": []}, [1e-3])
    there = Record(w, "llvm", {"insts": [1]}, [2e-3], node="abc",
                   node_fingerprint=host_fingerprint(1))
    db.commit_record(here)
    db.commit_record(there)
    lines = [json.loads(line) for line in
             (tmp_path / "database" / "records.json").read_text().splitlines()]
    assert "node" not in lines[0] and lines[1]["node"] == "abc"
    loaded = Database(tmp_path).records(w, "llvm")
    assert [r.node for r in loaded] == [None, "abc"]
    assert loaded[1].node_fingerprint == host_fingerprint(1)


def test_the_ray_runner_without_an_address_says_how_to_give_one(monkeypatch, tmp_path):
    pytest.importorskip("ray")
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    with pytest.raises(ValueError, match="RAY_ADDRESS"):
        tune_kernel(matmul(8, 8, 8)[0], target="llvm -threads=1", work_dir=tmp_path,
                    max_trials=1, runner="ray", verbose=0)
