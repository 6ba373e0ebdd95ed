"""Loop primitives: ``split``, ``reorder``, ``fuse`` (TVM's loop_transformation).

Each checks legality and updates the kernel state; the loops it makes get new ids and the
loops it replaces leave ``state.loops``.
"""

from __future__ import annotations

import random

import math
from typing import Any, Sequence

from .collapse import KIND as COLLAPSE, collapse_fused
from .errors import PrimitiveError
from .expand import KIND as EXPAND
from .reduction import made_by_rfactor
from .rewrite import Rewrite
from .state import DYNAMIC, Block, KernelState, Loop, TileKnob
from .fuzz_support import LIKELY, NothingLikely, on_loops, own_loops, pick_block, some_block_loops
from .instruction import FUSE, REORDER, SPLIT


def own_loop(state: KernelState, loop: Loop, prim: str) -> Block:
    """The block owning ``loop``, which must not be a cache stage (those are only placed)."""
    block = state.owner(loop)
    if block.origin.get("kind") in ("cache_read", "cache_write"):
        raise PrimitiveError(prim, f"block '{block.name}' is a cache stage: it can only be "
                             "placed (compute_at/reverse_compute_at), not re-tiled")
    return block


def check_chain(state: KernelState, block: Block, positions: Sequence[int], keeps_last: bool,
                prim: str) -> None:
    """The loops of ``block`` from the first of ``positions`` to the last must form a single
    chain: no other block may be computed at one of them but the innermost (TVM's rule too:
    such a block would be a second child in the chain). ``keeps_last``: whether blocks may be
    computed at the innermost position (they stay at that position)."""
    last = max(positions)
    for p in range(min(positions), last + 1):
        if p == last and keeps_last:
            continue
        attached = state.attached_at(block.order[p], block.func)
        if attached:
            loop = state.loops[block.order[p]]
            if attached[0].origin.get("kind") == "blockize":
                raise PrimitiveError(prim, f"the outer block '{attached[0].name}' (blockize) is "
                                     f"at loop {state.loop_name(loop)} of block '{block.name}', "
                                     f"inside the loops to {prim}: they are not a single chain")
            raise PrimitiveError(prim, f"block '{attached[0].name}' is computed at loop "
                                 f"{state.loop_name(loop)} of block '{block.name}', inside the "
                                 f"loops to {prim}: they are not a single chain")


def move_attached(state: KernelState, block: Block, old: int, new: int) -> None:
    """The blocks computed at loop ``old`` are now computed at loop ``new`` (its innermost
    replacement: one iteration of it covers what one of ``old`` did)."""
    for other in state.attached_at(old, block.func):
        other.attach.loop = new


