"""The one compile path: a module carried through its target's build plan, stage by stage.

    graph      the module, verified, with its signatures, library declarations and the static
               copies its tuning records specialise
    kernels    loop-level kernels (the plan's graph pipeline; the kernels tuning sees)
    scheduled  each kernel scheduled by its tuning record, else by the plan's default policy
    lowered    the plan's codegen pipeline (or the caller's): what the backend compiles

``mlcir.build``/``mlcir.compile`` run all of them and hand the result to the backend;
``mlcir compile --dump-mlir STAGE`` prints them as they pass; the tuner's task extraction stops
after ``kernels``. Being one function, the three cannot disagree.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from mlir import ir

from mlcir.ir import clone_module
from mlcir.passes import run_pipeline
from mlcir.passes.specialize import add_specializations
from mlcir.runtime.compile import PreparedModule, as_module, prepare
from mlcir.runtime.externs import read_externs
from mlcir.schedule import Schedule, ScheduleError, Trace

from .kernels import canonical_text, extract_kernel, flops, kernel_functions, workload_kernel
from .plan import STAGES, BuildPlan, RecordSource

SCHEDULES = ("default", "none")
StageHook = Callable[[str, ir.Module], None]


@dataclass
class Staged:
    """A module after :func:`run_stages`: ``prepared.work`` is at ``stage``."""

    prepared: PreparedModule
    stage: str
    # How each scheduled kernel got its schedule ("record" | "default") and its operations.
    schedule_sources: dict[str, str] = field(default_factory=dict)
    kernel_flops: dict[str, float] = field(default_factory=dict)
    # What the partition (a UMA backend's, docs/uma.md) returned: offloaded and refused matches.
    partition_report: Any = None


def run_stages(mod: Any, plan: BuildPlan, *, records: RecordSource | None = None,
               schedule: str = "default", until: str = "lowered",
               pipeline: str | None = None, on_stage: StageHook | None = None,
               partition: Callable[[ir.Module], Any] | None = None) -> Staged:
    """Carry ``mod`` (graph or loop level, or plain upstream MLIR; left unchanged) through
    ``plan`` up to stage ``until`` (module docstring). Each kernel gets its fastest record in
    ``records``, else the plan's default schedule (``schedule="none"``: left unscheduled).
    ``pipeline`` replaces the plan's codegen; ``on_stage(stage, module)`` sees every stage.
    ``partition(module)`` (a UMA backend's) rewrites the graph stage in place first: the
    matches it offloads become calls of external C functions, the rest is built as usual."""
    if schedule not in SCHEDULES:
        raise ValueError(f"schedule must be one of {', '.join(SCHEDULES)}, got {schedule!r}")
    if until not in STAGES:
        raise ValueError(f"until must be one of {', '.join(STAGES)}, got {until!r}")
    module = as_module(mod)
    if records is not None:
        module = _with_specializations(module, records.specialized_shapes())
    staged = Staged(prepare(module), "graph")
    work = staged.prepared.work
    steps: list[tuple[str, Callable[[], None]]] = [
        ("kernels", lambda: run_pipeline(work, plan.kernels)),
        ("scheduled", lambda: _schedule(staged, plan, records, schedule == "default")),
        ("lowered", lambda: run_pipeline(work, pipeline or plan.codegen)),
    ]
    with work.context, ir.Location.unknown():
        if partition is not None:
            staged.partition_report = partition(work)
            staged.prepared = staged.prepared._replace(externs=read_externs(work))
        if on_stage is not None:
            on_stage("graph", work)
        for stage, step in steps:
            if STAGES.index(staged.stage) >= STAGES.index(until):
                break
            step()
            staged.stage = stage
            if on_stage is not None:
                on_stage(stage, work)
    return staged


def _with_specializations(module: ir.Module,
                          shapes: dict[str, list[dict[str, list[int]]]]) -> ir.Module:
    """``module``, or a copy of it with a static copy of each function per tuned shape: the
    build holds the tuned static kernels beside the dynamic ones, and calls of a tuned size
    dispatch to them (:mod:`mlcir.passes.specialize`)."""
    if not any(shapes.values()):
        return module
    with module.context:
        copy = clone_module(module)
        for function, function_shapes in shapes.items():
            add_specializations(copy, function_shapes, function)
    return copy


def _schedule(staged: Staged, plan: BuildPlan, records: RecordSource | None,
              defaults: bool) -> None:
    """Schedule every kernel of ``staged`` in place: decided once per distinct workload (a
    record, else the default), applied once per distinct kernel, copied into the others."""
    decided: dict[str, tuple[str, Schedule | dict[str, Any] | None]] = {}  # workload text
    done: dict[str, tuple[float, str, Schedule | None]] = {}  # kernel text
    for fn in kernel_functions(staged.prepared.work):
        kernel = extract_kernel(fn)  # scheduled as the model calls it (destinations kept)
        key = canonical_text(kernel)
        if key not in done:
            workload = workload_kernel(kernel)
            workload_key = canonical_text(workload)
            if workload_key not in decided:
                decided[workload_key] = _decide(workload, plan, records, defaults)
            source, how = decided[workload_key]
            done[key] = (flops(workload), source,
                         None if how is None else _scheduled(kernel, how, source))
        operations, source, scheduled = done[key]  # (a default that failed: unscheduled)
        name = fn.sym_name.value
        staged.kernel_flops[name] = operations
        if scheduled is not None:
            staged.schedule_sources[name] = source
            _replace(fn, scheduled)


def _decide(workload: ir.Module, plan: BuildPlan, records: RecordSource | None,
            defaults: bool) -> tuple[str, Schedule | dict[str, Any] | None]:
    """Where a workload's schedule comes from, and the schedule (a record's trace, or the
    default :class:`Schedule`); None leaves it unscheduled. A record always wins: the tuner
    measured the default as its first candidate."""
    trace = records.trace_for(workload, plan.target) if records is not None else None
    if trace is not None:
        return "record", trace
    if defaults:
        sch = plan.default_schedule(workload)
        if sch.trace.insts:
            return "default", sch
    return "none", None


def _scheduled(kernel: ir.Module, how: Schedule | dict[str, Any],
               source: str) -> Schedule | None:
    """``kernel`` scheduled by a default schedule (its trace object replayed) or a record's
    trace (from its JSON form), applied. A default that does not apply leaves the kernel
    unscheduled (None), as the backend's check would have (``materialize=False``)."""
    sch = Schedule(kernel)
    trace = how.trace if isinstance(how, Schedule) else Trace.from_json(how)
    try:
        trace.apply_to_schedule(sch)
        _ = sch.mod
    except ScheduleError:
        if source != "default":
            raise
        return None
    return sch


def _replace(fn: Any, scheduled: Schedule) -> None:
    """Replace kernel function ``fn`` by a copy of the scheduled ``main``, keeping its name."""
    main = next(op for op in scheduled.mod.body.operations
                if ir.StringAttr(op.attributes["sym_name"]).value == "main")
    with ir.InsertionPoint(fn):
        new = main.operation.clone()
    for attr in ("sym_name", "sym_visibility"):
        if attr in fn.attributes:
            new.attributes[attr] = fn.attributes[attr]
    fn.operation.erase()
