"""The driver of tests/test_ray_tuning.py, run inside a loopback-only network namespace:
``python tests/ray_driver.py WORK_DIR [TRIALS]`` starts a local Ray cluster of three one-CPU
nodes (the head and a second node with this machine's fingerprint, a third declaring another
CPU), tunes a small matmul on it, SIGKILLs the second node once a record is written, and prints
one JSON line (``RESULT {...}``) of what happened (with the kinds of task the nodes ran)."""

from __future__ import annotations

import glob
import json
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from mlcir.target import Target
from mlcir.testing.kernels import matmul
from mlcir.testing.ray_cluster import LocalCluster
from mlcir.tune import tune_kernel
from mlcir.tune.distributed import RayRunner, host_fingerprint, resource_name

TARGET = Target.parse("llvm -threads=1")


def record_lines(work_dir: Path) -> list[dict]:
    path = work_dir / "database" / "records.json"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def listeners() -> list[str]:
    """The local addresses of every listening TCP socket here."""
    lines = subprocess.run(["ss", "-ltnH"], capture_output=True, text=True).stdout.splitlines()
    return [line.split()[3] for line in lines if line.strip()]


def main(work_dir: Path, trials: int) -> None:
    matching = {resource_name(host_fingerprint(1)): 1}
    other = {resource_name({**host_fingerprint(1), "cpu": "another-cpu"}): 1}
    with LocalCluster() as cluster:
        import ray  # after LocalCluster() set this cluster's token: Ray reads it on import

        node_ids: list[str] = []

        def start_node(resources: dict[str, float]) -> int:
            index = cluster.start_node(1, resources)
            if not ray.is_initialized():
                ray.init(address=cluster.address, logging_level="ERROR", log_to_driver=False)
            known = set(node_ids)
            node_ids.extend(n["NodeID"] for n in ray.nodes() if n["NodeID"] not in known)
            return index

        start_node(matching)
        second = start_node(matching)
        start_node(other)
        before_kill: list[list[dict]] = []

        def kill_second_node() -> None:
            while not record_lines(work_dir):
                time.sleep(0.1)
            before_kill.append(record_lines(work_dir))
            cluster.kill_node(second)

        threading.Thread(target=kill_second_node, daemon=True).start()
        runner = RayRunner(address=cluster.address, target=TARGET)
        try:
            best = tune_kernel(matmul(32, 32, 32)[0], target=TARGET, work_dir=work_dir,
                               max_trials=trials, num_trials_per_iter=trials,
                               cost_model="random", runner=runner, verbose=0)
            sockets = listeners()
            ran = sorted({event["cat"].removeprefix("task::") for event in ray.timeline()
                          if event.get("cat", "").startswith("task::")})
        finally:
            runner.close()
            ray.shutdown()
            # What the killed node's processes wrote: no actor of theirs is left to remove it.
            killed = f"{tempfile.gettempdir()}/mlcir-node-{node_ids[second][:16]}-*"
            for folder in glob.glob(killed):
                shutil.rmtree(folder, ignore_errors=True)
    print("RESULT " + json.dumps({"best": best is not None, "records": record_lines(work_dir),
                                  "before_kill": before_kill[0] if before_kill else None,
                                  "nodes": node_ids, "listeners": sockets,
                                  "node_tasks": ran}), flush=True)


if __name__ == "__main__":
    main(Path(sys.argv[1]), int(sys.argv[2]) if len(sys.argv) > 2 else 8)
