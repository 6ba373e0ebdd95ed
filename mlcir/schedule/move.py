"""Moving a block up in program order, right after another: what ``reverse_compute_at`` needs
when the producer has a consumer between the two (TensorIR moves the consumer into the
producer's loops; mlcir re-roots the producer's nest at the consumer, which must then come
before the producer's other consumers). A recorded rewrite of the loop-level IR, applied
before the transform script like the inlines."""

from __future__ import annotations

from mlir import ir

from .errors import PrimitiveError, ScheduleError
from .payload import find_block_op
from .rewrite import Rewrite, rewrite_kind
from .state import Block, KernelState

KIND = "move_after"  # its entry in the schedule's recorded rewrites


def move_after(state: KernelState, block: Block, anchor: Block, prim: str) -> None:
    """Put ``block`` (and the blocks it reads that come after ``anchor``, such as its init)
    right after ``anchor``; refused when it reads, directly or not, a block that reads
    ``anchor``'s result after it (that block needs the producer's complete result)."""
    order = [b for b in state.blocks.values() if b.func == block.func]
    position = {b.name: i for i, b in enumerate(order)}
    moving: list[Block] = []

    def reads(b: Block) -> set[str]:
        return {op.producer for op in b.operands if op.producer is not None} | b.reads_by_index

    def visit(b: Block) -> None:
        if b in moving or position[b.name] <= position[anchor.name]:
            return
        if anchor.name in reads(b) and b is not block:
            raise PrimitiveError(prim, f"block '{block.name}' reads block '{b.name}', which "
                                 f"reads '{anchor.name}' and comes first: '{anchor.name}' "
                                 "must be complete before it")
        moving.append(b)
        for name in reads(b):
            visit(state.blocks[(b.func, name)])

    visit(block)
    stages = [b.name for b in moving if b.origin.get("kind")]
    if stages:
        raise PrimitiveError(prim, f"block '{stages[0]}' is a cache stage, made where its block "
                             f"reads: it cannot move up before the other blocks that read "
                             f"'{anchor.name}'")
    moving.sort(key=lambda b: position[b.name])
    rest = [b for b in order if b not in moving]
    at = rest.index(anchor) + 1
    new_order = rest[:at] + moving + rest[at:]
    others = {k: v for k, v in state.blocks.items() if v.func != block.func}
    state.blocks.clear()
    state.blocks.update(others)
    state.blocks.update({(b.func, b.name): b for b in new_order})
    state.rewrites.append(Rewrite(KIND, block.func, block.name, (anchor.name,)))


def apply_move(module: ir.Module, func_name: str, block: str, anchor: str) -> None:
    """Move ``block``'s op, and the ops it needs that come after ``anchor``'s op, right after
    it (in their order)."""
    op, after = find_block_op(module, func_name, block), find_block_op(module, func_name, anchor)
    if op is None or after is None:
        raise ScheduleError(f"reverse_compute_at: no block '{block}' or '{anchor}' in function "
                            f"'{func_name}'")
    parent = after.block
    ops = list(parent.operations)
    index = {o.operation: i for i, o in enumerate(ops)}
    start = index[after.operation]
    needed: set[int] = set()

    def visit(o: ir.Operation) -> None:
        i = index.get(o)
        if i is None or i <= start or i in needed:
            return
        needed.add(i)
        for value in o.operands:
            owner = value.owner
            if isinstance(owner, ir.Operation) or hasattr(owner, "operation"):
                visit(owner.operation if hasattr(owner, "operation") else owner)

    visit(op.operation)
    anchor_op = after.operation
    for i in sorted(needed):
        ops[i].operation.move_after(anchor_op)
        anchor_op = ops[i].operation


@rewrite_kind(KIND)
def _apply_recorded(module: ir.Module, rewrite: Rewrite) -> None:
    apply_move(module, rewrite.func, rewrite.target, *rewrite.args)
