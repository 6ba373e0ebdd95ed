"""The default design space of CUDA targets: thread-block tiles, threads, shared memory,
per-thread register tiles (vector loads), unroll.

``default_space("cuda ...")`` returns :func:`gpu_space` (the cuda backend's design space). Per
kernel:

1. **Inline** elementwise blocks into their consumers, the rule shared with the CPU
   (mlcir/targets/space_rules.py).
2. **Blocks with a reduction** (matmul, convolution, row reductions), the GPU form of
   multi-level tiling: the innermost spatial dim (``x``) and the next one (``y``) are each split
   into ``[block, thread, register]``: the register tile (1, 2 or 4 elements: vector loads),
   the threads of a block along the dim (sampled among the divisors that keep at most 1024
   threads per block), the blocks the rest. A third spatial dim goes whole to ``blockIdx.z``.
   Reduction dims are split ``[outer, inner]`` (inner at most 32). A sampled choice stages the
   inputs the block's threads share in **shared memory** per outer reduction step (when the
   stage fits in 48 KiB), or keeps the whole reduction inside each thread. The register tile
   is vectorized when sampled and legal; the inner reduction loop unrolled by 1, 2, 4 or 8.
3. **Elementwise blocks**: the innermost dim is split ``[block, thread, vector]`` (vector 1, 2
   or 4; threads 32…1024 among the divisors), the next two dims go whole to ``blockIdx.y`` and
   ``blockIdx.z``.

Other spatial dims stay serial inside each thread; blocks this space leaves alone (inits,
copies) get the pipeline's default mapping. Sampled traces stay within valid launches; a
mutation that makes a later decision invalid is a rejected candidate (docs/cuda.md).
"""

from __future__ import annotations

import math

from mlcir.schedule import Schedule
from mlcir.schedule.state import REDUCTION, SPATIAL, Block
from mlcir.target import Target

from ..space_rules import SpaceFn, attempt, blocks, elementwise, inline_elementwise

MAX_THREADS = 1024
GRID_YZ = 65535
REGISTER_TILE = [1, 2, 4]            # elements per thread along x / y (vector loads)
THREADS_X = [8, 16, 32, 64, 128, 256]
THREADS_Y = [1, 2, 4, 8, 16, 32]
ELEMENTWISE_THREADS = [32, 64, 128, 256, 512, 1024]
REDUCTION_CHUNK_MAX = 32              # inner reduction tile (the shared-memory chunk)
SHARED_BYTES_MAX = 48 * 1024          # static shared memory per block
UNROLL_FACTORS = [1, 2, 4, 8]


def _uniform(sch: Schedule, candidates: list[int]):
    return sch.sample_categorical(candidates, [1.0] * len(candidates))


def _divisors_in(extent: int, candidates: list[int], cap: int = MAX_THREADS) -> list[int]:
    return [c for c in candidates if extent % c == 0 and c <= cap]


def _split_three(sch: Schedule, loop, extent: int, thread_options: list[int], cap: int):
    """``loop`` → ``[block, thread, register]`` with sampled thread and register sizes; returns
    the three loops and the thread count (a static value: it bounds the next dim's threads)."""
    register = _uniform(sch, _divisors_in(extent, REGISTER_TILE))
    rest = extent // sch.get(register)
    threads_options = _divisors_in(rest, thread_options, cap) or [1]
    threads = _uniform(sch, threads_options)
    outer, thread, inner = sch.split(loop, [None, threads, register])
    return (outer, thread, inner), sch.get(threads), sch.get(register)


def _spatial_dims(block: Block) -> list[int]:
    return [d for d, k in enumerate(block.kinds) if k == SPATIAL and (block.extents[d] or 0) > 1]


