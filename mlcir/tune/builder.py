"""The builder role: turn a candidate (a decided trace of a workload) into what a runner times.

:class:`Builder` is the interface; :class:`LocalBuilder` builds in worker processes on this
machine (``python -m mlcir.tune.worker build``, :mod:`.worker`): replay the trace on the
kernel, lower it with the target's pipeline, link a shared library. A build that crashes its
process or runs past ``timeout`` fails with the reason; the process is replaced.
"""

from __future__ import annotations

import itertools
import queue
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from mlir import ir

from mlcir.errors import TuningError
from mlcir.target import Target

from .worker_process import WorkerProcess


@dataclass
class BuildResult:
    """A built candidate: what the runner loads (``artifact``), or why the build failed."""

    artifact: str | None = None  # LocalBuilder: the path of a shared library
    error: str | None = None
    build_secs: float | None = None


class Builder(Protocol):
    """Builds candidates. The tuner calls :meth:`prepare` once per workload, then
    :meth:`build_candidate` from up to ``workers`` threads at the same time."""

    @property
    def workers(self) -> int:
        """How many builds may run at the same time (each keeps a core of this machine busy)."""

    def prepare(self, workload: str, kernel: ir.Module) -> None:
        """Get ready to build candidates of ``kernel`` (its workload hash is ``workload``)."""

    def build_candidate(self, workload: str, trace: dict[str, Any]) -> BuildResult:
        """Build the schedule ``trace`` (JSON form) of the workload's kernel."""

    def close(self) -> None:
        """Release processes and files."""


class LocalBuilder:
    """``workers`` builder processes on this machine (see the module docstring); kernels are
    written to ``work_dir/workloads/<hash>/kernel.mlir``, libraries to a temporary folder."""

    def __init__(self, work_dir: str | Path, target: Target, workers: int = 1,
                 timeout: float = 120.0):
        self.work_dir = Path(work_dir)
        self.target = target
        self.workers = workers
        self.timeout = timeout
        self._artifacts = Path(tempfile.mkdtemp(prefix="mlcir-build-"))
        self._kernels: dict[str, Path] = {}
        self._numbers = itertools.count(1)
        # Builders compile single-threaded; the runner gets the target's threads.
        self._processes = [WorkerProcess("build", {"OMP_NUM_THREADS": "1"})
                           for _ in range(workers)]
        self._idle: queue.SimpleQueue[WorkerProcess] = queue.SimpleQueue()
        for process in self._processes:
            self._idle.put(process)

    def prepare(self, workload: str, kernel: ir.Module) -> None:
        folder = self.work_dir / "workloads" / workload
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / "kernel.mlir"
        if not path.exists():
            path.write_text(str(kernel))
        self._kernels[workload] = path

    def build_candidate(self, workload: str, trace: dict[str, Any]) -> BuildResult:
        number = next(self._numbers)
        self._artifacts.mkdir(parents=True, exist_ok=True)
        out = self._artifacts / f"candidate{number}.so"
        process = self._idle.get()
        try:
            response = process.call({"id": number, "kernel": str(self._kernels[workload]),
                                     "trace": trace, "target": str(self.target),
                                     "out": str(out)}, self.timeout)
        finally:
            self._idle.put(process)
        if not response.get("ok"):
            return BuildResult(error=response["error"])
        return BuildResult(response["so"], None, response["build_secs"])

    def close(self) -> None:
        for process in self._processes:
            process.close()
        shutil.rmtree(self._artifacts, ignore_errors=True)


def make_builder(builder: str | Builder, work_dir: Path, target: Target,
                 workers: int = 1) -> Builder:
    """The builder named by a shorthand (``"local"``: :class:`LocalBuilder` with ``workers``
    processes), or ``builder`` itself."""
    if not isinstance(builder, str):
        return builder
    if builder == "local":
        return LocalBuilder(work_dir, target, workers)
    raise TuningError(f"unknown builder {builder!r} (local)")
