"""Tuning: MetaSchedule's shape on mlcir's schedules.

Every role is a small protocol with its implementations beside it, given to
:func:`tune_kernel` / :func:`tune_module` as an object or by its shorthand name: design space
(:mod:`.search`'s ``DesignSpace``; the default rules in :mod:`.space`), search strategy
(:mod:`.search`), cost model (:mod:`.cost_model`), feature extractor (:mod:`.features`),
builder and runner in worker processes (:mod:`.builder`, :mod:`.runner`, working together in
:mod:`.coordinator`), database (:mod:`.database`) and task scheduler (:mod:`.task_scheduler`)
for the tasks of whole models (:mod:`.tasks`). :func:`default_schedule` is a kernel's schedule
without tuning and the first candidate of its search. ``mlcir.build(mod, records=db)``
applies the results (:mod:`.apply`); :func:`report` turns work dirs into CSV tables and plots
(:mod:`.report`; each run's manifest is :mod:`.run_info`'s ``run.json``).
"""

from __future__ import annotations

from .builder import Builder, BuildResult, LocalBuilder
from .coordinator import BuildRunCoordinator, TrialResult
from .cost_model import CostModel, RandomModel, XGBModel
from .database import Database, Record, TuningDatabase, Workload, workload_hash
from .distributed import RayBuilder, RayRunner
from .evaluation import evaluate, random_inputs, random_search
from .features import FeatureExtractor, LoopNestFeatures
from .records_file import RecordsFile
from .report import report
from .runner import LocalRunner, Runner, RunResult
from .search import (Candidate, DesignSpace, EvolutionarySearch, RandomSearch, SearchContext,
                     SearchStrategy)
from .space import default_schedule, default_space
from .task_scheduler import GradientScheduler, RoundRobinScheduler, TaskScheduler
from .tasks import Task, extract_tasks
from .tune import TuneConfig, TuneResult, tune_kernel, tune_module

__all__ = ["BuildResult", "BuildRunCoordinator", "Builder", "Candidate", "CostModel",
           "Database", "DesignSpace", "EvolutionarySearch", "FeatureExtractor",
           "GradientScheduler", "LocalBuilder", "LocalRunner", "LoopNestFeatures", "RandomModel",
           "RandomSearch", "RayBuilder", "RayRunner", "Record", "RecordsFile",
           "RoundRobinScheduler", "RunResult", "Runner",
           "SearchContext", "SearchStrategy", "Task", "TaskScheduler", "TrialResult",
           "TuneConfig", "TuneResult", "TuningDatabase", "Workload", "XGBModel", "default_schedule",
           "default_space", "evaluate", "extract_tasks", "random_inputs", "random_search",
           "report", "tune_kernel",
           "tune_module", "workload_hash"]
