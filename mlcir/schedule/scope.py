"""``set_scope`` (TVM's): the memory a block writes its result to.

On tensors a block's result lives in whatever buffer bufferization gives its destination; the
scope is set by making that destination an explicit ``bufferization.alloc_tensor`` in the
scope's memory space (``shared``: ``#gpu.address_space<workgroup>``; ``global`` and ``local``:
the default space, a buffer of its own). No transform op makes a destination an allocation,
so this is a rewrite of the loop-level IR applied before the transform script, recorded like
the inlines. The destination must be fresh (``tensor.empty``, or a fill of one) and the
result must not be the function's (its memory is the caller's).
"""

from __future__ import annotations

import random

import json

from mlir import ir
from mlir.dialects import bufferization

from mlcir.dialects.loop import dps_inits

from .errors import PrimitiveError, ScheduleError
from .payload import find_block_op
from .rewrite import Rewrite, rewrite_kind
from .fuzz_support import intermediate, pick_block
from .instruction import SET_SCOPE

KIND = "set_scope"
SCOPES = {"global": None, "local": None, "shared": "#gpu.address_space<workgroup>"}


def check(module: ir.Module, func_name: str, block: str, buffer_index: int, scope: str) -> str:
    """The rewrite's specification; raises why the scope cannot be set."""
    if scope not in SCOPES:
        raise PrimitiveError(KIND, f"storage_scope must be one of {', '.join(SCOPES)}, got "
                             f"{scope!r}")
    if buffer_index != 0:
        raise PrimitiveError(KIND, f"block '{block}' writes one buffer, no #{buffer_index}")
    problem = result_problem(find_block_op(module, func_name, block), func_name, block)
    if problem:
        raise PrimitiveError(KIND, problem)
    return json.dumps({"block": block, "scope": scope})


def result_problem(op: ir.Operation | None, func_name: str, block: str) -> str | None:
    """Why the buffer ``op`` (the block ``block``) writes cannot be given a memory of its own
    (None when it can)."""
    if op is None:
        return (f"block '{block}' was made by the schedule (a cache stage or an rf block); "
                "caches take their scope from cache_read/cache_write")
    if any(use.owner.name == "func.return" for use in op.results[0].uses):
        return (f"the result of block '{block}' is a result of function '{func_name}': its "
                "memory is the caller's")
    if fresh_destination(op) is None:
        return (f"the destination of block '{block}' is not a fresh tensor (tensor.empty, or a "
                "fill of one)")
    return None


def fresh_destination(op: ir.Operation) -> ir.Operation | None:
    """The ``tensor.empty`` (or ``alloc_tensor``, a scope set before; or the slice of a wider
    ``alloc_tensor``, a stride aligned before) that is ``op``'s destination, directly or
    through a fill."""
    value = dps_inits(op)[0]
    for _ in range(2):
        owner = value.owner
        if isinstance(owner, ir.Block):
            return None
        owner = owner.operation if hasattr(owner, "operation") else owner
        if owner.name in ("tensor.empty", "bufferization.alloc_tensor") or aligned_view(owner):
            return owner
        if owner.name != "linalg.fill":
            return None
        value = dps_inits(owner)[0]
    return None


def aligned_view(op: ir.Operation) -> ir.Operation | None:
    """The wider ``alloc_tensor`` that ``op`` is a slice of (made by ``storage_align``)."""
    if op.name != "tensor.extract_slice":
        return None
    source = op.operands[0].owner
    if isinstance(source, ir.Block):
        return None
    source = source.operation if hasattr(source, "operation") else source
    return source if source.name == "bufferization.alloc_tensor" else None


def apply_scope(module: ir.Module, func_name: str, spec_text: str) -> None:
    """Apply one recorded ``set_scope``: the destination becomes an ``alloc_tensor`` of the
    scope's memory space (its own, not shared with another block's)."""
    data = json.loads(spec_text)
    with module.context, ir.Location.unknown():
        op = find_block_op(module, func_name, data["block"])
        empty = fresh_destination(op) if op is not None else None
        if empty is None:
            raise ScheduleError(f"{KIND}: no block '{data['block']}' with a fresh destination")
        space = SCOPES[data["scope"]]
        wide = aligned_view(empty)
        if wide is not None:  # an aligned stride: the wider allocation takes the scope
            empty = wide
        with ir.InsertionPoint(empty):
            alloc = bufferization.AllocTensorOp(
                empty.results[0].type, [], memory_space=ir.Attribute.parse(space) if space else None)
        if wide is not None:
            wide.results[0].replace_all_uses_with(alloc.result)
            wide.erase()
            return
        user = op if dps_inits(op)[0].owner == empty else dps_inits(op)[0].owner
        user = user.operation if hasattr(user, "operation") else user
        for i, operand in enumerate(user.operands):
            if operand == empty.results[0]:
                user.operands[i] = alloc.result
        if not any(True for _ in empty.results[0].uses):
            empty.erase()


@rewrite_kind(KIND)
def _apply_recorded(module: ir.Module, rewrite: Rewrite) -> None:
    apply_scope(module, rewrite.func, rewrite.target)


# -- fuzzing ----------------------------------------------------------------------------------

@SET_SCOPE.fuzzed_by(0.5)
def fuzz_set_scope(sch, rng: random.Random) -> bool:
    inner = intermediate(sch, rng)
    _, rv = pick_block(sch, rng, lambda b: not b.origin and b.op_name != "linalg.fill"
                        and inner(b))
    if rv is None:
        return False
    sch.set_scope(rv, 0, rng.choice(["global", "local"]))
    return True
