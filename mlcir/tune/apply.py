"""Scheduling a model's kernels for a build: each gets its best record, else its default.

Used by ``mlcir.build`` and ``mlcir.compile``: the model is lowered to kernels as tuning saw
them, each kernel is identified by its workload hash, and the fastest record measured on the
same target (``records=``) replaces the kernel by its scheduled version. Kernels without a
record get the target's default schedule (``schedule="none"`` leaves them unscheduled, the
naive baseline). No search happens.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mlir import ir

from mlcir.ir import clone_module
from mlcir.passes import run_pipeline
from mlcir.passes.specialize import add_specializations
from mlcir.schedule import Schedule, Trace
from mlcir.target import Target

from .database import Database, DatabaseError, TuningDatabase, workload_hash
from .records_file import RecordsFile
from .space import default_schedule
from .tasks import extract_kernel, flops, kernel_functions, workload_kernel


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


def with_specializations(module: ir.Module, records: Any) -> ir.Module:
    """``module``, or a copy of it with the static specialisations that ``records`` tuned
    (:func:`mlcir.passes.specialize.add_specializations`): the build then holds the tuned
    static kernels beside the dynamic ones, and calls of a tuned size dispatch to them."""
    specs = getattr(as_database(records), "specializations", [])
    if not specs:
        return module
    with module.context:
        copy = clone_module(module)
        for function in dict.fromkeys(s.function for s in specs):
            add_specializations(copy, [s.shape_dict() for s in specs if s.function == function],
                                function)
    return copy


def schedule_kernels(module: ir.Module, target: Target | str, records: Any = None, *,
                     defaults: bool = True,
                     flops_by_kernel: dict[str, float] | None = None) -> dict[str, str]:
    """Schedule every kernel of ``module`` in place: with its fastest record measured on
    ``target`` when ``records`` has one, else (``defaults``) with the target's default schedule
    (:func:`.space.default_schedule`). Returns how each kernel that was scheduled got its
    schedule, ``{name: "record" | "default"}``; a default with an empty trace leaves the
    kernel as it is. ``flops_by_kernel`` receives each kernel's operations (profiles).

    A record always wins over computing a default: the tuner measures the default as its
    first candidate (a record marked ``default_schedule``), so the fastest record is the
    default itself where nothing measured faster."""
    target = Target.parse(target)
    db = as_database(records) if records is not None else None
    decided: dict[str, tuple[str, dict[str, Any] | None]] = {}  # workload -> (source, trace)
    scheduled: dict[str, str] = {}
    with module.context, ir.Location.unknown():
        run_pipeline(module, "mlcir-kernels")
        for fn in kernel_functions(module):
            kernel = extract_kernel(fn)  # scheduled as the model calls it (destinations kept)
            workload = workload_kernel(kernel)
            if flops_by_kernel is not None:  # what a profile's GFLOP/s count
                flops_by_kernel[fn.sym_name.value] = flops(workload)
            key = workload_hash(workload)
            if key not in decided:
                decided[key] = _decide(workload, key, target, db, defaults)
            source, trace = decided[key]
            if trace is None:
                continue
            scheduled[fn.sym_name.value] = source
            _replace(fn, kernel, trace)
    return scheduled


def _decide(workload: ir.Module, key: str, target: Target, db: TuningDatabase | None,
            defaults: bool) -> tuple[str, dict[str, Any] | None]:
    """Where a workload's schedule comes from and its trace (None: left unscheduled)."""
    best = db.best(key, target.key) if db is not None else []
    if best:
        return "record", best[0].trace
    if defaults:
        trace = default_schedule(workload, target).trace
        if trace.insts:
            return "default", trace.as_json()
    return "none", None


def _replace(fn: Any, kernel: ir.Module, trace: dict[str, Any]) -> None:
    """Replace kernel function ``fn`` by ``kernel`` scheduled with ``trace``."""
    sch = Schedule(kernel)
    Trace.from_json(trace).apply_to_schedule(sch)
    scheduled = next(op for op in sch.mod.body.operations
                     if ir.StringAttr(op.attributes["sym_name"]).value == "main")
    with ir.InsertionPoint(fn):
        new = scheduled.operation.clone()
    for attr in ("sym_name", "sym_visibility"):
        if attr in fn.attributes:
            new.attributes[attr] = fn.attributes[attr]
    fn.operation.erase()

