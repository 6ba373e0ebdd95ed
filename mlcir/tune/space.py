"""Design spaces: a stochastic schedule function per kernel.

A user's function ``space(sch)`` is one; :func:`default_space` builds one from the kernel's
blocks (MetaSchedule's auto-scheduling rules, for a CPU with AVX-512):

1. **Inline** elementwise blocks into their consumers when every consumer is elementwise or a
   ``linalg.generic`` (a reduction such as softmax's sum), not a named contraction or
   convolution (``compute_inline``).
2. **Multi-level tiling** of each block with a reduction ("SRSRS"): the two vector dimensions
   (the last two spatial dims; an NCHW convolution's or pooling's (output) channels and width)
   are split in three
   levels ``[outer, middle, register]``, other spatial dims in two, reduction dims in two; the
   loops are ordered ``S-outer R-outer S-middle R-inner S-register``; the register tile is
   vectorized (the reduction steps one at a time around it, so the accumulators stay in
   registers); the innermost reduction loop is unrolled by a sampled factor; the outer spatial
   loops are fused and run in parallel when the target has several threads; the init is
   computed per outer tile (``decompose_reduction``).
3. **Epilogues**: an elementwise consumer of a tiled block is computed right after each outer
   tile (``reverse_compute_at``) and vectorized.
4. **Elementwise blocks** left: the innermost dimension is split by a sampled vector width and
   vectorized, the outer loop parallel.

Blocks the vectorizer cannot take (an operand read through an expression such as ``oh + kh``,
other than the NCHW convolution and pooling it decomposes: a grouped convolution as a generic)
are tiled the same way but not vectorized.

Every sampled value is a decision in the trace, so the space is searched by mutating them.
"""

from __future__ import annotations

from typing import Callable

from mlir import ir
from mlir.dialects import linalg

from mlcir.dialects.loop import BLOCK_ATTR, linalg_ops
from mlcir.schedule import Schedule, ScheduleError
from mlcir.schedule.state import REDUCTION, SPATIAL, Block
from mlcir.target import Target

SpaceFn = Callable[[Schedule], None]

UNROLL_FACTORS = [1, 2, 4, 8]
VECTOR_WIDTHS = [4, 8, 16, 32, 64]
REGISTER_ROWS_MAX = 8      # rows of the register tile (AVX-512: 32 zmm registers)
VECTOR_COLUMNS_MAX = 64    # columns of the register tile (4 zmm of f32)
CACHE_REDUCTION_MAX = 256  # the reduction tile around the register tile


def _elementwise(block: Block) -> bool:
    return all(k == SPATIAL for k in block.kinds) and block.op_name != "linalg.fill" \
        and not block.origin


def _blocks(sch: Schedule, func: str) -> list[Block]:
    return [b for (f, _), b in sch.state.blocks.items() if f == func and not b.inlined]


def _consumers(sch: Schedule, block: Block) -> list[Block]:
    return [b for b in _blocks(sch, block.func)
            if any(op.producer == block.name and not op.is_init for op in b.operands)]


def _vector_dims(block: Block) -> list[int]:
    spatial = [d for d, k in enumerate(block.kinds) if k == SPATIAL and (block.extents[d] or 0) > 1]
    if block.op_name.startswith(("linalg.conv", "linalg.pooling")) and len(block.kinds) >= 4:
        # NCHW convolution or pooling: vectorize (output) channels x width (a 1-D convolution
        # or pooling per tile; the vectorizer handles only 1-D windows).
        return [d for d in (1, 3) if d in spatial]
    return spatial[-2:]


# Named ops whose tiles the vectorizer takes although their maps are not projected
# permutations: NCHW convolution/pooling tiles are decomposed to 1-D ones first.
_VECTORIZABLE_WINDOWS = ("linalg.conv_2d_nchw_fchw", "linalg.pooling_nchw_")


def _vectorizable(sch: Schedule, block: Block) -> bool:
    """Whether MLIR's vectorizer takes tiles of ``block``: every operand read with plain dims
    (or a broadcast 0), or a convolution/pooling it knows. Other windowed blocks (a grouped
    convolution as a generic) stay scalar: vectorizing them fails at materialization."""
    if block.origin or block.op_name.startswith(_VECTORIZABLE_WINDOWS):
        return True
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


def _try(fn: Callable[[], object]) -> bool:
    try:
        fn()
        return True
    except ScheduleError:
        return False


def _inline(sch: Schedule, func: str) -> None:
    for block in reversed(_blocks(sch, func)):
        consumers = _consumers(sch, block)
        if _elementwise(block) and consumers and all(
                _elementwise(c) or c.op_name == "linalg.generic" for c in consumers):
            _try(lambda: sch.compute_inline(sch.get_block(block.name, func)))


