"""Distributed tuning on a real local Ray cluster (tests/ray_driver.py, in a loopback-only
network namespace): a node dying mid-run loses nothing, a node of other hardware is skipped,
the search's candidates and the reference data are made on the nodes, records name their node,
nothing listens beyond loopback. About 80 s: one cluster for all."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from mlcir.testing.ray_cluster import loopback_available, loopback_command
from mlcir.tune.distributed import host_fingerprint

pytestmark = [pytest.mark.ray, pytest.mark.slow]
ray = pytest.importorskip("ray", reason="ray is not installed (pip install mlcir[ray])")

TRIALS = 8


@pytest.fixture(scope="module")
def cluster_run(tmp_path_factory):
    why_not = loopback_available()
    if why_not is not None:
        pytest.skip(f"no loopback-only network namespace here: {why_not}")
    work_dir = tmp_path_factory.mktemp("ray-tune")
    driver = Path(__file__).with_name("ray_driver.py")
    done = subprocess.run(loopback_command([sys.executable, str(driver), str(work_dir),
                                            str(TRIALS)]),
                          capture_output=True, text=True, timeout=300)
    lines = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")]
    assert done.returncode == 0 and lines, done.stdout[-3000:] + done.stderr[-5000:]
    return json.loads(lines[-1].removeprefix("RESULT ")), done.stderr


def test_a_dead_node_loses_no_record(cluster_run):
    result, _ = cluster_run
    records = result["records"]
    assert result["best"]
    assert len(records) == TRIALS  # the run went on after the second node died
    kept = {json.dumps(r, sort_keys=True) for r in records}
    assert result["before_kill"]
    assert all(json.dumps(r, sort_keys=True) in kept for r in result["before_kill"])
    head, second, _ = result["nodes"]
    assert all(r["node"] in (head, second) for r in records), (result["nodes"],
                                                                [r["node"] for r in records])
    assert sum(r["node"] == head for r in records) >= TRIALS // 2
    assert all(r["error"] is None for r in records), [r["error"] for r in records]


def test_the_nodes_search_build_and_measure(cluster_run):
    result, _ = cluster_run
    assert {"make_candidates", "reference_data", "build", "MeasureActor.measure"} <= \
        set(result["node_tasks"]), result["node_tasks"]


def test_records_carry_their_node_fingerprint(cluster_run):
    result, _ = cluster_run
    for record in result["records"]:
        assert record["node_fingerprint"] == host_fingerprint(1)


def test_a_node_of_other_hardware_is_skipped(cluster_run):
    result, stderr = cluster_run
    other = result["nodes"][2]
    assert f"Ray node {other[:12]} skipped" in stderr
    assert all(r["node"] != other for r in result["records"])


def test_nothing_listens_beyond_loopback(cluster_run):
    result, _ = cluster_run
    assert result["listeners"]
    assert all(address.rsplit(":", 1)[0] in ("127.0.0.1", "[::ffff:127.0.0.1]", "[::1]")
               for address in result["listeners"]), result["listeners"]


def test_no_ray_process_outlives_the_run(cluster_run):
    assert cluster_run
    ps = subprocess.run(["ps", "-eo", "stat=,args="], capture_output=True, text=True).stdout
    alive = [line for line in ps.splitlines()  # this test's clusters live in /tmp/mlcir-ray-*
             if not line.startswith("Z") and "/tmp/mlcir-ray-" in line]
    assert not alive, alive
