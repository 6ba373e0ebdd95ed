"""Applying tuning records: each kernel of a model gets its best recorded schedule.

Used by ``mlcir.build(mod, records=...)``: the model is lowered to kernels as tuning saw them,
each kernel is identified by its workload hash, and the fastest record measured on the same
target replaces the kernel by its scheduled version. Kernels without a record keep the default
lowering. No search happens.
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
from .tasks import extract_kernel, kernel_functions, workload_kernel


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


def apply_records(module: ir.Module, records: Any, target: Target | str) -> list[str]:
    """Schedule every kernel of ``module`` (in place) with its best record; returns the names
    of the kernels that got one."""
    db = as_database(records)
    key = Target.parse(target).key
    applied = []
    with module.context, ir.Location.unknown():
        run_pipeline(module, "mlcir-kernels")
        for fn in kernel_functions(module):
            kernel = extract_kernel(fn)  # scheduled as the model calls it (destinations kept)
            best = db.best(workload_hash(workload_kernel(kernel)), key)
            if not best:
                continue
            sch = Schedule(kernel)
            Trace.from_json(best[0].trace).apply_to_schedule(sch)
            scheduled = next(op for op in sch.mod.body.operations
                             if ir.StringAttr(op.attributes["sym_name"]).value == "main")
            with ir.InsertionPoint(fn):
                new = scheduled.operation.clone()
            name = fn.sym_name.value
            for attr in ("sym_name", "sym_visibility"):
                if attr in fn.attributes:
                    new.attributes[attr] = fn.attributes[attr]
            fn.operation.erase()
            applied.append(name)
    return applied
