"""Benchmark (issue 17): tuning throughput on a local Ray cluster of one and of two nodes.

    python bench/ray_tuning.py [--trials 128] [--per-round 16] [--nodes 1,2] [--repeat 1] [--cold]

Tunes the MNIST CNN (``llvm -threads=1``, evolutionary search, XGBoost) on a cluster of N
one-CPU nodes with this machine's fingerprint, for each N (``--repeat`` times, interleaved: 1,
2, 1, 2, ...), with the same trial budget and a fresh database each time, and reports trials per
minute of the tuning itself, the median of each N and its ratio to one node's (the target: two
nodes >= 1.6x). Before the clock starts, the cluster is started, the driver's one-time imports
are done and (unless ``--cold``) each node's processes are started by a warm-up: a small matmul
tuned for two trials a node (about 3 CPU seconds a node, once per cluster: Python, Ray and MLIR
in the node's Ray workers and in its builder and runner subprocesses). Each run also reports
where the CPU went, per trial: the driver process (the search's bookkeeping, the cost model, the
database, Ray's client), the builds and the measurements (the worker subprocesses on the nodes),
the Ray worker processes (the search's candidates, the reference data, object transfers) and
Ray's own services; and how long 0, 1, 2 ... node tasks were running (Ray's timeline): time with
fewer tasks than nodes is a node idle. Every Ray process runs in a fresh network namespace with
only loopback (the script re-runs itself under ``unshare -n``; root); the clusters are stopped
by process group at the end. Run it alone: other processes take the CPUs the nodes count on.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from mlcir.frontend import from_onnx
from mlcir.testing.onnx_models import mnist_cnn
from mlcir.testing.ray_cluster import LocalCluster, loopback_available, loopback_command
from mlcir.testing.kernels import matmul
from mlcir.tune import Database, tune_kernel, tune_module
from mlcir.tune.distributed import RayRunner, host_fingerprint, resource_name

TARGET = "llvm -threads=1"
TICKS = os.sysconf("SC_CLK_TCK")


def _kind(name: str, command: str) -> str:
    if "mlcir.tune.worker build" in command:
        return "builds"
    if "mlcir.tune.worker run" in command:
        return "measurements"
    return "Ray workers" if name.startswith("ray::") else "Ray services"


def cluster_cpu(sessions: set[int]) -> dict[int, tuple[str, float]]:
    """CPU seconds so far of every process in ``sessions`` (the nodes'), by pid: its kind."""
    found = {}
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
            command = Path(f"/proc/{pid}/cmdline").read_text().replace("\0", " ")
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2:].split()
        if int(fields[3]) in sessions:
            name = stat[stat.find("(") + 1:stat.rfind(")")]
            found[int(pid)] = (_kind(name, command), (int(fields[11]) + int(fields[12])) / TICKS)
    return found


def node_tasks(timeline: list[dict], since: float) -> list[tuple[float, float, str]]:
    """(start, end, name) of every task run on the nodes from ``since`` (epoch seconds) on."""
    return [(event["ts"] / 1e6, (event["ts"] + event["dur"]) / 1e6,
             event["cat"].removeprefix("task::").split(".")[-1])
            for event in timeline if event.get("ph") == "X"
            and event["cat"].startswith("task::") and event["ts"] / 1e6 >= since]


def busy_histogram(tasks: list[tuple[float, float, str]]) -> dict[int, float]:
    """Seconds during which k of ``tasks`` were running, for each k."""
    edges = sorted(edge for start, end, _ in tasks for edge in ((start, 1), (end, -1)))
    seconds: dict[int, float] = {}
    running, last = 0, edges[0][0] if edges else 0.0
    for at, step in edges:
        seconds[running] = seconds.get(running, 0.0) + at - last
        running, last = running + step, at
    return seconds


def warm_up(runner: RayRunner, nodes: int) -> None:
    """Start the processes of every node: tune a small matmul for two trials a node."""
    with tempfile.TemporaryDirectory() as work_dir:
        tune_kernel(matmul(16, 16, 16)[0], target=TARGET, work_dir=work_dir,
                    max_trials=2 * nodes, num_trials_per_iter=2 * nodes, cost_model="random",
                    runner=runner, verbose=0)


