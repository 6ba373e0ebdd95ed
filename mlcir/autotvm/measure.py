"""Measuring configs: ``measure_option``, AutoTVM's builder and runner settings, and results.

The settings are TVM's (``LocalBuilder(timeout, n_parallel)``, ``LocalRunner(number, repeat,
min_repeat_ms, timeout)``); the work is mlcir's own tuner's (:mod:`mlcir.tune.builder`,
:mod:`mlcir.tune.runner`, :mod:`mlcir.tune.coordinator`): each config's template runs here to
a decided trace, which a builder process replays, lowers and links, and a runner process
checks against the unscheduled kernel and times. A crash or a time-out costs that process,
never the search: the config's result carries the error number and the message.
"""

from __future__ import annotations

import enum
import shutil
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mlcir.errors import TuningError
from mlcir.target import Target
from mlcir.targets.kernels import workload_hash
from mlcir.tune.builder import LocalBuilder as _TuneBuilder
from mlcir.tune.coordinator import BuildRunCoordinator
from mlcir.tune.runner import LocalRunner as _TuneRunner

from .space import ConfigEntity
from .template import Task


class MeasureErrorNo(enum.IntEnum):
    """TVM's error numbers of a measurement."""

    NO_ERROR = 0
    INSTANTIATION_ERROR = 1  # the template rejected the config or raised
    COMPILE_HOST = 2  # the build failed
    COMPILE_DEVICE = 3
    RUNTIME_DEVICE = 4  # the run crashed or failed
    WRONG_ANSWER = 5  # the outputs differ from the unscheduled kernel's
    BUILD_TIMEOUT = 6
    RUN_TIMEOUT = 7
    UNKNOWN_ERROR = 8


@dataclass
class MeasureInput:
    """What is measured: a config of a task on a target."""

    target: Target
    task: Task
    config: ConfigEntity
    trace: dict[str, Any] | None = None  # the decided schedule, once instantiated
    workload: str | None = None  # the hash of the kernel it schedules, once instantiated


@dataclass
class MeasureResult:
    """Seconds per call of each timed repeat (``costs``), or the error number and message
    (``costs`` then holds the message, as in TVM); ``all_cost`` is the seconds from the start
    of its batch to its result, ``timestamp`` when it finished."""

    costs: list[Any]
    error_no: int
    all_cost: float
    timestamp: float = field(default_factory=time.time)

    @property
    def ok(self) -> bool:
        return self.error_no == MeasureErrorNo.NO_ERROR

    @property
    def mean(self) -> float:
        return sum(self.costs) / len(self.costs) if self.ok else float("inf")

    def __repr__(self) -> str:
        costs = self.costs if self.ok else [str(c).splitlines()[0][:80] for c in self.costs]
        return (f"MeasureResult(costs={costs}, error_no={int(self.error_no)}, "
                f"all_cost={self.all_cost:.3f}, timestamp={self.timestamp:.1f})")


@dataclass
class LocalBuilder:
    """Builds in ``n_parallel`` worker processes (default 1: on a 2-core machine a second
    builder slows the runner), each build at most ``timeout`` seconds."""

    timeout: float = 10.0
    n_parallel: int | None = None
    build_func: str = "default"


@dataclass
class LocalRunner:
    """Runs in a worker process: each of ``repeat`` measurements times ``number`` calls (more
    while one lasts under ``min_repeat_ms``) after a warm-up; ``timeout`` per config.
    ``cooldown_interval`` and ``enable_cpu_cache_flush`` are accepted and ignored."""

    number: int = 4
    repeat: int = 3
    min_repeat_ms: float = 0.0
    timeout: float = 10.0
    cooldown_interval: float = 0.1
    enable_cpu_cache_flush: bool = False


