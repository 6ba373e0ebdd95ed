"""The default design space of the CPU (``llvm``) target, built from the kernel's blocks
(MetaSchedule's auto-scheduling rules, for a CPU with AVX-512):

1. **Inline** elementwise blocks into their consumers when every consumer is elementwise or a
   ``linalg.generic`` (a reduction such as softmax's sum), not a named contraction or
   convolution (``compute_inline``).
2. **Multi-level tiling** of each block with a reduction ("SRSRS"): the two vector dimensions
   (the last two spatial dims; an NCHW convolution's or pooling's (output) channels and width)
   are split in three levels ``[outer, middle, register]``, other spatial and reduction dims
   in two; loops ordered ``S-outer R-outer S-middle R-inner S-register``; the register tile
   vectorized (the accumulators stay in registers), the inner reduction loop unrolled by a
   sampled factor, the outer spatial loops fused and parallel with several threads, the init
   per outer tile (``decompose_reduction``). The phases of a strided window share decisions
   and accumulate into one tile (``_tile_at``).
3. **Epilogues**: an elementwise consumer of a tiled block is computed right after each outer
   tile (``reverse_compute_at``) and vectorized.
4. **Elementwise blocks** left: the innermost dimension is split by a sampled vector width and
   vectorized, the outer loop parallel.

Blocks the vectorizer cannot take (a grouped convolution's generic) are tiled the same way but
not vectorized. Every sampled value is a decision in the trace, so the space is searched by
mutating them (docs/tuning.md, "The default design space").
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from mlir import ir
from mlir.dialects import linalg

from mlcir.dialects.loop import BLOCK_ATTR, linalg_ops
from mlcir.schedule import Schedule
from mlcir.schedule import ExprRV
from mlcir.schedule.state import (DECOMPOSABLE_WINDOWS, REDUCTION, SPATIAL, Block,
                                  folds_to_plain_dims)
from mlcir.target import Target

from ..space_rules import SpaceFn, attempt, blocks, consumers, elementwise, inline_elementwise

UNROLL_FACTORS = [1, 2, 4, 8]
VECTOR_WIDTHS = [4, 8, 16, 32, 64]
REGISTER_ROWS_MAX = 8      # rows of the register tile (AVX-512: 32 zmm registers)
VECTOR_COLUMNS_MAX = 64    # columns of the register tile (4 zmm of f32)
CACHE_REDUCTION_MAX = 1024  # the reduction tile around the register tile
VECTOR_ELEMENTS_MAX = 512  # a vectorized transpose tile
# A reduction block with fewer iterations runs serial in a parallel kernel: its share of the
# work saves less than an OpenMP fork/join costs (docs/decisions.md#threads).
PARALLEL_ITERATIONS_MIN = 1 << 15


def _vector_dims(block: Block) -> list[int]:
    spatial = [d for d, k in enumerate(block.kinds) if k == SPATIAL and (block.extents[d] or 0) > 1]
    out = next((op for op in block.operands if op.is_init), None)
    if block.window and out is not None and len(out.terms) == 4 and \
            all(form is not None for form in out.terms):
        # An NCHW convolution or pooling (named, or a grouped convolution's generic): output
        # channels (the innermost dim they are counted by) x output width, a 1-D window per
        # tile, folded or decomposed to what the vectorizer takes.
        channels = [d for d in out.terms[1][0] if d in spatial]
        width = [d for d in out.terms[3][0] if d in spatial]
        if channels and _pooled_channel(block, max(channels)):
            # A pooling: its channels are strided in the input (NCHW), so the width alone
            # in the lanes, the phase of a strided window with it (measured much faster:
            # docs/measurements/default-schedules.md#notes-moved-from-the-package-code).
            return width[:1]
        return sorted(([max(channels)] if channels else []) + width[:1])
    dims = spatial[-2:]
    if block.window and len(dims) == 2 and not folds_to_plain_dims(block, dims) and \
            folds_to_plain_dims(block, dims[1:]):
        # A window read through a stride in the width (an NCHW<c>c pooling): the channel
        # block alone in the lanes, each output column a tile of its own.
        return dims[1:]
    return dims


def scalar_by_design(block: Block) -> bool:
    """Whether ``block`` is a window whose vector dims are all unit (a pooling's one-column
    rectangle at a padded border, lowerings/nn.py): it stays scalar, and a kernel with one
    keeps its default schedule. (Other blocks left unvectorized send the kernel back to
    LLVM: a full reduction to a scalar vectorizes better there.)"""
    return bool(block.window) and not _vector_dims(block)


def _pooled_channel(block: Block, channel: int) -> bool:
    """Whether the inputs that index ``channel`` all read through a window (a pooling: the
    data itself), rather than plainly (a convolution's filter, its output channel)."""
    readers = [op for op in block.operands if not op.is_init
               and any(form is not None and channel in form[0] for form in op.terms)]
    return bool(readers) and all(any(form is None or len(form[0]) > 1 for form in op.terms)
                                 for op in readers)


def _tile_reductions(block: Block) -> list[int]:
    """Reduction dims read whole inside the register tile: in a window block, those that
    index an operand's innermost dim and are alone wherever they index (the phase ``kr`` of a
    strided pooling read through ``[.., W/s, s]``, docs/graph-ops.md): in the tile, the
    input row is read contiguously and deinterleaved in registers."""
    if not block.window or any(f is None for op in block.operands for f in op.terms):
        return []
    found = []
    for dim, kind in enumerate(block.kinds):
        if kind != REDUCTION:
            continue
        uses = [(i == len(op.terms) - 1, form[0]) for op in block.operands
                for i, form in enumerate(op.terms) if dim in form[0]]
        if uses and all(terms == {dim: 1} for _, terms in uses) and \
                any(innermost for innermost, _ in uses):
            found.append(dim)
    return found


def _vectorizable(sch: Schedule, block: Block) -> bool:
    """Whether MLIR's vectorizer takes tiles of ``block``: every operand read with plain dims
    (or a broadcast 0), a convolution/pooling it decomposes, or a window generic (the strided
    pooling's) whose register tile reads plain dims once its unit dims are gone; not the
    grouped convolution's, whose input channel is a floordiv."""
    if block.origin or block.op_name.startswith(DECOMPOSABLE_WINDOWS):
        return True
    if block.window:
        return folds_to_plain_dims(block, _vector_dims(block))
    op = _original_op(sch, block)
    if op is None:
        return True
    for attr in linalg.get_indexing_maps(op):
        for expr in ir.AffineMapAttr(attr).value.results:
            if not (isinstance(expr, ir.AffineDimExpr) or
                    (isinstance(expr, ir.AffineConstantExpr) and expr.value == 0)):
                return False
    return True


def _original_op(sch: Schedule, block: Block) -> ir.Operation | None:
    for fn in sch.original.body.operations:
        if fn.operation.name == "func.func" and \
                ir.StringAttr(fn.attributes["sym_name"]).value == block.func:
            for op in linalg_ops(fn.operation):
                if BLOCK_ATTR in op.attributes and \
                        ir.StringAttr(op.attributes[BLOCK_ATTR]).value == block.name:
                    return op
    return None


@dataclass
class _Tiling:
    """The sampled decisions of a tiled block, for blocks that accumulate into its result."""

    kinds: list[str]
    extents: list[int | None]
    factors: list[list[ExprRV]]
    order: ExprRV | None = None
    unroll: ExprRV | None = None


def _few_lanes(extent: int, cap: int) -> bool:
    """Whether no divisor of ``extent`` up to ``cap`` gives a vector tile of 4 lanes or more
    (17, 23, 2 x 13 ...), though the extent would fill one."""
    return extent >= 4 and max(d for d in range(1, min(extent, cap) + 1) if extent % d == 0) < 4


def _tile_reduction(sch: Schedule, block: Block, threads: int,
                    tilings: dict[str, _Tiling], like: _Tiling | None = None) -> object | None:
    """Multi-level tiling of a block with reduction dims; returns the loop epilogues attach to.

    A block accumulating into the result of a block tiled before with the same loops (the
    phases of a strided window, docs/graph-ops.md), or given that block's tiling as ``like``
    (an earlier phase tiled after the last one), reuses its decisions where the extents
    agree: one tiling to search instead of one per phase, and tiles that line up."""
    rv = sch.get_block(block.name, block.func)
    loops = sch.get_loops(rv)
    vec = _vector_dims(block)
    like = like or next((tilings[op.producer] for op in block.operands
                         if op.is_init and op.producer in tilings
                         and tilings[op.producer].kinds == block.kinds), None)
    mine = _Tiling(block.kinds, block.extents, [])
    tilings[block.name] = mine

    def sample(dim: int, loop: object, n: int, cap: int) -> list[ExprRV]:
        if like is not None and like.extents[dim] == block.extents[dim] and like.factors[dim]:
            factors = like.factors[dim]
        elif dim in vec and _few_lanes(block.extents[dim] or 1, cap):
            # A prime-like extent has no divisor worth a vector: a partial last tile instead.
            factors = sch.sample_partitioned_tile(loop, n=n, partition_pos=n - 1,
                                                  max_innermost_factor=cap)
        else:
            factors = sch.sample_perfect_tile(loop, n=n, max_innermost_factor=cap)
        mine.factors.append(factors)
        return factors

    in_tile = _tile_reductions(block)
    s_outer, s_mid, s_reg, r_outer, r_inner, r_tile = [], [], [], [], [], []
    for dim, (loop, kind) in enumerate(zip(loops, block.kinds)):
        extent = block.extents[dim] or 1
        if dim in in_tile:
            r_tile.append(loop)
            mine.factors.append([])
        elif kind == REDUCTION:
            factors = sample(dim, loop, 2, CACHE_REDUCTION_MAX)
            outer, inner = sch.split(loop, factors)
            r_outer.append(outer)
            r_inner.append(inner)
        elif dim in vec and extent > 1:
            cap = VECTOR_COLUMNS_MAX if dim == vec[-1] else REGISTER_ROWS_MAX
            factors = sample(dim, loop, 3, cap)
            a, b, c = sch.split(loop, factors)
            s_outer.append(a)
            s_mid.append(b)
            s_reg.append(c)
        else:
            factors = sample(dim, loop, 2, 16)
            a, b = sch.split(loop, factors)
            s_outer.append(a)
            s_mid.append(b)
    reduction_first = False
    if threads == 1 and r_outer and s_outer:
        order = like.order if like is not None and like.order is not None else \
            sch.sample_categorical([0, 1], [0.5, 0.5])
        mine.order = order
        reduction_first = sch.get(order) == 1
    if reduction_first:
        sch.reorder(*r_outer, *s_outer, *s_mid, *r_inner, *s_reg, *r_tile)
    elif all(sch.get(loop).extent == 1 for loop in r_outer) and \
            not _epilogue_blocks(sch, block):
        # A whole reduction: its outer loops run once, so they go inside the middle tiles,
        # and the init, decomposed above them, starts each register tile's accumulators
        # instead of filling the outer tile in memory first
        # (docs/decisions.md#loop-order-and-unroll).
        # Not under an epilogue, which is computed per outer tile: the register tiles'
        # results would pass through a temporary of that tile.
        sch.reorder(*s_outer, *s_mid, *r_outer, *r_inner, *s_reg, *r_tile)
    else:
        sch.reorder(*s_outer, *r_outer, *s_mid, *r_inner, *s_reg, *r_tile)
    if s_reg and _vectorizable(sch, block):
        sch.vectorize(s_reg[0])
    if r_inner:
        factor = like.unroll if like is not None and like.unroll is not None else \
            sch.sample_categorical(UNROLL_FACTORS, [1.0] * len(UNROLL_FACTORS))
        mine.unroll = factor
        if sch.get(factor) > 1:
            sch.unroll(r_inner[-1], factor=factor)
    attach = s_outer[-1] if s_outer else None
    if threads > 1 and len(s_outer) > 1:
        attach = sch.fuse(*s_outer)
        s_outer = [attach]
    if threads > 1 and s_outer and sch.get(s_outer[0]).extent > 1 and \
            math.prod(e or PARALLEL_ITERATIONS_MIN for e in block.extents) >= PARALLEL_ITERATIONS_MIN:
        sch.parallel(s_outer[0])
    if r_outer and not reduction_first:
        attempt(sch.decompose_reduction, rv, r_outer[0])
    return None if reduction_first else attach


def _accumulates_into(block: Block, blocks_by_name: dict[str, Block]) -> Block | None:
    """The block whose result ``block`` accumulates into (its init), when that one is a
    reduction with the same loops: the phases of a strided window (docs/graph-ops.md)."""
    for op in block.operands:
        producer = blocks_by_name.get(op.producer) if op.is_init and op.producer else None
        if producer is not None and producer.kinds == block.kinds:  # a fill has no reduction
            return producer
    return None


def _tile_at(sch: Schedule, block: Block, attach: object, like: _Tiling) -> bool:
    """An earlier phase computed at the outer tile of the last one (``attach``), then tiled
    inside it with the last phase's decisions (the same register tile; a reduction whose
    extent differs, a phase's taps, stays whole), its init decomposed there: the phases
    accumulate into one tile instead of passing a whole-result buffer (measured by
    bench/phase_fusion.py; docs/measurements/layouts.md#third-round). Tiled before being
    computed there it lost its vector tile. False, with nothing changed, where
    ``compute_at`` refuses."""
    rv = sch.get_block(block.name, block.func)
    if not attempt(sch.compute_at, rv, attach):
        return False
    own = sch.get_loops(rv)[-len(block.kinds):]
    vec, in_tile = _vector_dims(block), _tile_reductions(block)
    s_mid, s_reg, r_outer, r_inner, r_tile = [], [], [], [], []
    for dim, (loop, kind) in enumerate(zip(own, block.kinds)):
        factors = like.factors[dim] if like.extents[dim] == block.extents[dim] else []
        if dim in in_tile:
            r_tile.append(loop)
        elif kind == REDUCTION and factors:
            outer, inner = sch.split(loop, factors)
            r_outer.append(outer)
            r_inner.append(inner)
        elif kind == REDUCTION:
            r_inner.append(loop)
        elif dim in vec and len(factors) == 3:
            mid, reg = sch.split(loop, factors[1:])
            s_mid.append(mid)
            s_reg.append(reg)
        else:
            s_mid.append(loop)
    # The init is decomposed above the first reduction loop, which needs a loop of the
    # block's own above it: the middle spatial loops go first.
    sch.reorder(*s_mid, *r_outer, *r_inner, *s_reg, *r_tile)
    if s_reg and _vectorizable(sch, block):
        sch.vectorize(s_reg[0])
    if r_inner and like.unroll is not None and sch.get(like.unroll) > 1:
        sch.unroll(r_inner[-1], factor=like.unroll)
    first = (r_outer or r_inner)[:1]
    if first and s_mid:
        attempt(sch.decompose_reduction, rv, first[0])
    return True


def _epilogue_blocks(sch: Schedule, block: Block) -> list[Block]:
    """The consumers of ``block`` computed at its outer tile: the elementwise ones."""
    return [consumer for consumer in consumers(sch, block) if elementwise(consumer)]


def _epilogues(sch: Schedule, block: Block, attach: object) -> None:
    for consumer in _epilogue_blocks(sch, block):
        crv = sch.get_block(consumer.name, consumer.func)
        if attempt(sch.reverse_compute_at, crv, attach) and _vectorizable(sch, consumer):
            loops = sch.get_loops(crv)
            attempt(sch.vectorize, loops[-1])


def _tile_elementwise(sch: Schedule, block: Block, threads: int) -> None:
    rv = sch.get_block(block.name, block.func)
    loops = sch.get_loops(rv)
    if not loops:
        return
    extent = block.extents[-1] or 1
    widths = [w for w in VECTOR_WIDTHS if extent % w == 0]
    first = _first_vector_dim(block)
    vector_loop = None
    tile_widths: list[int] = []
    if first < len(loops) - 1 and None not in block.extents[first:] and \
            _vectorizable(sch, block):
        # A transpose (the deinterleave of a strided window): the operands' innermost dims
        # differ, and reading and writing whole vectors needs all of them in the tile. Too
        # large a tile (a weight transpose): the last dim only, as below.
        between = math.prod(block.extents[first:-1])
        tile_widths = [w for w in (widths or ([extent] if extent <= VECTOR_COLUMNS_MAX else []))
                       if w * between <= VECTOR_ELEMENTS_MAX]
    if tile_widths:
        width = sch.sample_categorical(tile_widths, [1.0] * len(tile_widths))
        outer, inner = sch.split(loops[-1], [None, width])
        sch.reorder(*loops[:first], outer, *loops[first:-1], inner)
        vector_loop = loops[first]
        loops = loops[:first] + [outer]
    elif widths and _vectorizable(sch, block):
        width = sch.sample_categorical(widths, [1.0] * len(widths))
        outer, inner = sch.split(loops[-1], [None, width])
        loops = loops[:-1] + [outer, inner]
        vector_loop = inner
    if vector_loop is not None:
        sch.vectorize(vector_loop)
    if threads > 1:  # (an unvectorized innermost loop stays serial, for LLVM to vectorize)
        outer = [lp for lp in loops if lp is not vector_loop]
        _parallel_outer(sch, outer if vector_loop is not None else outer[:-1], threads)


def _parallel_outer(sch: Schedule, loops: list, threads: int) -> None:
    """Run the outer ``loops`` parallel, fused as far as it takes to give every thread an
    iteration: a padding copy's loops are ``(n, c, ..)`` with a batch of 1, and leaving it
    serial made a whole depthwise kernel no faster on 2 threads."""
    extent, count = 1, 0
    for loop in loops:
        extent *= sch.get(loop).extent
        count += 1
        if extent >= threads:
            break
    if extent < threads:
        return
    sch.parallel(sch.fuse(*loops[:count]) if count > 1 else loops[0])


def _first_vector_dim(block: Block) -> int:
    """The outermost of the innermost dims of the operands that span every dim: a vector
    tile from there in reads and writes them in whole vectors (the last dim, except for a
    transpose such as the deinterleave of a strided window)."""
    rank = len(block.kinds)
    inner = [op.map_results[-1] for op in block.operands
             if None not in op.map_results and sorted(op.map_results) == list(range(rank))]
    return min(inner + [rank - 1])


def cpu_space(target: Target) -> SpaceFn:
    """The default CPU design space (see the module docstring) for ``target``."""
    threads = target.threads or 1

    def space(sch: Schedule) -> None:
        funcs = sorted({f for (f, _) in sch.state.blocks})
        for func in funcs:
            inline_elementwise(sch, func)
            handled: set[str] = set()
            tilings: dict[str, _Tiling] = {}
            by_name = {b.name: b for b in blocks(sch, func)}
            earlier = {b.name: _accumulates_into(b, by_name) for b in by_name.values()
                       if REDUCTION in b.kinds and b.op_name != "linalg.fill"}
            deferred = {p.name for p in earlier.values() if p is not None}
            for block in blocks(sch, func):
                if REDUCTION in block.kinds and block.op_name != "linalg.fill" and \
                        block.name not in deferred:
                    attach = _tile_reduction(sch, block, threads, tilings)
                    handled.add(block.name)
                    phase = earlier.get(block.name)
                    # Two phases: the first (its init a fill) moves to the last one's tile. A
                    # middle phase cannot: its init, the first's result, stays at the root.
                    fuse = attach is not None and phase is not None and \
                        earlier.get(phase.name) is None
                    while phase is not None:  # the earlier phases, last to first
                        if not (fuse and _tile_at(sch, phase, attach, tilings[block.name])):
                            _tile_reduction(sch, phase, threads, tilings, tilings[block.name])
                        handled.add(phase.name)
                        phase = earlier.get(phase.name)
                    if attach is not None:
                        before = {b.name for b in blocks(sch, func) if b.attach}
                        _epilogues(sch, block, attach)
                        handled |= {b.name for b in blocks(sch, func) if b.attach} - before
            for block in blocks(sch, func):
                if block.name in handled or block.attach is not None:
                    continue
                if elementwise(block):
                    attempt(_tile_elementwise, sch, block, threads)

    space.__name__ = f"default_space[{target}]"
    return space
