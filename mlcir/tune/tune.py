"""``tune_kernel`` and ``tune_module``: MetaSchedule's tuning loop, on mlcir's parts.

In the target's default design space, the first candidate of every task is the target's
default schedule (what ``mlcir.build`` gives a kernel without a record; marked
``default_schedule`` in its record, and a seed of the evolutionary population), so tuning is
never slower than not tuning. Each round, the search strategy proposes candidates from the
design space, the builder and runner build and time them (:mod:`.coordinator`), every result
is written to the database as it finishes, and the cost model is retrained. The budget
``max_trials`` counts the records already in the database for that workload and target, so
re-running with the same ``work_dir`` resumes an interrupted run (measured traces are never
measured again, the cost model starts from their data). Whole models are split into tasks (one
per distinct kernel, weighted by its calls) and a task scheduler spends each round on the task
where the weighted latency is expected to drop most (round-robin when asked).

Every role is an object behind a small protocol, given by its shorthand name or as an object
(:class:`TuneConfig`; docs/tuning.md has the table).
"""

from __future__ import annotations

import math
import random
import time
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

from mlir import ir

from mlcir.errors import TuningError
from mlcir.ir import clone_module
from mlcir.passes.specialize import add_specializations
from mlcir.runtime.compile import as_module
from mlcir.schedule import Schedule, Trace
from mlcir.target import Target

from .builder import Builder, make_builder
from .coordinator import BuildRunCoordinator, TrialResult
from .cost_model import CostModel, make_cost_model
from .database import (Database, Record, Specialization, TuningDatabase, trace_key,
                       workload_hash)
from .distributed import RayBuilder, RayCoordinator, RayRunner
from .features import FeatureExtractor, make_feature_extractor
from .kernel_sizes import RangeDim, input_symbols, sample_sizes
from .progress import Progress, TaskRow
from .run_info import record_run, role_settings, run_manifest
from .runner import Runner, make_runner
from .search import (Candidate, DesignSpace, SearchContext, SearchStrategy, make_space,
                     make_strategy)
from .space import default_schedule
from .task_scheduler import TaskScheduler, make_task_scheduler
from .tasks import Task, extract_tasks, flops


