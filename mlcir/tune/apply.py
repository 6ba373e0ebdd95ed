"""Tuning records as a build reads them: a database, a work_dir or a records file, seen as
the record source of the build's ``scheduled`` stage (:mod:`mlcir.targets.stages`): each
kernel, identified by its workload hash, gets the fastest record measured on the build's
target; the build adds the static copies the records specialise. No search happens.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mlir import ir

from mlcir.target import Target

from .database import Database, DatabaseError, TuningDatabase, workload_hash
from .records_file import RecordsFile



def as_database(records: Any) -> TuningDatabase:
    """A database from a database object (a :class:`Database` or another
    :class:`TuningDatabase`), a work_dir (or its ``database/records.json``), or a records file
    written by ``mlcir tune -o`` (:mod:`.records_file`)."""
    if isinstance(records, TuningDatabase):
        return records
    if isinstance(records, (str, Path)):
        path = Path(records)
        if path.name == "records.json" and path.parent.name == "database" \
                and (path.parent / "workloads.json").exists():
            path = path.parent.parent
        if path.is_file():
            return RecordsFile(path)
        if not (path / "database").is_dir():
            raise DatabaseError(f"no tuning database in {path} (expected "
                                    f"{path / 'database' / 'records.json'}, or a records file "
                                    "written by `mlcir tune -o`)")
        return Database(path)
    raise TypeError("records must be a tuning database, a work_dir path or a records file, got "
                    f"{type(records).__name__}")


@dataclass(frozen=True)
class DatabaseRecords:
    """A tuning database as the build's record source (:class:`mlcir.targets.plan.RecordSource`):
    each workload's fastest record measured on the build's target, and the shapes it tuned."""

    database: TuningDatabase

    def trace_for(self, workload: ir.Module, target: Target) -> dict[str, Any] | None:
        best = self.database.best(workload_hash(workload), target.key)
        return best[0].trace if best else None

    def specialized_shapes(self) -> dict[str, list[dict[str, list[int]]]]:
        shapes: dict[str, list[dict[str, list[int]]]] = {}
        for spec in getattr(self.database, "specializations", []):
            shapes.setdefault(spec.function, []).append(spec.shape_dict())
        return shapes


def record_source(records: Any) -> DatabaseRecords:
    """The record source of ``records`` (anything :func:`as_database` takes)."""
    return DatabaseRecords(as_database(records))


# A record source that builds use when given no records: set by a ``with`` block of a higher
# layer (``autotvm.apply_history_best``), read by the driver; the driver never imports it.
_IN_SCOPE: ContextVar[Any] = ContextVar("mlcir_records_in_scope", default=None)


@contextmanager
def records_in_scope(source: Any) -> Iterator[None]:
    """Builds inside the block without ``records=`` use ``source`` (a record source)."""
    token = _IN_SCOPE.set(source)
    try:
        yield
    finally:
        _IN_SCOPE.reset(token)


def record_source_in_scope() -> Any:
    """The record source of the innermost :func:`records_in_scope` (None outside any)."""
    return _IN_SCOPE.get()
