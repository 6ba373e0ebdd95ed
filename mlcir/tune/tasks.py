"""Tuning tasks of a whole model: one per distinct kernel, weighted by how often it runs.

The model is lowered to kernels exactly as the build lowers it (``mlcir-kernels``); each kernel
becomes a standalone module whose function is ``main`` (so a workload does not depend on the
name the lowering gave it); identical kernels are one task whose weight counts every call.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from mlir import ir
from mlir.dialects import func

from mlcir.dialects.loop import KERNEL_ATTR, iterator_kinds, linalg_ops, loop_extents
from mlcir.ir import clone_module
from mlcir.passes import run_pipeline

from .database import workload_hash


@dataclass
class Task:
    name: str
    workload: str
    module: ir.Module
    weight: int
    flops: float
    functions: list[str]  # the kernel's names in the model


def kernel_functions(module: ir.Module) -> list[func.FuncOp]:
    return [op for op in module.body.operations
            if isinstance(op, func.FuncOp) and KERNEL_ATTR in op.attributes and op.regions[0].blocks]


def extract_kernel(fn: func.FuncOp) -> ir.Module:
    """A module holding a copy of kernel ``fn`` as the public function ``main``."""
    module = ir.Module.create(loc=fn.location)
    with ir.InsertionPoint(module.body):
        copy = fn.operation.clone()
    copy.attributes["sym_name"] = ir.StringAttr.get("main")
    if "sym_visibility" in copy.attributes:
        del copy.attributes["sym_visibility"]
    return module


def flops(module: ir.Module) -> float:
    """Operations of a kernel: 2 per multiply-add of a reduction block, 1 per element else."""
    total = 0.0
    for fn in module.body.operations:
        if not isinstance(fn, func.FuncOp):
            continue
        for op in linalg_ops(fn.operation):
            extents = [e or 1 for e in loop_extents(op)]
            per = 2.0 if "reduction" in iterator_kinds(op) else 1.0
            if op.name == "linalg.fill":
                per = 0.0
            total += per * math.prod(extents)
    return total


def call_counts(module: ir.Module) -> dict[str, int]:
    counts: dict[str, int] = {}

    def visit(op: ir.Operation) -> ir.WalkResult:
        if op.name == "func.call":
            callee = ir.FlatSymbolRefAttr(op.attributes["callee"]).value
            counts[callee] = counts.get(callee, 0) + 1
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)
    return counts


def extract_tasks(model: ir.Module) -> list[Task]:
    """The distinct kernels of ``model`` (graph or loop level), heaviest calls counted."""
    with model.context, ir.Location.unknown():
        lowered = clone_module(model)
        run_pipeline(lowered, "mlcir-kernels")
        counts = call_counts(lowered)
        tasks: dict[str, Task] = {}
        for fn in kernel_functions(lowered):
            name = fn.sym_name.value
            kernel = extract_kernel(fn)
            h = workload_hash(kernel)
            weight = max(counts.get(name, 0), 1)
            if h in tasks:
                tasks[h].weight += weight
                tasks[h].functions.append(name)
            else:
                tasks[h] = Task(name, h, kernel, weight, flops(kernel), [name])
        return list(tasks.values())
