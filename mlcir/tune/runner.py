"""The runner role: check a built candidate against the untuned kernel's outputs, and time it.

:class:`Runner` is the interface; :class:`LocalRunner` runs in a worker process on this machine
(``python -m mlcir.tune.worker run``, :mod:`.worker`): load the shared library, run it once on
the workload's random inputs, compare every output with the reference, then time it. A run
that crashes its process or runs past ``timeout`` fails with the reason; the process is
replaced.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np
from mlir import ir

from mlcir.errors import TuningError
from mlcir.targets import backend_for, compile_module
from mlcir.target import Target

from .builder import BuildResult
from .database import trace_key
from .evaluation import reference_arrays
from .worker_process import WorkerProcess


@dataclass
class RunResult:
    """The seconds of each timed repeat of a candidate, or why it failed."""

    run_secs: list[float] | None = None
    error: str | None = None


class Runner(Protocol):
    """Runs built candidates. The tuner calls :meth:`prepare` once per workload, then
    :meth:`run_candidate` for one candidate at a time."""

    @property
    def cores(self) -> int:
        """The cores of this machine that one run keeps busy (0: it runs elsewhere)."""

    def prepare(self, workload: str, kernel: ir.Module) -> None:
        """Get ready to run candidates of ``kernel`` (its workload hash is ``workload``)."""

    def run_candidate(self, workload: str, trace: dict[str, Any],
                      build: BuildResult) -> RunResult:
        """Check and time the built candidate ``build`` of schedule ``trace``."""

    def close(self) -> None:
        """Release processes and files."""


class LocalRunner:
    """A runner process on this machine (see the module docstring). The reference data (random
    inputs and the untuned kernel's outputs) is computed in this process and written to
    ``work_dir/workloads/<hash>/reference.npz``; each library is deleted once it has run."""

    def __init__(self, work_dir: str | Path, target: Target, timeout: float = 30.0,
                 repeat: int = 3, min_repeat_ms: float = 20.0, number: int = 1):
        self.work_dir = Path(work_dir)
        self.number = number  # calls per timed repeat at least (AutoTVM's ``number``)
        self.target = target
        self.timeout = timeout
        self.repeat = repeat
        self.min_repeat_ms = min_repeat_ms
        self._process = WorkerProcess("run")
        self._signatures: dict[str, dict[str, Any]] = {}
        self._numbers = itertools.count(1)

    @property
    def cores(self) -> int:
        return self._threads()

    def reference_path(self, workload: str) -> Path:
        return self.work_dir / "workloads" / workload / "reference.npz"

    def prepare(self, workload: str, kernel: ir.Module) -> None:
        path = self.reference_path(workload)
        path.parent.mkdir(parents=True, exist_ok=True)
        ex = compile_module(kernel)
        self._signatures[workload] = ex["main"].signature.to_json()
        if not path.exists():
            arrays = reference_arrays(ex, kernel)
            tmp = path.with_suffix(".tmp.npz")
            np.savez(tmp, **arrays)
            tmp.rename(path)

    def run_candidate(self, workload: str, trace: dict[str, Any],
                      build: BuildResult) -> RunResult:
        assert build.artifact is not None
        response = self._process.call({"id": next(self._numbers), "key": trace_key(trace),
                                       "so": build.artifact,
                                       "data": str(self.reference_path(workload)),
                                       "signature": self._signatures[workload],
                                       "threads": self._threads(),
                                       "target": str(self.target),
                                       "repeat": self.repeat,
                                       "min_repeat_ms": self.min_repeat_ms,
                                       "number": self.number}, self.timeout)
        Path(build.artifact).unlink(missing_ok=True)
        if not response.get("ok"):
            return RunResult(error=response["error"])
        return RunResult(response["run_secs"])

    def _threads(self) -> int:
        return backend_for(self.target).runner_threads(self.target)

    def close(self) -> None:
        self._process.close()


def make_runner(runner: str | Runner, work_dir: Path, target: Target) -> Runner:
    """The runner named by a shorthand (``"local"``: :class:`LocalRunner`), or ``runner``."""
    if not isinstance(runner, str):
        return runner
    if runner == "local":
        return LocalRunner(work_dir, target)
    raise TuningError(f"unknown runner {runner!r} (local)")
