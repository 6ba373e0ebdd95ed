"""``rfactor`` (TVM's reduction factoring): a reduction over ``k = ko * F + ki`` becomes a block
``<C>_rf`` that reduces over one level and keeps the other as a spatial dimension of an
intermediate tensor, and the block ``C`` itself, which now reduces that intermediate over the
kept level (its write-back).

The transform IR is upstream's ``transform.structured.split_reduction``: rfactor of the outer
level ``ko`` is its default form (``k = p * (K / F) + r``, ``split_factor = F`` = the extent of
``ko``), of the inner level ``ki`` its ``inner_parallel`` form (``k = r * F + p``,
``split_factor = F`` = the extent of ``ki``); ``factor_axis`` is its
``insert_split_dimension``. The new ops are named ``<C>_rf``, ``<C>_rf_init`` (the fill of the
intermediate) and ``<C>`` (the combining op). Legality is what upstream accepts (one reduction
dimension, a combiner it recognises, the reduction dimension read as a plain dimension) and is
checked by applying the split to a scratch copy of the kernel, whose new ops also give the
blocks' dimensions and operands.
"""

from __future__ import annotations

import random

from mlir import ir
from mlir.dialects import transform
from mlir.dialects.transform import structured

from mlcir.dialects.loop import BLOCK_ATTR, ITERATORS_ATTR, iterators_attr
from mlcir.transform import annotate, apply, match_attr, new_script

from .errors import PrimitiveError
from .payload import find_block_op
from .rewrites import rewritten
from .state import REDUCTION, SPATIAL, Block, KernelState, Loop, read_blocks
from .fuzz_support import LIKELY, NothingLikely, own_loops, pick_block
from .instruction import RFACTOR

RFACTOR_KEY = "rfactor"  # Block.origin key of an rf block: the block it was factored from


def made_by_rfactor(state: KernelState, block: Block) -> bool:
    """Whether ``block`` is an rf block, its init, or the combining block of an rfactor
    (ops the transform script makes, after the schedule's rewrites)."""
    return RFACTOR_KEY in block.origin or any(
        b.origin[RFACTOR_KEY] == block.name or f"{b.name}_init" == block.name
        for b in state.blocks.values() if b.func == block.func and RFACTOR_KEY in b.origin)


