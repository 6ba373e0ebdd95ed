"""Default CPU schedules: the design space replayed with decisions chosen from the target's facts.

The CPU design space already encodes the structure of a good schedule (inline elementwise
producers; multi-level "SRSRS" tiling of each reduction block with its register tile vectorized;
epilogues computed per outer tile; elementwise blocks split by a vector width; outer loops
parallel). What it leaves open is a handful of sampled decisions: tile factors
(``sample_perfect_tile``), the loop order, an unroll factor and elementwise vector widths
(``sample_categorical``). :func:`default_schedule` runs that same space once to learn which
decisions each block asks for, chooses them by rules (IREE's ``KernelDispatch.cpp``
and TVM's x86 fallback configurations reduced to the few numbers our space has), and runs it
again with those decisions. The result is an ordinary schedule: its trace prints as Python,
round-trips through JSON, replays, and becomes a transform script for ``mlcir-opt``; a search
can start from it and mutate its decisions.

The rules, each with its reason, are in docs/decisions.md, "Default schedules"
(register tile, reduction and cache tiles, threads, loop order and unroll); their measurements
in docs/measurements/default-schedules.md. :func:`fallback_reason` says which kernels stay
unscheduled and why (docs/decisions.md#kinds-left-unscheduled): a default never makes a
kernel slower than its plain loops, nor unbuildable.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any, Sequence

from mlir import ir

from mlcir.dialects.loop import BLOCK_ATTR, linalg_ops
from mlcir.passes.gpu_ir import element_bytes
from mlcir.schedule import Schedule, ScheduleError
from mlcir.schedule.sampling import divisors
from mlcir.schedule.state import REDUCTION, SPATIAL, Block
from mlcir.schedule import BlockRV, ExprRV, LoopRV
from mlcir.target import Target

from .facts import CpuFacts, target_facts
from .space import CACHE_REDUCTION_MAX, _parallel_outer, cpu_space, scalar_by_design

# One OpenMP parallel region (fork and join) on quiet cores: a few microseconds. The threads
# must save several of them (parallel_threads; docs/decisions.md#threads).
FORK_JOIN_NS = 4_000.0
PARALLEL_SAVING_MIN_NS = 5 * FORK_JOIN_NS
# Serial-time estimate: f32 FMAs per ns per vector lane of a default register tile (the
# measured rate, docs/measurements/default-schedules.md#the-rules), elements per ns elsewhere.
FMAS_PER_NS_PER_LANE = 3.0
ELEMENTS_PER_NS = 4.0
# Streaming a kernel's arguments from L3/memory on one core (measured on the MNIST CNN's
# matrix-vector product: docs/measurements/default-schedules.md#notes-moved-from-the-package-code).
STREAM_BYTES_PER_NS = 80.0
UNROLL = 4
ELEMENTWISE_VECTORS = 4
ELEMENT_BYTES = 4  # f32; the schedules of mlcir's graph kernels are f32
TRANSCENDENTALS = ("math.exp", "math.tanh", "math.erf", "math.log", "math.powf", "math.sin",
                   "math.cos", "math.rsqrt", "math.sqrt")


@dataclass
class _Sample:
    """One ``sample_perfect_tile`` the space asks for: the block's dim and how it splits."""

    dim: int
    kind: str
    extent: int
    n: int
    cap: int
    dynamic: bool = False  # a dynamic dim, planned at the target's dynamic hint


@dataclass
class _BlockPlan:
    samples: list[_Sample] = field(default_factory=list)
    pooling: bool = False  # a named pooling (POOLING_COLUMNS)
    tiles: dict[int, list[int]] = field(default_factory=dict)  # dim -> decision


# Columns of a named pooling's register tile (linalg.pooling_*: a window of stride 1 in the
# width, or one output column): half a cache line, since its taps read each row at every
# offset and a whole-line vector splits a line on each unaligned one
# (docs/decisions.md#pooling-columns).
POOLING_COLUMNS = 8


# The reduction tile's slivers (``(r + c) x K``) stream from L2, not L1: one 512-bit FMA per
# cycle leaves L2 bandwidth to spare, and each break in the reduction stores and reloads the
# register tile's accumulators (docs/decisions.md#reduction-tile).
REDUCTION_L2_SHARE = 4

# How much more than an even share of a parallel loop's iterations one thread may get: the
# thread with the extra iteration sets the kernel's time (docs/decisions.md#threads).
UNEVEN_SHARE_MAX = 0.125


