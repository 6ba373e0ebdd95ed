"""The ``vectorize`` primitive: its state update, when a loop and those inside it can be one
vector tile, and what such a tile emits (``structured.vectorize`` of the tiled op, split
first into power-of-two lane parts when it has a reduction, window tiles folded or decomposed
to 1-D, then the contraction/transfer patterns and the hoisting of the accumulator)."""

from __future__ import annotations

import random
from typing import Collection

from mlir import ir
from mlir.dialects import transform
from mlir.dialects.transform import loop as tloop
from mlir.dialects.transform import structured
from mlir.dialects.transform import tensor as ttensor
from mlir.dialects.transform import vector as tvector

from mlcir.dialects.loop import BLOCK_ATTR, ITERATORS_ATTR, iterators_attr
from mlcir.transform import annotate

from .annotate import mark_loop_kind
from .emit import Emitted, any_op, loops_named
from .errors import PrimitiveError
from .fuzz_support import on_loops
from .instruction import VECTORIZE
from .loops import own_loop
from .state import (DECOMPOSABLE_WINDOWS, REDUCTION, Block, KernelState, Loop,
                    folds_to_plain_dims, tile_bound)

# Vectorizing more elements than this at once builds huge vectors (measured: out of memory).
MAX_VECTOR_ELEMENTS = 4096
# Window ops whose tiles are always decomposed to a 1-D op (the matmul micro-kernel,
# docs/tuning.md); other window tiles have their unit dims folded away instead when that
# leaves plain dims, else (DECOMPOSABLE_WINDOWS) they are decomposed too.
DECOMPOSED_WINDOWS = ("linalg.conv_2d_nchw_fchw",)


def vectorize(state: KernelState, loop: Loop) -> None:
    """Vectorize the tile formed by ``loop`` and every loop inside it (MLIR vectorizes whole
    linalg tiles). When those loops cannot form a vector tile when the schedule is
    materialized (:func:`vector_tile_problem`), they stay scalar loops, as TVM scalarizes a
    loop it cannot vectorize; the reason is left on the block's op."""
    block = own_loop(state, loop, "vectorize")
    if loop.id not in block.order:
        raise PrimitiveError("vectorize", f"loop {state.loop_name(loop)} is not a loop of block "
                             f"'{block.name}'")
    mark_loop_kind(state, loop, "vectorize", "vectorize")


def vector_tile_problem(state: KernelState, block: Block, loop: Loop) -> str | None:
    """Why ``loop`` and the loops inside it cannot be one vector tile (None if they can)."""
    chain = block.order
    if loop.id not in chain:
        return f"loop {state.loop_name(loop)} is not a loop of block '{block.name}'"
    size = 1
    for lid in chain[chain.index(loop.id):]:
        inner = state.loops[lid]
        if len(inner.parts) != 1:
            return f"loop {state.loop_name(inner)} inside the vector tile is fused"
        d = inner.parts[0][0]
        if inner.extent < 0:
            return (f"loop {state.loop_name(inner)} inside the vector tile has a dynamic extent: "
                    "split it by a static factor and vectorize the inner loop")
        if block.levels[d][-1] != lid:
            return (f"loop {state.loop_name(inner)} inside the vector tile is not the innermost "
                    "level of its dimension; reorder so the vectorized loops are the "
                    "innermost tile (before vectorize)")
        if lid != loop.id and any(inner.annotations.get(k) for k in
                                  ("parallel", "bind", "unroll", "vectorize")):
            return (f"loop {state.loop_name(inner)} inside the vector tile is parallel, bound, "
                    "unrolled or vectorized")
        size *= inner.extent
    tile = set(chain[chain.index(loop.id):])
    inside = sorted(b.name for b in state.blocks.values() if b.attach is not None
                    and not b.inlined and b.attach.loop in tile and b.func == block.func)
    if inside:
        # The tile is one vector operation: a block computed inside it has no place (a
        # decomposed init at the vectorized loop, then compute_at of the nest, summed wrong:
        # fuzz_schedules --seed 40 --case 5321).
        return (f"block '{inside[0]}' is computed inside the vector tile under loop "
                f"{state.loop_name(loop)}: the tile is one vector operation, with no place "
                "for it")
    outside = set(state.enclosing(block)) - tile
    if any(tile_bound(state, block, d, outside)[1] for d in range(len(block.kinds))):
        if block.window:
            return (f"the tile under loop {state.loop_name(loop)} can be partial (a split "
                    f"that does not divide) and block '{block.name}' reads through a window: "
                    "upstream vectorizes window tiles only at static sizes, not with masks")
        if _transposes(block):
            # Upstream MLIR 22.1 masks such a read wrongly: a 3-D transpose [C, H, W] ->
            # [H, W, C] with a partial tile of W gave wrong values, a 5-D one a segfault
            # (2-D transposes and matmuls' [k, j] reads came out right).
            return (f"the tile under loop {state.loop_name(loop)} can be partial and block "
                    f"'{block.name}' reads an operand transposed, which upstream's masked "
                    "vectorization gets wrong: split by a divisor")
        order = [state.loops[lid].parts[0][0] for lid in chain[chain.index(loop.id):]]
        if any(len(op.map_results) >= 3 and _out_of_order(op.map_results, order)
               for op in block.operands if op.is_init):
            # A masked transposed write to a tensor of 3+ dims (an rf block whose factored
            # dim comes first in its result, vectorized inside it) fails to lower upstream:
            # "'vector.maskedstore' op expected valueToStore shape to match mask shape"
            # (fuzz_schedules --seed 43 --case 9931); 2-D ones came out right.
            return (f"the tile under loop {state.loop_name(loop)} can be partial and block "
                    f"'{block.name}' writes its result in another order than the tile's loops, "
                    "which upstream's masked vectorization cannot lower: split by a divisor")
    if size > MAX_VECTOR_ELEMENTS:
        return (f"the tile under loop {state.loop_name(loop)} has {size} elements (more than "
                f"{MAX_VECTOR_ELEMENTS}): split it first")
    return None


