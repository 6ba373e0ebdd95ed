"""``graph-dce``: remove what a graph computes but never uses (Relax's DeadCodeElimination).

Graph ops are pure, but IRDL ops declare no side-effect interface, so upstream's dead-code
removal (``canonicalize``, the greedy rewriter) must assume they have effects and keeps them.
This pass erases, in every graph function (not in loop-level kernels, which belong to
schedules):

- graph ops whose results are unused, and calls of fused groups (``graph.primitive``) and of
  kernels (``loop.kernel``, destination-passing on tensors) whose results are unused;
- upstream ops that upstream itself finds trivially dead (``arith.constant``,
  ``tensor.empty``, pure ops on tensors): the greedy rewriter with no patterns, no folding and
  no constant CSE does exactly that;

repeating until nothing changes, then runs upstream ``symbol-dce`` to drop private functions
that are no longer called. Calls of library functions are kept: a Python function may have
effects of its own.
"""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir
from mlir.passmanager import PassManager
from mlir.rewrite import (GreedyRewriteConfig, GreedySimplifyRegionLevel, RewritePatternSet,
                          apply_patterns_and_fold_greedily)

from mlcir.dialects import graph
from mlcir.dialects.loop import KERNEL_ATTR

from .graph_to_loop import functions
from .registry import ModulePass, register_pass


def erase_trivially_dead(op: ir.Operation) -> None:
    """Let upstream erase the ops under ``op`` that it knows to be dead (and nothing else)."""
    config = GreedyRewriteConfig()
    config.enable_folding = False
    config.enable_constant_cse = False
    config.region_simplification_level = GreedySimplifyRegionLevel.DISABLED
    apply_patterns_and_fold_greedily(op, RewritePatternSet().freeze(), config)


def _pure_callees(module: ir.Operation) -> set[str]:
    return {fn.sym_name.value for fn in functions(module)
            if graph.PRIMITIVE_ATTR in fn.attributes or KERNEL_ATTR in fn.attributes}


def _removable(op: ir.Operation, pure_callees: set[str]) -> bool:
    if op.name.startswith(graph.DIALECT + "."):
        return True
    if op.name == "func.call":
        return ir.FlatSymbolRefAttr(op.attributes["callee"]).value in pure_callees
    return False


def _erase_dead_graph_ops(fn: ir.Operation, pure_callees: set[str]) -> int:
    ops: list[ir.Operation] = []

    def visit(op: ir.Operation) -> ir.WalkResult:
        if _removable(op, pure_callees):
            ops.append(op)
        return ir.WalkResult.ADVANCE

    fn.walk(visit)
    erased = 0
    for op in reversed(ops):  # users before producers: a chain of dead ops goes in one sweep
        if op.results and all(not list(r.uses) for r in op.results):
            op.erase()
            erased += 1
    return erased


def _count_ops(op: ir.Operation) -> int:
    count = 0

    def visit(_: ir.Operation) -> ir.WalkResult:
        nonlocal count
        count += 1
        return ir.WalkResult.ADVANCE

    op.walk(visit)
    return count


def dead_code_elimination(module: ir.Module | ir.Operation) -> int:
    """Erase dead ops in the graph functions of ``module`` and uncalled private functions
    (in place); returns how many graph ops and calls were erased."""
    root = module.operation if hasattr(module, "operation") else module
    pure = _pure_callees(root)
    total = 0
    for fn in functions(root):
        if KERNEL_ATTR in fn.attributes or not fn.regions[0].blocks:
            continue
        while True:  # each side may leave the other something newly dead
            before = _count_ops(fn.operation)
            total += _erase_dead_graph_ops(fn.operation, pure)
            erase_trivially_dead(fn.operation)
            if _count_ops(fn.operation) == before:
                break
    PassManager.parse("builtin.module(symbol-dce)", context=root.context).run(root)
    return total


@register_pass
@dataclass
class DeadCodeElimination(ModulePass):
    name = "graph-dce"
    summary = "Remove unused graph ops, constants and pure upstream ops, and uncalled private functions"

    def run(self, module: ir.Operation) -> None:
        dead_code_elimination(module)