def tune_on(nodes: int, trials: int, per_round: int, cold: bool) -> float:
    """Tune on a fresh cluster of ``nodes`` nodes; print and return trials per minute."""
    resources = {resource_name(host_fingerprint(1)): 1}
    model = from_onnx(mnist_cnn())
    with LocalCluster(port=6390 + nodes) as cluster, tempfile.TemporaryDirectory() as work_dir:
        import ray  # after LocalCluster() set its token: Ray reads it on import

        for _ in range(nodes):
            cluster.start_node(1, resources)
        sessions = {process.pid for process in cluster.nodes}
        runner = RayRunner(address=cluster.address, target=TARGET)
        try:
            runner.connect()
            if not cold:
                warm_up(runner, nodes)
            before = cluster_cpu(sessions)
            since, start, driver = time.time(), time.perf_counter(), time.process_time()
            tune_module(model, target=TARGET, work_dir=work_dir, max_trials_global=trials,
                        num_trials_per_iter=per_round, runner=runner, verbose=0)
            seconds, driver = time.perf_counter() - start, time.process_time() - driver
            after = cluster_cpu(sessions)
            tasks = node_tasks(ray.timeline(), since)
        finally:
            runner.close()
        db = Database(work_dir)
        records = sum(len(db.records(workload, TARGET)) for workload in db.workloads)
    cpu = {"driver": driver}
    for pid, (kind, used) in after.items():
        cpu[kind] = cpu.get(kind, 0.0) + used - before.get(pid, (kind, 0.0))[1]
    rate = records / seconds * 60
    busy: dict[str, float] = {}
    for start, end, name in tasks:
        busy[name] = busy.get(name, 0.0) + end - start
    print(f"{nodes} node(s): {records} trials in {seconds:.1f} s = {rate:.1f} trials/min\n"
          "  CPU ms/trial: " + ", ".join(f"{kind} {used / records * 1e3:.0f}"
                                         for kind, used in cpu.items())
          + f" (all {sum(cpu.values()) / records * 1e3:.0f})\n"
          "  node tasks, seconds running: " + ", ".join(f"{name} {s:.1f}"
                                                         for name, s in busy.items())
          + "; with k running: " + ", ".join(f"{k}: {s:.1f}" for k, s in
                                             sorted(busy_histogram(tasks).items())), flush=True)
    return rate


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=128)
    parser.add_argument("--per-round", type=int, default=16)
    parser.add_argument("--nodes", default="1,2", help="cluster sizes, comma-separated")
    parser.add_argument("--repeat", type=int, default=1, help="runs of each size, interleaved")
    parser.add_argument("--cold", action="store_true",
                        help="no warm-up: the clock includes starting the nodes' processes")
    parser.add_argument("--inside", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if not args.inside:
        why_not = loopback_available()
        if why_not is not None:
            print(f"needs a loopback-only network namespace: {why_not}", file=sys.stderr)
            return 1
        argv = [sys.executable, str(Path(__file__).resolve()), *sys.argv[1:], "--inside"]
        return subprocess.run(loopback_command(argv)).returncode
    import xgboost  # noqa: F401 - the driver's one-time imports, before any clock starts

    sizes = [int(n) for n in args.nodes.split(",")]
    print(f"MNIST CNN, {TARGET}, {args.trials} trials, {args.per_round} per round, "
          f"{os.cpu_count()} CPUs on this machine, {args.repeat} run(s) of each size"
          + (", cold nodes" if args.cold else ""))
    rates: dict[int, list[float]] = {n: [] for n in sizes}
    for _ in range(args.repeat):
        for nodes in sizes:
            rates[nodes].append(tune_on(nodes, args.trials, args.per_round, args.cold))
    base = statistics.median(rates[sizes[0]])
    for nodes in sizes:
        median = statistics.median(rates[nodes])
        print(f"median, {nodes} node(s): {median:.1f} trials/min ({median / base:.2f}x the "
              f"median of {sizes[0]} node(s))")
    return 0


if __name__ == "__main__":
    sys.exit(main())
