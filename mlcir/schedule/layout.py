"""``transform_layout``: legality and the state update (the IR rewrite is :mod:`.relayout`).

The tensor a block writes changes layout; its producer gets fresh loops over the new layout's
dimensions (so it must be unscheduled), its consumers keep theirs and read it with
``tensor.extract``. The new blocks are read from a scratch copy of the kernel with the
schedule's rewrites so far and this one applied, so the state is what the IR will be.
"""

from __future__ import annotations

from typing import Any, Callable

from mlir import ir

from .errors import PrimitiveError
from .relayout import (KIND, check_layout, index_map_text, parse_index_map, producer_problem,
                       spec)
from .rewrites import apply_rewrite, rewritten
from .state import Block, KernelState, read_blocks


def transform_layout(state: KernelState, original: ir.Module, block: Block, buffer: Any,
                     index_map: Callable[..., Any] | str) -> str:
    """Change the layout of ``block``'s ``buffer`` (``("write", 0)``, or ``("read", i)``: the
    tensor its input ``i`` is, written by another block); returns the map as printed."""
    producer = _producer(state, block, buffer)
    rank = len(producer.output_map)
    names, results = parse_index_map(index_map, rank)
    shape = [producer.extents[d] if d is not None else -1 for d in producer.output_map]
    check_layout(shape, results)
    scratch = rewritten(original, state.inlines)
    problem = producer_problem(scratch, producer.func, producer.name)
    if problem:
        raise PrimitiveError(KIND, problem)
    consumers = [c for c, _ in state.consumers(producer)]
    init = state.init_producer(producer)
    # The producer (and its init) get fresh loops: nothing may be placed at them, nor they
    # anywhere. The consumers keep their loops and places; only their operands change (the
    # tensor is read by tensor.extract), which cache stages name by position.
    for b in [producer] + ([init] if init else []):
        if b.origin or b.attach is not None or any(
                x.attach is not None and x.attach.target == b.name and not x.inlined
                for x in state.blocks.values()):
            raise PrimitiveError(KIND, f"block '{b.name}' is placed, cached or has blocks "
                                 "placed in it: transform_layout before compute_at, "
                                 "cache_read/cache_write and decompose_reduction")
    for b in consumers:
        if b.origin or any(x.origin.get("source") == b.name and not x.inlined
                           for x in state.blocks.values()):
            raise PrimitiveError(KIND, f"block '{b.name}' reads the tensor and is a cache "
                                 "stage or cached: transform_layout before cache_read / "
                                 "cache_write")
    # rfactor's split is made by the transform script, after this rewrite: on the IR the
    # rewrite sees, a factored block is still one op, whose reads the state no longer has
    # (a factored consumer was missed and read the old layout: fuzz_schedules --seed 0
    # --case 132).
    factored = [x.origin["rfactor"] for x in state.blocks.values()
                if x.func == producer.func and "rfactor" in x.origin]
    if factored:
        raise PrimitiveError(KIND, f"block '{factored[0]}' was factored (rfactor): "
                             "transform_layout before rfactor")
    if _scheduled(state, producer) or (init is not None and _scheduled(state, init)):
        raise PrimitiveError(KIND, f"block '{producer.name}' was already scheduled; its loops "
                             "become the new layout's: transform_layout before scheduling it")
    entry = (KIND, producer.func, spec(producer.name, names, results))
    with original.context, ir.Location.unknown():
        try:
            apply_rewrite(scratch, *entry)
        except PrimitiveError:
            raise
        except Exception as error:  # noqa: BLE001 - the rewrite's reason is the message
            raise PrimitiveError(KIND, str(error)) from None
        fresh = KernelState()
        read_blocks(scratch, fresh)
    for b in [producer] + ([init] if init else []):
        _replace(state, b, fresh.blocks[(b.func, b.name)])
    for c, _ in state.consumers(producer):
        new = fresh.blocks[(c.func, c.name)]
        c.operands, c.output_map, c.op_name, c.window = (new.operands, new.output_map,
                                                        new.op_name, new.window)
        c.reads_by_index.add(producer.name)
    state.inlines.append(entry)
    return index_map_text(names, results)


def _producer(state: KernelState, block: Block, buffer: Any) -> Block:
    if not (isinstance(buffer, (tuple, list)) and len(buffer) == 2
            and buffer[0] in ("read", "write") and isinstance(buffer[1], int)):
        raise PrimitiveError(KIND, f"buffer must be ('read', i) or ('write', i), got {buffer!r}")
    kind, index = buffer
    if kind == "write":
        if index != 0:
            raise PrimitiveError(KIND, f"block '{block.name}' writes one tensor, no #{index}")
        return block
    inputs = [op for op in block.operands if not op.is_init]
    if not 0 <= index < len(inputs):
        raise PrimitiveError(KIND, f"block '{block.name}' has {len(inputs)} inputs, no #{index}")
    name = inputs[index].producer
    if name is None:
        raise PrimitiveError(KIND, f"input #{index} of block '{block.name}' is not written by "
                             "a block (a function argument's layout is the signature)")
    return state.blocks[(block.func, name)]


def _scheduled(state: KernelState, b: Block) -> bool:
    return (any(len(levels) > 1 for levels in b.levels) or b.order != sorted(b.order)
            or bool(b.annotations) or any(state.loops[lid].annotations or
                                          len(state.loops[lid].parts) > 1 for lid in b.order))


def _replace(state: KernelState, old: Block, new: Block) -> None:
    """``old`` becomes ``new`` (read from the scratch kernel), with fresh loops."""
    for lid in old.order:
        state.loops.pop(lid, None)
    for attr in ("kinds", "extents", "operands", "output_map", "op_name", "window"):
        setattr(old, attr, getattr(new, attr))
    old.levels, old.order = [], []
    for dim, extent in enumerate(old.extents):
        loop = state.new_loop(old, [(dim, extent if extent is not None else -1)])
        old.levels.append([loop.id])
        old.order.append(loop.id)
