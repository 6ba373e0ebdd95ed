"""``blockize`` (TVM's): the tile of a block under a loop becomes a block of its own,
``<B>_o``, whose loops are those above that loop.

In the loop-level IR that tile already is an op: tiling the loops above it leaves the tiled
linalg op, which is what ``tensorize`` matches and what fusion and vectorization work on. So
the outer block is a *view* of the block's nest rather than new IR: a block ``<B>_o`` placed
at the loop right above (as blocks computed at a loop are), with no loops of its own.
Placing it there gives TensorIR's structure its rules for free: its loops are the ones
above (``get_loops``), a reorder or fuse across the boundary is refused as not one chain, a
split of the loop above keeps it under the innermost new loop. ``tensorize`` of the outer
block is ``tensorize`` of the tile; ``get_child_blocks`` gives the block inside.
"""

from __future__ import annotations

import random

from .errors import PrimitiveError
from .state import Attach, Block, KernelState, Loop
from .fuzz_support import mostly, own_loops, pick_block
from .instruction import BLOCKIZE

KIND = "blockize"  # Block.origin["kind"] of an outer block
# The primitives that take an outer block (the others take the block inside or its loops).
TAKES_OUTER = ("get_loops", "get_child_blocks", "tensorize", "get_producers",
               "get_consumers", "annotate", "unannotate")


def blockize(state: KernelState, loop: Loop) -> Block:
    """Make the tile of ``loop``'s block under ``loop`` a block; returns it."""
    prim = "blockize"
    block = state.owner(loop)
    name = state.loop_name(loop)
    if block.origin.get("kind"):
        raise PrimitiveError(prim, f"block '{block.name}' is a cache stage or an outer block")
    # The tile is a box: a dim's split levels are nested outer to inner (levels put in
    # another order are dims of their own, expand.py), so the loops under `loop` are the
    # innermost levels of their dims.
    inside = block.order[block.order.index(loop.id):]
    for lid in inside:
        others = [b.name for b in state.attached_at(lid, block.func) if b is not block]
        if others:
            raise PrimitiveError(prim, f"block '{others[0]}' is computed at loop "
                                 f"{state.loop_name(state.loops[lid])}, under loop {name}: "
                                 f"the tile holds block '{block.name}' only")
    position = block.order.index(loop.id)
    above = block.order[position - 1] if position else None
    outer_name = f"{block.name}_o"
    while (block.func, outer_name) in state.blocks:  # blockized again: another outer block
        outer_name += "_o"
    outer = Block(outer_name, block.func, [], [], [], [], [], [], KIND,
                  origin={"kind": KIND, "inner": block.name})
    if above is not None:
        outer.attach = Attach(KIND, block.name, above)
    elif block.attach is not None:
        outer.attach = Attach(KIND, block.attach.target, block.attach.loop)
    state.blocks[(block.func, outer_name)] = outer
    return outer


def inner(state: KernelState, outer: Block) -> Block:
    return state.blocks[(outer.func, outer.origin["inner"])]


def tile_loop(state: KernelState, outer: Block) -> Loop:
    """The outermost loop of the tile an outer block stands for."""
    block = inner(state, outer)
    if outer.attach is None or outer.attach.target != block.name:
        return state.loops[block.order[0]]
    return state.loops[block.order[block.order.index(outer.attach.loop) + 1]]


# -- fuzzing ----------------------------------------------------------------------------------

@BLOCKIZE.fuzzed_by(0.5)
def fuzz_blockize(sch, rng: random.Random) -> bool:
    # Likely legal: a loop with no other block computed at it or inside it.
    block, rv = pick_block(sch, rng, lambda b: not b.origin and bool(b.order))
    if rv is None:
        return False
    loops = own_loops(sch, rv)
    inner = [lv for i, lv in enumerate(loops)
             if not any(sch.state.attached_at(lid, block.func) for lid in block.order[i:])]
    sch.blockize(mostly(rng, inner, loops))
    return True
