"""The driver of tests/test_ray_tuning.py, run inside a loopback-only network namespace:
``python tests/ray_driver.py kill|mismatch WORK_DIR`` starts a two-node local Ray cluster, tunes
a small matmul on it and prints one JSON line of what happened."""

from __future__ import annotations

import json
import sys
import threading
import time
from pathlib import Path

from mlcir.testing.kernels import matmul
from mlcir.testing.ray_cluster import LocalCluster
from mlcir.target import Target
from mlcir.tune import tune_kernel
from mlcir.tune.distributed import RayRunner, host_fingerprint, resource_name

TARGET = Target.parse("llvm -threads=1")


def record_lines(work_dir: Path) -> list[dict]:
    path = work_dir / "database" / "records.json"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def main(mode: str, work_dir: Path, trials: int) -> None:
    matching = {resource_name(host_fingerprint(1)): 1}
    other = {resource_name({**host_fingerprint(1), "cpu": "another-cpu"}): 1}
    report: dict = {}
    with LocalCluster() as cluster:
        cluster.start_node(1, matching)
        cluster.start_node(1, matching if mode == "kill" else other)
        killed_with: list[list[dict]] = []

        def kill_second_node() -> None:
            while len(record_lines(work_dir)) < 2:
                time.sleep(0.2)
            killed_with.append(record_lines(work_dir))
            cluster.kill_node(1)

        if mode == "kill":
            threading.Thread(target=kill_second_node, daemon=True).start()
        runner = RayRunner(address=cluster.address, target=TARGET)
        try:
            best = tune_kernel(matmul(32, 32, 32)[0], target=TARGET, work_dir=work_dir,
                               max_trials=trials, num_trials_per_iter=4, cost_model="random",
                               runner=runner, verbose=0)
        finally:
            runner.close()
        report = {"best": best is not None, "records": record_lines(work_dir),
                  "before_kill": killed_with[0] if killed_with else None}
    print("RESULT " + json.dumps(report))


if __name__ == "__main__":
    main(sys.argv[1], Path(sys.argv[2]), int(sys.argv[3]) if len(sys.argv) > 3 else 8)
