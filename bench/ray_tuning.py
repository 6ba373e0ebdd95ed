"""Benchmark (issue 17): tuning throughput on a local Ray cluster of one and of two nodes.

    python bench/ray_tuning.py [--trials 64] [--nodes 1,2] [--per-round 16]

Tunes the MNIST CNN (``llvm -threads=1``, evolutionary search, XGBoost) on a cluster of N
one-CPU nodes with this machine's fingerprint, for each N, with the same trial budget and a
fresh database each time, and reports trials per minute of the tuning itself (the cluster is
started before the clock starts) and the ratio to one node's (the target: two nodes >= 1.6x).
Every Ray process runs in a fresh network namespace with only loopback (the script re-runs
itself under ``unshare -n``; root); the clusters are stopped by process group at the end. Run
it alone: other processes take the CPUs the nodes count on.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from mlcir.frontend import from_onnx
from mlcir.testing.onnx_models import mnist_cnn
from mlcir.testing.ray_cluster import LocalCluster, loopback_available, loopback_command
from mlcir.tune import Database, tune_module
from mlcir.tune.distributed import RayRunner, host_fingerprint, resource_name

TARGET = "llvm -threads=1"


def tune_on(nodes: int, trials: int, per_round: int) -> tuple[int, float]:
    """Records written and seconds taken tuning on a fresh cluster of ``nodes`` nodes."""
    resources = {resource_name(host_fingerprint(1)): 1}
    with LocalCluster(port=6390 + nodes) as cluster, tempfile.TemporaryDirectory() as work_dir:
        for _ in range(nodes):
            cluster.start_node(1, resources)
        runner = RayRunner(address=cluster.address, target=TARGET)
        try:
            start = time.perf_counter()
            tune_module(from_onnx(mnist_cnn()), target=TARGET, work_dir=work_dir,
                        max_trials_global=trials, num_trials_per_iter=per_round,
                        runner=runner, verbose=0)
            seconds = time.perf_counter() - start
        finally:
            runner.close()
        db = Database(work_dir)
        records = sum(len(db.records(workload, TARGET)) for workload in db.workloads)
    return records, seconds


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=64)
    parser.add_argument("--per-round", type=int, default=16)
    parser.add_argument("--nodes", default="1,2", help="cluster sizes, comma-separated")
    parser.add_argument("--inside", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if not args.inside:
        why_not = loopback_available()
        if why_not is not None:
            print(f"needs a loopback-only network namespace: {why_not}", file=sys.stderr)
            return 1
        argv = [sys.executable, str(Path(__file__).resolve()), *sys.argv[1:], "--inside"]
        return subprocess.run(loopback_command(argv)).returncode
    print(f"MNIST CNN, {TARGET}, {args.trials} trials, {args.per_round} per round, "
          f"{os.cpu_count()} CPUs on this machine")
    base = None
    for nodes in [int(n) for n in args.nodes.split(",")]:
        records, seconds = tune_on(nodes, args.trials, args.per_round)
        rate = records / seconds * 60
        base = base or rate
        print(f"{nodes} node(s): {records} trials in {seconds:.1f} s = {rate:.1f} trials/min "
              f"({rate / base:.2f}x one node's)", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