def _out_of_order(results: list[int | None], order: list[int]) -> bool:
    """Whether the dims of ``order`` come in another order in ``results``."""
    seen = [d for d in results if d in order]
    return seen != sorted(seen, key=order.index)


def _transposes(block: Block) -> bool:
    """Whether ``block`` is a transpose of three or more dims: no reduction, an operand read
    with its dims out of the loop order."""
    if REDUCTION in block.kinds:
        return False
    return any(len(dims) >= 3 and dims != sorted(dims)
               for dims in ([d for d in op.map_results if d is not None]
                            for op in block.operands))



# -- emission ------------------------------------------------------------------------------------

def emit_vector_tile(state: KernelState, block: Block, handle: ir.Value, implicit: list[int],
                     em: Emitted, reason: str | None, peeled: Collection[int] = ()) -> None:
    """Order the implicit loops (only loops of more than one iteration matter: interchange
    needs a generalized op, which the vectorizer handles worse for convolutions) and
    vectorize the tile."""
    dims = [state.loops[lid].parts[0][0] for lid in implicit]
    long_loops = [(d, lid) for d, lid in zip(dims, implicit) if state.loops[lid].extent > 1]
    long_dims = [d for d, _ in long_loops]
    vectorize = bool(implicit) and \
        bool(state.loops[implicit[0]].annotations.get("vectorize"))
    # A tile that can be partial (a split that does not divide) vectorizes with masks, at
    # the size of its largest tile.
    outside = set(state.enclosing(block)) - set(implicit)
    bounds = [tile_bound(state, block, d, outside) for d in range(len(block.kinds))]
    # A peeled dim's tiles are whole or of one row: static either way.
    bounds = [(size, partial and d not in peeled) for d, (size, partial) in enumerate(bounds)]
    interchanged = long_dims != sorted(long_dims)
    # Window tiles: folded to plain dims where that works, else decomposed to 1-D.
    fold = decompose = False
    if vectorize and reason is None and block.window:
        if not long_dims:
            vectorize = False  # a one-element tile: scalar code either way
        elif block.op_name not in DECOMPOSED_WINDOWS and folds_to_plain_dims(block, long_dims):
            fold = True
        elif not block.op_name.startswith(DECOMPOSABLE_WINDOWS):
            reason = ("its tile reads an operand through a stride or a window dim of more "
                      "than one iteration; only tiles that read plain dims once their unit "
                      "dims are dropped vectorize")
        elif interchanged:
            reason = ("its loops are interchanged: a window tile vectorizes only in the "
                      "order of its op's dims (as a 1-D convolution or pooling)")
        else:
            decompose = True
            reason = _undecomposable(block, [size for size, _ in bounds])
    if reason is not None:
        vectorize = False
        annotate(handle, "loop.not_vectorized", ir.StringAttr.get(reason))
    masked = vectorize and any(partial for _, partial in bounds)
    # Not under a consumer's re-rooted nest (reverse_compute_at) while the init is
    # computed outside it: the split parts then chain through slices of the init's
    # buffer, which bufferization shares with the consumer's, and gave wrong results
    # (fuzz_schedules --seed 12 --case 826). With the init inside (decompose_reduction,
    # as the design space does) the split is right.
    rerooted = any(b.attach is not None and b.attach.kind == "reverse_compute_at"
                   and b.attach.target == block.name and not b.inlined
                   for b in state.blocks.values())
    init_inside = any(b.attach is not None and b.attach.target == block.name
                      and b.op_name == "linalg.fill" for b in state.blocks.values())
    if vectorize and not masked and (init_inside or not rerooted) and long_loops \
            and REDUCTION in block.kinds:
        # The lanes of the accumulator: its innermost dim (a reduction dim inside the tile,
        # such as a strided pooling's window column, is not in the accumulator).
        spatial = [(d, lid) for d, lid in long_loops if block.kinds[d] != REDUCTION]
        lane_dim, lane_loop = (spatial or long_loops)[-1]
        handle = _split_lanes(handle, lane_dim, state.loops[lane_loop].extent)
    if interchanged:
        perm = [d for d in range(len(block.kinds)) if d not in dims] + dims
        generic = structured.GeneralizeOp(handle).transformed
        handle = structured.InterchangeOp(generic, iterator_interchange=perm).transformed
        annotate(handle, BLOCK_ATTR, ir.StringAttr.get(block.name))
        # A generic keeps its attributes through the interchange: restate its iterators.
        annotate(handle, ITERATORS_ATTR, iterators_attr([block.kinds[d] for d in perm]))
    if vectorize and decompose:
        # Convolution tiles vectorize as 1-D ones: drop the unit window dims first.
        handle = structured.DecomposeOp(handle).transformed
    if fold:
        handle = _fold_unit_dims(handle, block)
    if masked:
        order = perm if interchanged else range(len(block.kinds))
        structured.VectorizeOp(handle, [bounds[d][0] for d in order],
                               vectorize_nd_extract=True)
        em.vectorized.append(block.name)
        em.masked = True
    elif vectorize:
        structured.VectorizeOp(handle, vectorize_nd_extract=True)
        em.vectorized.append(block.name)