def _tile_reduction(sch: Schedule, block: Block) -> None:
    rv = sch.get_block(block.name, block.func)
    loops = sch.get_loops(rv)
    spatial = _spatial_dims(block)
    if not spatial or any(e is None or e < 1 for e in block.extents):
        return  # nothing to spread over threads, or dynamic: the default mapping runs it
    x = spatial[-1]
    y = spatial[-2] if len(spatial) > 1 else None
    z = spatial[-3] if len(spatial) > 2 else None
    # The extent of each dim inside one block (what a shared-memory stage holds).
    tile = [e if k == SPATIAL else 1 for e, k in zip(block.extents, block.kinds)]
    (xb, xt, xr), tx, vx = _split_three(sch, loops[x], block.extents[x], THREADS_X, MAX_THREADS)
    tile[x] = tx * vx
    blocks, threads, registers = [xb], [xt], [xr]
    if y is not None:
        (yb, yt, yr), ty, vy = _split_three(sch, loops[y], block.extents[y], THREADS_Y,
                                             MAX_THREADS // tx)
        tile[y] = ty * vy
        blocks.insert(0, yb)
        threads.insert(0, yt)
        registers.insert(0, yr)
    if z is not None and block.extents[z] <= GRID_YZ:
        blocks.insert(0, loops[z])
        tile[z] = 1
    serial = [loops[d] for d in spatial[:-3]] + (
        [loops[z]] if z is not None and block.extents[z] > GRID_YZ else [])
    r_outer, r_inner = [], []
    for dim, kind in enumerate(block.kinds):
        if kind != REDUCTION:
            continue
        factors = sch.sample_perfect_tile(loops[dim], n=2, max_innermost_factor=REDUCTION_CHUNK_MAX)
        tile[dim] = sch.get(factors[1])
        outer, inner = sch.split(loops[dim], factors)
        r_outer.append(outer)
        r_inner.append(inner)
    inputs = [op for op in block.operands if not op.is_init]
    # Staged in shared memory: inputs the threads of a block share (a spatial dim is missing
    # from their indexing, e.g. A[i, k] of a matmul is the same for every j), read with plain
    # dims (not a convolution's window, which cache_read cannot take).
    staged = [i for i, op in enumerate(inputs)
              if None not in op.map_results and set(spatial) - set(op.map_results)]
    footprint = sum(math.prod(tile[d] for d in inputs[i].map_results) for i in staged) * 4
    # Offered only when the stage fits the 48 KiB of static shared memory (f32 elements).
    shared = bool(r_outer) and bool(staged) and footprint <= SHARED_BYTES_MAX and \
        sch.get(_uniform(sch, [0, 1])) == 1
    if shared:
        sch.reorder(*blocks, *r_outer, *threads, *serial, *r_inner, *registers)
    else:
        sch.reorder(*blocks, *threads, *serial, *r_outer, *r_inner, *registers)
    for loop, axis in zip(reversed(blocks), ("blockIdx.x", "blockIdx.y", "blockIdx.z")):
        sch.bind(loop, axis)
    for loop, axis in zip(reversed(threads), ("threadIdx.x", "threadIdx.y")):
        sch.bind(loop, axis)
    if shared:
        for index in staged:
            cache = sch.cache_read(rv, index, "shared")
            sch.compute_at(cache, r_outer[-1])
    plain = all(None not in op.map_results for op in block.operands)
    if plain and any(sch.get(r).extent > 1 for r in registers) and \
            sch.get(_uniform(sch, [0, 1])) == 1:
        attempt(sch.vectorize, registers[0])
    if r_inner:
        factor = _uniform(sch, UNROLL_FACTORS)
        if sch.get(factor) > 1 and sch.get(r_inner[-1]).extent > 1:
            sch.unroll(r_inner[-1], factor=factor)


def _tile_elementwise(sch: Schedule, block: Block) -> None:
    rv = sch.get_block(block.name, block.func)
    loops = sch.get_loops(rv)
    spatial = _spatial_dims(block)
    if not spatial or any(e is None or e < 1 for e in block.extents):
        return
    x = spatial[-1]
    extent = block.extents[x]
    vector = _uniform(sch, _divisors_in(extent, REGISTER_TILE))
    rest = extent // sch.get(vector)
    options = _divisors_in(rest, ELEMENTWISE_THREADS) or [
        max(d for d in range(1, min(rest, MAX_THREADS) + 1) if rest % d == 0)]
    threads = _uniform(sch, options)
    xb, xt, xv = sch.split(loops[x], [None, threads, vector])
    blocks = [xb]
    serial = []
    for dim in reversed(spatial[:-1]):
        if len(blocks) < 3 and block.extents[dim] <= GRID_YZ:
            blocks.insert(0, loops[dim])
        else:
            serial.insert(0, loops[dim])
    sch.reorder(*blocks, xt, *serial, xv)
    for loop, axis in zip(reversed(blocks), ("blockIdx.x", "blockIdx.y", "blockIdx.z")):
        sch.bind(loop, axis)
    sch.bind(xt, "threadIdx.x")
    if sch.get(vector) > 1:
        attempt(sch.vectorize, xv)


def gpu_space(target: Target) -> SpaceFn:
    """The default CUDA design space (see the module docstring)."""

    def space(sch: Schedule) -> None:
        for func in sorted({f for (f, _) in sch.state.blocks}):
            inline_elementwise(sch, func)
            for block in blocks(sch, func):
                if block.attach is not None or block.origin:
                    continue
                if REDUCTION in block.kinds and block.op_name != "linalg.fill":
                    _tile_reduction(sch, block)
                elif elementwise(block):
                    _tile_elementwise(sch, block)

    space.__name__ = f"gpu_space[{target}]"
    return space
