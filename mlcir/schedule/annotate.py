"""Loop annotations: ``parallel``, ``vectorize``, ``unroll``, ``bind``, ``annotate`` (TVM's
for_kind and annotate). They mark loops; the materializer decides what each mark emits."""

from __future__ import annotations

from typing import Any

from .errors import PrimitiveError
from .loops import own_loop
from .state import REDUCTION, SPATIAL, Block, KernelState, Loop, tile_bound

# Vectorizing more elements than this at once builds huge vectors (measured: out of memory).
MAX_VECTOR_ELEMENTS = 4096
# Unrolling makes copies of the loop body; more than this many copies per block makes code
# that LLVM takes minutes to compile (measured: a 1536-trip full unroll, ~1 MB of IR).
MAX_UNROLLED_COPIES = 512
GPU_AXES = ("blockIdx.x", "blockIdx.y", "blockIdx.z", "threadIdx.x", "threadIdx.y", "threadIdx.z")


# A loop's kind, as TVM's for_kind: one of these, the last primitive setting one wins.
LOOP_KINDS = ("parallel", "vectorize", "unroll", "bind")


def _mark(state: KernelState, loop: Loop, prim: str, key: str, value: Any = True) -> None:
    own_loop(state, loop, prim)
    for kind in LOOP_KINDS:
        loop.annotations.pop(kind, None)
    loop.annotations[key] = value


def parallel(state: KernelState, loop: Loop) -> None:
    """Run ``loop``'s iterations on several threads (OpenMP; a spatial loop)."""
    if state.loop_kind(loop) != SPATIAL:
        raise PrimitiveError("parallel", f"loop {state.loop_name(loop)} is a reduction loop")
    _mark(state, loop, "parallel", "parallel")


def vectorize(state: KernelState, loop: Loop) -> None:
    """Vectorize the tile formed by ``loop`` and every loop inside it (MLIR vectorizes whole
    linalg tiles). When those loops cannot form a vector tile when the schedule is
    materialized (:func:`vector_tile_problem`), they stay scalar loops, as TVM scalarizes a
    loop it cannot vectorize; the reason is left on the block's op."""
    block = own_loop(state, loop, "vectorize")
    if loop.id not in block.order:
        raise PrimitiveError("vectorize", f"loop {state.loop_name(loop)} is not a loop of block "
                             f"'{block.name}'")
    _mark(state, loop, "vectorize", "vectorize")


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


def unroll(state: KernelState, loop: Loop, factor: Any = None) -> None:
    """Unroll ``loop`` completely, or by ``factor``."""
    if factor is not None and (not isinstance(factor, int) or factor < 1):
        raise PrimitiveError("unroll", f"factor must be a positive int, got {factor!r}")
    name = state.loop_name(loop)
    copies = min(factor or loop.extent, loop.extent)
    block = state.owner(loop)
    for lid in state.enclosing(block):
        other = state.loops[lid]
        if lid != loop.id and other.annotations.get("unroll"):
            copies *= min(int(other.annotations["unroll"]), other.extent)
    if copies > MAX_UNROLLED_COPIES:
        raise PrimitiveError("unroll", f"unrolling loop {name} would make {copies} copies of the "
                             f"loop body in block '{block.name}' (at most "
                             f"{MAX_UNROLLED_COPIES}); unroll by a factor instead")
    _mark(state, loop, "unroll", "unroll", factor or loop.extent)


def bind(state: KernelState, loop: Loop, thread_axis: str) -> None:
    """Map ``loop`` to a GPU grid axis (``blockIdx.x``, ``threadIdx.y``, …)."""
    if thread_axis not in GPU_AXES:
        raise PrimitiveError("bind", f"unknown thread axis {thread_axis!r}; one of "
                             f"{', '.join(GPU_AXES)}")
    if state.loop_kind(loop) != SPATIAL:
        raise PrimitiveError("bind", f"loop {state.loop_name(loop)} is a reduction loop")
    _mark(state, loop, "bind", "bind", thread_axis)


def annotate(target: Block | Loop, ann_key: str, ann_val: Any) -> None:
    """Attach ``ann_key = ann_val`` (an int, float, str or bool) to a block or loop."""
    if not isinstance(ann_val, (int, float, str, bool)):
        raise PrimitiveError("annotate", f"annotation values must be int, float, str or bool, "
                             f"got {type(ann_val).__name__}")
    if ann_key.startswith("_"):
        raise PrimitiveError("annotate", "keys starting with '_' are reserved")
    target.annotations[ann_key] = ann_val


def unannotate(target: Block | Loop, ann_key: str) -> None:
    if ann_key not in target.annotations:
        raise PrimitiveError("unannotate", f"no annotation '{ann_key}'")
    del target.annotations[ann_key]
