"""``mlcir.Schedule``: TensorIR's scheduling primitives over loop-level kernels.

Every primitive checks legality, updates the logical state (:mod:`.state`) and appends one
instruction to the trace. ``sch.mod`` materialises the state: the recorded Python rewrites
(inlining) then a transform script (:mod:`.materialize`) applied to a copy of the original
kernel, so the Python object and the transform IR cannot disagree.

Names and signatures follow TVM (``get_block(name, func_name)``, ``split(loop, factors)``,
``sample_perfect_tile(loop, n, max_innermost_factor, decision)`` …) so scripts written for TVM
read the same; differences are listed in docs/schedules.md.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from typing import Any, Sequence

from mlir import ir

from mlcir.ir import clone_module, find_first, make_context, parse

from . import sampling
from .errors import ScheduleError
from .state import REDUCTION, SPATIAL, Attach, Block, KernelState, Loop, read_blocks
from .trace import BlockRV, ExprRV, Instruction, InstructionKind, LoopRV, RV, Trace, register_kind

DEFAULT_SEED = 42
# Vectorizing more elements than this at once builds huge vectors (measured: out of memory).
MAX_VECTOR_ELEMENTS = 4096
# Unrolling makes copies of the loop body; more than this many copies per block makes code
# that LLVM takes minutes to compile (measured: a 1536-trip full unroll, ~1 MB of IR).
MAX_UNROLLED_COPIES = 512
GPU_AXES = ("blockIdx.x", "blockIdx.y", "blockIdx.z", "threadIdx.x", "threadIdx.y", "threadIdx.z")
DIM_NAMES = "ijklmnopqrstuvwxyzabcdefgh"

_K = register_kind
GET_BLOCK = _K(InstructionKind("get_block", ("name", "func_name")))
GET_LOOPS = _K(InstructionKind("get_loops", ("block",), returns_list=True))
GET_CHILD_BLOCKS = _K(InstructionKind("get_child_blocks", ("block_or_loop",), returns_list=True))
SPLIT = _K(InstructionKind("split", ("loop", "factors"), returns_list=True))
REORDER = _K(InstructionKind("reorder", ("loops",), variadic=True))
FUSE = _K(InstructionKind("fuse", ("loops",), variadic=True))
PARALLEL = _K(InstructionKind("parallel", ("loop",)))
VECTORIZE = _K(InstructionKind("vectorize", ("loop",)))
UNROLL = _K(InstructionKind("unroll", ("loop",)))
BIND = _K(InstructionKind("bind", ("loop", "thread_axis")))
ANNOTATE = _K(InstructionKind("annotate", ("block_or_loop", "ann_key", "ann_val")))
UNANNOTATE = _K(InstructionKind("unannotate", ("block_or_loop", "ann_key")))
CACHE_READ = _K(InstructionKind("cache_read", ("block", "read_buffer_index", "storage_scope")))
CACHE_WRITE = _K(InstructionKind("cache_write", ("block", "write_buffer_index", "storage_scope")))
COMPUTE_AT = _K(InstructionKind("compute_at", ("block", "loop")))
REVERSE_COMPUTE_AT = _K(InstructionKind("reverse_compute_at", ("block", "loop")))
COMPUTE_INLINE = _K(InstructionKind("compute_inline", ("block",)))
REVERSE_COMPUTE_INLINE = _K(InstructionKind("reverse_compute_inline", ("block",)))
DECOMPOSE_REDUCTION = _K(InstructionKind("decompose_reduction", ("block", "loop")))
SAMPLE_PERFECT_TILE = _K(InstructionKind("sample_perfect_tile", ("loop", "n", "max_innermost_factor"),
                                         is_sampling=True, returns_list=True))
SAMPLE_CATEGORICAL = _K(InstructionKind("sample_categorical", ("candidates", "probs"),
                                        is_sampling=True))


@dataclass(frozen=True)
class LoopInfo:
    """What ``sch.get(loop)`` returns."""

    name: str
    extent: int
    kind: str
    annotations: dict[str, Any]


class Schedule:
    """A schedule of the loop-level kernels in ``mod`` (see the module docstring).

    ``mod`` is an ``ir.Module`` or MLIR text holding ``func.func`` kernels on tensors whose
    compute blocks are linalg ops (named by ``loop.block``, else by the documented naming rule);
    graph-level ops are lowered to kernels first. ``seed`` fixes every sampling decision.
    """

    def __init__(self, mod: Any, *, seed: int | None = None):
        if isinstance(mod, str):
            ctx = make_context()
            with ctx:
                mod = parse(mod, source_name="<schedule>")
        if not isinstance(mod, ir.Module):
            raise TypeError(f"Schedule() takes an ir.Module or MLIR text, got {type(mod).__name__}")
        with mod.context, ir.Location.unknown():
            self._original = clone_module(mod)
            _lower_graph_ops(self._original)
            self._state = KernelState()
            read_blocks(self._original, self._state)
        self._rng = random.Random(DEFAULT_SEED if seed is None else seed)
        self._seed = DEFAULT_SEED if seed is None else seed
        self.trace = Trace(owner=self)
        self._values: dict[RV, Any] = {}
        self._inlines: list[tuple[str, str, str]] = []  # (kind, func, block)
        self._mod_cache: ir.Module | None = None

    # -- basics ------------------------------------------------------------------------------
    @property
    def context(self) -> ir.Context:
        return self._original.context

    @property
    def original(self) -> ir.Module:
        """The kernel as given (with derived block names), never modified."""
        return self._original

    def copy(self) -> "Schedule":
        """A fresh schedule of the same kernel with this one's trace replayed."""
        other = Schedule(self._original, seed=self._seed)
        self.trace.apply_to_schedule(other)
        other._rng.setstate(self._rng.getstate())
        return other

    def seed(self, seed: int) -> None:
        self._rng.seed(seed)

    def fork_seed(self) -> int:
        return self._rng.randrange(1 << 30)

    def get(self, rv: RV) -> Any:
        """The value behind a random variable: an int (sampled), a block name, or a
        :class:`LoopInfo`."""
        value = self._value(rv, "get")
        if isinstance(rv, LoopRV):
            loop = self._state.loops[value]
            block = self._loop_block(loop)
            return LoopInfo(self._loop_name(loop), loop.extent, self._loop_kind(block, loop),
                            dict(loop.annotations))
        if isinstance(rv, BlockRV):
            return value[1]
        return value

    def _value(self, rv: Any, prim: str) -> Any:
        if not isinstance(rv, RV) or rv not in self._values:
            raise ScheduleError(f"{prim}: {rv!r} is not a random variable of this schedule")
        value = self._values[rv]
        if value is _REMOVED:
            raise ScheduleError(f"{prim}: {rv!r} no longer exists (it was replaced by an earlier "
                                "split, fuse or inline)")
        return value

    def _new(self, cls: type[RV], value: Any) -> RV:
        rv = cls(len(self._values))
        self._values[rv] = value
        return rv

    def _record(self, kind: InstructionKind, inputs: list[Any], attrs: dict[str, Any],
                outputs: list[RV], decision: Any = None) -> None:
        self.trace.append(Instruction(kind, inputs, attrs, outputs, decision))
        self._mod_cache = None

    def _error(self, prim: str, message: str) -> ScheduleError:
        return ScheduleError(f"{prim} (instruction {len(self.trace.insts)}): {message}")

    # -- lookups -----------------------------------------------------------------------------
    def _block(self, rv: Any, prim: str) -> Block:
        if not isinstance(rv, BlockRV):
            raise self._error(prim, f"expected a block, got {rv!r}")
        key = self._value(rv, prim)
        block = self._state.blocks[key]
        if block.inlined:
            raise self._error(prim, f"block '{block.name}' was inlined")
        return block

    def _loop(self, rv: Any, prim: str) -> Loop:
        if not isinstance(rv, LoopRV):
            raise self._error(prim, f"expected a loop, got {rv!r}")
        return self._state.loops[self._value(rv, prim)]

    def _loop_block(self, loop: Loop) -> Block:
        for (f, name), block in self._state.blocks.items():
            if name == loop.block and loop.id in block.order:
                return block
        raise ScheduleError(f"internal: loop {loop.id} has no block")

    def _loop_name(self, loop: Loop) -> str:
        block = self._loop_block(loop)
        names = []
        for dim, _ in loop.parts:
            base = DIM_NAMES[dim] if dim < len(DIM_NAMES) else f"d{dim}"
            levels = block.levels[dim]
            names.append(base if len(levels) == 1 else f"{base}_{levels.index(loop.id)}")
        return "_".join(names) + ("_fused" if len(names) > 1 else "")

    @staticmethod
    def _loop_kind(block: Block, loop: Loop) -> str:
        kinds = {block.kinds[d] for d, _ in loop.parts}
        return REDUCTION if REDUCTION in kinds else SPATIAL

    def get_block(self, name: str, func_name: str | None = None) -> BlockRV:
        """The block named ``name`` (in ``func_name``; optional when only one function has it)."""
        matches = [key for key, b in self._state.blocks.items()
                   if b.name == name and (func_name is None or key[0] == func_name)]
        if not matches:
            known = sorted({f"{f}:{n}" for f, n in self._state.blocks})
            raise self._error("get_block", f"no block named '{name}'"
                              + (f" in function '{func_name}'" if func_name else "")
                              + f"; blocks: {', '.join(known) or 'none'}")
        if len(matches) > 1:
            raise self._error("get_block", f"block '{name}' is in several functions "
                              f"({', '.join(f for f, _ in matches)}): pass func_name")
        if self._state.blocks[matches[0]].inlined:
            raise self._error("get_block", f"block '{name}' was inlined")
        rv = self._new(BlockRV, matches[0])
        self._record(GET_BLOCK, [name, func_name], {}, [rv])
        return rv

    def get_loops(self, block: BlockRV) -> list[LoopRV]:
        """The loops around ``block``, outermost first."""
        b = self._block(block, "get_loops")
        rvs = [self._new(LoopRV, loop_id) for loop_id in self._state.enclosing(b)]
        self._record(GET_LOOPS, [block], {}, list(rvs))
        return rvs

    def get_child_blocks(self, block_or_loop: BlockRV | LoopRV) -> list[BlockRV]:
        """Blocks computed under a loop (a block's own nest holds only itself)."""
        if isinstance(block_or_loop, LoopRV):
            loop = self._loop(block_or_loop, "get_child_blocks")
            owner = self._loop_block(loop)
            keys = [(owner.func, owner.name)] + [
                (b.func, b.name) for b in self._state.blocks.values()
                if not b.inlined and loop.id in self._state.enclosing(b) and b is not owner]
        else:
            self._block(block_or_loop, "get_child_blocks")
            keys = []
        rvs = [self._new(BlockRV, k) for k in keys]
        self._record(GET_CHILD_BLOCKS, [block_or_loop], {}, list(rvs))
        return rvs

    # -- loop transformations ----------------------------------------------------------------
    def _check_free(self, loops: Sequence[Loop], prim: str) -> None:
        """Loops that other blocks are computed at cannot change shape any more."""
        for loop in loops:
            block = self._loop_block(loop)
            attached = self._state.attached_at(loop.id, block.func)
            inner = self._state.enclosing(block)
            below = inner[inner.index(loop.id):]
            attached += [b for lid in below for b in self._state.attached_at(lid, block.func)]
            if attached:
                raise self._error(prim, f"loop {self._loop_name(loop)} of block '{block.name}' "
                                  f"encloses block '{attached[0].name}' (compute_at); apply "
                                  f"{prim} before compute_at")

    def _own_loop(self, loop: Loop, prim: str) -> Block:
        block = self._loop_block(loop)
        if block.origin.get("kind") in ("cache_read", "cache_write"):
            raise self._error(prim, f"block '{block.name}' is a cache stage: it can only be "
                              "placed (compute_at/reverse_compute_at), not re-tiled")
        return block

    def split(self, loop: LoopRV, factors: Sequence[int | ExprRV | None],
              preserve_unit_iters: bool = True) -> list[LoopRV]:
        """Split ``loop`` into ``len(factors)`` nested loops (outer first); one factor may be
        ``None`` (inferred). Factors must multiply to the extent exactly."""
        l = self._loop(loop, "split")
        block = self._own_loop(l, "split")
        if len(l.parts) != 1:
            raise self._error("split", f"loop {self._loop_name(l)} is a fused loop; split the "
                              "loops before fusing them")
        if l.extent < 0:
            raise self._error("split", f"loop {self._loop_name(l)} has a dynamic extent")
        if len(factors) < 1:
            raise self._error("split", "needs at least one factor")
        self._check_free([l], "split")
        values: list[int | None] = []
        for f in factors:
            if isinstance(f, ExprRV):
                values.append(int(self._value(f, "split")))
            elif f is None or isinstance(f, int):
                values.append(f)
            else:
                raise self._error("split", f"factors must be ints, sampled values or one None, "
                                  f"got {f!r}")
        if values.count(None) > 1:
            raise self._error("split", "at most one factor may be None")
        known = math.prod(v for v in values if v is not None)
        if any(v is not None and v < 1 for v in values):
            raise self._error("split", f"factors {values} must be >= 1")
        if None in values:
            if l.extent % known:
                raise self._error("split", f"factors {values} of loop {self._loop_name(l)} "
                                  f"(extent {l.extent}): {known} does not divide {l.extent}")
            values[values.index(None)] = l.extent // known
        elif known != l.extent:
            raise self._error("split", f"factors {values} of loop {self._loop_name(l)} "
                              f"(extent {l.extent}) multiply to {known}, not {l.extent}")
        dim = l.parts[0][0]
        new_loops = [self._state.new_loop(block, [(dim, int(v))]) for v in values]
        for nl in new_loops:
            nl.annotations.update({k: v for k, v in l.annotations.items() if k.startswith("_")})
        ids = [nl.id for nl in new_loops]
        levels = block.levels[dim]
        at = levels.index(l.id)
        block.levels[dim] = levels[:at] + ids + levels[at + 1:]
        at = block.order.index(l.id)
        block.order[at:at + 1] = ids
        self._retire_loop(l.id)
        rvs = [self._new(LoopRV, i) for i in ids]
        self._record(SPLIT, [loop, list(factors)], {}, list(rvs))
        return rvs

    def _retire_loop(self, loop_id: int) -> None:
        for rv, value in self._values.items():
            if isinstance(rv, LoopRV) and value == loop_id:
                self._values[rv] = _REMOVED
        del self._state.loops[loop_id]

    def reorder(self, *loops: LoopRV) -> None:
        """Put ``loops`` (of one block's nest) in this order, in the positions they occupy."""
        if len(loops) == 1 and isinstance(loops[0], (list, tuple)):
            loops = tuple(loops[0])
        ls = [self._loop(l, "reorder") for l in loops]
        if len({l.id for l in ls}) != len(ls):
            raise self._error("reorder", "a loop is given twice")
        blocks = {self._loop_block(l).name for l in ls}
        if len(blocks) != 1:
            raise self._error("reorder", f"loops of different blocks ({', '.join(sorted(blocks))})")
        block = self._own_loop(ls[0], "reorder")
        self._check_free(ls, "reorder")
        positions = sorted(block.order.index(l.id) for l in ls)
        new_order = list(block.order)
        for pos, l in zip(positions, ls):
            new_order[pos] = l.id
        for dim, levels in enumerate(block.levels):
            seen = [lid for lid in new_order if lid in levels]
            if seen != levels:
                names = [self._loop_name(self._state.loops[i]) for i in seen]
                raise self._error("reorder", f"the split levels of one dimension must stay outer "
                                  f"to inner ({', '.join(names)}): MLIR tiling emits the loops of "
                                  "a split dimension in that order")
        block.order = new_order
        self._record(REORDER, list(loops), {}, [])

    def fuse(self, *loops: LoopRV, preserve_unit_iters: bool = True) -> LoopRV:
        """Fuse consecutive loops of one block into one loop."""
        if len(loops) == 1 and isinstance(loops[0], (list, tuple)):
            loops = tuple(loops[0])
        if len(loops) < 2:
            raise self._error("fuse", "needs at least two loops")
        ls = [self._loop(l, "fuse") for l in loops]
        block = self._own_loop(ls[0], "fuse")
        if any(self._loop_block(l) is not block for l in ls):
            raise self._error("fuse", "loops of different blocks")
        positions = [block.order.index(l.id) for l in ls]
        if positions != list(range(positions[0], positions[0] + len(ls))):
            raise self._error("fuse", "the loops must be consecutive, outer first")
        kinds = {self._loop_kind(block, l) for l in ls}
        if len(kinds) > 1:
            raise self._error("fuse", "cannot fuse a spatial loop with a reduction loop")
        if any(len(l.parts) > 1 for l in ls):
            raise self._error("fuse", "a loop is already fused")
        if any(l.annotations.get(k) for l in ls for k in ("parallel", "vectorize", "unroll", "bind")):
            raise self._error("fuse", "annotate (parallel/vectorize/unroll/bind) after fusing")
        self._check_free(ls, "fuse")
        dims = [l.parts[0][0] for l in ls]
        if len(set(dims)) == 1:
            # Consecutive levels of one dimension: fusing them undoes their split.
            levels = block.levels[dims[0]]
            at = levels.index(ls[0].id)
            if levels[at:at + len(ls)] != [l.id for l in ls]:
                raise self._error("fuse", "loops of one dimension must be consecutive split levels")
            fused = self._state.new_loop(block, [(dims[0], math.prod(l.extent for l in ls))])
            block.levels[dims[0]][at:at + len(ls)] = [fused.id]
        elif len(set(dims)) != len(dims):
            raise self._error("fuse", "the loops mix split levels of one dimension with other "
                              "dimensions; fuse the levels first")
        else:
            fused = self._state.new_loop(block, [p for l in ls for p in l.parts])
            for l in ls:
                d = l.parts[0][0]
                block.levels[d][block.levels[d].index(l.id)] = fused.id
        block.order[positions[0]:positions[-1] + 1] = [fused.id]
        for l in ls:
            self._retire_loop(l.id)
        rv = self._new(LoopRV, fused.id)
        self._record(FUSE, list(loops), {}, [rv])
        return rv

    def _annotate_loop(self, loop: LoopRV, prim: str, key: str, value: Any = True) -> Loop:
        l = self._loop(loop, prim)
        self._own_loop(l, prim)
        l.annotations[key] = value
        self._mod_cache = None
        return l

    def parallel(self, loop: LoopRV) -> None:
        """Run ``loop``'s iterations on several threads (OpenMP; a spatial loop)."""
        l = self._loop(loop, "parallel")
        block = self._loop_block(l)
        if self._loop_kind(block, l) != SPATIAL:
            raise self._error("parallel", f"loop {self._loop_name(l)} is a reduction loop")
        if l.annotations.get("vectorize") or l.annotations.get("bind"):
            raise self._error("parallel", f"loop {self._loop_name(l)} is already vectorized/bound")
        self._annotate_loop(loop, "parallel", "parallel")
        self._record(PARALLEL, [loop], {}, [])

    def vectorize(self, loop: LoopRV) -> None:
        """Vectorize the tile formed by ``loop`` and every loop inside it (MLIR vectorizes whole
        linalg tiles): those loops must be the innermost split level of their dimensions."""
        l = self._loop(loop, "vectorize")
        block = self._own_loop(l, "vectorize")
        problem = self.vector_tile_problem(block, l)
        if problem:
            raise self._error("vectorize", problem)
        self._annotate_loop(loop, "vectorize", "vectorize")
        self._record(VECTORIZE, [loop], {}, [])

    def vector_tile_problem(self, block: Block, l: Loop) -> str | None:
        """Why ``l`` and the loops inside it cannot be one vector tile (None if they can)."""
        chain = block.order
        if l.id not in chain:
            return f"loop {self._loop_name(l)} is not a loop of block '{block.name}'"
        size = 1
        for lid in chain[chain.index(l.id):]:
            il = self._state.loops[lid]
            if len(il.parts) != 1:
                return f"loop {self._loop_name(il)} inside the vector tile is fused"
            d = il.parts[0][0]
            if block.levels[d][-1] != lid:
                return (f"loop {self._loop_name(il)} inside the vector tile is not the innermost "
                        "level of its dimension; reorder so the vectorized loops are the "
                        "innermost tile (before vectorize)")
            if lid != l.id and any(il.annotations.get(k) for k in
                                   ("parallel", "bind", "unroll", "vectorize")):
                return (f"loop {self._loop_name(il)} inside the vector tile is parallel, bound, "
                        "unrolled or vectorized")
            size *= il.extent
        if size > MAX_VECTOR_ELEMENTS:
            return (f"the tile under loop {self._loop_name(l)} has {size} elements (more than "
                    f"{MAX_VECTOR_ELEMENTS}): split it first")
        return None

    def unroll(self, loop: LoopRV, factor: int | ExprRV | None = None) -> None:
        """Unroll ``loop`` completely, or by ``factor`` (an mlcir extension of TVM's unroll)."""
        l = self._loop(loop, "unroll")
        value = self._value(factor, "unroll") if isinstance(factor, ExprRV) else factor
        if value is not None and (not isinstance(value, int) or value < 1):
            raise self._error("unroll", f"factor must be a positive int, got {value!r}")
        if l.annotations.get("vectorize") or l.annotations.get("parallel") or l.annotations.get("bind"):
            raise self._error("unroll", f"loop {self._loop_name(l)} is vectorized, parallel or bound")
        copies = min(value or l.extent, l.extent)
        block = self._loop_block(l)
        for lid in self._state.enclosing(block):
            other = self._state.loops[lid]
            if lid != l.id and other.annotations.get("unroll"):
                copies *= min(int(other.annotations["unroll"]), other.extent)
        if copies > MAX_UNROLLED_COPIES:
            raise self._error("unroll", f"unrolling loop {self._loop_name(l)} would make {copies} "
                              f"copies of the loop body in block '{block.name}' (at most "
                              f"{MAX_UNROLLED_COPIES}); unroll by a factor instead")
        self._annotate_loop(loop, "unroll", "unroll", value or l.extent)
        self._record(UNROLL, [loop], {} if factor is None else {"factor": factor}, [])

    def bind(self, loop: LoopRV, thread_axis: str) -> None:
        """Map ``loop`` to a GPU grid axis (``blockIdx.x``, ``threadIdx.y``, …)."""
        l = self._loop(loop, "bind")
        block = self._loop_block(l)
        if thread_axis not in GPU_AXES:
            raise self._error("bind", f"unknown thread axis {thread_axis!r}; one of {', '.join(GPU_AXES)}")
        if self._loop_kind(block, l) != SPATIAL:
            raise self._error("bind", f"loop {self._loop_name(l)} is a reduction loop")
        self._annotate_loop(loop, "bind", "bind", thread_axis)
        self._record(BIND, [loop, thread_axis], {}, [])

    def annotate(self, block_or_loop: BlockRV | LoopRV, ann_key: str, ann_val: Any) -> None:
        """Attach ``ann_key = ann_val`` (an int, float, str or bool) to a block or loop; it is
        emitted as a ``loop.<ann_key>`` attribute, and some keys steer codegen
        (docs/schedules.md)."""
        if not isinstance(ann_val, (int, float, str, bool)):
            raise self._error("annotate", f"annotation values must be int, float, str or bool, "
                              f"got {type(ann_val).__name__}")
        if ann_key.startswith("_"):
            raise self._error("annotate", "keys starting with '_' are reserved")
        target = self._annotation_target(block_or_loop, "annotate")
        target.annotations[ann_key] = ann_val
        self._record(ANNOTATE, [block_or_loop, ann_key, ann_val], {}, [])

    def unannotate(self, block_or_loop: BlockRV | LoopRV, ann_key: str) -> None:
        target = self._annotation_target(block_or_loop, "unannotate")
        if ann_key not in target.annotations:
            raise self._error("unannotate", f"no annotation '{ann_key}'")
        del target.annotations[ann_key]
        self._record(UNANNOTATE, [block_or_loop, ann_key], {}, [])

    def _annotation_target(self, rv: Any, prim: str) -> Block | Loop:
        if isinstance(rv, LoopRV):
            return self._loop(rv, prim)
        return self._block(rv, prim)

    # -- blocks ------------------------------------------------------------------------------
    def _consumers(self, block: Block) -> list[tuple[Block, int]]:
        out = []
        for b in self._state.blocks.values():
            if b.func == block.func and not b.inlined:
                for i, operand in enumerate(b.operands):
                    if operand.producer == block.name:
                        out.append((b, i))
        return out

    def _dim_correspondence(self, producer: Block, consumer: Block, operand: int,
                            prim: str) -> dict[int, int]:
        """For each dim of ``producer``'s result, the consumer dim that indexes it."""
        out_map = producer.output_map
        read_map = consumer.operands[operand].map_results
        if None in out_map or sorted(out_map) != list(range(len(out_map))) and \
                len(set(out_map)) != len(out_map):
            raise self._error(prim, f"block '{producer.name}' does not write its result with a "
                              "permutation map")
        mapping = {}
        for r, p_dim in enumerate(out_map):
            c_dim = read_map[r] if r < len(read_map) else None
            if c_dim is None:
                raise self._error(prim, f"block '{consumer.name}' reads '{producer.name}' with a "
                                  "non-trivial index expression; not supported")
            mapping[p_dim] = c_dim
        return mapping

    def compute_at(self, block: BlockRV, loop: LoopRV, preserve_unit_loops: bool = False,
                   index: int = -1) -> None:
        """Compute the producer ``block`` under ``loop`` of its consumer, only the region
        that one iteration of ``loop`` needs."""
        b = self._block(block, "compute_at")
        l = self._loop(loop, "compute_at")
        target = self._loop_block(l)
        self._attach(b, target, l, "compute_at")
        self._record(COMPUTE_AT, [block, loop], {}, [])

    def reverse_compute_at(self, block: BlockRV, loop: LoopRV, preserve_unit_loops: bool = False,
                           index: int = -1) -> None:
        """Compute the consumer ``block`` under ``loop`` of its producer, right after the tile
        of the producer that one iteration of ``loop`` computes."""
        b = self._block(block, "reverse_compute_at")
        l = self._loop(loop, "reverse_compute_at")
        target = self._loop_block(l)
        self._attach(b, target, l, "reverse_compute_at")
        self._record(REVERSE_COMPUTE_AT, [block, loop], {}, [])

    def _attach(self, b: Block, target: Block, l: Loop, prim: str) -> None:
        if b is target or b.func != target.func:
            raise self._error(prim, f"block '{b.name}' cannot be computed in its own nest")
        if b.attach is not None:
            raise self._error(prim, f"block '{b.name}' is already computed at another loop")
        if any(x.attach is not None and x.attach.target == b.name
               for x in self._state.blocks.values()):
            raise self._error(prim, f"other blocks are computed inside block '{b.name}'")
        chain = self._state.enclosing(target)
        outer = chain[:chain.index(l.id) + 1]
        if any(self._state.loops[i].block != target.name for i in outer):
            raise self._error(prim, "the loop must belong to the target block's own nest")
        if prim == "compute_at":
            reads = [i for i, op in enumerate(target.operands) if op.producer == b.name]
            if not reads:
                raise self._error(prim, f"block '{target.name}' does not read block '{b.name}'")
            others = sorted({c.name for c, _ in self._consumers(b) if c is not target})
            if others:
                # TVM's rule too; MLIR would have to yield the tile out of the loop, which
                # upstream supports only for scf.forall (and asserts on scf.for).
                raise self._error(prim, f"block '{b.name}' is also read by "
                                  f"{', '.join(repr(o) for o in others)}: every consumer must be "
                                  "under the target loop")
            is_init = any(target.operands[i].is_init for i in reads)
            mapping = self._dim_correspondence(b, target, reads[0], prim)
            if is_init and any(x.origin.get("kind") == "cache_write" and x.origin.get("source") == target.name
                               for x in self._state.blocks.values()):
                raise self._error(prim, f"'{b.name}' initialises '{target.name}', whose output "
                                  "is cached (cache_write): it cannot also be computed inside")
            if is_init:
                self._spatial_above(target, outer, prim, f"'{b.name}' initialises "
                                    f"'{target.name}'")
            if any(k == REDUCTION for k in b.kinds):
                raise self._error(prim, f"block '{b.name}' is a reduction; only elementwise, "
                                  "copy and fill producers can be computed at a loop")
            # The producer covers the region one iteration of `l` reads.
            for p_dim, t_dim in mapping.items():
                self._reset_dim(b, p_dim, self._tile(target, t_dim, l))
        else:
            reads = [i for i, op in enumerate(b.operands) if op.producer == target.name
                     and not op.is_init]
            if not reads:
                raise self._error(prim, f"block '{b.name}' does not read block '{target.name}'")
            others = sorted({c.name for c, _ in self._consumers(target) if c is not b})
            if others:
                raise self._error(prim, f"block '{target.name}' is also read by "
                                  f"{', '.join(repr(o) for o in others)}: the nest is re-rooted at "
                                  f"'{b.name}', so it must be the only consumer")
            self._spatial_above(target, outer, prim, f"'{b.name}' needs complete results of "
                                f"'{target.name}'")
            mapping = self._dim_correspondence(target, b, reads[0], prim)
            touched = set()
            for t_dim, c_dim in mapping.items():
                self._reset_dim(b, c_dim, self._tile(target, t_dim, l))
                touched.add(c_dim)
            for lid in outer:
                for d, _ in self._state.loops[lid].parts:
                    if d not in mapping:
                        raise self._error(prim, f"loop dimension {d} of '{target.name}' does not "
                                          f"index the data '{b.name}' reads")
        b.attach = Attach(prim, target.name, l.id)
        self._mod_cache = None

    def _spatial_above(self, target: Block, outer: list[int], prim: str, why: str) -> None:
        for lid in outer:
            loop = self._state.loops[lid]
            if self._loop_kind(target, loop) != SPATIAL:
                raise self._error(prim, f"loop {self._loop_name(loop)} at or above the target "
                                  f"loop is a reduction loop, but {why}")

    def _tile(self, target: Block, dim: int, loop: Loop) -> int:
        from .state import inner_extent

        return inner_extent(self._state, target, dim, loop.id)

    def _reset_dim(self, b: Block, dim: int, extent: int) -> None:
        """Give ``b``'s dimension ``dim`` one loop of ``extent`` (its region after compute_at)."""
        if len(b.levels[dim]) != 1 or len(self._state.loops[b.levels[dim][0]].parts) != 1:
            raise self._error("compute_at", f"block '{b.name}': tile its loops after compute_at, "
                              "not before")
        loop = self._state.loops[b.levels[dim][0]]
        loop.parts = [(dim, extent)]

    def decompose_reduction(self, block: BlockRV, loop: LoopRV) -> BlockRV:
        """Compute the reduction's initialisation right before ``loop`` (inside the loop above
        it) instead of once for the whole output; returns the init block."""
        b = self._block(block, "decompose_reduction")
        l = self._loop(loop, "decompose_reduction")
        chain = self._state.enclosing(b)
        if l.id not in chain:
            raise self._error("decompose_reduction", f"loop {self._loop_name(l)} does not "
                              f"enclose block '{b.name}'")
        init = self._init_block(b)
        if init is None:
            raise self._error("decompose_reduction", f"block '{b.name}' has no init block (a "
                              "linalg.fill of its output)")
        if REDUCTION not in b.kinds:
            raise self._error("decompose_reduction", f"block '{b.name}' is not a reduction")
        pos = chain.index(l.id)
        rv = self._new(BlockRV, (init.func, init.name))
        if pos > 0:
            above = self._state.loops[chain[pos - 1]]
            if above.block != b.name:
                raise self._error("decompose_reduction", "the loop above must be the block's own")
            self._attach(init, b, above, "compute_at")
        self._record(DECOMPOSE_REDUCTION, [block, loop], {}, [rv])
        return rv

    def _init_block(self, b: Block) -> Block | None:
        for operand in b.operands:
            if operand.is_init and operand.producer is not None:
                producer = self._state.blocks[(b.func, operand.producer)]
                if producer.op_name == "linalg.fill":
                    return producer
        return None

    def compute_inline(self, block: BlockRV) -> None:
        """Inline an elementwise producer into its consumers (its block disappears)."""
        b = self._block(block, "compute_inline")
        self._check_inline(b, "compute_inline")
        consumers = self._consumers(b)
        if not consumers:
            raise self._error("compute_inline", f"block '{b.name}' has no consumer block")
        if any(c.operands[i].is_init for c, i in consumers):
            raise self._error("compute_inline", f"block '{b.name}' initialises a consumer's "
                              "output; decompose_reduction places it instead")
        for c, _ in consumers:
            if any(len(lv) > 1 for lv in c.levels) or c.attach:
                raise self._error("compute_inline", f"consumer '{c.name}' was already scheduled;"
                                  " inline before scheduling it")
        self._inline(b, consumers, "compute_inline")
        self._record(COMPUTE_INLINE, [block], {}, [])

    def reverse_compute_inline(self, block: BlockRV) -> None:
        """Inline an elementwise consumer into its producer (the producer's block computes the
        consumer's result)."""
        b = self._block(block, "reverse_compute_inline")
        self._check_inline(b, "reverse_compute_inline")
        producers = {op.producer for op in b.operands if op.producer and not op.is_init}
        if len(producers) != 1:
            raise self._error("reverse_compute_inline", f"block '{b.name}' must read exactly one "
                              f"block, reads {sorted(producers) or 'none'}")
        producer = self._state.blocks[(b.func, producers.pop())]
        if REDUCTION in producer.kinds:
            raise self._error("reverse_compute_inline", f"producer '{producer.name}' is a "
                              "reduction: its result is complete only after the last reduction "
                              "step (use reverse_compute_at)")
        if self._consumers(producer) != [(b, i) for i, op in enumerate(b.operands)
                                         if op.producer == producer.name]:
            raise self._error("reverse_compute_inline", f"producer '{producer.name}' has other "
                              "consumers")
        if any(len(lv) > 1 for lv in producer.levels) or producer.attach:
            raise self._error("reverse_compute_inline", f"producer '{producer.name}' was already "
                              "scheduled; inline before scheduling it")
        self._inline(producer, [(b, 0)], "reverse_compute_inline", into_producer=b)
        self._record(REVERSE_COMPUTE_INLINE, [block], {}, [])

    def _check_inline(self, b: Block, prim: str) -> None:
        if REDUCTION in b.kinds:
            raise self._error(prim, f"block '{b.name}' is a reduction")
        if b.origin.get("kind"):
            raise self._error(prim, f"block '{b.name}' is a cache stage")
        if any(len(lv) > 1 for lv in b.levels) or b.attach:
            raise self._error(prim, f"block '{b.name}' was already scheduled")
        if b.op_name == "linalg.fill":
            raise self._error(prim, f"block '{b.name}' is a fill; use decompose_reduction")

    def _inline(self, producer: Block, consumers: list[tuple[Block, int]], prim: str,
                into_producer: Block | None = None) -> None:
        """Update the state for an inline and record the rewrite the materializer applies.

        ``compute_inline``: ``producer`` disappears into its consumers. With ``into_producer``
        (``reverse_compute_inline`` of that consumer): the consumer disappears and ``producer``
        now computes its result over the consumer's domain."""
        from .inline import check_inlinable

        reason = check_inlinable(self._original, producer.func, producer.name)
        if reason:
            raise self._error(prim, reason)
        merged = [op for op in producer.operands if not op.is_init]
        if into_producer is None:
            producer.inlined = True
            for c, _ in consumers:
                # The order of the fused op's operands (inline.py's _fuse_into): the inputs it
                # kept, the producer's inputs, then its outputs.
                c.operands = [op for op in c.operands
                              if op.producer != producer.name and not op.is_init] + merged + \
                    [op for op in c.operands if op.is_init]
            self._inlines.append(("compute_inline", producer.func, producer.name))
        else:
            consumer = into_producer
            consumer.inlined = True
            producer.operands = [op for op in consumer.operands
                                 if op.producer != producer.name and not op.is_init] + merged + \
                [op for op in consumer.operands if op.is_init]
            for attr in ("kinds", "extents", "levels", "order", "output_map"):
                setattr(producer, attr, getattr(consumer, attr))
            for lid in producer.order:
                self._state.loops[lid].block = producer.name
            for other in self._state.blocks.values():
                for op in other.operands:
                    if op.producer == consumer.name:
                        op.producer = producer.name
            self._inlines.append(("reverse_compute_inline", consumer.func, consumer.name))
        self._mod_cache = None

    def cache_read(self, block: BlockRV, read_buffer_index: int, storage_scope: str) -> BlockRV:
        """Stage input ``read_buffer_index`` of ``block`` in a buffer of ``storage_scope``
        (``global``/``local`` on CPU, ``shared`` on GPU); returns the copy block, which
        ``compute_at`` places (a copy per tile)."""
        b = self._block(block, "cache_read")
        inputs = [i for i, op in enumerate(b.operands) if not op.is_init]
        if not 0 <= read_buffer_index < len(inputs):
            raise self._error("cache_read", f"block '{b.name}' has {len(inputs)} inputs, no input "
                              f"#{read_buffer_index}")
        return self._cache(b, "cache_read", inputs[read_buffer_index], read_buffer_index,
                           storage_scope, CACHE_READ)

    def cache_write(self, block: BlockRV, write_buffer_index: int, storage_scope: str) -> BlockRV:
        """Make ``block`` compute into a buffer of ``storage_scope`` and copy the result out;
        returns the copy-out block, which ``reverse_compute_at`` places."""
        b = self._block(block, "cache_write")
        outputs = [i for i, op in enumerate(b.operands) if op.is_init]
        if not 0 <= write_buffer_index < len(outputs):
            raise self._error("cache_write", f"block '{b.name}' has {len(outputs)} outputs")
        return self._cache(b, "cache_write", outputs[write_buffer_index], write_buffer_index,
                           storage_scope, CACHE_WRITE)

    def _cache(self, b: Block, kind: str, operand: int, index: int, scope: str,
               inst_kind: InstructionKind) -> BlockRV:
        if scope not in ("global", "local", "shared"):
            raise self._error(kind, f"storage_scope must be global, local or shared, got {scope!r}")
        if any(x.origin.get("source") == b.name and x.origin.get("operand") == operand
               for x in self._state.blocks.values()):
            raise self._error(kind, f"input #{index} of '{b.name}' is already cached")
        name = f"{b.name}_{'read' if kind == 'cache_read' else 'write'}{index}_{scope}"
        rank = len(b.operands[operand].map_results)
        if rank == 0:
            raise self._error(kind, f"operand #{index} of '{b.name}' is a scalar, not a tensor")
        read = b.operands[operand].map_results
        extents = []
        for r in range(rank):
            d = read[r]
            if d is None:
                raise self._error(kind, f"operand #{operand} of '{b.name}' is indexed by an "
                                  "expression; only plain dimensions can be cached")
            extents.append(b.extents[d])
        from .state import Operand

        cache = Block(name, b.func, [SPATIAL] * rank, extents, [], [],
                      [Operand(b.name if kind == "cache_write" else b.operands[operand].producer,
                               list(range(rank)), False)],
                      list(range(rank)), "linalg.copy",
                      origin={"kind": kind, "source": b.name, "operand": operand, "scope": scope})
        for dim, extent in enumerate(extents):
            loop = self._state.new_loop(cache, [(dim, extent)])
            cache.levels.append([loop.id])
            cache.order.append(loop.id)
        self._state.blocks[(b.func, name)] = cache
        if kind == "cache_read":
            b.operands[operand] = type(b.operands[operand])(name, list(read), False)
        rv = self._new(BlockRV, (b.func, name))
        self._record(inst_kind, [self._rv_of_block(b), index, scope], {}, [rv])
        return rv

    def _rv_of_block(self, b: Block) -> BlockRV:
        for rv, value in self._values.items():
            if isinstance(rv, BlockRV) and value == (b.func, b.name):
                return rv
        raise ScheduleError("internal: block without a random variable")

    # -- sampling ----------------------------------------------------------------------------
    def sample_perfect_tile(self, loop: LoopRV, n: int, max_innermost_factor: int = 16,
                            decision: Sequence[int] | None = None) -> list[ExprRV]:
        """``n`` factors whose product is ``loop``'s extent (innermost at most
        ``max_innermost_factor``), drawn at random or given as ``decision``."""
        l = self._loop(loop, "sample_perfect_tile")
        if n < 1:
            raise self._error("sample_perfect_tile", f"n must be >= 1, got {n}")
        if l.extent < 1:
            raise self._error("sample_perfect_tile", f"loop {self._loop_name(l)} has a dynamic extent")
        if decision is None:
            try:
                values = sampling.sample_perfect_tile(self._rng, l.extent, n, max_innermost_factor)
            except ValueError as e:
                raise self._error("sample_perfect_tile", str(e)) from None
        else:
            values = [int(v) for v in decision]
            if len(values) != n or not sampling.is_perfect(l.extent, values):
                raise self._error("sample_perfect_tile", f"decision {list(decision)} is not a "
                                  f"tiling of loop {self._loop_name(l)} (extent {l.extent}) into "
                                  f"{n} factors")
            if max_innermost_factor > 0 and values[-1] > max_innermost_factor:
                raise self._error("sample_perfect_tile", f"decision {values}: innermost factor "
                                  f"{values[-1]} exceeds max_innermost_factor={max_innermost_factor}")
        rvs = [self._new(ExprRV, v) for v in values]
        self._record(SAMPLE_PERFECT_TILE, [loop, n, max_innermost_factor], {}, list(rvs),
                     list(values))
        return rvs

    def sample_categorical(self, candidates: Sequence[int], probs: Sequence[float],
                           decision: int | None = None) -> ExprRV:
        """One of ``candidates`` drawn with ``probs``; the decision is its index."""
        if len(candidates) != len(probs) or not candidates:
            raise self._error("sample_categorical", "candidates and probs must be non-empty and "
                              "of the same length")
        if decision is None:
            try:
                decision = sampling.sample_categorical(self._rng, probs)
            except ValueError as e:
                raise self._error("sample_categorical", str(e)) from None
        elif not isinstance(decision, int) or not 0 <= decision < len(candidates):
            raise self._error("sample_categorical", f"decision {decision!r} is not an index into "
                              f"{len(candidates)} candidates")
        rv = self._new(ExprRV, candidates[decision])
        self._record(SAMPLE_CATEGORICAL, [list(candidates), list(probs)], {}, [rv], decision)
        return rv

    # -- results -----------------------------------------------------------------------------
    @property
    def mod(self) -> ir.Module:
        """The scheduled module (a new copy of the original with the schedule applied)."""
        if self._mod_cache is None:
            from .materialize import materialize

            self._mod_cache = materialize(self)
        return self._mod_cache

    def as_transform(self) -> ir.Module:
        """The schedule as a transform-dialect module (see :meth:`Trace.as_transform`)."""
        from .materialize import build_transform

        with self.context, ir.Location.unknown():
            return build_transform(self)

    # used by the materializer
    @property
    def state(self) -> KernelState:
        return self._state

    @property
    def inlines(self) -> list[tuple[str, str, str]]:
        return list(self._inlines)


class _Removed:
    def __repr__(self) -> str:
        return "<removed>"


_REMOVED = _Removed()


def _lower_graph_ops(module: ir.Module) -> None:
    """Schedules act on loop-level kernels: lower graph ops first if there are any."""
    if find_first(module.operation, lambda op: op.name.startswith("graph.")):
        from mlcir.passes import run_pipeline

        run_pipeline(module, "graph-to-loop")
