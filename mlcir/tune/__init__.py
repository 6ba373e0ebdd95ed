"""Tuning: MetaSchedule's shape on mlcir's schedules.

Design spaces (:mod:`.space`), search strategies (:mod:`.search`), an XGBoost cost model
(:mod:`.cost_model`), builders and a runner in worker processes (:mod:`.measure_workers`), a
JSON-lines database (:mod:`.database`), tasks of whole models and a task scheduler
(:mod:`.tasks`, :mod:`.tune`). ``mlcir.build(mod, records=db)`` applies the results.
"""

from __future__ import annotations

from .database import Database, Record, Workload, workload_hash
from .measure import evaluate, random_inputs, random_search
from .space import default_space
from .tasks import Task, extract_tasks
from .tune import TuneResult, tune_kernel, tune_module

__all__ = ["Database", "Record", "Task", "TuneResult", "Workload", "default_space", "evaluate",
           "extract_tasks", "random_inputs", "random_search", "tune_kernel", "tune_module",
           "workload_hash"]