def _tile_reduction(sch: Schedule, block: Block, threads: int) -> object | None:
    """Multi-level tiling of a block with reduction dims; returns the loop epilogues attach to."""
    rv = sch.get_block(block.name, block.func)
    loops = sch.get_loops(rv)
    vec = _vector_dims(block)
    s_outer, s_mid, s_reg, r_outer, r_inner = [], [], [], [], []
    for dim, (loop, kind) in enumerate(zip(loops, block.kinds)):
        extent = block.extents[dim] or 1
        if kind == REDUCTION:
            factors = sch.sample_perfect_tile(loop, n=2, max_innermost_factor=CACHE_REDUCTION_MAX)
            outer, inner = sch.split(loop, factors)
            r_outer.append(outer)
            r_inner.append(inner)
        elif dim in vec and extent > 1:
            cap = VECTOR_COLUMNS_MAX if dim == vec[-1] else REGISTER_ROWS_MAX
            factors = sch.sample_perfect_tile(loop, n=3, max_innermost_factor=cap)
            a, b, c = sch.split(loop, factors)
            s_outer.append(a)
            s_mid.append(b)
            s_reg.append(c)
        else:
            factors = sch.sample_perfect_tile(loop, n=2, max_innermost_factor=16)
            a, b = sch.split(loop, factors)
            s_outer.append(a)
            s_mid.append(b)
    reduction_first = False
    if threads == 1 and r_outer and s_outer:
        order = sch.sample_categorical([0, 1], [0.5, 0.5])
        reduction_first = sch.get(order) == 1
    if reduction_first:
        sch.reorder(*r_outer, *s_outer, *s_mid, *r_inner, *s_reg)
    else:
        sch.reorder(*s_outer, *r_outer, *s_mid, *r_inner, *s_reg)
    if s_reg and _vectorizable(sch, block):
        sch.vectorize(s_reg[0])
    if r_inner:
        factor = sch.sample_categorical(UNROLL_FACTORS, [1.0] * len(UNROLL_FACTORS))
        if sch.get(factor) > 1:
            sch.unroll(r_inner[-1], factor=factor)
    attach = s_outer[-1] if s_outer else None
    if threads > 1 and len(s_outer) > 1:
        attach = sch.fuse(*s_outer)
        s_outer = [attach]
    if threads > 1 and s_outer and sch.get(s_outer[0]).extent > 1:
        sch.parallel(s_outer[0])
    if r_outer and not reduction_first:
        _try(lambda: sch.decompose_reduction(rv, r_outer[0]))
    return None if reduction_first else attach


def _epilogues(sch: Schedule, block: Block, attach: object) -> None:
    for consumer in _consumers(sch, block):
        if not _elementwise(consumer):
            continue
        crv = sch.get_block(consumer.name, consumer.func)
        if _try(lambda: sch.reverse_compute_at(crv, attach)) and _vectorizable(sch, consumer):
            loops = sch.get_loops(crv)
            _try(lambda: sch.vectorize(loops[-1]))


def _tile_elementwise(sch: Schedule, block: Block, threads: int) -> None:
    rv = sch.get_block(block.name, block.func)
    loops = sch.get_loops(rv)
    if not loops:
        return
    extent = block.extents[-1] or 1
    widths = [w for w in VECTOR_WIDTHS if extent % w == 0]
    if widths and _vectorizable(sch, block):
        width = sch.sample_categorical(widths, [1.0] * len(widths))
        outer, inner = sch.split(loops[-1], [None, width])
        loops = loops[:-1] + [outer, inner]
        sch.vectorize(inner)
    if threads > 1 and len(loops) > 1 and sch.get(loops[0]).extent > 1:
        sch.parallel(loops[0])


def default_space(target: Target | str = "llvm") -> SpaceFn:
    """The default design space (see the module docstring) for ``target``; CUDA targets get
    the GPU space of :mod:`mlcir.tune.space_gpu`."""
    target = Target.parse(target)
    if target.kind == "cuda":
        from .space_gpu import gpu_space

        return gpu_space(target)
    threads = target.threads or 1

    def space(sch: Schedule) -> None:
        funcs = sorted({f for (f, _) in sch.state.blocks})
        for func in funcs:
            _inline(sch, func)
            handled: set[str] = set()
            for block in _blocks(sch, func):
                if REDUCTION in block.kinds and block.op_name != "linalg.fill":
                    attach = _tile_reduction(sch, block, threads)
                    handled.add(block.name)
                    if attach is not None:
                        before = {b.name for b in _blocks(sch, func) if b.attach}
                        _epilogues(sch, block, attach)
                        handled |= {b.name for b in _blocks(sch, func) if b.attach} - before
            for block in _blocks(sch, func):
                if block.name in handled or block.attach is not None:
                    continue
                if _elementwise(block):
                    _try(lambda: _tile_elementwise(sch, block, threads))

    space.__name__ = f"default_space[{target}]"
    return space