def _vector_parts(columns: int, lanes: int) -> int:
    """Vector registers one row of ``columns`` elements takes: whole vectors plus the
    power-of-two pieces of the rest (24 f32 on AVX-512: 16 + 8, two registers)."""
    return columns // lanes + bin(columns % lanes).count("1")


def register_tile(rows: int | None, columns: int, facts: CpuFacts, rows_cap: int,
                  columns_cap: int) -> tuple[int, int]:
    """The register tile ``(r, c)`` for extents ``rows`` x ``columns`` (``rows`` None: a block
    with one vector dim): ``r * parts(c)`` accumulators plus ``parts(c)`` column vectors and
    one broadcast within the vector registers, maximising the FMAs per loaded element
    ``r * c / (r + c)`` weighted by the fraction of vector lanes used."""
    lanes = facts.lanes(ELEMENT_BYTES)
    row_options = [r for r in divisors(rows) if r <= rows_cap] if rows else [1]
    best, best_score = (1, 1), -1.0
    for c in divisors(columns):
        if c > columns_cap or (c % lanes and c & (c - 1)) or (c > lanes and c % lanes):
            continue
        parts = _vector_parts(c, lanes)
        used = c / (parts * lanes)
        for r in row_options:
            if r * parts + parts + 1 > facts.vector_registers:
                continue
            score = used * r * c / (r + c) if rows else used * min(c, 4 * lanes)
            if score > best_score + 1e-9 or (abs(score - best_score) <= 1e-9 and
                                             r * c > best[0] * best[1]):
                best, best_score = (r, c), score
    return best


def _largest_divisor(n: int, limit: int) -> int:
    return max(d for d in divisors(n) if d <= max(limit, 1))


