"""Helpers for the rewrites of the loop-level IR: find a block's op, make it a
``linalg.generic``, clone a body into another op, and the types and reassociations of the ops
the rewrites build."""

from __future__ import annotations

from typing import Callable

from mlir import ir
from mlir.dialects.transform import structured

from mlcir.dialects.loop import BLOCK_ATTR, tag_block
from mlcir.transform import annotate, apply, match_attr, new_script

from .errors import ScheduleError


def find_block_op(module: ir.Module, func_name: str, block: str) -> ir.Operation | None:
    """The op of block ``block`` in function ``func_name``, or None."""
    for fn in module.body.operations:
        if fn.operation.name == "func.func" and ir.StringAttr(fn.attributes["sym_name"]).value == func_name:
            found: list[ir.Operation] = []

            def visit(op: ir.Operation, found: list[ir.Operation] = found) -> ir.WalkResult:
                if BLOCK_ATTR in op.attributes and ir.StringAttr(op.attributes[BLOCK_ATTR]).value == block:
                    found.append(op)
                return ir.WalkResult.ADVANCE

            fn.operation.walk(visit)
            return found[0] if found else None
    return None


def as_generic(module: ir.Module, op: ir.Operation) -> ir.Operation:
    """``op`` as a ``linalg.generic`` (named ops are generalized with the transform dialect)."""
    op = op.operation  # an OpView (a value's owner) or the Operation
    if op.name == "linalg.generic":
        return op
    name = ir.StringAttr(op.attributes[BLOCK_ATTR]).value
    marker = "loop.generalize_me"
    op.attributes[marker] = ir.UnitAttr.get()
    # The generic takes the op's place (generalizing a matmul drops its attributes, the
    # marker included): find it by position.
    block = op.block
    position = [o.operation for o in block.operations].index(op)

    def build(root: ir.Value) -> None:
        # Generalizing drops a named op's attributes (linalg.matmul's): mark the result again.
        annotate(structured.GeneralizeOp(match_attr(root, marker)).transformed, marker)

    apply(module, new_script(build))
    generic = list(block.operations)[position].operation
    if generic.name != "linalg.generic":
        raise ScheduleError(f"could not generalize block '{name}'")
    if marker in generic.attributes:
        del generic.attributes[marker]
    tag_block(generic, name)
    return generic


def clone_body(source: ir.Block, target: ir.Block, mapping: dict,
               stop_at_yield: bool,
               index_value: Callable[[int], ir.Value] | None = None) -> list[ir.Value]:
    """Clone ``source``'s ops into ``target`` remapping operands; return the yielded values.
    ``index_value(d)``, when given, is what ``linalg.index d`` of the source is in the target
    (whose dims are numbered otherwise)."""
    yielded: list[ir.Value] = []
    for op in source.operations:
        if op.operation.name == "linalg.yield":
            yielded = [mapping.get(v, v) for v in op.operands]
            if stop_at_yield:
                break
            continue
        if index_value is not None and op.operation.name == "linalg.index":
            with ir.InsertionPoint(target):
                mapping[op.operation.results[0]] = index_value(
                    ir.IntegerAttr(op.operation.attributes["dim"]).value)
            continue
        if op.operation.regions and any(r.blocks for r in op.operation.regions):
            raise ScheduleError(f"cannot inline a body containing '{op.operation.name}' (regions)")
        with ir.InsertionPoint(target):
            new = op.operation.clone()
        for i, v in enumerate(op.operation.operands):
            if v in mapping:
                new.operands[i] = mapping[v]
        for old, res in zip(op.operation.results, new.results):
            mapping[old] = res
    return yielded


def body_element_type(value: ir.Value) -> ir.Type:
    """The type of the op's body argument for ``value`` (a tensor's element, or a scalar)."""
    return ir.RankedTensorType(value.type).element_type \
        if isinstance(value.type, ir.RankedTensorType) else value.type


def reassociation(groups: list[list[int]]) -> ir.ArrayAttr:
    """The reassociation attribute of ``tensor.expand_shape``/``collapse_shape``."""
    i64 = ir.IntegerType.get_signless(64)
    return ir.ArrayAttr.get([ir.ArrayAttr.get([ir.IntegerAttr.get(i64, i) for i in g])
                             for g in groups])