def split(state: KernelState, loop: Loop, factors: Sequence[Any],
          knobs: Sequence[TileKnob | None] = ()) -> list[int]:
    """Split ``loop`` into ``len(factors)`` nested loops (outer first); returns their ids.
    ``factors`` are ints and at most one ``None`` (inferred); ``knobs[i]``, when given, is the
    sampled tile size of the ``i``-th new loop."""
    block = own_loop(state, loop, "split")
    name = state.loop_name(loop)
    if len(factors) < 1:
        raise PrimitiveError("split", "needs at least one factor")
    values: list[int | None] = []
    for f in factors:
        if f is not None and not isinstance(f, int):
            raise PrimitiveError("split", f"factors must be ints, sampled values or one None, "
                                 f"got {f!r}")
        values.append(f)
    if values.count(None) > 1:
        raise PrimitiveError("split", "at most one factor may be None")
    known = math.prod(v for v in values if v is not None)
    if any(v is not None and v < 1 for v in values):
        raise PrimitiveError("split", f"factors {values} must be >= 1")
    if loop.extent < 0:
        # A dynamic loop splits into static inner tiles under a dynamic outer loop, the last
        # tile partial: its outer factor, None or given (a decision planned at a
        # representative size), is the run time's.
        if None in values[1:] or len(loop.parts) != 1:
            raise PrimitiveError("split", f"loop {name} has a dynamic extent: its inner factors "
                                 f"must be static ints, the outer one is inferred; got {values}")
        values[0] = DYNAMIC
    elif None in values:
        # TVM's semantics: the inferred factor rounds up; the last tile is partial.
        values[values.index(None)] = -(-loop.extent // known)
    elif known < loop.extent:
        raise PrimitiveError("split", f"factors {values} of loop {name} (extent {loop.extent}) "
                             f"multiply to {known}, less than {loop.extent}")
    if len(loop.parts) != 1:
        return _split_fused(state, block, loop, [int(v) for v in values], knobs)
    dim = loop.parts[0][0]
    new_loops = [state.new_loop(block, [(dim, int(v))]) for v in values]
    for new_loop, knob in zip(new_loops, knobs):
        new_loop.knob = knob
    for new_loop in new_loops:
        new_loop.annotations.update({k: v for k, v in loop.annotations.items()
                                     if k.startswith("_")})
    ids = [new_loop.id for new_loop in new_loops]
    levels = block.levels[dim]
    at = levels.index(loop.id)
    block.levels[dim] = levels[:at] + ids + levels[at + 1:]
    at = block.order.index(loop.id)
    block.order[at:at + 1] = ids
    move_attached(state, block, loop.id, ids[-1])
    del state.loops[loop.id]
    return ids


def _split_fused(state: KernelState, block: Block, loop: Loop, values: list[int],
                 knobs: Sequence[TileKnob | None]) -> list[int]:
    """Split a fused loop whose inner factors tile its innermost part: the same loops as
    splitting that part first and fusing its outer level with the other parts (a split that
    cuts across parts would index through a division of the fused index, which tiling cannot
    express)."""
    name = state.loop_name(loop)
    dim, last = loop.parts[-1]
    inner = math.prod(values[1:])
    if last % inner or values[0] * inner != loop.extent:
        # A split across the parts: the fused dims become one (collapse.py), split as any.
        collapse_fused(state, block, loop, f"loop {name} is a fused loop split across its "
                       f"parts (inner factors {values[1:]}, innermost part of extent {last})",
                       factored=made_by_rfactor(state, block))
        return split(state, loop, values, knobs)
    outer = state.new_loop(block, loop.parts[:-1] + [(dim, last // inner)])
    new_loops = [outer] + [state.new_loop(block, [(dim, v)]) for v in values[1:]]
    for new_loop, knob in zip(new_loops, knobs):
        new_loop.knob = knob if len(new_loop.parts) == 1 else None
    ids = [new_loop.id for new_loop in new_loops]
    for d, _ in loop.parts:
        levels = block.levels[d]
        at = levels.index(loop.id)
        levels[at:at + 1] = ids if d == dim else [outer.id]
    at = block.order.index(loop.id)
    block.order[at:at + 1] = ids
    move_attached(state, block, loop.id, ids[-1])
    del state.loops[loop.id]
    return ids


def reorder(state: KernelState, loops: Sequence[Loop]) -> None:
    """Put ``loops`` (of one block's nest) in this order, in the positions they occupy."""
    if len({loop.id for loop in loops}) != len(loops):
        raise PrimitiveError("reorder", "a loop is given twice")
    blocks = {state.owner(loop).name for loop in loops}
    if len(blocks) != 1:
        raise PrimitiveError("reorder", f"loops of different blocks ({', '.join(sorted(blocks))})")
    block = own_loop(state, loops[0], "reorder")
    positions = sorted(block.order.index(loop.id) for loop in loops)
    new_order = list(block.order)
    for pos, loop in zip(positions, loops):
        new_order[pos] = loop.id
    check_chain(state, block, positions, True, "reorder")
    move_attached(state, block, block.order[positions[-1]], new_order[positions[-1]])
    swapped = [dim for dim, levels in enumerate(block.levels)
               if [lid for lid in new_order if lid in levels] != levels]
    for dim in swapped:
        _check_expandable(state, block, dim)
    for dim in swapped:
        _expand_dim(state, block, dim)
    block.order = new_order


def fuse(state: KernelState, loops: Sequence[Loop]) -> int:
    """Fuse consecutive loops of one block into one loop; returns its id."""
    if len(loops) < 2:
        raise PrimitiveError("fuse", "needs at least two loops")
    block = own_loop(state, loops[0], "fuse")
    if any(state.owner(loop) is not block for loop in loops):
        raise PrimitiveError("fuse", "loops of different blocks")
    positions = [block.order.index(loop.id) for loop in loops]
    if positions != list(range(positions[0], positions[0] + len(loops))):
        raise PrimitiveError("fuse", "the loops must be consecutive, outer first")
    if len({state.loop_kind(loop) for loop in loops}) > 1:
        raise PrimitiveError("fuse", "cannot fuse a spatial loop with a reduction loop")
    check_chain(state, block, positions, True, "fuse")
    dims = [d for loop in loops for d, _ in loop.parts]
    if len(set(dims)) == 1:
        # Consecutive levels of one dimension: fusing them undoes their split.
        levels = block.levels[dims[0]]
        at = levels.index(loops[0].id)
        if levels[at:at + len(loops)] != [loop.id for loop in loops]:
            raise PrimitiveError("fuse", "loops of one dimension must be consecutive split levels")
        extent = math.prod(loop.extent for loop in loops)
        if any(loop.extent < 0 for loop in loops):
            extent = DYNAMIC
        if len(loops) == len(levels) and block.extents[dims[0]] is not None:
            extent = block.extents[dims[0]]  # the whole dim: a partial split is undone too
        fused = state.new_loop(block, [(dims[0], extent)])
        block.levels[dims[0]][at:at + len(loops)] = [fused.id]
    elif len(set(dims)) != len(dims):
        # TVM fuses any consecutive loops: levels of one dim next to each other fuse first
        # (their split undone in part), then with the other loops.
        runs: list[list[Loop]] = []
        for loop in loops:
            if runs and len(loop.parts) == 1 and len(runs[-1][-1].parts) == 1 \
                    and loop.parts[0][0] == runs[-1][-1].parts[0][0]:
                runs[-1].append(loop)
            else:
                runs.append([loop])
        run_dims = [d for run in runs for d in {d for loop in run for d, _ in loop.parts}]
        if len(set(run_dims)) != len(run_dims):
            raise PrimitiveError("fuse", "the loops mix split levels of one dimension with "
                                 "other dimensions, apart from each other; fuse the levels "
                                 "first")
        merged = [state.loops[fuse(state, run)] if len(run) > 1 else run[0] for run in runs]
        return fuse(state, merged)
    else:  # a loop fused before brings its parts (TVM fuses any consecutive loops)
        fused = state.new_loop(block, [p for loop in loops for p in loop.parts])
        for loop in loops:
            for d, _ in loop.parts:
                block.levels[d][block.levels[d].index(loop.id)] = fused.id
    block.order[positions[0]:positions[-1] + 1] = [fused.id]
    move_attached(state, block, loops[-1].id, fused.id)
    for loop in loops:
        del state.loops[loop.id]
    return fused.id


def _check_expandable(state: KernelState, block: Block, dim: int) -> None:
    """Split levels of ``dim`` in another order than outer to inner make each level a
    dimension of its own (expand.py); what that rewrite needs."""
    levels = [state.loops[lid] for lid in block.levels[dim]]
    names = ", ".join(state.loop_name(loop) for loop in levels)
    why = f"the split levels {names} are put out of order, which makes each a dimension"
    if any(len(loop.parts) != 1 for loop in levels):
        raise PrimitiveError("reorder", f"{why}: none may be fused with another dimension")
    if block.extents[dim] is None:
        raise PrimitiveError("reorder", f"{why}: its extent is dynamic")
    padded = math.prod(loop.extent for loop in levels) != block.extents[dim]
    if padded and (block.reads_by_index or any(
            r.kind == COLLAPSE and r.of_block(block.func, block.name)
            for r in state.rewrites)):
        raise PrimitiveError("reorder", f"{why}: a split that does not divide (extent "
                             f"{block.extents[dim]}) is padded, and block '{block.name}' reads "
                             "data at its loop indices (tensor.extract), which the padded "
                             "steps would read past")
    if padded and not all(
            form is not None and (dim not in form[0] or form == ({dim: 1}, 0))
            for operand in block.operands for form in operand.terms):
        # A dim read plainly is padded: a spatial dim's extra elements are computed, then
        # dropped; a reduction's extra steps keep the accumulator (expand.py). A window
        # (`oh + kh`) would read past the padded operand.
        raise PrimitiveError("reorder", f"{why}: a split that does not divide (extent "
                             f"{block.extents[dim]}, factors "
                             f"{[loop.extent for loop in levels]}) is padded, which needs a "
                             "dimension read without an expression (not a window)")
    if made_by_rfactor(state, block):
        # rfactor's split is made by the transform script, after the rewrites: the op to
        # rewrite does not exist yet then.
        raise PrimitiveError("reorder", f"{why} of block '{block.name}', which rfactor made "
                             "(the split that makes it comes after such a rewrite): reorder "
                             "the levels before rfactor")
    related = [b.name for b in state.blocks.values() if not b.inlined and b is not block and (
        (b.attach is not None and b.attach.target == block.name)
        or b.origin.get("source") == block.name)]
    if block.attach is not None or related:
        raise PrimitiveError("reorder", f"{why} of block '{block.name}', which must then be "
                             "computed on its own (not computed at another block, nothing "
                             "computed at it, no cache stage; reorder first)")


def _expand_dim(state: KernelState, block: Block, dim: int) -> None:
    """Make each split level of ``dim`` a dimension of ``block`` (the first keeps ``dim``)."""
    levels = [state.loops[lid] for lid in block.levels[dim]]
    names = [state.loop_name(loop) for loop in levels]
    extents = [loop.extent for loop in levels]
    new_dims = list(range(len(block.kinds), len(block.kinds) + len(levels) - 1))
    level_dims = [dim] + new_dims
    strides = [math.prod(extents[k + 1:]) for k in range(len(extents))]
    state.rewrites.append(Rewrite(EXPAND, block.func, block.name,
                                  (str(dim), ",".join(str(e) for e in extents))))
    if not block.expansions:
        block.unexpanded = {
            "kinds": list(block.kinds), "extents": list(block.extents),
            "output_map": list(block.output_map), "op_name": block.op_name,
            "dim_names": dict(block.dim_names),
            "operands": [(list(op.map_results),
                          [None if f is None else (dict(f[0]), f[1]) for f in op.terms])
                         for op in block.operands]}
    block.expansions.append((dim, tuple(extents), tuple(level_dims)))
    block.kinds = block.kinds + [block.kinds[dim]] * len(new_dims)
    block.extents = block.extents[:dim] + [extents[0]] + block.extents[dim + 1:] + extents[1:]
    block.levels = block.levels[:dim] + [[levels[0].id]] + block.levels[dim + 1:] + \
        [[loop.id] for loop in levels[1:]]
    for d, loop, name in zip(level_dims, levels, names):
        loop.parts = [(d, loop.extent)]
        block.dim_names[d] = name
    for operand in block.operands:
        results, terms = [], []
        for result, form in zip(operand.map_results, operand.terms):
            if result == dim:
                results += level_dims
                terms += [({d: 1}, 0) for d in level_dims]
                continue
            results.append(result)
            if form is not None and dim in form[0]:
                c = form[0].pop(dim)
                form[0].update({d: c * stride for d, stride in zip(level_dims, strides)})
            terms.append(form)
        operand.map_results, operand.terms = results, terms
    block.output_map = [d for r in block.output_map for d in (level_dims if r == dim else [r])]
    block.op_name = "linalg.generic"


# -- fuzzing ----------------------------------------------------------------------------------

def _factors(rng: random.Random, extent: int) -> list[int | None]:
    """Split factors: a perfect tiling, one that does not divide, or one with ``None``."""
    n = rng.choice([2, 2, 3])
    inner = [rng.randint(1, max(1, min(extent, 16))) for _ in range(n - 1)]
    if rng.random() < 0.4:  # a perfect tiling
        rest, inner = extent, []
        for _ in range(n - 1):
            f = rng.choice([d for d in range(1, rest + 1) if rest % d == 0])
            inner.append(f)
            rest //= f
        return [rest, *inner]
    if rng.random() < 0.5:
        return [None, *inner]
    product = 1
    for f in inner:
        product *= f
    return [-(-extent // product), *inner]


@SPLIT.fuzzed_by(4)
def fuzz_split(sch, rng: random.Random) -> bool:
    def apply(loops: list[Any]) -> None:
        loop = rng.choice(loops)
        sch.split(loop, _factors(rng, max(sch.get(loop).extent, 1)))
    return on_loops(sch, rng, apply)


@REORDER.fuzzed_by(3)
def fuzz_reorder(sch, rng: random.Random) -> bool:
    block, rv = pick_block(sch, rng, lambda b: not b.origin)
    loops = own_loops(sch, rv) if rv is not None else []
    if len(loops) < 2:
        return False
    # Legal below the innermost loop another block is computed at (TVM's single chain).
    attached = [i for i, lid in enumerate(block.order) if sch.state.attached_at(lid, block.func)]
    free = loops[max(attached) + 1:] if attached else loops
    if rng.random() < LIKELY:
        if len(free) < 2:
            raise NothingLikely
        pool = free
    else:
        pool = loops
    sch.reorder(*rng.sample(pool, rng.randint(2, len(pool))))
    return True


@FUSE.fuzzed_by(1)
def fuzz_fuse(sch, rng: random.Random) -> bool:
    loops = some_block_loops(sch, rng)
    pairs = [(a, b) for a, b in zip(loops, loops[1:]) if sch.get(a).kind == sch.get(b).kind]
    if not pairs:
        return False
    sch.fuse(*rng.choice(pairs))
    return True
