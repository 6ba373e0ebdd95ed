"""Tuning tasks of a whole model: one per distinct kernel, weighted by how often it runs.

The model is lowered to kernels exactly as the build lowers it (the ``kernels`` stage of its
target's build plan, :mod:`mlcir.targets.stages`); each kernel
becomes a standalone module whose function is ``main`` (so a workload does not depend on the
name the lowering gave it) with its destination arguments made ``tensor.empty``
(:func:`workload_kernel`: what is measured is the kernel, not copies of its output); identical
kernels are one task whose weight counts every call.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
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

from .kernel_sizes import attach, call_shapes, has_dynamic_dims


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


def extract_tasks(model: ir.Module, target: Target | str = "llvm",
                  layout: str | None = None, backend: Any = None,
                  sizes: Sequence[Mapping[str, Sequence[int]]] | None = None,
                  weights: Sequence[float] | None = None) -> list[Task]:
    """The distinct kernels of ``model`` (graph or loop level) as a build for ``target``
    makes them (its plan's ``kernels`` stage; ``layout`` None: the module's), heaviest calls
    counted. Kernels with dynamic dims are tasks only when ``sizes`` are given (input sizes
    of ``main`` drawn from the ranges to tune over, :mod:`.kernel_sizes`; ``weights``: their
    shares, equal by default): each such kernel carries its argument shapes at every size
    and is measured at all of them. Without sizes, or where the shapes at its call cannot
    be worked out, a dynamic kernel keeps its default schedule, planned at a representative
    size (docs/decisions.md#dynamic-defaults).
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
        at_sizes = _shapes_at(lowered, sizes) if sizes else {}
        if sizes and weights is None:
            weights = [1.0 / len(sizes)] * len(sizes)
        tasks: dict[str, Task] = {}
        for fn in kernel_functions(lowered):
            name = fn.sym_name.value
            if has_dynamic_dims(fn) and name not in at_sizes:
                continue
            kernel = workload_kernel(extract_kernel(fn))
            h = workload_hash(kernel)
            if has_dynamic_dims(fn) and h not in tasks:
                n_args = len(kernel.body.operations[0].regions[0].blocks[0].arguments)
                attach(kernel, [shapes[:n_args] for shapes in at_sizes[name]], weights)
            weight = max(counts.get(name, 0), 1)
            if h in tasks:
                tasks[h].weight += weight
                tasks[h].functions.append(name)
            else:
                tasks[h] = Task(name, h, kernel, weight, flops(kernel), [name])
        return list(tasks.values())


def _shapes_at(lowered: ir.Module, sizes: Sequence[Mapping[str, Sequence[int]]]
               ) -> dict[str, list[list[tuple[int, ...]]]]:
    """Per kernel called from ``main``: its operand shapes at each of ``sizes`` (only the
    kernels whose shapes are known at every size)."""
    main = next(op for op in lowered.body.operations if isinstance(op, func.FuncOp)
                and op.sym_name.value == "main")
    per_size = [call_shapes(main, size) for size in sizes]
    return {name: [found[name] for found in per_size] for name in per_size[0]
            if all(name in found for found in per_size)}