@dataclass
class TuneConfig:
    """One tuning run: its budget and its roles, each an object or its shorthand name.

    ``space="default"`` is :func:`~mlcir.tune.space.default_space` of the target, searched
    from the target's default schedule (a user's space is searched from its own samples);
    ``builders`` is the number of processes of ``builder="local"``; ``database=None`` is a
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
    start_from_default: bool = True  # the target's default schedule is the first candidate
    history: list[float] = field(default_factory=list)  # best latency after each round
    exhausted: bool = False
    strategy_name: str = ""  # written into each record's ``info``, for reports

    def __post_init__(self) -> None:
        workload = self.db.commit_workload(self.task.module, self.task.name)
        self.workload = workload.hash
        self.key = self.target.key
        records = self.db.records(self.workload, self.key)
        measured = [r for r in records if r.features is not None]
        if measured:
            self.model.update(self.workload, [r.features for r in measured],
                              [r.mean_secs for r in measured])
        default = default_schedule(self.task.module, self.target).trace.as_json() \
            if self.start_from_default else None
        self.cx = SearchContext(self.task.module, self.space, self.model,
                                self.feature_extractor, random.Random(self.seed + len(records)),
                                {r.trace_key for r in records},
                                [r.trace for r in self.db.best(self.workload, self.key, k=16)],
                                default, self.coordinator.candidate_maker)
        self.default_key = trace_key(default) if default is not None else None
        self.prepared = False
        rounds = [r.info.get("round") for r in records if isinstance(r.info, dict)]
        self.rounds = 1 + max((n for n in rounds if isinstance(n, int)), default=-1)

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

    @property
    def default_secs(self) -> float:
        """The measured latency of the target's default schedule (inf before it is)."""
        found = [r.mean_secs for r in self.db.records(self.workload, self.key)
                 if r.default_schedule and r.ok]
        return found[0] if found else math.inf

    def row(self) -> TaskRow:
        return TaskRow(self.task.name, self.task.flops, self.task.weight, self.trials,
                       self.best_secs, self.done)

    def prepare(self) -> None:
        """Get the builder and runner ready for this task (once): on a Ray cluster, start
        making its reference data on a node."""
        if not self.prepared:
            self.coordinator.prepare(self.workload, self.task.module)
            self.prepared = True

    def round(self, count: int) -> int:
        """Build and run up to ``count`` new candidates; return how many were."""
        count = min(count, self.max_trials - self.trials)
        if count <= 0:
            return 0
        self.prepare()
        candidates = self._default_first(count)
        if count > len(candidates):
            candidates += [c for c in self.strategy.generate(self.cx, count - len(candidates))
                           if c.key != self.default_key]
        if not candidates:
            self.exhausted = True
            return 0
        features = {c.key: c.features for c in candidates}
        info = self._proposal_info(candidates)
        self.rounds += 1

        def on_result(result: TrialResult) -> None:
            key = trace_key(result.trace)
            rec = Record(self.workload, self.key, result.trace, result.run_secs, result.error,
                         features[key], result.build_secs, info=info[key],
                         default_schedule=key == self.default_key, node=result.node,
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

    def _proposal_info(self, candidates: list[Candidate]) -> dict[str, dict[str, Any]]:
        """What a report needs of each candidate beyond its measurement: the strategy, the
        round, its index in the task's proposal order and the cost model's prediction (score;
        latency = the best so far / score) when it was proposed."""
        trials, best = self.trials, self.best_secs
        scores = self.model.predict([c.features for c in candidates])
        proposed = time.time()
        info = {}
        for i, (c, score) in enumerate(zip(candidates, scores)):
            score = float(score)
            info[c.key] = {"strategy": self.strategy_name, "round": self.rounds,
                           "trial": trials + i, "proposed": proposed, "predicted_score": score,
                           "predicted_secs": best / score if math.isfinite(best) and score > 0
                           else None}
        return info

    def _default_first(self, count: int) -> list[Candidate]:
        """The default schedule while it is not measured: the first candidate of the search,
        so the best record is never slower than what ``mlcir.build`` gives without one."""
        if count <= 0 or self.cx.default_trace is None or self.default_key in self.cx.measured:
            return []
        default = self.cx.replayed(self.cx.default_trace)
        return [default] if default is not None else []

    def result(self) -> TuneResult | None:
        best = self.db.best(self.workload, self.key)
        if not best:
            return None
        trace = Trace.from_json(best[0].trace)
        sch = Schedule(self.task.module)
        trace.apply_to_schedule(sch)
        return TuneResult(self.workload, self.key, sch.trace, best[0].mean_secs, sch, self.trials)


def _range_sizes(module: ir.Module, ranges: Mapping[str, Sequence[RangeDim]] | None,
                 count: int, given: Sequence[tuple[Mapping[str, Sequence[int]], float]] | None,
                 seed: int) -> tuple[list[dict[str, tuple[int, ...]]] | None, list[float] | None]:
    """The input sizes dynamic kernels are measured at, and their weights (None, None: the
    dynamic kernels are not tuned)."""
    if ranges is None and given is None:
        return None, None
    if ranges is not None and given is not None:
        raise TuningError("give input_ranges or range_sizes, not both")
    if given is not None:
        if not given:
            raise TuningError("range_sizes is empty")
        total = sum(float(w) for _, w in given)
        if total <= 0 or any(float(w) < 0 for _, w in given):
            raise TuningError("range_sizes: weights must be >= 0 with a positive sum")
        return ([{n: tuple(int(d) for d in s) for n, s in size.items()} for size, _ in given],
                [float(w) / total for _, w in given])
    check_count("range_samples", count)
    main = next((op for op in module.body.operations if op.operation.name == "func.func"
                 and ir.StringAttr(op.attributes["sym_name"]).value == "main"), None)
    if main is None:
        raise TuningError("input_ranges: the model has no function 'main'")
    sizes = sample_sizes(input_symbols(main), ranges, count, seed)
    return sizes, [1.0 / count] * count


def check_count(name: str, value: Any, minimum: int = 1) -> None:
    """Refuse a count that is not an integer of at least ``minimum`` (a zero round size or
    builder count would make the tuner spin forever)."""
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise TuningError(f"{name} must be an integer >= {minimum}, got {value!r}")


def _check_config(config: TuneConfig) -> None:
    for name in ("max_trials_global", "max_trials_per_task", "num_trials_per_iter", "builders"):
        check_count(name, getattr(config, name))
    work_dir = config.work_dir
    try:
        work_dir.mkdir(parents=True, exist_ok=True)
        probe = work_dir / ".mlcir-write-check"
        probe.touch()
        probe.unlink()
    except OSError as error:
        raise TuningError(f"work_dir {str(work_dir)!r} cannot hold the tuning database and logs: "
                          f"{error.strerror or error} (give a writable directory)") from None


def _tune_tasks(tasks: list[Task], config: TuneConfig) -> tuple[TuningDatabase, list[TaskTuner]]:
    """Tune ``tasks`` until the budget is spent or every task is done."""
    _check_config(config)
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
                            max_trials=config.max_trials_per_task,
                            strategy_name=role_settings(config.strategy)["name"],
                            start_from_default=config.space == "default")
                  for i, task in enumerate(tasks)]
        record_run(work_dir, run_manifest(_run_settings(config, tuners)))
        progress.done = sum(t.trials for t in tuners)
        progress.log(f"tuning {len(tasks)} task(s) for '{target}' in {work_dir} "
                     f"({progress.done} trials already in the database)")
        # Every task is prepared before the first round, so that a cluster makes all reference
        # data at once, on every node, instead of one node per task's first round while the
        # others wait (docs/tuning.md, the Ray throughput figures).
        if config.max_trials_global - progress.done >= len(tuners):
            for tuner in tuners:
                if not tuner.done:
                    tuner.prepare()
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
            progress.round_done(tuner.task.name, [t.row() for t in tuners],
                                [t.default_secs for t in tuners])
        progress.table([t.row() for t in tuners])
    return db, tuners


