"""A model's kernels as AutoTVM tasks: ``autotvm.task.extract_from_program``.

mlcir's tuner extracts a model's distinct kernels (:func:`mlcir.tune.extract_tasks`, exactly as
a build lowers them) and shapes each with the target's default design space, whose choices are
sampling instructions. Here that space is seen as an AutoTVM config space: the trace of the
kernel's default schedule is the template, each ``sample_perfect_tile`` a split knob
(``tile_<n>``: every perfect tiling of the loop, innermost at most the instruction's
``max_innermost_factor``) and each ``sample_categorical`` an option knob (``choice_<n>``:
its candidates); ``<n>`` is the instruction's index in the trace. A config replays the trace
with those decisions. Other choices (compute locations) keep the default's decision. Each
kernel becomes a registered template ``mlcir/<kernel name>`` with one argument, its workload
hash, so records, :func:`~mlcir.autotvm.apply_history_best` and ``mlcir.build`` inside it
work as for hand-written templates.
"""

from __future__ import annotations

from typing import Any

from mlir import ir

from mlcir.runtime.compile import as_module
from mlcir.schedule import Schedule, Trace
from mlcir.schedule.instruction import SAMPLE_CATEGORICAL, SAMPLE_PERFECT_TILE, Instruction
from mlcir.schedule.sampling import perfect_tilings
from mlcir.target import Target
from mlcir.tune.space import default_schedule
from mlcir.tune.tasks import extract_tasks

from .dispatcher import get_config
from .space import KnobSpace, OtherOptionSpace, SplitEntity
from .template import Task, create, template

# workload hash -> (kernel, default trace): what the registered templates replay
KERNELS: dict[str, tuple[ir.Module, Trace]] = {}


class PerfectTileSpace(KnobSpace):
    """Every perfect tiling of a loop of ``product`` iterations in ``num_outputs`` factors,
    innermost at most ``max_innermost_factor`` (a ``sample_perfect_tile``'s choices)."""

    kind = "sp"

    def __init__(self, product: int, num_outputs: int, max_innermost_factor: int):
        self.product, self.num_outputs = product, num_outputs
        self.max_innermost_factor = max_innermost_factor
        self.entities = [SplitEntity((-1, *t[1:]))
                         for t in perfect_tilings(product, num_outputs, max_innermost_factor)]

    def __repr__(self) -> str:
        return (f"Split(policy=perfect, product={self.product}, num_outputs={self.num_outputs},"
                f" max_innermost_factor={self.max_innermost_factor}) len={len(self)}")


def knob_name(index: int, inst: Instruction) -> str | None:
    """The knob of a sampling instruction (None: not a knob)."""
    if inst.kind is SAMPLE_PERFECT_TILE:
        return f"tile_{index}"
    if inst.kind is SAMPLE_CATEGORICAL:
        return f"choice_{index}"
    return None


def _define_knobs(cfg: Any, trace: Trace) -> None:
    for index, inst in enumerate(trace.insts):
        name = knob_name(index, inst)
        if name is None:
            continue
        if inst.kind is SAMPLE_PERFECT_TILE:
            extent = 1
            for f in inst.decision:
                extent *= int(f)
            _, n, max_inner = inst.inputs
            if cfg._collect:
                cfg._add(name, PerfectTileSpace(extent, int(n), int(max_inner)))
            else:
                cfg._check_defined(name)
        else:
            if cfg._collect:
                cfg._add(name, OtherOptionSpace(list(inst.inputs[0])))
            else:
                cfg._check_defined(name)


def _decisions(cfg: Any, trace: Trace) -> dict[int, Any]:
    """The decision of each knob's instruction under ``cfg``."""
    out: dict[int, Any] = {}
    for index, inst in enumerate(trace.insts):
        name = knob_name(index, inst)
        if name is None:
            continue
        entity = cfg[name]
        if inst.kind is SAMPLE_PERFECT_TILE:
            inner = list(entity.size[1:])
            prod = 1
            for f in inner:
                prod *= f
            extent = 1
            for f in inst.decision:
                extent *= int(f)
            out[index] = [extent // prod] + inner
        else:
            out[index] = list(inst.inputs[0]).index(entity.val)
    return out


def _default_index(task: Task, trace: Trace) -> int | None:
    """The config of the default schedule's own decisions (None if it is not in the space)."""
    knobs = []
    for inst, space in zip([inst for i, inst in enumerate(trace.insts) if knob_name(i, inst)],
                           task.config_space.space_map.values()):
        if inst.kind is SAMPLE_PERFECT_TILE:
            entity = SplitEntity((-1, *(int(f) for f in inst.decision[1:])))
        else:
            entity = space.entities[int(inst.decision)]
        if entity not in space.entities:
            return None
        knobs.append(space.entities.index(entity))
    return task.config_space.knob2point(knobs)


@template("mlcir/kernel")
def _kernel_template(workload: str) -> tuple[Schedule, list[Any]]:
    """The default schedule of a registered kernel, with the config's decisions."""
    kernel, trace = KERNELS[workload]
    cfg = get_config()
    _define_knobs(cfg, trace)
    decisions = _decisions(cfg, trace)
    sch = Schedule(kernel)
    trace.apply_to_schedule(sch, lambda index, _inst: decisions.get(index))
    return sch, []


def extract_from_program(mod: Any, target: str | Target = "llvm", params: Any = None,
                         ops: Any = None) -> list[Task]:
    """The tunable kernels of a model (graph or loop level) as AutoTVM tasks for ``target``,
    heaviest first (``params`` and ``ops`` are accepted for TVM's signature: the model's
    weights are in it, and every kernel with a choice in its default space is a task)."""
    del params, ops
    target = Target.parse(target)
    module = as_module(mod)
    tasks = []
    for found in sorted(extract_tasks(module, target), key=lambda t: -t.flops * t.weight):
        trace = default_schedule(found.module, target).trace
        if not any(knob_name(i, inst) for i, inst in enumerate(trace.insts)):
            continue  # left to the pipeline, or nothing to choose
        KERNELS[found.workload] = (found.module, trace)
        task = create("mlcir/kernel", args=(found.workload,), target=target)
        task.kernel = found.module
        task.flop = found.flops
        task.weight = found.weight
        task.label = found.name
        task.default_index = _default_index(task, trace)
        tasks.append(task)
    return tasks
