"""Tuning tasks of a whole model: one per distinct kernel, weighted by how often it runs.

The model is lowered to kernels exactly as the build lowers it (the ``kernels`` stage of its
target's build plan, :mod:`mlcir.targets.stages`); each kernel
becomes a standalone module whose function is ``main`` (so a workload does not depend on the
name the lowering gave it) with its destination arguments made ``tensor.empty``
(:func:`workload_kernel`: what is measured is the kernel, not copies of its output); identical
kernels are one task whose weight counts every call.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from mlir import ir
from mlir.dialects import func

from mlcir.passes.layout_chains import module_layout
from mlcir.target import Target
from mlcir.targets import build_plan
from mlcir.targets.stages import run_stages
from mlcir.targets.kernels import (extract_kernel, flops, kernel_functions, workload_hash,
                                   workload_kernel)


@dataclass
class Task:
    name: str
    workload: str
    module: ir.Module
    weight: int
    flops: float
    functions: list[str]  # the kernel's names in the model


def call_counts(module: ir.Module) -> dict[str, int]:
    counts: dict[str, int] = {}

    def visit(op: ir.Operation) -> ir.WalkResult:
        if op.name == "func.call":
            callee = ir.FlatSymbolRefAttr(op.attributes["callee"]).value
            counts[callee] = counts.get(callee, 0) + 1
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)
    return counts


def _dynamic(fn: func.FuncOp) -> bool:
    """Whether kernel ``fn`` has a dynamically shaped argument or result."""
    fn_type = ir.FunctionType(fn.attributes["function_type"].value)
    return any(isinstance(t, ir.ShapedType) and not ir.ShapedType(t).has_static_shape
               for t in list(fn_type.inputs) + list(fn_type.results))


def extract_tasks(model: ir.Module, target: Target | str = "llvm",
                  layout: str | None = None, backend: Any = None) -> list[Task]:
    """The distinct kernels of ``model`` (graph or loop level) as a build for ``target``
    makes them (its plan's ``kernels`` stage; ``layout`` None: the module's), heaviest calls
    counted. Kernels with dynamic dims are left out: they keep their default schedules,
    planned at a representative size (docs/decisions.md#dynamic-defaults); tuning over size
    ranges is not built (tune a model's sizes with ``input_shapes``).
    ``backend`` (a UMA backend or its name) partitions the model first, as ``mlcir.build``
    does: what it offloads are calls of external C functions, not kernels, so not tasks."""
    plan = build_plan(target, layout or module_layout(model))
    partition = None
    if backend is not None:
        from mlcir.uma import get_backend

        partition = get_backend(backend).partition
    with model.context, ir.Location.unknown():
        lowered = run_stages(model, plan, schedule="none", until="kernels",
                             partition=partition).prepared.work
        counts = call_counts(lowered)
        tasks: dict[str, Task] = {}
        for fn in kernel_functions(lowered):
            if _dynamic(fn):
                continue
            name = fn.sym_name.value
            kernel = workload_kernel(extract_kernel(fn))
            h = workload_hash(kernel)
            weight = max(counts.get(name, 0), 1)
            if h in tasks:
                tasks[h].weight += weight
                tasks[h].functions.append(name)
            else:
                tasks[h] = Task(name, h, kernel, weight, flops(kernel), [name])
        return list(tasks.values())
