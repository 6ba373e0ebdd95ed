"""``sample_compute_location`` (TVM's): a loop of a block's consumer at which ``compute_at``
of the block is legal, drawn at random or given by the decision (an index into those loops,
outermost first). Legality is ``compute_at``'s own check, tried on a copy of the state. Where
there is no such loop it gives, as TVM does, the root mark (decision -1): ``compute_at`` at
it leaves the block where it is."""

from __future__ import annotations

import copy
import random

from .compute_location import compute_at
from .errors import PrimitiveError
from .state import Block, KernelState
from .fuzz_support import LIKELY, NothingLikely, consumer_blocks, pick_block
from .instruction import SAMPLE_COMPUTE_LOCATION

ROOT = -1  # the decision (and loop value) of the root mark: the block stays where it is


def candidates(state: KernelState, block: Block) -> list[int]:
    """The loops (ids) of ``block``'s consumer, outermost first, where compute_at is legal."""
    consumers = {c.name for c, _ in state.consumers(block)}
    if len(consumers) != 1:
        return []
    consumer = state.blocks[(block.func, consumers.pop())]
    out = []
    for loop_id in state.enclosing(consumer):
        trial = copy.deepcopy(state)
        try:
            compute_at(trial, trial.blocks[(block.func, block.name)], trial.loops[loop_id])
        except PrimitiveError:
            continue
        out.append(loop_id)
    return out


def sample_compute_location(state: KernelState, rng: random.Random, block: Block,
                            decision: int | None) -> tuple[int, int]:
    """``(decision, loop id)``: a legal location of ``block``, drawn or given; ``(ROOT,
    ROOT)`` where there is none, or when the decision is ROOT."""
    prim = "sample_compute_location"
    loops = candidates(state, block)
    if decision is None:
        decision = rng.randrange(len(loops)) if loops else ROOT
    if decision == ROOT:
        return ROOT, ROOT
    if not isinstance(decision, int) or not 0 <= decision < len(loops):
        raise PrimitiveError(prim, f"decision {decision!r} is not an index of the "
                             f"{len(loops)} candidate loops")
    return decision, loops[decision]


# -- fuzzing ----------------------------------------------------------------------------------

@SAMPLE_COMPUTE_LOCATION.fuzzed_by(0.5)
def fuzz_sample_compute_location(sch, rng: random.Random) -> bool:
    # Likely legal: a producer with a loop it can be computed at (else the sampling refuses).
    likely = rng.random() < LIKELY
    block, rv = pick_block(sch, rng, lambda b: b.attach is None and b.op_name != "linalg.fill"
                            and bool(consumer_blocks(sch, b)))
    if block is None:
        return False
    if likely and not candidates(sch.state, block):
        raise NothingLikely
    sch.compute_at(rv, sch.sample_compute_location(rv))
    return True