def _run_settings(config: TuneConfig, tuners: list[TaskTuner]) -> dict[str, Any]:
    """The settings of a run for its manifest (:mod:`.run_info`)."""
    roles = {name: role_settings(getattr(config, name))
             for name in ("space", "strategy", "cost_model", "feature_extractor", "builder",
                          "runner", "task_scheduler")}
    roles["database"] = role_settings(config.database) if config.database is not None \
        else {"name": "Database"}
    return {"target": str(config.target), "target_key": config.target.key, "seed": config.seed,
            "budget": {"max_trials_global": config.max_trials_global,
                       "max_trials_per_task": config.max_trials_per_task,
                       "num_trials_per_iter": config.num_trials_per_iter,
                       "builders": config.builders},
            "roles": roles,
            "tasks": [{"name": t.task.name, "workload": t.workload, "weight": t.task.weight,
                       "flops": t.task.flops, "seed": t.seed} for t in tuners]}


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
    check_count("max_trials", max_trials)
    target = Target.parse(target)
    kernel = as_module(mod)
    _require_main(kernel)
    task = Task(name, workload_hash(kernel), kernel, 1, flops(kernel), ["main"])
    config = TuneConfig(target, Path(work_dir), max_trials_global=max_trials,
                        max_trials_per_task=max_trials, num_trials_per_iter=num_trials_per_iter,
                        seed=seed, verbose=verbose, space=space, strategy=strategy,
                        cost_model=cost_model, feature_extractor=feature_extractor,
                        builder=builder, builders=builders, runner=runner, database=database,
                        task_scheduler="round-robin")
    _, tuners = _tune_tasks([task], config)
    return tuners[0].result()