def measure_option(builder: str | LocalBuilder = "local",
                   runner: str | LocalRunner = "local") -> dict[str, Any]:
    """The builder and runner settings of a tuning run (``"local"``: the defaults)."""
    if builder == "local":
        builder = LocalBuilder()
    if runner == "local":
        runner = LocalRunner()
    if not isinstance(builder, LocalBuilder):
        raise TuningError(f"unknown builder {builder!r} (\"local\" or autotvm.LocalBuilder(...))")
    if not isinstance(runner, LocalRunner):
        raise TuningError(f"unknown runner {runner!r} (\"local\" or autotvm.LocalRunner(...))")
    for name, value in (("number", runner.number), ("repeat", runner.repeat)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise TuningError(f"LocalRunner {name} must be an integer >= 1, got {value!r}")
    return {"builder": builder, "runner": runner}


def error_number(message: str) -> MeasureErrorNo:
    """The error number of a failure message of mlcir's coordinator (``build: …``/``run: …``)."""
    if message.startswith("build:"):
        return (MeasureErrorNo.BUILD_TIMEOUT if "timed out" in message
                else MeasureErrorNo.COMPILE_HOST)
    if message.startswith("run:"):
        if "timed out" in message:
            return MeasureErrorNo.RUN_TIMEOUT
        if "wrong result" in message:
            return MeasureErrorNo.WRONG_ANSWER
        return MeasureErrorNo.RUNTIME_DEVICE
    return MeasureErrorNo.UNKNOWN_ERROR


class Measurer:
    """Measures configs of one task with mlcir's builder and runner (see the module
    docstring); a context manager, as it owns worker processes and a scratch folder."""

    def __init__(self, task: Task, option: dict[str, Any]):
        builder: LocalBuilder = option["builder"]
        runner: LocalRunner = option["runner"]
        self.task = task
        self.n_parallel = builder.n_parallel or 1
        self.work_dir = Path(tempfile.mkdtemp(prefix="mlcir-autotvm-"))
        target = task.target
        self.builder = _TuneBuilder(self.work_dir, target, self.n_parallel, builder.timeout)
        self.runner = _TuneRunner(self.work_dir, target, runner.timeout, runner.repeat,
                                  runner.min_repeat_ms, runner.number)
        self.coordinator = BuildRunCoordinator(self.builder, self.runner)
        self.prepared: set[str] = set()

    def __enter__(self) -> "Measurer":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self) -> None:
        self.builder.close()
        self.runner.close()
        shutil.rmtree(self.work_dir, ignore_errors=True)

    def measure(self, inputs: list[MeasureInput]) -> list[MeasureResult]:
        """Instantiate, build and run every input; results in input order."""
        start = time.time()
        results: list[MeasureResult | None] = [None] * len(inputs)
        groups: dict[str, list[tuple[int, dict[str, Any]]]] = {}
        for i, inp in enumerate(inputs):
            try:
                sch, _ = inp.task.instantiate(inp.config)
                trace = sch.trace.as_json()
            except Exception as error:  # noqa: BLE001 - a config the template rejects fails alone
                results[i] = MeasureResult([f"{type(error).__name__}: {error}"],
                                           MeasureErrorNo.INSTANTIATION_ERROR,
                                           time.time() - start)
                continue
            inp.trace = trace
            workload = inp.workload = workload_hash(sch.original)
            if workload not in self.prepared:
                self.coordinator.prepare(workload, sch.original)
                self.prepared.add(workload)
            groups.setdefault(workload, []).append((i, trace))
        for workload, members in groups.items():
            trials = self.coordinator.build_and_run(workload, [t for _, t in members])
            for (i, _), trial in zip(members, trials):
                if trial.error is None and trial.run_secs:
                    results[i] = MeasureResult(list(trial.run_secs), MeasureErrorNo.NO_ERROR,
                                               time.time() - start)
                else:
                    message = trial.error or "run: no timing"
                    results[i] = MeasureResult([message], error_number(message),
                                               time.time() - start)
        return [r for r in results if r is not None]