def finish_vector_tiles(state: KernelState, em: Emitted) -> None:
    """After the tiles of a function are vectorized: contraction and transfer patterns, the
    micro-kernel's shapes, then the accumulators hoisted out of the loops around them."""
    if not em.vectorized:
        return
    patterns = transform.ApplyPatternsOp(em.func)
    with ir.InsertionPoint(patterns.patterns):
        tvector.ApplyVectorReductionToContractPatternsOp()
        tvector.ApplyTransferPermutationPatternsOp()
        transform.ApplyCanonicalizationPatternsOp()
    if em.masked:
        # Masked ops become plain ones with mask operands before anything else
        # rewrites them (canonicalization puts constants inside `vector.mask`
        # regions, which then fail to verify).
        patterns = transform.ApplyPatternsOp(em.func)
        with ir.InsertionPoint(patterns.patterns):
            tvector.ApplyLowerMaskedTransfersPatternsOp()
            tvector.ApplyLowerContractionPatternsOp(
                lowering_strategy=tvector.VectorContractLowering.OuterProduct)
            tvector.ApplyLowerMultiReductionPatternsOp(
                lowering_strategy=tvector.VectorMultiReductionLowering.InnerParallel)
            tvector.ApplyLowerMasksPatternsOp()
    # Then the shapes the micro-kernel needs (docs/tuning.md, "How convolutions are
    # scheduled"): no leading unit dims (a decomposed convolution's batch dim makes its
    # contraction 3-D, which lowers element by element), and the accumulator reached
    # through the transfers, not through slices of slices (hoisted as those, it was
    # copied through a heap buffer around every tile, or not hoisted at all).
    patterns = transform.ApplyPatternsOp(em.func)
    with ir.InsertionPoint(patterns.patterns):
        tvector.ApplyCastAwayVectorLeadingOneDimPatternsOp()
        ttensor.ApplyFoldTensorSubsetOpsIntoVectorTransfersPatternsOp()
        ttensor.ApplyMergeConsecutiveInsertExtractSlicePatternsOp()
        transform.ApplyCanonicalizationPatternsOp()
    transform.ApplyCommonSubexpressionEliminationOp(em.func)
    # The accumulator tile is invariant in the reduction loops right around the vector
    # tile: hoist it out of those.
    _hoist(state, em, em.vectorized)


