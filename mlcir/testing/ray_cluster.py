"""A real Ray cluster on this machine, for tests and benchmarks of distributed tuning.

Ray binds to the machine's non-loopback address even when told 127.0.0.1, so the cluster and
its driver run inside a fresh network namespace with only loopback: run the driver script with
:func:`loopback_command` (as root), and inside it start nodes with :class:`LocalCluster`. Each
``ray start --block`` runs in its own session, so a node is stopped (or killed, to test a node
dying) by its process group, never by name.
"""

from __future__ import annotations

import json
import os
import secrets
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

# Node death is noticed within about 3 s (the defaults take about 30 s).
FAST_HEALTH_CHECKS = {"RAY_health_check_period_ms": "500",
                      "RAY_health_check_failure_threshold": "4",
                      "RAY_health_check_timeout_ms": "1000"}


def loopback_command(argv: list[str]) -> list[str]:
    """``argv`` run in a fresh network namespace that has only the loopback interface."""
    return ["unshare", "-n", "sh", "-c", "ip link set lo up && exec " + shlex.join(argv)]


def loopback_available() -> str | None:
    """None when :func:`loopback_command` works here, else why not."""
    if shutil.which("unshare") is None or shutil.which("ip") is None:
        return "unshare or ip is not installed"
    try:
        done = subprocess.run(loopback_command(["true"]), capture_output=True, text=True,
                              timeout=30)
    except (OSError, subprocess.TimeoutExpired) as error:
        return str(error)
    return None if done.returncode == 0 else f"unshare -n is not permitted: {done.stderr.strip()}"


class LocalCluster:
    """A head node and more nodes on this machine (call inside the loopback namespace)."""

    def __init__(self, port: int = 6390):
        self.port = port
        self.address = f"127.0.0.1:{port}"
        self.temp_dir = tempfile.mkdtemp(prefix="mlcir-ray-", dir="/tmp")
        self.nodes: list[subprocess.Popen] = []
        # A token of this cluster's own (Ray's default file, ~/.ray/auth_token, is shared by
        # every cluster of this user), set in this process too for its driver: import ray only
        # after this, as Ray reads it on import. The clusters of one process share it.
        os.environ["RAY_AUTH_MODE"] = "token"
        os.environ.setdefault("RAY_AUTH_TOKEN", secrets.token_hex(32))

    def _ray(self) -> str:
        return str(Path(sys.executable).with_name("ray"))

    def start_node(self, cpus: int = 1, resources: dict[str, float] | None = None) -> int:
        """Start a node (the first is the head) and wait until the cluster counts it; its
        index for :meth:`kill_node`."""
        head = not self.nodes
        argv = [self._ray(), "start", "--block", f"--num-cpus={cpus}",
                f"--resources={json.dumps(resources or {})}", "--disable-usage-stats"]
        if head:
            argv += ["--head", f"--port={self.port}", "--node-ip-address=127.0.0.1",
                     "--include-dashboard=false", f"--temp-dir={self.temp_dir}"]
        else:
            argv += [f"--address={self.address}", "--node-ip-address=127.0.0.1"]
        env = {**os.environ, **FAST_HEALTH_CHECKS}
        log = open(Path(self.temp_dir) / f"node{len(self.nodes)}.log", "w")
        self.nodes.append(subprocess.Popen(argv, env=env, stdout=log, stderr=subprocess.STDOUT,
                                           start_new_session=True))
        self._wait_for(len(self.nodes))
        return len(self.nodes) - 1

    def _wait_for(self, count: int, timeout: float = 90.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            done = subprocess.run([self._ray(), "status", f"--address={self.address}"],
                                  capture_output=True, text=True)
            active = done.stdout.partition("Active:")[2].partition("Pending:")[0]
            if done.returncode == 0 and active.count(" node_") >= count:
                return
            time.sleep(1.0)
        raise TimeoutError(f"the Ray cluster did not reach {count} node(s) in {timeout:.0f} s")

    def kill_node(self, index: int) -> None:
        """SIGKILL every process of node ``index`` (its process group)."""
        os.killpg(self.nodes[index].pid, signal.SIGKILL)
        self.nodes[index].wait()

    def stop(self) -> None:
        """Stop every node, the head last, by process group."""
        for process in reversed(self.nodes):
            if process.poll() is None:
                try:
                    os.killpg(process.pid, signal.SIGTERM)
                    process.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    os.killpg(process.pid, signal.SIGKILL)
                    process.wait()
        for process in self.nodes:  # what a node started may outlive it: its whole group
            try:
                os.killpg(process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        shutil.rmtree(self.temp_dir, ignore_errors=True)

    def __enter__(self) -> "LocalCluster":
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
