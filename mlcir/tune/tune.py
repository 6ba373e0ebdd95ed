"""``tune_kernel`` and ``tune_module``: MetaSchedule's tuning loop, on mlcir's parts.

Each round, the search strategy proposes candidates from the design space, the measurer builds
and runs them in worker processes, every result is written to the database as it finishes,
and the cost model is retrained. The budget ``max_trials`` counts the records already in the
database for that workload and target, so re-running with the same ``work_dir`` resumes an
interrupted run (measured traces are never measured again, the cost model starts from their
data). Whole models are split into tasks (one per distinct kernel, weighted by its calls) and a
task scheduler spends each round on the task where the weighted latency is expected to drop
most (round-robin when asked).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mlir import ir

from mlcir.runtime.compile import as_module
from mlcir.schedule import Schedule, Trace
from mlcir.target import Target

from .cost_model import CostModel, make_cost_model
from .database import Database, Record, trace_key
from .measure_workers import LocalMeasurer, MeasureResult
from .progress import Progress, TaskRow
from .search import SearchContext, make_strategy
from .space import SpaceFn, default_space
from .tasks import Task, extract_tasks, flops


@dataclass
class TuneResult:
    """The best schedule found for a kernel."""

    workload: str
    target: str
    trace: Trace
    latency: float  # seconds
    schedule: Schedule
    trials: int

    @property
    def mod(self) -> ir.Module:
        return self.schedule.mod


@dataclass
class TaskTuner:
    """The search state of one task."""

    task: Task
    db: Database
    target: Target
    space: SpaceFn
    strategy_kind: str
    model: CostModel
    measurer: Any
    seed: int
    progress: Progress
    max_trials: int
    history: list[float] = field(default_factory=list)  # best latency after each round
    exhausted: bool = False

    def __post_init__(self) -> None:
        workload = self.db.commit_workload(self.task.module, self.task.name)
        self.workload = workload.hash
        self.key = self.target.key
        records = self.db.records(self.workload, self.key)
        measured = [r for r in records if r.features is not None]
        if measured:
            self.model.update(self.workload, [r.features for r in measured],
                              [r.mean_secs for r in measured])
        self.cx = SearchContext(self.task.module, self.space,
                                {r.trace_key for r in records},
                                [r.trace for r in self.db.best(self.workload, self.key, k=16)])
        self.strategy = make_strategy(self.strategy_kind, self.cx, self.model,
                                      seed=self.seed + len(records))
        self.prepared = None

    @property
    def trials(self) -> int:
        return len(self.db.records(self.workload, self.key))

    @property
    def best_secs(self) -> float:
        best = self.db.best(self.workload, self.key)
        return best[0].mean_secs if best else math.inf

    @property
    def done(self) -> bool:
        return self.exhausted or self.trials >= self.max_trials

    def row(self) -> TaskRow:
        return TaskRow(self.task.name, self.task.flops, self.task.weight, self.trials,
                       self.best_secs, self.done)

    def round(self, count: int) -> int:
        """Measure up to ``count`` new candidates; return how many were measured."""
        count = min(count, self.max_trials - self.trials)
        if count <= 0:
            return 0
        if self.prepared is None:
            self.prepared = self.measurer.prepare(self.workload, self.task.module)
        candidates = self.strategy.generate(count)
        if not candidates:
            self.exhausted = True
            return 0
        features = {c.key: c.features for c in candidates}

        def on_result(result: MeasureResult) -> None:
            key = trace_key(result.trace)
            rec = Record(self.workload, self.key, result.trace, result.run_secs, result.error,
                         result.features or features.get(key), result.build_secs)
            self.db.commit_record(rec)
            self.cx.measured.add(key)
            note = f"{self.task.name}: " + (f"{rec.mean_secs * 1e3:.3f} ms" if rec.ok
                                            else rec.error.splitlines()[0][:60])
            self.progress.step(1, note)
            self.progress.log(f"[{self.task.name}] trial {self.trials}: "
                              + (f"{rec.mean_secs * 1e6:.1f} us" if rec.ok else f"failed: {rec.error}"),
                              level=2)

        results = self.measurer.measure(self.prepared, [c.trace for c in candidates], on_result)
        self.model.update(self.workload,
                          [r.features or features.get(trace_key(r.trace)) for r in results],
                          [sum(r.run_secs) / len(r.run_secs) if r.run_secs else math.inf
                           for r in results])
        self.cx.best_traces = [r.trace for r in self.db.best(self.workload, self.key, k=16)]
        self.history.append(self.best_secs)
        return len(results)

    def result(self) -> TuneResult | None:
        best = self.db.best(self.workload, self.key)
        if not best:
            return None
        trace = Trace.from_json(best[0].trace)
        sch = Schedule(self.task.module)
        trace.apply_to_schedule(sch)
        return TuneResult(self.workload, self.key, sch.trace, best[0].mean_secs, sch, self.trials)


class GradientScheduler:
    """Chooses the next task by the expected drop of its weighted latency (the gradient task
    scheduler of Ansor/TVM, without its similar-task term):
    ``weight * (alpha * backward + (1 - alpha) * forward)``, where ``backward`` is the average
    drop per round over the last ``window`` rounds and ``forward`` is the optimistic guess that
    the task's remaining latency falls at the rate of its rounds so far (latency / rounds). A
    task that has stopped improving loses out to one that had few rounds. Every task first gets
    one round."""

    def __init__(self, alpha: float = 0.2, window: int = 3):
        self.alpha = alpha
        self.window = window

    def gain(self, t: TaskTuner) -> float:
        h = [x for x in t.history if math.isfinite(x)]
        if not h:  # every candidate failed so far: the others first
            return 0.0
        back = h[-1 - self.window] if len(h) > self.window else h[0]
        backward = (back - h[-1]) / max(min(self.window, len(h) - 1), 1)
        forward = h[-1] / len(t.history)
        return t.task.weight * (self.alpha * backward + (1 - self.alpha) * forward)

    def pick(self, tuners: list[TaskTuner]) -> TaskTuner | None:
        live = [t for t in tuners if not t.done]
        if not live:
            return None
        for t in live:
            if not t.history:
                return t
        return max(live, key=self.gain)


class RoundRobinScheduler:
    def __init__(self) -> None:
        self.next = 0

    def pick(self, tuners: list[TaskTuner]) -> TaskTuner | None:
        for _ in range(len(tuners)):
            t = tuners[self.next % len(tuners)]
            self.next += 1
            if not t.done:
                return t
        return None


def _run(tasks: list[Task], target: Target, work_dir: Path, max_trials_per_task: int,
         max_trials_global: int, space: SpaceFn | None, strategy: str, num_trials_per_iter: int,
         seed: int, cost_model: str | CostModel, verbose: int, measurer: Any, task_scheduler: str,
         builders: int) -> tuple[Database, list[TaskTuner]]:
    db = Database(work_dir)
    model = make_cost_model(cost_model, seed)
    own_measurer = measurer is None
    measurer = measurer or LocalMeasurer(work_dir, target, builders=builders)
    progress = Progress(work_dir, total=max_trials_global, verbose=verbose)
    tuners = [TaskTuner(t, db, target, space or default_space(target), strategy, model, measurer,
                        seed + i, progress, max_trials_per_task) for i, t in enumerate(tasks)]
    progress.done = sum(t.trials for t in tuners)
    progress.log(f"tuning {len(tasks)} task(s) for '{target}' in {work_dir} "
                 f"({progress.done} trials already in the database)")
    scheduler = RoundRobinScheduler() if task_scheduler == "round-robin" else GradientScheduler()
    try:
        while sum(t.trials for t in tuners) < max_trials_global:
            tuner = scheduler.pick(tuners)
            if tuner is None:
                break
            budget = max_trials_global - sum(t.trials for t in tuners)
            count = min(num_trials_per_iter, budget)
            if not tuner.history:
                # A first round: leave enough of the budget for every other task's first one.
                waiting = sum(1 for t in tuners if not t.history and not t.done)
                count = min(count, max(1, budget // waiting))
            tuner.round(count)
            progress.table([t.row() for t in tuners])
    finally:
        if own_measurer:
            measurer.close()
        progress.close()
    return db, tuners


def tune_kernel(mod: Any, target: str | Target = "llvm", work_dir: str | Path = "./tune_tmp",
                max_trials: int = 64, space: SpaceFn | None = None, strategy: str = "evolutionary",
                num_trials_per_iter: int = 16, seed: int = 0, cost_model: str | CostModel = "xgb",
                verbose: int = 1, measurer: Any = None, builders: int = 1,
                name: str = "main") -> TuneResult | None:
    """Tune one loop-level kernel (function ``main``) and return its best schedule.

    ``space`` is a stochastic schedule function (the default rules when omitted); ``strategy``
    is ``"evolutionary"`` or ``"random"``; ``cost_model`` is ``"xgb"``, ``"random"`` or an object.
    """
    target = Target.parse(target)
    kernel = as_module(mod)
    task = Task(name, "", kernel, 1, flops(kernel), ["main"])
    _, tuners = _run([task], target, Path(work_dir), max_trials, max_trials, space, strategy,
                     num_trials_per_iter, seed, cost_model, verbose, measurer, "round-robin",
                     builders)
    return tuners[0].result()


def tune_module(mod: Any, target: str | Target = "llvm", work_dir: str | Path = "./tune_tmp",
                max_trials_global: int = 200, max_trials_per_task: int | None = None,
                strategy: str = "evolutionary", num_trials_per_iter: int = 16, seed: int = 0,
                cost_model: str | CostModel = "xgb", verbose: int = 1, measurer: Any = None,
                task_scheduler: str = "gradient", builders: int = 1,
                space: SpaceFn | None = None) -> Database:
    """Tune every kernel of a model; returns the database (``mlcir.build(mod, records=db)``).

    ``space`` (default: the default rules) is used for every task."""
    target = Target.parse(target)
    tasks = extract_tasks(as_module(mod))
    per_task = max_trials_per_task or max_trials_global
    db, _ = _run(tasks, target, Path(work_dir), per_task, max_trials_global, space, strategy,
                 num_trials_per_iter, seed, cost_model, verbose, measurer, task_scheduler, builders)
    return db