def _hoist(state: KernelState, em: Emitted, blocks: list[str]) -> None:
    """Hoist the accumulators of the vectorized ``blocks`` out of the reduction loops
    right around their tiles (innermost first), stopping at the first spatial loop:
    hoisting out of outer spatial loops moves whole tiles (docs/measurements/lowering-rules.md#hoisting)."""
    for name in blocks:
        for lid, loop_name in reversed(em.for_loops):
            loop = state.loops.get(lid)
            if loop is None or loop.block != name:
                continue
            if state.loop_kind(loop) != REDUCTION:
                break
            tloop.HoistLoopInvariantSubsetsOp(loops_named(em, loop_name))


def _split_lanes(handle: ir.Value, dim: int, extent: int) -> ir.Value:
    """The tiled op(s) of ``handle`` split along ``dim`` into parts whose extents are powers of
    two (24 lanes as 16 + 8, 26 as 16 + 8 + 2), as one handle. LLVM's type legalizer
    scalarizes a vector of any other length where it crosses basic blocks, and a vector tile's
    accumulators cross the loops of its reduction (docs/measurements/lowering-rules.md#lane-splits)."""
    parts = [1 << b for b in range(extent.bit_length() - 1, -1, -1) if extent >> b & 1]
    if len(parts) < 2:
        return handle
    pieces = []
    rest = handle
    for size in parts[:-1]:
        both = structured.SplitOp(rest, dim, size).results[0]
        low, rest = transform.SplitHandleOp([any_op(), any_op()], both).results
        pieces.append(low)
    pieces.append(rest)
    return transform.MergeHandlesOp(pieces).result


def _fold_unit_dims(handle: ir.Value, block: Block) -> ir.Value:
    """A window tile (a pooling, named or the strided pooling's generic) as a generic
    without its unit dims: with the window dims stepped one at a time around it, ``x[oh * s + kh, ow + kw]``
    becomes ``x[ow]`` and the tile an elementwise op (or an outer product) the vectorizer
    takes, with the output width in the lanes. Upstream folds unit dims only as patterns, so
    they are applied to the loop right around the tile; the handle follows the rewritten op."""
    generic = structured.GeneralizeOp(handle).transformed
    parent = transform.GetParentOp(any_op(), generic, deduplicate=True).result
    patterns = transform.ApplyPatternsOp(parent)
    with ir.InsertionPoint(patterns.patterns):
        structured.ApplyFoldUnitExtentDimsViaSlicesPatternsOp()
    annotate(generic, BLOCK_ATTR, ir.StringAttr.get(block.name))
    return generic


# The (output, window) dim pairs of the window ops upstream decomposes to 1-D: a tile
# decomposes when one pair is all unit.
WINDOW_PAIRS = {"linalg.conv_2d_nchw_fchw": ((2, 5), (3, 6)), "linalg.pooling_nchw_": ((2, 4), (3, 5))}


def _undecomposable(block: Block, sizes: list[int]) -> str | None:
    """Why a window tile of these sizes does not decompose to a 1-D one (None if it does)."""
    pairs = next(p for name, p in WINDOW_PAIRS.items() if block.op_name.startswith(name))
    if any(sizes[out] == 1 and sizes[window] == 1 for out, window in pairs):
        return None
    return ("a convolution or pooling tile vectorizes as a 1-D one: the output row and its "
            "window row (or the output column and its window column) must both be one "
            "iteration in the tile")


# -- fuzzing --------------------------------------------------------------------------------------

@VECTORIZE.fuzzed_by(2)
def fuzz_vectorize(sch, rng: random.Random) -> bool:
    return on_loops(sch, rng, lambda loops: sch.vectorize(
        loops[-1] if rng.random() < 0.7 or len(loops) < 2 else loops[-2]))
