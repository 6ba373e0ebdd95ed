"""Tuning logs: TVM's JSON lines, read back, applied, and converted to mlcir's database.

One line per measured config, TVM's layout (so TVM's log readers mostly carry over)::

    {"input": [target, template name, args, kwargs],
     "config": {"index": 36, "code_hash": null, "entity": [["tile_y", "sp", [-1, 64]], ...]},
     "result": [[seconds, ...] or [error message], error_no, all_cost, timestamp],
     "version": 0.2, "mlcir_version": "...", "workload": "<kernel hash>", "trace": {...}}

``workload`` and ``trace`` are mlcir's additions: the kernel's hash and the decided schedule,
which :func:`to_database` turns into records of mlcir's tuning database, so ``mlcir.build``,
``mlcir compile --tuning-records`` and the CLI use them without the template.
:func:`apply_history_best` makes template calls use each workload's fastest config.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, Callable

from mlir import ir

from mlcir.errors import MlcirError
from mlcir.target import Target
from mlcir.targets.kernels import workload_hash
from mlcir.tune.apply import records_in_scope
from mlcir.tune.database import Database, Record, TuningDatabase
from mlcir.version import __version__

from .dispatcher import DispatchContext, FallbackContext, Workload
from .measure import MeasureInput, MeasureResult
from .space import ConfigEntity, ConfigSpace
from .template import TASK_TABLE, Task, _canonical_args

LOG_VERSION = 0.2


class RecordError(MlcirError, ValueError):
    """A tuning log line that cannot be read; the message names the file and the line."""


def encode(inp: MeasureInput, result: MeasureResult) -> str:
    """One log line (see the module docstring) for a measured config."""
    task = inp.task
    costs = list(result.costs) if result.ok else [str(c) for c in result.costs]
    row: dict[str, Any] = {
        "input": [str(inp.target), task.name, list(task.args), task.kwargs],
        "config": inp.config.to_json_dict(),
        "result": [costs, int(result.error_no), result.all_cost, result.timestamp],
        "version": LOG_VERSION, "mlcir_version": __version__,
    }
    workload = inp.workload or (task.workload_hash if task.kernel is not None else None)
    if workload is not None:
        row["workload"] = workload
    if inp.trace is not None:
        row["trace"] = inp.trace
    return json.dumps(row)


def decode(line: str, where: str = "<line>") -> tuple[MeasureInput, MeasureResult]:
    """The measured config of a log line; a :class:`RecordError` naming ``where`` if it is not
    one."""
    try:
        row = json.loads(line)
        target, name, args, kwargs = row["input"]
        config = ConfigEntity.from_json_dict(row["config"])
        costs, error_no, all_cost, timestamp = row["result"]
        task = Task(name, _canonical_args(args), Target.parse(target),
                    TASK_TABLE.get(name, _missing), kwargs=dict(kwargs or {}))
    except (ValueError, KeyError, TypeError, MlcirError) as error:
        raise RecordError(f"{where}: not an autotvm record ({type(error).__name__}: {error})"
                          ) from None
    inp = MeasureInput(task.target, task, config, row.get("trace"), row.get("workload"))
    return inp, MeasureResult(list(costs), int(error_no), float(all_cost), float(timestamp))


def _missing(*args: Any, **kwargs: Any) -> Any:  # noqa: ARG001 - stands for any template
    raise MlcirError("the template of this record is not registered in this process (import "
                     "the module that defines it, or give to_database a kernel_of)")


def load_from_file(path: str | Path) -> Iterator[tuple[MeasureInput, MeasureResult]]:
    """Every record of a log file, in order; blank lines are skipped, a corrupt line is a
    :class:`RecordError` with the file and line number."""
    with open(path) as f:
        for number, line in enumerate(f, 1):
            if line.strip():
                yield decode(line, f"{path}:{number}")


def _records(records: str | Path | Iterable[tuple[MeasureInput, MeasureResult]]
             ) -> list[tuple[MeasureInput, MeasureResult]]:
    if isinstance(records, (str, Path)):
        return list(load_from_file(records))
    return list(records)


def pick_best(records: str | Path | Iterable[tuple[MeasureInput, MeasureResult]]
              ) -> dict[Workload, tuple[MeasureInput, MeasureResult]]:
    """The fastest successful record of each workload ``(template name, args)``."""
    best: dict[Workload, tuple[MeasureInput, MeasureResult]] = {}
    for inp, res in _records(records):
        if not res.ok:
            continue
        key = inp.task.workload
        if key not in best or res.mean < best[key][1].mean:
            best[key] = (inp, res)
    return best


class ApplyHistoryBest(DispatchContext):
    """Template calls get the fastest recorded config of their workload (a fallback, with a
    warning, for a workload without one). ``target`` (optional) keeps only records measured
    for that target key. Inside the ``with`` block ``mlcir.build`` / ``mlcir.compile`` without
    ``records=`` also use these records: each kernel whose hash a record names gets that
    record's schedule (the fastest for the build's target), others their default."""

    def __init__(self, records: str | Path | Iterable[tuple[MeasureInput, MeasureResult]],
                 target: str | Target | None = None):
        rows = _records(records)
        if target is not None:
            key = Target.parse(target).key
            rows = [(i, r) for i, r in rows if i.target.key == key]
        self.rows = rows
        self.best = pick_best(rows)
        self._fallback = FallbackContext()
        self._by_kernel: dict[tuple[str, str], tuple[float, dict[str, Any]]] = {}
        for inp, res in rows:
            kernel = inp.workload or (
                inp.task.workload_hash if inp.task.kernel is not None else None)
            if res.ok and inp.trace is not None and kernel is not None:
                key = (kernel, inp.target.key)
                if key not in self._by_kernel or res.mean < self._by_kernel[key][0]:
                    self._by_kernel[key] = (res.mean, inp.trace)
        self._scopes: list[Any] = []

    def __enter__(self) -> "ApplyHistoryBest":
        super().__enter__()
        scope = records_in_scope(self)
        scope.__enter__()
        self._scopes.append(scope)
        return self

    def __exit__(self, *exc: Any) -> None:
        self._scopes.pop().__exit__(*exc)
        super().__exit__(*exc)

    # the record source of a build (mlcir.targets.plan.RecordSource)
    def trace_for(self, workload: ir.Module, target: Target) -> dict[str, Any] | None:
        found = self._by_kernel.get((workload_hash(workload), target.key))
        return found[1] if found else None

    def specialized_shapes(self) -> dict[str, list[dict[str, list[int]]]]:
        return {}

    def query(self, target: Any, workload: Workload) -> ConfigSpace:
        found = self.best.get(workload)
        if found is None:
            return self._fallback.query(target, workload)
        return found[0].config


def apply_history_best(records: str | Path | Iterable[tuple[MeasureInput, MeasureResult]],
                       target: str | Target | None = None) -> ApplyHistoryBest:
    """A context in which template calls build their best recorded config."""
    return ApplyHistoryBest(records, target)


def to_database(records: str | Path | Iterable[tuple[MeasureInput, MeasureResult]],
                database: str | Path | TuningDatabase,
                kernel_of: Callable[[MeasureInput], ir.Module] | None = None) -> TuningDatabase:
    """Add the records to mlcir's tuning database (a work dir or a database object) and return
    it: each record's kernel as a workload (``kernel_of(inp)``; default: the unscheduled kernel
    of the record's config of its template, which must be registered in this process) and its
    trace and times as a record for its target. Records without a trace (TVM's own logs, or
    configs the template rejected) are skipped."""
    db = Database(database) if isinstance(database, (str, Path)) else database
    kernels: dict[Any, str] = {}  # a record's kernel hash (or its workload) -> the database's
    for inp, res in _records(records):
        if inp.trace is None:
            continue
        key = inp.workload or inp.task.workload  # a template's kernel may depend on its config
        if key not in kernels:
            if kernel_of is not None:
                kernel = kernel_of(inp)
            else:
                template = Task(inp.task.name, inp.task.args, inp.target,
                                TASK_TABLE.get(inp.task.name, _missing), kwargs=inp.task.kwargs)
                kernel = template.instantiate(inp.config)[0].original
            kernels[key] = db.commit_workload(kernel, inp.task.name).hash
        ok = res.ok and all(isinstance(c, (int, float)) and math.isfinite(c) for c in res.costs)
        db.commit_record(Record(kernels[key], inp.target.key, inp.trace,
                                run_secs=list(res.costs) if ok else None,
                                error=None if ok else str(res.costs[0] if res.costs else "failed"),
                                timestamp=res.timestamp,
                                info={"strategy": "autotvm", "config": inp.config.to_json_dict()}))
    return db