def rfactor(state: KernelState, original: ir.Module, loop: Loop, factor_axis: int) -> Block:
    """Factor the reduction of ``loop``'s block over ``loop`` (a level of its split reduction
    dimension); returns the rf block."""
    prim = "rfactor"
    block = state.owner(loop)
    name = state.loop_name(loop)
    if state.loop_kind(loop) != REDUCTION or len(loop.parts) != 1:
        raise PrimitiveError(prim, f"loop {name} of block '{block.name}' is not a reduction loop "
                             "(nor a level of one)")
    dim = loop.parts[0][0]
    if block.origin or block.attach is not None:
        raise PrimitiveError(prim, f"block '{block.name}' is a cache stage, an rf block or "
                             "computed at another block's loop")
    reductions = [d for d, kind in enumerate(block.kinds) if kind == REDUCTION]
    if len(reductions) != 1:
        raise PrimitiveError(prim, f"block '{block.name}' has {len(reductions)} reduction "
                             "dimensions; split_reduction factors a block with exactly one")
    if any(None in op.map_results for op in block.operands):
        # Upstream asserts (aborts the process) on any other indexing map result.
        raise PrimitiveError(prim, f"block '{block.name}' reads an operand through an "
                             "expression of its dims (a window, a changed layout): "
                             "split_reduction takes plain dims only")
    levels = block.levels[dim]
    if len(levels) != 2:
        raise PrimitiveError(prim, f"split the reduction loop of block '{block.name}' in two "
                             f"(outer, inner) first; it has {len(levels)} level(s)")
    if any(len(state.loops[lid].parts) != 1 for lid in levels):
        raise PrimitiveError(prim, f"a level of the reduction of '{block.name}' is fused")
    sizes = [state.loops[lid].extent for lid in levels]
    if sizes[0] * sizes[1] != block.extents[dim]:
        raise PrimitiveError(prim, f"the split {sizes} of the reduction of '{block.name}' "
                             f"(extent {block.extents[dim]}) is not perfect: split_reduction "
                             "reshapes the dimension exactly")
    for other in state.blocks.values():
        if other.inlined or other is block:
            continue
        if other.attach is not None and other.attach.target == block.name:
            raise PrimitiveError(prim, f"block '{other.name}' is computed at a loop of "
                                 f"'{block.name}': rfactor before compute_at, "
                                 "reverse_compute_at or decompose_reduction")
        if other.origin.get("source") == block.name:
            raise PrimitiveError(prim, f"block '{block.name}' is cached ('{other.name}'): "
                                 "rfactor before cache_read / cache_write")
    rank = len([d for d in block.output_map if d is not None])
    if not 0 <= factor_axis <= rank:
        raise PrimitiveError(prim, f"factor_axis {factor_axis} is not a position of the "
                             f"{rank + 1}-dimensional intermediate (0..{rank})")
    inner = levels.index(loop.id) == 1
    factor = state.loops[loop.id].extent
    rf_name = f"{block.name}_rf"
    if (block.func, rf_name) in state.blocks:
        raise PrimitiveError(prim, f"block '{block.name}' was already factored")
    origin = {RFACTOR_KEY: block.name, "factor": factor, "factor_axis": factor_axis,
              "inner_parallel": inner}
    rf, rf_init, combine = _split_blocks(state, original, block, origin, rf_name)
    origin.update(init_kinds=list(rf_init.kinds), rf_kinds=list(rf.kinds),
                  combine_kinds=list(combine.kinds))
    rf.origin = origin
    _transplant(state, block, rf, loop.id, levels[0] if inner else levels[1])
    for new in (rf_init, combine):
        new.order, new.levels = [], []
        for d, extent in enumerate(new.extents):
            fresh = state.new_loop(new, [(d, extent)])
            new.levels.append([fresh.id])
            new.order.append(fresh.id)
    state.blocks[(block.func, block.name)] = combine
    state.blocks[(block.func, rf_name)] = rf
    state.blocks[(block.func, rf_init.name)] = rf_init
    return rf


def _split_blocks(state: KernelState, original: ir.Module, block: Block, origin: dict,
                  rf_name: str) -> tuple[Block, Block, Block]:
    """The rf block, its init and the combining block, read from a scratch copy of the kernel
    with the split applied (upstream refuses what it cannot split: its message is the
    reason)."""
    scratch = rewritten(original, state.rewrites)
    op = find_block_op(scratch, block.func, block.name)
    if op is not None and op.name == "linalg.generic" and any(
            o.operation.name == "linalg.index" for o in op.regions[0].blocks[0].operations):
        # split_reduction renumbers the loops whose indices the body reads (wrong sums after
        # a transform_layout of its input: fuzz_schedules --seed 33 --case 6527).
        raise PrimitiveError("rfactor", f"block '{block.name}' reads its loop indices "
                             "(linalg.index: data read by tensor.extract after a "
                             "transform_layout, a gather): split_reduction renumbers its loops")
    with original.context, ir.Location.unknown():
        def build(root: ir.Value) -> None:
            fn = structured.MatchOp(transform.AnyOpType.get(), root, ops=["func.func"],
                                    op_attrs=ir.DictAttr.get(
                                        {"sym_name": ir.StringAttr.get(block.func)})).result
            emit_split(fn, block.name, rf_name, origin)
        try:
            apply(scratch, new_script(build))
        except Exception as error:  # noqa: BLE001 - upstream's reason is the message
            first = str(error).strip().splitlines()
            raise PrimitiveError("rfactor", f"upstream split_reduction cannot factor block "
                                 f"'{block.name}': {' '.join(first[:3])}") from None
        scratch_state = KernelState()
        read_blocks(scratch, scratch_state)
    return (scratch_state.blocks[(block.func, rf_name)],
            scratch_state.blocks[(block.func, f"{rf_name}_init")],
            scratch_state.blocks[(block.func, block.name)])


