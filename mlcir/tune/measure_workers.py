"""Measuring candidates in worker processes, builders and a runner working at the same time.

``LocalMeasurer.measure(traces)`` sends each candidate to a builder process (replay, lower,
link a shared library) and, as soon as one is built, to the runner process (check against the
reference outputs, time). When the runner's threads need every core (2 threads on 2 cores),
builds pause while it runs, so timings are of the whole machine. Each worker answers within a time-out or is killed and replaced; the
candidate is then recorded as failed with the reason ("builder crashed (signal 6)", "runner
timed out after 20 s", "wrong result: …") and the search goes on.
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np
from mlir import ir

from mlcir.target import Target

from .database import trace_key


@dataclass
class MeasureResult:
    trace: dict[str, Any]
    run_secs: list[float] | None = None
    error: str | None = None
    features: list[float] | None = None
    build_secs: float | None = None


class WorkerProcess:
    """One ``python -m mlcir.tune.worker <role>`` process."""

    NOUNS = {"build": "builder", "run": "runner"}

    def __init__(self, role: str, env: dict[str, str] | None = None):
        self.role = role
        self.noun = self.NOUNS[role]
        self.env = env
        self.proc: subprocess.Popen | None = None
        self.request: dict[str, Any] | None = None
        self.deadline = 0.0
        self.started_at = 0.0

    def start(self) -> None:
        env = dict(os.environ)
        env.update(self.env or {})
        env["PYTHONUNBUFFERED"] = "1"
        self.proc = subprocess.Popen([sys.executable, "-m", "mlcir.tune.worker", self.role],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, text=True, bufsize=1, env=env)

    @property
    def busy(self) -> bool:
        return self.request is not None

    def send(self, request: dict[str, Any], timeout: float) -> None:
        if self.proc is None or self.proc.poll() is not None:
            self.start()
        assert self.proc is not None and self.proc.stdin is not None
        self.request = request
        self.started_at = time.monotonic()
        self.deadline = self.started_at + timeout
        self.proc.stdin.write(json.dumps(request) + "\n")
        self.proc.stdin.flush()

    def fileno(self) -> int:
        assert self.proc is not None and self.proc.stdout is not None
        return self.proc.stdout.fileno()

    def read(self) -> dict[str, Any]:
        """The answer to the current request (call when readable, or after a time-out)."""
        assert self.proc is not None and self.proc.stdout is not None
        line = self.proc.stdout.readline()
        self.request = None
        if line:
            return json.loads(line)
        code = self.proc.wait()
        self.proc = None
        if code < 0:
            try:
                name = signal.Signals(-code).name
            except ValueError:
                name = str(-code)
            return {"ok": False, "error": f"{self.noun} crashed (signal {-code}, {name})"}
        return {"ok": False, "error": f"{self.noun} exited with status {code}"}

    def time_out(self) -> dict[str, Any]:
        seconds = time.monotonic() - self.started_at
        self.kill()
        self.request = None
        return {"ok": False, "error": f"{self.noun} timed out after {seconds:.0f} s"}

    def kill(self) -> None:
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()
            self.proc = None

    def close(self) -> None:
        if self.proc is not None:
            try:
                assert self.proc.stdin is not None
                self.proc.stdin.close()
                self.proc.wait(timeout=5)
            except (OSError, subprocess.TimeoutExpired):
                self.proc.kill()
            self.proc = None


@dataclass
class Prepared:
    """A workload ready to measure: its kernel file and reference data."""

    kernel_path: Path
    data_path: Path
    signature: dict[str, Any]


@dataclass
class LocalMeasurer:
    """Builders and a runner on this machine (see the module docstring)."""

    work_dir: Path
    target: Target
    builders: int = 1
    build_timeout: float = 120.0
    run_timeout: float = 30.0
    repeat: int = 3
    min_repeat_ms: float = 20.0
    _builders: list[WorkerProcess] = field(default_factory=list)
    _runner: WorkerProcess | None = None
    _counter: int = 0

    def __post_init__(self) -> None:
        self.work_dir = Path(self.work_dir)
        self._artifacts = Path(tempfile.mkdtemp(prefix="mlcir-build-"))

    # -- workloads ---------------------------------------------------------------------------
    def prepare(self, workload_hash: str, kernel: ir.Module, seed: int = 0) -> Prepared:
        """Write the kernel and its reference data (random inputs and the untuned kernel's
        outputs, computed in this process) under ``work_dir/workloads/<hash>/``."""
        from mlcir.targets import compile_module as build
        from mlcir.tune.measure import random_inputs

        folder = self.work_dir / "workloads" / workload_hash
        folder.mkdir(parents=True, exist_ok=True)
        kernel_path = folder / "kernel.mlir"
        data_path = folder / "reference.npz"
        if not kernel_path.exists():
            kernel_path.write_text(str(kernel))
        ex = build(kernel)
        sig = ex["main"].signature
        if not data_path.exists():
            inputs = random_inputs(ex, seed=seed)
            outputs = ex.main(*[a.copy() for a in inputs])
            outputs = outputs if isinstance(outputs, tuple) else (outputs,)
            arrays = {f"input{i}": a for i, a in enumerate(inputs)}
            arrays.update({f"output{i}": np.asarray(o) for i, o in enumerate(outputs)})
            tmp = data_path.with_suffix(".tmp.npz")
            np.savez(tmp, **arrays)
            tmp.rename(data_path)
        return Prepared(kernel_path, data_path, sig.to_json())

    # -- measuring ---------------------------------------------------------------------------
    def _ensure_workers(self) -> None:
        if not self._builders:
            # Builders compile single-threaded; the runner gets the target's threads.
            self._builders = [WorkerProcess("build", {"OMP_NUM_THREADS": "1"})
                              for _ in range(self.builders)]
        if self._runner is None:
            self._runner = WorkerProcess("run")

    def measure(self, prepared: Prepared, traces: list[dict[str, Any]],
                on_result: Callable[[MeasureResult], None] | None = None) -> list[MeasureResult]:
        """Build and run every trace; results in input order. ``on_result`` is called as each
        finishes (the tuner writes the record then)."""
        self._ensure_workers()
        assert self._runner is not None
        results: list[MeasureResult | None] = [None] * len(traces)
        pending = list(range(len(traces)))
        built: list[tuple[int, dict[str, Any]]] = []

        def finish(index: int, result: MeasureResult) -> None:
            results[index] = result
            if on_result is not None:
                on_result(result)

        # A runner that needs every core must not share them with a builder: its timings would
        # be those of a half machine. Then building pauses while the runner runs.
        exclusive = self._threads() + len(self._builders) > (os.cpu_count() or 1)
        while pending or built or any(b.busy for b in self._builders) or self._runner.busy:
            for builder in self._builders:
                if exclusive and self._runner.busy:
                    break
                if not builder.busy and pending:
                    index = pending.pop(0)
                    self._counter += 1
                    out = self._artifacts / f"candidate{self._counter}.so"
                    builder.send({"id": index, "kernel": str(prepared.kernel_path),
                                  "trace": traces[index], "target": str(self.target),
                                  "out": str(out)}, self.build_timeout)
            if not self._runner.busy and built and not (
                    exclusive and any(b.busy for b in self._builders)):
                index, build = built.pop(0)
                self._runner.send({"id": index, "key": trace_key(traces[index]), "so": build["so"],
                                   "data": str(prepared.data_path),
                                   "signature": prepared.signature, "threads": self._threads(),
                                   "target": str(self.target),
                                   "repeat": self.repeat, "min_repeat_ms": self.min_repeat_ms},
                                  self.run_timeout)
                self._runner.build = build  # type: ignore[attr-defined]
            busy = [w for w in self._builders + [self._runner] if w.busy]
            if not busy:
                continue
            timeout = max(0.0, min(w.deadline for w in busy) - time.monotonic())
            ready, _, _ = select.select([w.fileno() for w in busy if w.proc], [], [], timeout)
            for worker in busy:
                if worker.proc is not None and worker.fileno() in ready:
                    index = worker.request["id"]
                    response = worker.read()
                elif time.monotonic() >= worker.deadline:
                    index = worker.request["id"]
                    response = worker.time_out()
                else:
                    continue
                if worker.role == "build":
                    if response.get("ok"):
                        built.append((index, response))
                    else:
                        finish(index, MeasureResult(traces[index], error=f"build: {response['error']}"))
                else:
                    build = worker.build  # type: ignore[attr-defined]
                    Path(build["so"]).unlink(missing_ok=True)
                    if response.get("ok"):
                        finish(index, MeasureResult(traces[index], response["run_secs"], None,
                                                    build["features"], build["build_secs"]))
                    else:
                        finish(index, MeasureResult(traces[index], None, f"run: {response['error']}",
                                                    build["features"], build["build_secs"]))
        return [r for r in results if r is not None]

    def _threads(self) -> int:
        if self.target.kind == "cuda":
            return 1  # the host thread that launches the kernels
        return self.target.threads if self.target.threads > 0 else (os.cpu_count() or 1)

    def close(self) -> None:
        for w in self._builders + ([self._runner] if self._runner else []):
            w.close()
        self._builders, self._runner = [], None
