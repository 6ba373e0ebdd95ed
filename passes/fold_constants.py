"""``graph-fold-constants``: evaluate ops whose operands are all constants (Relax's FoldConstant).

A graph op whose operands are all ``arith.constant`` tensors (dense or ``dense_resource``) is
run with its numpy ``evaluate`` and replaced by a constant holding the result; folding goes in
program order, so chains of constant ops fold entirely (``permute_dims`` of a bound weight
becomes the transposed weight). A few upstream ops are folded the same way (``tensor.concat``,
``tensor.expand_shape``/``collapse_shape``). Constants that a fold leaves unused are erased.

A fold that would materialise a large constant out of small ones (broadcasting a scalar to a
big tensor) is skipped: a result with more than ``max-elements`` elements is folded only when
it is no larger than its largest operand (transposing or scaling a weight always folds).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np
from mlir import ir

from mlcir.dialects import ALL_OPS
from mlcir.dialects.loop import KERNEL_ATTR
from mlcir.dialects.dtypes import numpy_dtype

from .constants import constant_array, is_constant, make_constant
from .graph_to_loop import functions
from .registry import ModulePass, register_pass

# Results up to this many elements always fold (1 MiB of f32, IREE's default for the growth
# of hoisted constant expressions).
DEFAULT_MAX_ELEMENTS = 1 << 18


def _concat(op: ir.Operation, arrays: list[np.ndarray]) -> np.ndarray:
    return np.concatenate(arrays, axis=ir.IntegerAttr(op.attributes["dim"]).value)


def _reshape(op: ir.Operation, arrays: list[np.ndarray]) -> np.ndarray:
    return arrays[0].reshape(ir.RankedTensorType(op.results[0].type).shape)


# Upstream ops folded here: name -> evaluate(op, operand arrays).
UPSTREAM_FOLDS: dict[str, Callable[[ir.Operation, list[np.ndarray]], np.ndarray]] = {
    "tensor.concat": _concat,
    "tensor.expand_shape": _reshape,
    "tensor.collapse_shape": _reshape,
}


def _evaluator(op: ir.Operation) -> Callable[[list[np.ndarray]], np.ndarray] | None:
    opdef = ALL_OPS.get(op.name)
    if opdef is not None:
        if opdef.evaluate is None:
            return None
        attrs = opdef.read_attrs(op)
        return lambda arrays: opdef.evaluate(*arrays, **attrs)
    fold = UPSTREAM_FOLDS.get(op.name)
    if fold is not None:
        return lambda arrays: fold(op, arrays)
    return None


def _static_result(op: ir.Operation) -> ir.RankedTensorType | None:
    if len(op.results) != 1 or not isinstance(op.results[0].type, ir.RankedTensorType):
        return None
    t = ir.RankedTensorType(op.results[0].type)
    return t if t.has_static_shape else None


def fold_constants(module: ir.Module | ir.Operation, *,
                   max_elements: int = DEFAULT_MAX_ELEMENTS) -> int:
    """Fold the constant ops of every graph function in ``module`` (in place); returns how many
    ops were replaced by constants."""
    root = module.operation if hasattr(module, "operation") else module
    folded = 0
    for fn in functions(root):
        if KERNEL_ATTR in fn.attributes or not fn.regions[0].blocks:
            continue
        for op in _foldable_ops(fn):  # program order: a fold makes its users' operands constant
            if _fold(op, max_elements):
                folded += 1
    return folded


def _foldable_ops(fn: ir.Operation) -> list[ir.Operation]:
    """The ops of ``fn`` that may fold, in program order."""
    candidates: list[ir.Operation] = []

    def visit(op: ir.Operation) -> ir.WalkResult:
        if op.operands and (op.name in ALL_OPS or op.name in UPSTREAM_FOLDS):
            candidates.append(op)
        return ir.WalkResult.ADVANCE

    fn.operation.walk(visit)
    return candidates


def _fold(op: ir.Operation, max_elements: int) -> bool:
    result_type = _static_result(op)
    if result_type is None:
        return False
    if not all(is_constant(v) for v in op.operands):
        return False  # before reading any: a convolution's weights are a constant operand
    arrays = [constant_array(v) for v in op.operands]
    if any(a is None for a in arrays):
        return False
    size = int(np.prod(result_type.shape, dtype=np.int64))
    if size > max_elements and size > max(a.size for a in arrays):
        return False
    evaluate = _evaluator(op)
    if evaluate is None:
        return False
    try:
        with np.errstate(all="ignore"):
            result = np.asarray(evaluate(arrays))
    except (ArithmeticError, ValueError):
        return False  # e.g. an integer division by zero: left for run time to decide
    if tuple(result.shape) != tuple(result_type.shape):
        return False
    result = result.astype(numpy_dtype(result_type.element_type), copy=False)
    with ir.InsertionPoint(op), op.location:
        constant = make_constant(result, result_type)
    operands = list(op.operands)
    op.results[0].replace_all_uses_with(constant)
    op.erase()
    owners: list[ir.Operation] = []
    for value in operands:
        owner = value.owner
        if (isinstance(owner, (ir.Operation, ir.OpView)) and owner.name == "arith.constant"
                and owner.operation not in owners):
            owners.append(owner.operation)
    for owner in owners:
        if _unused(owner):
            owner.erase()
    return True


def _unused(op: ir.OpView | ir.Operation) -> bool:
    return all(not list(r.uses) for r in op.results)


@register_pass
@dataclass
class FoldConstants(ModulePass):
    name = "graph-fold-constants"
    summary = "Evaluate graph ops whose operands are all constants (numpy) into constants"
    max_elements: int = DEFAULT_MAX_ELEMENTS

    def run(self, module: ir.Operation) -> None:
        fold_constants(module, max_elements=self.max_elements)