def _transplant(state: KernelState, block: Block, rf: Block, kept: int, reduced: int) -> None:
    """Give ``rf`` the loops of ``block`` (split, reordered, annotated as they were): each
    spatial dim's loops go to the rf dim that writes the same output position, the ``kept``
    level to the new spatial dim and the ``reduced`` one to the remaining reduction."""
    axis = rf.origin["factor_axis"]
    out_dims = [d for d in block.output_map if d is not None]
    rf_out = rf.output_map
    mapping: dict[int, int] = {}
    for position, rf_dim in enumerate(rf_out):
        if position == axis:
            continue
        mapping[out_dims[position if position < axis else position - 1]] = rf_dim
    kept_dim = rf_out[axis]
    reduced_dim = next(d for d, k in enumerate(rf.kinds) if k == REDUCTION)
    rf.levels = [[] for _ in rf.kinds]
    for old_dim, lids in enumerate(block.levels):
        for lid in lids:
            loop = state.loops[lid]
            new_dim = mapping.get(old_dim, kept_dim if lid == kept else reduced_dim)
            loop.parts = [(new_dim, loop.extent)]
            loop.block = rf.name
            loop.knob = None
            rf.levels[new_dim].append(lid)
    rf.order = list(block.order)
    rf.annotations = dict(block.annotations)
    assert rf.kinds[kept_dim] == SPATIAL and reduced in rf.levels[reduced_dim]


def emit_split(fn: ir.Value, block: str, rf_name: str, origin: dict) -> None:
    """The split of ``block`` (in the function ``fn``) with its new ops named (and their
    iterator kinds stated, when known)."""
    op = match_attr(fn, BLOCK_ATTR, ir.StringAttr.get(block))
    any_op = transform.AnyOpType.get()
    split = structured.SplitReductionOp(any_op, any_op, any_op, any_op, op,
                                        split_factor=origin["factor"],
                                        insert_split_dimension=origin["factor_axis"],
                                        inner_parallel=origin["inner_parallel"])
    for handle, name, kinds in ((split.fill_op, f"{rf_name}_init", "init_kinds"),
                                (split.split_linalg_op, rf_name, "rf_kinds"),
                                (split.combining_linalg_op, block, "combine_kinds")):
        annotate(handle, BLOCK_ATTR, ir.StringAttr.get(name))
        if kinds in origin:
            annotate(handle, ITERATORS_ATTR, iterators_attr(origin[kinds]))


def emit_rfactors(state: KernelState, func_name: str, fn: ir.Value) -> None:
    """Emit, first in the function's script, the splits of its rf blocks (the blocks the rest
    of the script tiles must exist by then)."""
    for b in list(state.blocks.values()):
        if b.func == func_name and RFACTOR_KEY in b.origin:
            emit_split(fn, b.origin[RFACTOR_KEY], b.name, b.origin)


# -- fuzzing ----------------------------------------------------------------------------------

@RFACTOR.fuzzed_by(1)
def fuzz_rfactor(sch, rng: random.Random) -> bool:
    # rfactor factors a block with one reduction dimension over one level of its perfect
    # split (split_reduction reshapes the dimension exactly): split it first where it is not.
    # Likely legal (TVM's rfactor rules too): a block nothing else is computed at or caches,
    # itself computed at its own place, not factored yet, its reduction split in two at most.
    def alone(b) -> bool:
        return b.attach is None and not any(
            x.attach is not None and x.attach.target == b.name or x.origin.get("source") == b.name
            for x in sch.state.blocks.values() if not x.inlined) \
            and (b.func, f"{b.name}_rf") not in sch.state.blocks

    likely = rng.random() < LIKELY
    block, rv = pick_block(sch, rng, lambda b: b.kinds.count("reduction") == 1
                            and not b.origin and b.op_name != "linalg.fill"
                            and (not likely or alone(b)))
    if rv is None:
        return False
    levels = [lv for lv in own_loops(sch, rv) if sch.get(lv).kind == "reduction"]
    if likely and (len(levels) > 2 or len(levels) == 2 and sch.get(levels[0]).extent
                   * sch.get(levels[1]).extent != block.extents[block.kinds.index("reduction")]):
        raise NothingLikely
    if len(levels) == 1:
        extent = sch.get(levels[0]).extent
        divisors = [d for d in range(2, extent) if extent % d == 0]
        if not divisors:
            raise NothingLikely
        levels = sch.split(levels[0], [None, rng.choice(divisors)])
    rank = len([d for d in block.output_map if d is not None])
    sch.rfactor(rng.choice(levels), factor_axis=rng.randint(0, rank))
    return True
