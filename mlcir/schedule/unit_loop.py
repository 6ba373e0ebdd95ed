"""``add_unit_loop`` (TVM's): a loop of one iteration above a loop or a block's nest, a place
to attach or annotate at. It is a level of the dimension of the loop below it (of its first
dimension when that loop is fused), so every other rule of the state holds; like every
one-trip loop it emits no transform op."""

from __future__ import annotations

import random

from .errors import PrimitiveError
from .state import Block, KernelState, Loop
from .fuzz_support import own_loops, pick_block
from .instruction import ADD_UNIT_LOOP


def add_unit_loop(state: KernelState, target: Block | Loop) -> int:
    """Insert a unit loop right above ``target`` (a loop, or the outermost loop of a block's
    own nest); returns its id."""
    if isinstance(target, Block):
        if not target.order:
            raise PrimitiveError("add_unit_loop", f"block '{target.name}' has no loop of its "
                                 "own (a scalar block): a unit loop needs a dimension to "
                                 "belong to")
        below = state.loops[target.order[0]]
    else:
        below = target
    block = state.owner(below)
    if block.origin.get("kind") in ("cache_read", "cache_write"):
        raise PrimitiveError("add_unit_loop", f"block '{block.name}' is a cache stage: it can "
                             "only be placed (compute_at/reverse_compute_at)")
    dim = below.parts[0][0]
    unit = state.new_loop(block, [(dim, 1)])
    levels = block.levels[dim]
    levels.insert(levels.index(below.id), unit.id)
    block.order.insert(block.order.index(below.id), unit.id)
    return unit.id


# -- fuzzing ----------------------------------------------------------------------------------

@ADD_UNIT_LOOP.fuzzed_by(0.5)
def fuzz_add_unit_loop(sch, rng: random.Random) -> bool:
    block, rv = pick_block(sch, rng, lambda b: not b.origin)
    if rv is None:
        return False
    loops = own_loops(sch, rv)
    sch.add_unit_loop(rng.choice(loops) if loops and rng.random() < 0.5 else rv)
    return True
