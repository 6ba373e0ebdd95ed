"""``tune_kernel`` and ``tune_module``: MetaSchedule's tuning loop, on mlcir's parts.

Each round, the search strategy proposes candidates from the design space, the builder and
runner build and time them (:mod:`.coordinator`), every result is written to the database as it
finishes, and the cost model is retrained. The budget ``max_trials`` counts the records already
in the database for that workload and target, so re-running with the same ``work_dir`` resumes
an interrupted run (measured traces are never measured again, the cost model starts from their
data). Whole models are split into tasks (one per distinct kernel, weighted by its calls) and a
task scheduler spends each round on the task where the weighted latency is expected to drop
most (round-robin when asked).

Every role is an object behind a small protocol, given by its shorthand name or as an object
(:class:`TuneConfig`; docs/tuning.md has the table).
"""

from __future__ import annotations

import math
import random
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mlir import ir

from mlcir.runtime.compile import as_module
from mlcir.schedule import Schedule, Trace
from mlcir.target import Target

from .builder import Builder, make_builder
from .coordinator import BuildRunCoordinator, TrialResult
from .cost_model import CostModel, make_cost_model
from .database import Database, Record, TuningDatabase, trace_key, workload_hash
from .distributed import RayBuilder, RayCoordinator, RayRunner
from .features import FeatureExtractor, make_feature_extractor
from .progress import Progress, TaskRow
from .runner import Runner, make_runner
from .search import DesignSpace, SearchContext, SearchStrategy, make_space, make_strategy
from .task_scheduler import TaskScheduler, make_task_scheduler
from .tasks import Task, extract_tasks, flops