def _require_main(kernel: ir.Module) -> None:
    """A kernel to tune is its function ``main`` (what the runner calls and times)."""
    names = [ir.StringAttr(op.attributes["sym_name"]).value for op in kernel.body.operations
             if op.operation.name == "func.func"]
    if "main" not in names:
        raise TuningError(f"tune_kernel tunes the function 'main' of its module; this module "
                          f"has {', '.join(repr(n) for n in names) or 'no function'} (rename "
                          "the kernel to main, or use tune_module for a model)")


def tune_module(mod: Any, target: str | Target = "llvm", work_dir: str | Path = "./tune_tmp",
                max_trials_global: int = 200, max_trials_per_task: int | None = None,
                strategy: str | SearchStrategy = "evolutionary", num_trials_per_iter: int = 16,
                seed: int = 0, cost_model: str | CostModel = "xgb", verbose: int = 1,
                builder: str | Builder = "local", runner: str | Runner = "local",
                task_scheduler: str | TaskScheduler = "gradient", builders: int = 1,
                space: str | DesignSpace = "default",
                feature_extractor: str | FeatureExtractor = "loop-nest",
                database: TuningDatabase | None = None,
                input_shapes: Sequence[Mapping[str, Sequence[int]]] | None = None,
                backend: Any = None,
                input_ranges: Mapping[str, Sequence[RangeDim]] | None = None,
                range_samples: int = 4,
                range_sizes: Sequence[tuple[Mapping[str, Sequence[int]], float]] | None = None,
                ) -> TuningDatabase:
    """Tune every kernel of a model; returns the database (``mlcir.build(mod, records=db)``).
    ``backend`` (a UMA backend or its name): its offloaded matches are not tuned (build with
    the same ``backend``).

    ``space`` (default: the default rules) is used for every task; the roles are as in
    :func:`tune_kernel`, plus ``task_scheduler`` (``"gradient"``, ``"round-robin"`` or an
    object). ``input_shapes`` (for a model with dynamic dims: a list of ``{input name:
    shape}``) are the sizes to specialise: each becomes a static copy of ``main`` whose
    kernels are tuned; the database remembers them, so a build with its records holds the
    copies and dispatches calls of those sizes to them (other sizes run the dynamic kernels,
    which the default space leaves unscheduled). Each kernel is measured alone:
    ``mlcir.confirm_in_model(mod, db, target)`` then keeps only the records that are faster
    inside the whole model too (``mlcir tune`` does it by default).

    ``input_ranges`` (``{"input_ids": [(1, 8), (16, 512)]}``: per input, per dim a size or an
    inclusive range) tunes the dynamic kernels themselves: each candidate is timed at
    ``range_samples`` sizes drawn uniformly from the ranges (seeded by ``seed``) and scored
    by their mean, so one record serves every size; ``range_sizes`` (``[({input: shape},
    weight), ...]``) names the sizes and their weights instead (docs/tuning.md, "Tuning over
    ranges")."""
    if max_trials_per_task is not None:
        check_count("max_trials_per_task", max_trials_per_task)
    target = Target.parse(target)
    module = as_module(mod)
    specs = [Specialization.of(shapes) for shapes in input_shapes or ()]
    if specs:
        with module.context:
            module = clone_module(module)
            add_specializations(module, [s.shape_dict() for s in specs])
    sizes, weights = _range_sizes(module, input_ranges, range_samples, range_sizes, seed)
    tasks = extract_tasks(module, target, backend=backend, sizes=sizes, weights=weights)
    config = TuneConfig(target, Path(work_dir), max_trials_global=max_trials_global,
                        max_trials_per_task=max_trials_per_task or max_trials_global,
                        num_trials_per_iter=num_trials_per_iter, seed=seed, verbose=verbose,
                        space=space, strategy=strategy, cost_model=cost_model,
                        feature_extractor=feature_extractor, builder=builder,
                        builders=builders, runner=runner, database=database,
                        task_scheduler=task_scheduler)
    db, _ = _tune_tasks(tasks, config)
    commit = getattr(db, "commit_specialization", None)  # a user's database may not keep them
    for spec in specs if commit is not None else ():
        commit(spec)
    return db