class _Planner:
    """Chooses every decision of one kernel's space from the target's facts."""

    def __init__(self, facts: CpuFacts, threads: int,
                 dynamic: dict[str, set[int]] | None = None):
        self.facts = facts
        self.threads = threads
        self.plans: dict[str, _BlockPlan] = {}
        self.dynamic = dynamic or {}  # block name -> its dynamic dims

    def plan(self) -> None:
        for plan in self.plans.values():
            self._plan_block(plan)

    def _plan_block(self, plan: _BlockPlan) -> None:
        vector = [s for s in plan.samples if s.n == 3]
        cols = max(vector, key=lambda s: s.cap) if vector else None
        rows = next((s for s in vector if s is not cols), None)
        r, c = (1, 1)
        if cols is not None:
            cap = min(cols.cap, POOLING_COLUMNS) if plan.pooling else cols.cap
            # The rows of a dynamic dim left over by the register tile run one at a time
            # (peeled): fewer rows per tile leave fewer of them (docs/decisions.md#dynamic-defaults).
            # When the columns are dynamic too, only one of the two can be peeled (the
            # materializer peels one dim per block): rows one at a time need no peel.
            rows_cap = (1 if rows and rows.dynamic and cols.dynamic else
                        min(rows.cap, DYNAMIC_ROWS_MAX) if rows and rows.dynamic else
                        rows.cap if rows else 1)
            r, c = register_tile(rows.extent if rows else None, cols.extent, self.facts,
                                 rows_cap, cap)
        # Reduction: innermost dims first, whole, while the slivers stay in a share of L2.
        depth = max(1, min(CACHE_REDUCTION_MAX,
                           self.facts.l2_bytes // REDUCTION_L2_SHARE // (ELEMENT_BYTES * (r + c))))
        reductions = [s for s in plan.samples if s.kind == REDUCTION and s.n == 2]
        room, k = depth, 1
        for s in reversed(reductions):
            # A dynamic reduction runs one step at a time under its run-time loop: a tile of
            # it would end in a partial tile, masked at every step (docs/decisions.md#dynamic-defaults).
            inner = 1 if s.dynamic else _largest_divisor(s.extent, min(room, s.cap))
            plan.tiles[s.dim] = [s.extent // inner, inner]
            room, k = max(1, room // inner), k * inner
        # Cache panels: (rows + columns) x k elements in half of L2, columns getting two thirds.
        panel = max(1, self.facts.l2_bytes // 2 // (ELEMENT_BYTES * k))
        if cols is not None:
            mid = _largest_divisor(cols.extent // c, max(1, panel * 2 // 3 // c))
            plan.tiles[cols.dim] = [cols.extent // (mid * c), mid, c]
            panel -= mid * c
        if rows is not None:
            mid = _largest_divisor(rows.extent // r, max(1, min(panel, 128) // r))
            plan.tiles[rows.dim] = [rows.extent // (mid * r), mid, r]
        for s in plan.samples:
            if s.dim not in plan.tiles:  # other spatial dims: one at a time inside
                plan.tiles[s.dim] = [s.extent] + [1] * (s.n - 1)
        if self.threads > 1:
            self._expose_parallelism(plan, cols)

    def _expose_parallelism(self, plan: _BlockPlan, cols: _Sample | None) -> None:
        """Move factors from middle to outer levels (outermost dims first) until the fused
        outer loop's iterations share evenly among the threads (:data:`UNEVEN_SHARE_MAX`);
        failing that, from the register tile's rows (a matrix-vector product: its 4 weight
        panels were all one tile, which left no loop to run parallel; memory-bound, it loses
        nothing by a smaller tile)."""
        spatial = [s for s in plan.samples if s.kind == SPATIAL]

        def outer() -> int:
            return math.prod(plan.tiles[t.dim][0] for t in spatial)

        def uneven() -> float:  # the busiest thread's work over an even share, less one
            return math.ceil(outer() / self.threads) * self.threads / outer() - 1

        for level in (1, -1):
            for s in spatial:
                if level == -1 and (s is cols or s.n < 3):
                    continue
                tiles = plan.tiles[s.dim]
                while uneven() > UNEVEN_SHARE_MAX and tiles[level] > 1:
                    p = min(d for d in divisors(tiles[level]) if d > 1)
                    tiles[0] *= p
                    tiles[level] //= p

    def tile(self, block: str, dim: int, n: int) -> list[int] | None:
        plan = self.plans.get(block)
        tiles = plan.tiles.get(dim) if plan else None
        return tiles if tiles is not None and len(tiles) == n else None

    def categorical(self, candidates: Sequence[int], loop_extent: int | None) -> int:
        if list(candidates) == [0, 1]:  # the loop order: spatial tiles outside
            return 0
        if all(c in (1, 2, 4, 8) for c in candidates) and 1 in candidates:  # unroll
            want = UNROLL if loop_extent is None or loop_extent % UNROLL == 0 else 1
            return list(candidates).index(want) if want in candidates else 0
        # an elementwise vector width
        limit = ELEMENTWISE_VECTORS * self.facts.lanes(ELEMENT_BYTES)
        fitting = [i for i, c in enumerate(candidates) if c <= limit]
        return max(fitting, key=lambda i: candidates[i]) if fitting else 0


# The size a dynamic dim is planned for: the tiles of its inner levels come from a plan at
# this size, its outer loop runs as many times as the run time needs
# (docs/decisions.md#dynamic-defaults).
DYNAMIC_HINT = 128
# Rows of a register tile over a dynamic dim: the rows it leaves over run one at a time.
DYNAMIC_ROWS_MAX = 4


def dynamic_hint(target: Target) -> int:
    """The size dynamic dims are planned at: the target's ``-dynamic-hint`` (a user who knows
    the sizes that will come: ``llvm -dynamic-hint=16`` for short sequences), else
    :data:`DYNAMIC_HINT`."""
    return int(dict(target.options).get("dynamic-hint", DYNAMIC_HINT))


class _AtHint(Schedule):
    """A schedule of a kernel's dynamic dims read at ``hint`` (plans and estimates only: its
    trace replays on the dynamic kernel)."""

    def __init__(self, mod: ir.Module, hint: int = DYNAMIC_HINT):
        self.dynamic_extent = hint
        super().__init__(mod)


class _RuleSchedule(_AtHint):
    """A schedule whose sampling instructions take their decisions from a planner (or, while
    recording, the trivial tiling ``[extent, 1, ..]``), remembering which block dim each
    sampled loop is."""

    def __init__(self, mod: ir.Module, planner: _Planner, recording: bool, hint: int):
        super().__init__(mod, hint)
        self._planner = planner
        self._recording = recording
        self._loop_dims: dict[int, tuple[str, int]] = {}
        self._last_block: str | None = None

    def get_loops(self, block: BlockRV) -> list[LoopRV]:
        loops = super().get_loops(block)
        name = self.get(block)
        self._last_block = name
        plain = all(len(lv) == 1 for lv in self.state_block(name).levels)
        if plain:
            for dim, loop in enumerate(loops):
                self._loop_dims[loop.id] = (name, dim)
        return loops

    def state_block(self, name: str) -> Block:
        return next(b for (_, n), b in self.state.blocks.items() if n == name)

    def sample_perfect_tile(self, loop: LoopRV, n: int, max_innermost_factor: int = 16,
                            decision: Sequence[int] | None = None) -> list[ExprRV]:
        if decision is None and loop.id in self._loop_dims:
            block, dim = self._loop_dims[loop.id]
            extent = self.get(loop).extent
            if self._recording:
                b = self.state_block(block)
                plan = self._planner.plans.setdefault(
                    block, _BlockPlan(pooling=b.op_name.startswith("linalg.pooling_")))
                plan.samples.append(_Sample(dim, b.kinds[dim], extent, n, max_innermost_factor,
                                            dim in self._planner.dynamic.get(block, ())))
                decision = [extent] + [1] * (n - 1)
            else:
                decision = self._planner.tile(block, dim, n)
        return super().sample_perfect_tile(loop, n, max_innermost_factor, decision)

    def sample_categorical(self, candidates: Sequence[int], probs: Sequence[float],
                           decision: int | None = None) -> ExprRV:
        if decision is None:
            decision = self._planner.categorical(candidates, self._inner_reduction_extent())
        return super().sample_categorical(candidates, probs, decision)

    def _inner_reduction_extent(self) -> int | None:
        plan = self._planner.plans.get(self._last_block or "")
        if plan is None:
            return None
        reductions = [s for s in plan.samples if s.kind == REDUCTION and s.n == 2]
        return plan.tiles.get(reductions[-1].dim, [0, None])[1] if reductions else None


def estimated_serial_ns(kernel: Schedule, facts: CpuFacts) -> float:
    """A rough serial time of the kernel once scheduled (a threshold, not a cost model): its
    vectorized FMAs for blocks with a reduction and elements for the others, or the time to
    stream its arguments once (:data:`STREAM_BYTES_PER_NS`), whichever is longer: a
    matrix-vector product is bound by reading its weights, not by its FMAs."""
    total = 0.0
    for block in kernel.state.blocks.values():
        iterations = math.prod(e or 1 for e in block.extents)
        if REDUCTION in block.kinds and block.op_name != "linalg.fill":
            total += iterations / (FMAS_PER_NS_PER_LANE * facts.lanes(ELEMENT_BYTES))
        else:
            total += iterations / ELEMENTS_PER_NS
    return max(total, _argument_bytes(kernel.original) / STREAM_BYTES_PER_NS)


def _argument_bytes(module: ir.Module) -> int:
    """The bytes of every function argument of static shape (what the kernel reads or
    writes at least once)."""
    total = 0
    for fn in module.body.operations:
        if fn.operation.name != "func.func" or not fn.regions[0].blocks:
            continue
        for arg in fn.regions[0].blocks[0].arguments:
            if isinstance(arg.type, ir.ShapedType) and ir.ShapedType(arg.type).has_static_shape:
                shaped = ir.ShapedType(arg.type)
                total += math.prod(shaped.shape) * element_bytes(shaped.element_type)
    return total


def parallel_threads(serial_ns: float, threads: int) -> int:
    """The threads a kernel estimated at ``serial_ns`` runs on: all ``threads`` when they save
    more than :data:`PARALLEL_SAVING_MIN_NS` (``serial_ns * (1 - 1/threads)``), else 1
    (docs/decisions.md#threads)."""
    if threads > 1 and serial_ns * (1 - 1 / threads) > PARALLEL_SAVING_MIN_NS:
        return threads
    return 1


def _body_ops(sch: Schedule) -> dict[tuple[str, str], set[str]]:
    """The operation names in each block's body, by (function, block)."""
    found: dict[tuple[str, str], set[str]] = {}
    for fn in sch.original.body.operations:
        if fn.operation.name != "func.func":
            continue
        func = ir.StringAttr(fn.attributes["sym_name"]).value
        for op in linalg_ops(fn.operation):
            if BLOCK_ATTR not in op.attributes or not op.regions or not op.regions[0].blocks:
                continue
            name = ir.StringAttr(op.attributes[BLOCK_ATTR]).value
            found[(func, name)] = {inner.operation.name for inner in op.regions[0].blocks[0]}
    return found


def _reduces_contiguous_axis(block: Block) -> bool:
    """Whether ``block`` reduces one input (not a contraction of two) along that input's
    innermost, contiguous axis: a row sum, max or mean, softmax's and layer norm's."""
    inputs = [op for op in block.operands if not op.is_init]
    if block.window or len(inputs) != 1 or not inputs[0].terms:
        return False
    last = inputs[0].terms[-1]
    return last is not None and len(last[0]) == 1 and \
        block.kinds[next(iter(last[0]))] == REDUCTION


CHAIN_VECTOR = 64  # the longest innermost dim an inlined chain vectorizes whole (4 zmm)
NO_REDUCTION = "no reduction block: LLVM vectorizes the plain elementwise/copy loops"


def _inlined_elementwise_chain(kernel: Schedule, threads: int = 1) -> Schedule | None:
    """A kernel of elementwise blocks in a chain (an epilogue of its own, as after
    ``winograd_output``: scale, shift, residual add, activation, padding copy), each block with
    one consumer inlined into it, so that one loop nest reads the inputs and writes the result,
    and an innermost dim of at most :data:`CHAIN_VECTOR` elements is vectorized whole
    (unscheduled, each block makes a temporary of the whole tensor;
    docs/decisions.md#elementwise-chains). With ``threads`` > 1 (the kernel's estimated time
    pays for it) the outer loops run parallel. None when no block inlines, a block transposes or
    a shape is dynamic."""
    blocks = list(kernel.state.blocks.values())
    if any(None in block.extents for block in blocks):
        return None  # (the space splits only static loops)
    if any(op.map_results and block.output_map
           and op.map_results[-1] not in (None, block.output_map[-1])
           for block in blocks for op in block.operands if not op.is_init):
        return None  # a transpose (a layout change): see _channel_block_transpose
    sch = Schedule(kernel.original)
    inlined = 0
    for block in blocks:
        if block.op_name == "linalg.fill" or REDUCTION in block.kinds:
            continue
        consumers = {c.name for c in blocks
                     if any(op.producer == block.name and not op.is_init for op in c.operands)}
        if len(consumers) != 1:
            continue
        try:
            sch.compute_inline(sch.get_block(block.name, block.func))
        except ScheduleError:
            continue
        inlined += 1
    if not inlined:
        return None
    try:
        for block in sch.state.blocks.values():
            if block.inlined or block.op_name == "linalg.fill" or not block.extents \
                    or block.extents[-1] > CHAIN_VECTOR:
                continue
            rv = sch.get_block(block.name, block.func)
            loops = sch.get_loops(rv)
            sch.vectorize(loops[-1])
            if threads > 1 and len(loops) > 1:
                _parallel_outer(sch, loops[:-1], threads)
        _ = sch.mod
    except ScheduleError:
        return None
    return sch


def _kind_left_alone(kernel: Schedule) -> str | None:
    """Why the rules leave ``kernel`` (a fresh schedule of it) unscheduled before trying the
    space, or None (module docstring: each case was measured slower scheduled)."""
    blocks = [b for b in kernel.state.blocks.values() if b.op_name != "linalg.fill"]
    reductions = [b for b in blocks if REDUCTION in b.kinds]
    if not reductions:
        return NO_REDUCTION
    for b in reductions:
        if _reduces_contiguous_axis(b):
            return (f"block '{b.name}' reduces the contiguous axis of its input: LLVM "
                    "vectorizes the plain (reassociable) row reduction")
    bodies = _body_ops(kernel)
    for b in blocks:
        consumers = {c.name for c in blocks
                     if any(op.producer == b.name and not op.is_init for op in c.operands)}
        if len(consumers) > 1 and bodies.get((b.func, b.name), set()) & set(TRANSCENDENTALS):
            return (f"block '{b.name}' computes a transcendental for {len(consumers)} blocks: "
                    "inlining would recompute it")
    return None


TRANSPOSE_TILE = 8  # the split level of the long dim of a register transpose (measured)
SQUARE_TRANSPOSE = 16  # where it divides: 16 x 16, mlcir-lower-vectors' AVX-512 transpose


def _channel_block_transpose(kernel: Schedule, threads: int = 1) -> Schedule | None:
    """A layout change to or from a channel block (``graph-layout-nchwc``'s ``[N, C, H, W]`` <->
    ``[N, C/c, H, W, c]``): the one block transposes its input so that the innermost dim of the
    result is read with a stride. Left to LLVM, each element is a strided load; here a tile of
    the long dim (the merged ``H*W``) by the whole channel block (16) is one vector tile, read
    as rows and transposed in registers: 16 x 16 where 16 divides, lowered to upstream's AVX-512
    shuffle sequence (mlcir-lower-vectors), else 8. Blocks of 8 measured slower tiled
    (docs/decisions.md#layout-changes). With ``threads`` > 1 the outermost loop that has as many
    iterations runs parallel. A layout change writing a padded tensor (``graph-pad-windows``)
    has a padding's blocks too: the fills of its border strips stay plain loops, and its copy
    into the interior is of the transpose's result onto itself once bufferized (the transpose
    writes there). None if ``kernel`` is not such a transpose."""
    blocks = [b for b in kernel.state.blocks.values()
              if not b.inlined and b.op_name not in ("linalg.fill", "linalg.copy")]
    if len(blocks) != 1 or REDUCTION in blocks[0].kinds:
        return None
    block = blocks[0]
    inputs = [op for op in block.operands if not op.is_init]
    if len(inputs) != 1 or None in inputs[0].map_results or None in block.output_map \
            or len(block.output_map) < 2 or len(inputs[0].map_results) < 2 \
            or any(e is None for e in block.extents):
        return None
    read, written = inputs[0].map_results[-1], block.output_map[-1]
    short = [d for d in (read, written) if (block.extents[d] or 0) <= 16]
    if len(short) == 2:  # a row of at most 16 (the padded form's W): the block is written
        short = [written]
    if read == written or len(short) != 1 or block.extents[short[0]] != 16:
        # (blocks of 8 measured slower tiled: docs/decisions.md#layout-changes)
        return None
    (long_dim,) = [d for d in (read, written) if d not in short]
    sch = Schedule(kernel.original)
    rv = sch.get_block(block.name, block.func)
    loops = dict(zip(range(len(block.kinds)), sch.get_loops(rv)))
    long = block.extents[long_dim]
    tile = SQUARE_TRANSPOSE if long % SQUARE_TRANSPOSE == 0 else \
        _largest_divisor(long, TRANSPOSE_TILE)
    outer, inner = sch.split(loops[long_dim], [None, tile])
    rest = [loops[d] for d in block.output_map if d not in (read, written)]
    tiled = {long_dim: inner, short[0]: loops[short[0]]}
    sch.reorder(*rest, outer, tiled[read], tiled[written])
    sch.vectorize(tiled[read])
    if threads > 1:  # the outermost loop with an iteration per thread
        wide = next((rv for rv in rest + [outer] if sch.get(rv).extent >= threads), None)
        if wide is not None:
            sch.parallel(wide)
    return sch


SHORT_ROW = 64  # elements: LLVM fully unrolls shorter constant-trip rows (measured, below)


def _short_rows(kernel: Schedule, facts: CpuFacts, threads: int = 1) -> Schedule | None:
    """Row reductions along the contiguous axis with rows shorter than :data:`SHORT_ROW` (a
    global average pool's 7x7 = 49, merged into one axis by the lowering): LLVM fully unrolls
    such a row before its loop vectorizer runs, then vectorizes across rows with gathers (a
    choice of LLVM's unroller, not of the ISA). Here a tile of ``lanes`` rows by the whole
    row is one vector tile: read as rows, reduced in registers. Rows of 64 and more LLVM
    vectorizes well, and they stay unscheduled (docs/decisions.md#short-rows). With
    ``threads`` > 1 the outer row loop runs parallel when it has an iteration per thread.
    None if ``kernel`` has other reductions, or a transcendental (softmax keeps its rule)."""
    lanes = facts.lanes(ELEMENT_BYTES)
    blocks = [b for b in kernel.state.blocks.values() if b.op_name != "linalg.fill"]
    reductions = [b for b in blocks if REDUCTION in b.kinds]
    if not reductions or any(ops & set(TRANSCENDENTALS) for ops in _body_ops(kernel).values()):
        return None
    for b in reductions:
        if not (_reduces_contiguous_axis(b) and b.kinds[-1] == REDUCTION and len(b.kinds) > 1
                and b.kinds.count(REDUCTION) == 1 and b.kinds[-2] == SPATIAL
                and None not in b.extents and b.extents[-1] < SHORT_ROW
                and None not in b.output_map):  # (upstream vectorizes no kept unit dims)
            return None
    sch = Schedule(kernel.original)
    for b in reductions:
        *_, rows, _row = sch.get_loops(sch.get_block(b.name, b.func))
        outer, tile = sch.split(rows, [None, _largest_divisor(b.extents[-2], lanes)])
        sch.vectorize(tile)
        if threads > 1 and sch.get(outer).extent >= threads:
            sch.parallel(outer)
    return sch


def _materializes(sch: Schedule) -> bool:
    """Whether ``sch`` applies (a default must never make a kernel unbuildable)."""
    try:
        _ = sch.mod
    except ScheduleError:
        return False
    return True


def _unvectorized_reduction(sch: Schedule) -> str | None:
    for b in sch.state.blocks.values():
        if REDUCTION in b.kinds and b.op_name != "linalg.fill" and not b.inlined \
                and not scalar_by_design(b) and not any(
                sch.state.loops[lid].annotations.get("vectorize") for lid in b.order
                if lid in sch.state.loops):
            return f"the space does not vectorize block '{b.name}'"
    return None


def default_schedule(kernel: ir.Module | str, target: Target | str,
                     facts: CpuFacts | None = None, *, materialize: bool = True) -> Schedule:
    """The default schedule of ``kernel`` for the ``llvm`` ``target`` (module docstring): the
    CPU design space (:func:`.space.cpu_space`) with rule-chosen decisions. ``facts`` default
    to the target's (:func:`.facts.target_facts`), pass them to schedule for another CPU.
    Kernels the rules leave alone come back unscheduled (an empty trace). ``materialize=False``
    leaves the check that the schedule applies to the caller, who applies it anyway (a
    build's ``scheduled`` stage: one application per kernel, not two)."""
    return _default(kernel, target, facts, materialize)[0]


def fallback_reason(kernel: ir.Module | str, target: Target | str,
                    facts: CpuFacts | None = None) -> str | None:
    """Why :func:`default_schedule` leaves ``kernel`` unscheduled, or None when it does not."""
    return _default(kernel, target, facts)[1]


def _default(kernel: ir.Module | str, target: Target | str,
             facts: CpuFacts | None, materialize: bool = True) -> tuple[Schedule, str | None]:
    target = Target.parse(target)
    facts = facts or target_facts(target)
    unscheduled = Schedule(kernel)
    kernel = unscheduled.original
    hint = dynamic_hint(target)
    threads = parallel_threads(estimated_serial_ns(_AtHint(kernel, hint), facts),
                               target.threads or facts.threads)
    blocked = _channel_block_transpose(unscheduled, threads)
    if blocked is not None:
        return blocked, None
    rows = _short_rows(unscheduled, facts, threads)
    if rows is not None and _materializes(rows):
        return rows, None
    reason = _kind_left_alone(unscheduled)
    if reason:
        chain = (_inlined_elementwise_chain(unscheduled, threads) if reason == NO_REDUCTION
                 else None)
        return (chain, None) if chain is not None else (unscheduled, reason)
    space_fn = cpu_space(replace(target, threads=threads))
    planner = _Planner(facts, threads, {b.name: {d for d, e in enumerate(b.extents) if e is None}
                                        for b in unscheduled.state.blocks.values()})
    try:
        space_fn(_RuleSchedule(kernel, planner, recording=True, hint=hint))
        planner.plan()
        decided = _RuleSchedule(kernel, planner, recording=False, hint=hint)
        space_fn(decided)
        sch = Schedule(kernel)
        decided.trace.apply_to_schedule(sch)
        reason = _unvectorized_reduction(sch)
        if reason:
            return Schedule(kernel), reason
        if materialize:
            _ = sch.mod  # materialise now: a schedule that cannot be applied is no default
    except ScheduleError as error:
        return Schedule(kernel), f"the design space fails: {str(error).splitlines()[0]}"
    return sch, None


def decisions(sch: Schedule) -> list[tuple[str, Any]]:
    """The sampling decisions of a schedule in trace order, ``(instruction, decision)``."""
    return [(inst.kind.name, inst.decision) for inst in sch.trace.insts if inst.kind.is_sampling]