@dataclass
class TuneConfig:
    """One tuning run: its budget and its roles, each an object or its shorthand name.

    ``space="default"`` is :func:`~mlcir.tune.space.default_space` of the target; ``builders``
    is the number of processes of ``builder="local"``; ``database=None`` is a
    :class:`Database` in ``work_dir``.
    """

    target: Target
    work_dir: Path
    max_trials_global: int
    max_trials_per_task: int
    num_trials_per_iter: int = 16
    seed: int = 0
    verbose: int = 1
    space: str | DesignSpace = "default"
    strategy: str | SearchStrategy = "evolutionary"
    cost_model: str | CostModel = "xgb"
    feature_extractor: str | FeatureExtractor = "loop-nest"
    builder: str | Builder = "local"
    builders: int = 1
    runner: str | Runner = "local"
    database: TuningDatabase | None = None
    task_scheduler: str | TaskScheduler = "gradient"


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
    db: TuningDatabase
    target: Target
    space: DesignSpace
    strategy: SearchStrategy
    model: CostModel
    feature_extractor: FeatureExtractor
    coordinator: BuildRunCoordinator
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
        self.cx = SearchContext(self.task.module, self.space, self.model,
                                self.feature_extractor, random.Random(self.seed + len(records)),
                                {r.trace_key for r in records},
                                [r.trace for r in self.db.best(self.workload, self.key, k=16)])
        self.prepared = False

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
        """Build and run up to ``count`` new candidates; return how many were."""
        count = min(count, self.max_trials - self.trials)
        if count <= 0:
            return 0
        if not self.prepared:
            self.coordinator.prepare(self.workload, self.task.module)
            self.prepared = True
        candidates = self.strategy.generate(self.cx, count)
        if not candidates:
            self.exhausted = True
            return 0
        features = {c.key: c.features for c in candidates}

        def on_result(result: TrialResult) -> None:
            key = trace_key(result.trace)
            rec = Record(self.workload, self.key, result.trace, result.run_secs, result.error,
                         features[key], result.build_secs, node=result.node,
                         node_fingerprint=result.node_fingerprint)
            self.db.commit_record(rec)
            self.cx.measured.add(key)
            note = f"{self.task.name}: " + (f"{rec.mean_secs * 1e3:.3f} ms" if rec.ok
                                            else rec.error.splitlines()[0][:60])
            self.progress.step(1, note)
            self.progress.log(f"[{self.task.name}] trial {self.trials}: "
                              + (f"{rec.mean_secs * 1e6:.1f} us" if rec.ok else f"failed: {rec.error}"),
                              level=2)

        results = self.coordinator.build_and_run(self.workload, [c.trace for c in candidates],
                                                 on_result)
        self.model.update(self.workload, [features[trace_key(r.trace)] for r in results],
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


def _tune_tasks(tasks: list[Task], config: TuneConfig) -> tuple[TuningDatabase, list[TaskTuner]]:
    """Tune ``tasks`` until the budget is spent or every task is done."""
    target, work_dir, seed = config.target, config.work_dir, config.seed
    db = config.database if config.database is not None else Database(work_dir)
    model = make_cost_model(config.cost_model, seed)
    space = make_space(config.space, target)
    strategy = make_strategy(config.strategy)
    extractor = make_feature_extractor(config.feature_extractor)
    scheduler = make_task_scheduler(config.task_scheduler)
    with ExitStack() as made_here:  # closes what is made here; objects given are the caller's
        builder = make_builder(config.builder, work_dir, target, config.builders)
        if isinstance(config.builder, str):
            made_here.callback(builder.close)
        runner = (RayRunner(target=target) if config.runner == "ray"
                  else make_runner(config.runner, work_dir, target))
        if isinstance(config.runner, str):
            made_here.callback(runner.close)
        if isinstance(runner, RayRunner):  # builds on the cluster too, every node at once
            runner.bind(target)
            coordinator = RayCoordinator(runner, builder if isinstance(builder, RayBuilder)
                                         else None)
        else:
            coordinator = BuildRunCoordinator(builder, runner)
        progress = Progress(work_dir, total=config.max_trials_global, verbose=config.verbose)
        made_here.callback(progress.close)
        tuners = [TaskTuner(task, db, target, space, strategy, model, extractor, coordinator,
                            seed=seed + i, progress=progress,
                            max_trials=config.max_trials_per_task)
                  for i, task in enumerate(tasks)]
        progress.done = sum(t.trials for t in tuners)
        progress.log(f"tuning {len(tasks)} task(s) for '{target}' in {work_dir} "
                     f"({progress.done} trials already in the database)")
        while sum(t.trials for t in tuners) < config.max_trials_global:
            tuner = scheduler.pick(tuners)
            if tuner is None:
                break
            budget = config.max_trials_global - sum(t.trials for t in tuners)
            count = min(config.num_trials_per_iter, budget)
            if not tuner.history:
                # A first round: leave enough of the budget for every other task's first one.
                waiting = sum(1 for t in tuners if not t.history and not t.done)
                count = min(count, max(1, budget // waiting))
            tuner.round(count)
            progress.table([t.row() for t in tuners])
    return db, tuners


def tune_kernel(mod: Any, target: str | Target = "llvm", work_dir: str | Path = "./tune_tmp",
                max_trials: int = 64, space: str | DesignSpace = "default",
                strategy: str | SearchStrategy = "evolutionary", num_trials_per_iter: int = 16,
                seed: int = 0, cost_model: str | CostModel = "xgb", verbose: int = 1,
                builder: str | Builder = "local", runner: str | Runner = "local",
                builders: int = 1, name: str = "main",
                feature_extractor: str | FeatureExtractor = "loop-nest",
                database: TuningDatabase | None = None) -> TuneResult | None:
    """Tune one loop-level kernel (function ``main``) and return its best schedule.

    ``space`` is a stochastic schedule function (``"default"``: the default rules of the
    target); ``strategy`` is ``"evolutionary"``, ``"random"`` or an object; ``cost_model`` is
    ``"xgb"``, ``"random"`` or an object; the other roles likewise (:class:`TuneConfig`).
    """
    target = Target.parse(target)
    kernel = as_module(mod)
    task = Task(name, workload_hash(kernel), kernel, 1, flops(kernel), ["main"])
    config = TuneConfig(target, Path(work_dir), max_trials_global=max_trials,
                        max_trials_per_task=max_trials, num_trials_per_iter=num_trials_per_iter,
                        seed=seed, verbose=verbose, space=space, strategy=strategy,
                        cost_model=cost_model, feature_extractor=feature_extractor,
                        builder=builder, builders=builders, runner=runner, database=database,
                        task_scheduler="round-robin")
    _, tuners = _tune_tasks([task], config)
    return tuners[0].result()


def tune_module(mod: Any, target: str | Target = "llvm", work_dir: str | Path = "./tune_tmp",
                max_trials_global: int = 200, max_trials_per_task: int | None = None,
                strategy: str | SearchStrategy = "evolutionary", num_trials_per_iter: int = 16,
                seed: int = 0, cost_model: str | CostModel = "xgb", verbose: int = 1,
                builder: str | Builder = "local", runner: str | Runner = "local",
                task_scheduler: str | TaskScheduler = "gradient", builders: int = 1,
                space: str | DesignSpace = "default",
                feature_extractor: str | FeatureExtractor = "loop-nest",
                database: TuningDatabase | None = None) -> TuningDatabase:
    """Tune every kernel of a model; returns the database (``mlcir.build(mod, records=db)``).

    ``space`` (default: the default rules) is used for every task; the roles are as in
    :func:`tune_kernel`, plus ``task_scheduler`` (``"gradient"``, ``"round-robin"`` or an
    object)."""
    target = Target.parse(target)
    tasks = extract_tasks(as_module(mod))
    config = TuneConfig(target, Path(work_dir), max_trials_global=max_trials_global,
                        max_trials_per_task=max_trials_per_task or max_trials_global,
                        num_trials_per_iter=num_trials_per_iter, seed=seed, verbose=verbose,
                        space=space, strategy=strategy, cost_model=cost_model,
                        feature_extractor=feature_extractor, builder=builder,
                        builders=builders, runner=runner, database=database,
                        task_scheduler=task_scheduler)
    db, _ = _tune_tasks(tasks, config)
    return db
