"""``mlcir-gpu-map``: every compute op runs on the GPU; mapped foralls become ``gpu.launch``.

Runs after bufferization, on memrefs:
1. ``memref.copy`` becomes ``linalg.copy``: a copy is a kernel like any other (on the device, a
   strided ``memref.copy`` would call the host-only ``memrefCopy``).
2. **Default mapping** of each linalg op that no thread-mapped forall encloses
   (:func:`default_tiling`):

   - at the top level (an unscheduled block): a forall over blocks, then a forall over threads,
     each thread computing one output element (reduction dims serial inside the thread). The
     innermost parallel dim goes to ``x`` (coalesced accesses), the next to ``y``, the next to
     blocks' ``z``; more dims stay serial inside each thread. Tile sizes divide the extents, so
     every forall has a static trip count (``map_nested_forall_to_threads`` needs it).
   - inside a block-mapped forall (a schedule's ``bind``: a shared-memory copy, an init
     computed per block): a forall over that launch's threads, so the block's threads share it.
   - an op with no parallel dim of more than one iteration (a full reduction) runs on one thread
     of one block.

3. Each top-level block forall becomes a ``gpu.launch`` (``transform.gpu.map_forall_to_blocks``
   with ``generate_gpu_launch``), its nested thread foralls thread ids
   (``map_nested_forall_to_threads``; block dims = the largest thread count per axis, smaller
   foralls predicated, a barrier after each).

A schedule bound only to threads runs in one block; unmapped foralls (CPU ``parallel``) and
dynamic shapes are refused with the op named (docs/cuda.md).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from mlir import ir
from mlir.dialects import linalg, scf, transform
from mlir.dialects.transform import gpu as tgpu
from mlir.dialects.transform import structured

from mlcir.dialects.loop import SPATIAL, is_linalg, iterator_kinds, loop_extents
from mlcir.errors import BuildError
from mlcir.transform import apply, match_attr, new_script

from .gpu_check_launch import check_sizes, raise_if
from .gpu_ir import (AXES, BLOCK, THREAD, ancestors, describe, enclosing_forall, forall_kind,
                     mapping_axes, memory_space, memref_bytes, trip_counts, walk)
from .graph_to_loop import functions
from .registry import ModulePass, register_pass

OP_TAG = "mlcir.gpu_map"
LAUNCH_TAG = "mlcir.gpu_launch"
MAX_THREADS = 1024
# Grid limits per axis (x, y, z) of every CUDA device since compute capability 3.0.
GRID_LIMITS = (2 ** 31 - 1, 65535, 65535)


@dataclass(frozen=True)
class Tiling:
    """How one linalg op is mapped: tile sizes per loop dim and the mapping of each tiled dim."""

    block_sizes: list[int]
    block_axes: dict[int, str]   # dim -> block axis
    thread_sizes: list[int]
    thread_axes: dict[int, str]  # dim -> thread axis


def largest_divisor(n: int, cap: int) -> int:
    """The largest divisor of ``n`` that is at most ``cap`` (at least 1)."""
    for d in range(min(n, max(cap, 1)), 0, -1):
        if n % d == 0:
            return d
    return 1


def _per_thread(extent: int, threads: int, grid_limit: int) -> int:
    """Iterations each thread runs along a dim mapped to ``threads`` threads, the smallest that
    keeps the grid along it within ``grid_limit`` (a divisor of ``extent // threads``)."""
    blocks = extent // threads
    for serial in range(1, blocks + 1):
        if blocks % serial == 0 and blocks // serial <= grid_limit:
            return serial
    return blocks


def default_tiling(extents: list[int], kinds: list[str], threads: int = 256) -> Tiling | None:
    """The default mapping of an op with these loop extents/kinds (None: nothing parallel)."""
    parallel = [d for d, k in enumerate(kinds) if k == SPATIAL and extents[d] > 1]
    if not parallel:
        return None
    block_sizes = [0] * len(extents)
    thread_sizes = [0] * len(extents)
    block_axes: dict[int, str] = {}
    thread_axes: dict[int, str] = {}
    budget = max(1, min(threads, MAX_THREADS))
    for axis_index, dim in enumerate(reversed(parallel[-3:])):
        axis = AXES[axis_index]
        extent = extents[dim]
        if axis == "z":  # blocks only: one block per index (or a few, to fit the grid)
            serial = _per_thread(extent, 1, GRID_LIMITS[2])
            block_sizes[dim] = serial
            block_axes[dim] = axis
            continue
        count = largest_divisor(extent, budget)
        budget //= count
        serial = _per_thread(extent, count, GRID_LIMITS[axis_index])
        block_sizes[dim] = count * serial
        block_axes[dim] = axis
        thread_sizes[dim] = serial
        thread_axes[dim] = axis
    return Tiling(block_sizes, block_axes, thread_sizes, thread_axes)


def in_block_tiling(extents: list[int], kinds: list[str], block_dims: list[int],
                    budget: int = MAX_THREADS) -> Tiling | None:
    """The threads of a launch (at most ``block_dims`` per axis, ``budget`` in all) sharing an
    op inside one block (None: nothing parallel to share)."""
    parallel = [d for d, k in enumerate(kinds) if k == SPATIAL and extents[d] > 1]
    sizes = [0] * len(extents)
    axes: dict[int, str] = {}
    for axis_index, dim in enumerate(reversed(parallel[-3:])):
        available = min(block_dims[axis_index], budget)
        if available <= 1:
            continue
        count = largest_divisor(extents[dim], available)
        budget //= count
        sizes[dim] = extents[dim] // count
        axes[dim] = AXES[axis_index]
    if not axes:
        return None
    return Tiling([], {}, sizes, axes)


def _mapping(axes: dict[int, str], kind: str) -> ir.ArrayAttr:
    return ir.ArrayAttr.get([ir.Attribute.parse(f"#gpu.{kind}<{axes[d]}>") for d in sorted(axes)])


def launch_block_dims(forall: ir.Operation) -> list[int]:
    """The block dims of the launch a block forall becomes: per axis, the largest trip count of
    the thread foralls inside it (1 where none)."""
    dims = [1, 1, 1]
    for op in walk(forall, ("scf.forall",)):
        if forall_kind(op) != THREAD:
            continue
        if enclosing_forall(op, THREAD) is not None:
            raise BuildError(f"thread-mapped loop {describe(op)} is nested in another "
                             "thread-mapped loop; bind each threadIdx axis once per block")
        for axis, count in zip(mapping_axes(op), trip_counts(op)):
            if count is None:
                raise BuildError(f"thread-mapped loop {describe(op)} has a dynamic trip count; "
                                 "the threads of a block must be static")
            i = AXES.index(axis)
            dims[i] = max(dims[i], count)
    return dims


def grid_dims(forall: ir.Operation) -> list[int]:
    """The grid a block forall launches: its trip count per mapped axis (1 elsewhere)."""
    dims = [1, 1, 1]
    for axis, count in zip(mapping_axes(forall), trip_counts(forall)):
        dims[AXES.index(axis)] = int(count or 1)
    return dims


def forall_shared_bytes(forall: ir.Operation) -> int:
    """Static shared memory of a block forall: its workgroup-space allocations."""
    total = 0
    for alloc in walk(forall, ("memref.alloc",)):
        t = ir.MemRefType(alloc.results[0].type)
        if memory_space(t) == "workgroup" and t.has_static_shape:
            total += memref_bytes(t)
    return total


def copies_to_linalg(module: ir.Operation) -> None:
    """``memref.copy`` → ``linalg.copy`` (mapped like any other op)."""
    for copy in walk(module, ("memref.copy",)):
        with ir.InsertionPoint(copy), copy.location:
            linalg.copy(copy.operands[0], outs=[copy.operands[1]])
        copy.erase()


def _check_foralls(fn: ir.Operation) -> None:
    for op in walk(fn, ("scf.forall",)):
        kind = forall_kind(op)
        if kind is None:
            raise BuildError(f"loop {describe(op)} is an scf.forall with no GPU mapping (a CPU "
                             "parallel loop?); on cuda bind loops to blockIdx/threadIdx instead")
        if kind == BLOCK and enclosing_forall(op, BLOCK) is not None:
            raise BuildError(f"block-mapped loop {describe(op)} is nested in another "
                             "block-mapped loop; bind each blockIdx axis once, at one level")
        if kind == BLOCK and enclosing_forall(op, THREAD) is not None:
            raise BuildError(f"block-mapped loop {describe(op)} is inside a thread-mapped loop")
        if None in trip_counts(op):
            raise BuildError(f"GPU-mapped loop {describe(op)} has a dynamic trip count; the "
                             "cuda target needs static shapes")


def _wrap(op: ir.Operation, kind: str) -> ir.Operation:
    """Put ``op`` alone in a one-iteration forall mapped to ``blockIdx.x`` or ``threadIdx.x``
    (one block runs it, or one thread of the block)."""
    with ir.InsertionPoint(op), op.location:
        forall = scf.ForallOp([0], [1], [1], mapping=ir.ArrayAttr.get(
            [ir.Attribute.parse(f"#gpu.{kind}<x>")]))
        body = forall.regions[0].blocks[0]
        with ir.InsertionPoint(body):
            scf.InParallelOp()
    op.move_before(body.operations[len(body.operations) - 1])
    return forall.operation


def _static_extents(op: ir.Operation) -> list[int]:
    extents = loop_extents(op)
    if any(e is None for e in extents):
        raise BuildError(f"{describe(op)} has dynamic loop bounds {extents}; the cuda target "
                         "needs static shapes")
    return [int(e) for e in extents]


@register_pass
@dataclass
class GpuMap(ModulePass):
    name = "mlcir-gpu-map"
    summary = ("Map linalg ops to GPU blocks/threads (schedule's bind, else a default mapping) "
               "and foralls to gpu.launch")
    threads: int = 256
    # false: stop after tiling, leaving the mapped foralls (tests run them serially on the CPU
    # to check which elements each block and thread computes)
    launch: bool = True

    def run(self, module: ir.Operation) -> None:
        if not 1 <= self.threads <= MAX_THREADS:
            raise BuildError(f"mlcir-gpu-map: threads={self.threads} must be in 1..{MAX_THREADS}")
        copies_to_linalg(module)
        plans: list[tuple[ir.Operation, Tiling]] = []
        for fn in functions(module):
            if not fn.regions[0].blocks:
                continue
            _check_foralls(fn.operation)
            self._wrap_lone_thread_foralls(fn.operation)
            self._plan(fn.operation, plans)
        if plans:
            apply(module, new_script(lambda root: self._tile(root, plans)))
        for op in walk(module):
            if OP_TAG in op.attributes:
                del op.attributes[OP_TAG]
        if self.launch:
            self._map_launches(module)

    # -- default mapping ---------------------------------------------------------------------
    @staticmethod
    def _wrap_lone_thread_foralls(fn: ir.Operation) -> None:
        for op in walk(fn, ("scf.forall",)):
            if forall_kind(op) == THREAD and enclosing_forall(op, THREAD) is None \
                    and enclosing_forall(op, BLOCK) is None:
                _wrap(op, BLOCK)

    def _plan(self, fn: ir.Operation, plans: list[tuple[ir.Operation, Tiling]]) -> None:
        """Tag each linalg op of ``fn`` that needs tiling and append its tiling to ``plans``
        (the tag is its index there); wrap those with nothing parallel."""
        ops = [op for op in walk(fn) if is_linalg(op)
               and not any(is_linalg(p) for p in ancestors(op))]
        for op in ops:
            if enclosing_forall(op, THREAD) is not None:
                continue
            extents = _static_extents(op)
            kinds = iterator_kinds(op)
            block = enclosing_forall(op, BLOCK)
            if block is None:
                tiling = default_tiling(extents, kinds, self.threads)
            else:
                dims = launch_block_dims(block)
                budget = dims[0] * dims[1] * dims[2]
                if budget == 1:  # only blocks are bound: share the op's work anyway
                    dims, budget = [self.threads, self.threads, 1], self.threads
                tiling = in_block_tiling(extents, kinds, dims, budget)
            if tiling is None:
                # Nothing parallel: one block runs it, one thread of it (other threads would
                # race on a reduction's accumulator).
                _wrap(op, THREAD)
                if block is None:
                    _wrap(op.parent, BLOCK)
                continue
            op.attributes[OP_TAG] = ir.IntegerAttr.get(ir.IntegerType.get_signless(64), len(plans))
            plans.append((op, tiling))

    @staticmethod
    def _tile(root: ir.Value, plans: list[tuple[ir.Operation, Tiling]]) -> None:
        any_op = transform.AnyOpType.get()
        for index, (_, tiling) in enumerate(plans):
            handle = match_attr(root, OP_TAG, ir.IntegerAttr.get(ir.IntegerType.get_signless(64),
                                                                 index))
            if tiling.block_axes:
                tiled = structured.TileUsingForallOp(any_op, any_op, handle,
                                                     tile_sizes=tiling.block_sizes,
                                                     mapping=_mapping(tiling.block_axes, BLOCK))
                handle = tiled.tiled_op
            if tiling.thread_axes:
                structured.TileUsingForallOp(any_op, any_op, handle, tile_sizes=tiling.thread_sizes,
                                             mapping=_mapping(tiling.thread_axes, THREAD))

    # -- foralls to launches -----------------------------------------------------------------
    @staticmethod
    def _map_launches(module: ir.Operation) -> None:
        launches: list[list[int]] = []
        labels: list[list[str]] = []
        for op in walk(module, ("scf.forall",)):
            if forall_kind(op) == BLOCK and enclosing_forall(op, BLOCK) is None:
                block_dims = launch_block_dims(op)
                # map_forall_to_blocks checks the limits too, with a message that names
                # neither the kernel nor the limit: check first.
                raise_if(check_sizes(grid_dims(op), block_dims, forall_shared_bytes(op)), op)
                op.attributes[LAUNCH_TAG] = ir.IntegerAttr.get(ir.IntegerType.get_signless(64),
                                                               len(launches))
                launches.append(block_dims)
                labels.append(block_labels(op))
        if not launches:
            return

        def build(root: ir.Value) -> None:
            any_op = transform.AnyOpType.get()
            for index, dims in enumerate(launches):
                forall = match_attr(root, LAUNCH_TAG, ir.IntegerAttr.get(
                    ir.IntegerType.get_signless(64), index))
                launch = tgpu.MapForallToBlocks(any_op, forall, generate_gpu_launch=True).result
                tgpu.MapNestedForallToThreads(any_op, launch, block_dims=dims)

        apply(module, new_script(build))
        # Each forall became one launch in its place: the walk order is the same.
        name_kernels(module, labels)


def block_labels(root: ir.Operation) -> list[str]:
    """The blocks an op (a block forall) computes: ``loop.block`` of its ops and the block of
    its schedule's loops (``loop.name = "C.i_0"``), else the names of its linalg ops (copies
    made by bufferization)."""
    named, unnamed = [], []
    for op in walk(root):
        if "loop.block" in op.attributes:
            named.append(ir.StringAttr(op.attributes["loop.block"]).value)
        elif "loop.name" in op.attributes:
            named.append(ir.StringAttr(op.attributes["loop.name"]).value.split(".", 1)[0])
        elif is_linalg(op):
            unnamed.append(op.name.split(".", 1)[1])
    return list(dict.fromkeys(named or unnamed))


def name_kernels(module: ir.Operation, labels: list[list[str]]) -> None:
    """Name each launch's outlined kernel after its function and blocks (``main_C``,
    ``main_C_init``), so PTX entries and ``gpu.binary`` ops say which block they compute."""
    taken: set[str] = set()
    index = 0
    for fn in functions(module):
        fn_name = fn.sym_name.value
        for launch in walk(fn.operation, ("gpu.launch",)):
            if "function" in launch.attributes:
                continue
            blocks = labels[index] if index < len(labels) else []
            index += 1
            base = re.sub(r"[^A-Za-z0-9_]", "_", "_".join([fn_name] + (blocks or ["kernel"])))
            name, n = base, 0
            while name in taken:
                n += 1
                name = f"{base}_{n}"
            taken.add(name)
            launch.attributes["module"] = ir.FlatSymbolRefAttr.get(name)
            launch.attributes["function"] = ir.FlatSymbolRefAttr.get(name)
