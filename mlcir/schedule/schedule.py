"""``mlcir.Schedule``: TensorIR's scheduling primitives over loop-level kernels.

The front of the package: each primitive resolves its handles (random variables) to the kernel
state's blocks and loops, lets its home module (named in the primitive's entry of :data:`.instruction.KINDS`:
:mod:`.loops`, :mod:`.annotate`, :mod:`.vector_tile`, :mod:`.compute_location`, :mod:`.cache`,
…) check legality and update the state (:mod:`.state`), and appends one instruction to the
trace. ``sch.mod`` materialises the state:
the recorded Python rewrites (inlining) then a transform script (:mod:`.materialize`) applied
to a copy of the original kernel, so the Python object and the transform IR cannot disagree.

Names and signatures follow TVM (``get_block(name, func_name)``, ``split(loop, factors)``,
``sample_perfect_tile(loop, n, max_innermost_factor, decision)`` …) so scripts written for TVM
read the same; differences are listed in docs/schedules.md ("Decisions and limits").
"""

from __future__ import annotations

import random
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Sequence

from mlir import ir

from mlcir.ir import clone_module, find_first, make_context, parse

from . import annotate, cache, compute_location, loops, sampling
from . import (align, blockize, dataflow, layout, reduction, rewrites, sample_location, scope, tensorize,
               unit_loop, vector_tile)
from .errors import PrimitiveError, ScheduleError
from .instruction import (ANNOTATE, BIND, CACHE_READ, CACHE_WRITE, COMPUTE_AT, COMPUTE_INLINE,
                          DECOMPOSE_REDUCTION, FUSE, GET_BLOCK, GET_CHILD_BLOCKS, GET_LOOPS,
                          PARALLEL, REORDER, REVERSE_COMPUTE_AT, REVERSE_COMPUTE_INLINE,
                          SAMPLE_CATEGORICAL, SAMPLE_PARTITIONED_TILE, SAMPLE_PERFECT_TILE,
                          SPLIT, UNANNOTATE, UNROLL,
                          VECTORIZE, BlockRV, ExprRV, Instruction, InstructionKind, LoopRV, RV)
from .instruction import (ADD_UNIT_LOOP, BLOCKIZE, GET_CONSUMERS, GET_PRODUCERS, RFACTOR,
                          SAMPLE_COMPUTE_LOCATION, SET_SCOPE, STORAGE_ALIGN, TENSORIZE,
                          TRANSFORM_LAYOUT)
from .materialize import build_transform, materialize
from .rewrite import Rewrite
from .state import Block, KernelState, Loop, TileKnob, read_blocks
from .trace import Trace

DEFAULT_SEED = 42


@dataclass(frozen=True)
class LoopInfo:
    """What ``sch.get(loop)`` returns."""

    name: str
    extent: int
    kind: str
    annotations: dict[str, Any]


@dataclass(frozen=True)
class _TileSample:
    """One ``sample_perfect_tile`` call, which the factors it gave point back to (a split by
    all of them, in order, makes loops whose tile sizes are knobs)."""

    decision: tuple[int, ...]
    max_innermost_factor: int


class Schedule:
    """A schedule of the loop-level kernels in ``mod`` (see the module docstring).

    ``mod`` is an ``ir.Module`` or MLIR text holding ``func.func`` kernels on tensors whose
    compute blocks are linalg ops (named by ``loop.block``, else by the documented naming rule);
    graph-level ops are lowered to kernels first. ``seed`` fixes every sampling decision.
    ``trace``, when given, is replayed on the new schedule (the way to rebuild a schedule from
    a recorded trace).
    """

    # What a dynamic dim reads as (None: dynamic). A subclass that plans a schedule at a
    # representative size sets it; the plan's trace then replays on the dynamic kernel.
    dynamic_extent: int | None = None

    def __init__(self, mod: Any, *, seed: int | None = None, trace: Trace | None = None):
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
            read_blocks(self._original, self._state, self.dynamic_extent)
        self._rng = random.Random(DEFAULT_SEED if seed is None else seed)
        self.trace = Trace()
        # The symbol table: a block's (func, name), a loop's id or a sampled value.
        self._values: dict[RV, Any] = {}
        # A sampled tile factor -> the sample_perfect_tile it came from and its position there.
        self._tile_samples: dict[RV, tuple[_TileSample, int]] = {}
        self._mod_cache: ir.Module | None = None
        if trace is not None:
            trace.apply_to_schedule(self)

    # -- basics ------------------------------------------------------------------------------
    @property
    def context(self) -> ir.Context:
        return self._original.context

    @property
    def original(self) -> ir.Module:
        """The kernel as given (with derived block names), never modified."""
        return self._original

    @property
    def state(self) -> KernelState:
        """The logical loop nests (read by design spaces and feature extraction)."""
        return self._state

    def get(self, rv: RV) -> Any:
        """The value behind a random variable: an int (sampled), a block name, or a
        :class:`LoopInfo`."""
        value = self._value(rv, "get")
        if isinstance(rv, LoopRV) and value == sample_location.ROOT:
            return LoopInfo("root", 1, "spatial", {})
        if isinstance(rv, LoopRV):
            loop = self._state.loops[value]
            return LoopInfo(self._state.loop_name(loop), loop.extent, self._state.loop_kind(loop),
                            dict(loop.annotations))
        if isinstance(rv, BlockRV):
            return value[1]
        return value

    def _value(self, rv: Any, prim: str) -> Any:
        if not isinstance(rv, RV) or rv not in self._values:
            raise ScheduleError(f"{prim}: {rv!r} is not a random variable of this schedule")
        value = self._values[rv]
        if isinstance(rv, LoopRV) and value == sample_location.ROOT:
            if prim not in ("compute_at", "reverse_compute_at", "get"):
                raise ScheduleError(f"{prim}: {rv!r} is the root mark of "
                                    "sample_compute_location (no loop): only compute_at and "
                                    "reverse_compute_at take it")
            return value
        if isinstance(rv, LoopRV) and value not in self._state.loops:
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

    @contextmanager
    def _updating(self) -> Iterator[None]:
        """Around a state update: name the instruction in its error; the state may have
        changed either way, so the scheduled module is made afresh."""
        try:
            yield
        except PrimitiveError as error:
            raise self._error(error.primitive, error.reason) from None
        finally:
            self._mod_cache = None

    # -- handles -----------------------------------------------------------------------------
    def _block(self, rv: Any, prim: str) -> Block:
        if not isinstance(rv, BlockRV):
            raise self._error(prim, f"expected a block, got {rv!r}")
        key = self._value(rv, prim)
        block = self._state.blocks[key]
        if block.inlined:
            raise self._error(prim, f"block '{block.name}' was inlined")
        if block.origin.get("kind") == blockize.KIND and prim not in blockize.TAKES_OUTER:
            raise self._error(prim, f"block '{block.name}' is the outer block of a blockize "
                              f"(a tile of '{block.origin['inner']}'): {prim} takes "
                              f"'{block.origin['inner']}' or its loops")
        return block

    def _loop(self, rv: Any, prim: str) -> Loop:
        if not isinstance(rv, LoopRV):
            raise self._error(prim, f"expected a loop, got {rv!r}")
        return self._state.loops[self._value(rv, prim)]

    def _is_root(self, rv: Any, prim: str) -> bool:
        """Whether ``rv`` is the root mark ``sample_compute_location`` gives where no loop is
        legal."""
        return isinstance(rv, LoopRV) and self._value(rv, prim) == sample_location.ROOT

    def _block_or_loop(self, rv: Any, prim: str) -> Block | Loop:
        if isinstance(rv, LoopRV):
            return self._loop(rv, prim)
        return self._block(rv, prim)

    def _rv_of_block(self, b: Block) -> BlockRV:
        """The first handle given out for ``b``."""
        for rv, value in self._values.items():
            if isinstance(rv, BlockRV) and value == (b.func, b.name):
                return rv
        raise ScheduleError("internal: block without a random variable")

    def _tile_knobs(self, factors: Sequence[Any]) -> list[TileKnob | None]:
        """The knobs of the loops of a split by ``factors``: when they are all the factors of
        one ``sample_perfect_tile``, in order, the outer loops' tile sizes are its knobs."""
        sources = [self._tile_samples.get(f) if isinstance(f, ExprRV) else None for f in factors]
        if any(s is None for s in sources) or len({id(s[0]) for s in sources}) != 1 \
                or [s[1] for s in sources] != list(range(len(factors))):
            return []
        sample = sources[0][0]
        return sampling.tile_knobs(sample.decision, sample.max_innermost_factor, len(factors))

    # -- lookups -----------------------------------------------------------------------------
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
            owner = self._state.owner(loop)
            keys = [(owner.func, owner.name)] + [
                (b.func, b.name) for b in self._state.blocks.values()
                if not b.inlined and loop.id in self._state.enclosing(b) and b is not owner]
        else:
            b = self._block(block_or_loop, "get_child_blocks")
            keys = [(b.func, b.origin["inner"])] if b.origin.get("kind") == blockize.KIND \
                else []
        rvs = [self._new(BlockRV, k) for k in keys]
        self._record(GET_CHILD_BLOCKS, [block_or_loop], {}, list(rvs))
        return rvs

    def get_producers(self, block: BlockRV) -> list[BlockRV]:
        """The blocks whose results ``block`` reads (a reduction's init block among them)."""
        b = self._block(block, "get_producers")
        rvs = [self._new(BlockRV, (p.func, p.name)) for p in dataflow.producers(self._state, b)]
        self._record(GET_PRODUCERS, [block], {}, list(rvs))
        return rvs

    def get_consumers(self, block: BlockRV) -> list[BlockRV]:
        """The blocks that read ``block``'s result."""
        b = self._block(block, "get_consumers")
        rvs = [self._new(BlockRV, (c.func, c.name)) for c in dataflow.consumers(self._state, b)]
        self._record(GET_CONSUMERS, [block], {}, list(rvs))
        return rvs

    # -- loops (loops.py) --------------------------------------------------------------------
    def split(self, loop: LoopRV, factors: Sequence[int | ExprRV | None]) -> list[LoopRV]:
        """Split ``loop`` into ``len(factors)`` nested loops (outer first); one factor may be
        ``None`` (inferred). Factors must multiply to the extent exactly."""
        target = self._loop(loop, "split")
        values = [int(self._value(f, "split")) if isinstance(f, ExprRV) else f for f in factors]
        with self._updating():
            ids = loops.split(self._state, target, values, self._tile_knobs(factors))
        rvs = [self._new(LoopRV, i) for i in ids]
        self._record(SPLIT, [loop, list(factors)], {}, list(rvs))
        return rvs

    def reorder(self, *loop_rvs: LoopRV) -> None:
        """Put the loops (of one block's nest) in this order, in the positions they occupy."""
        if len(loop_rvs) == 1 and isinstance(loop_rvs[0], (list, tuple)):
            loop_rvs = tuple(loop_rvs[0])
        ls = [self._loop(rv, "reorder") for rv in loop_rvs]
        with self._updating():
            loops.reorder(self._state, ls)
        self._record(REORDER, list(loop_rvs), {}, [])

    def fuse(self, *loop_rvs: LoopRV) -> LoopRV:
        """Fuse consecutive loops of one block into one loop."""
        if len(loop_rvs) == 1 and isinstance(loop_rvs[0], (list, tuple)):
            loop_rvs = tuple(loop_rvs[0])
        ls = [self._loop(rv, "fuse") for rv in loop_rvs]
        with self._updating():
            fused = loops.fuse(self._state, ls)
        rv = self._new(LoopRV, fused)
        self._record(FUSE, list(loop_rvs), {}, [rv])
        return rv

    # -- annotations (annotate.py) -----------------------------------------------------------
    def parallel(self, loop: LoopRV) -> None:
        """Run ``loop``'s iterations on several threads (OpenMP; a spatial loop)."""
        target = self._loop(loop, "parallel")
        with self._updating():
            annotate.parallel(self._state, target)
        self._record(PARALLEL, [loop], {}, [])

    def vectorize(self, loop: LoopRV) -> None:
        """Vectorize the tile formed by ``loop`` and every loop inside it (MLIR vectorizes whole
        linalg tiles): those loops must be the innermost split level of their dimensions."""
        target = self._loop(loop, "vectorize")
        with self._updating():
            vector_tile.vectorize(self._state, target)
        self._record(VECTORIZE, [loop], {}, [])

    def unroll(self, loop: LoopRV, factor: int | ExprRV | None = None) -> None:
        """Unroll ``loop`` completely, or by ``factor`` (an mlcir extension of TVM's unroll)."""
        target = self._loop(loop, "unroll")
        value = self._value(factor, "unroll") if isinstance(factor, ExprRV) else factor
        with self._updating():
            annotate.unroll(self._state, target, value)
        self._record(UNROLL, [loop], {} if factor is None else {"factor": factor}, [])

    def bind(self, loop: LoopRV, thread_axis: str) -> None:
        """Map ``loop`` to a GPU grid axis (``blockIdx.x``, ``threadIdx.y``, …)."""
        target = self._loop(loop, "bind")
        with self._updating():
            annotate.bind(self._state, target, thread_axis)
        self._record(BIND, [loop, thread_axis], {}, [])

    def annotate(self, block_or_loop: BlockRV | LoopRV, ann_key: str, ann_val: Any) -> None:
        """Attach ``ann_key = ann_val`` (an int, float, str or bool, or lists and str-keyed
        dicts of them, as TVM's annotation values) to a block or loop; it is emitted as a
        ``loop.<ann_key>`` attribute, and some keys steer codegen (docs/schedules.md)."""
        target = self._block_or_loop(block_or_loop, "annotate")
        with self._updating():
            annotate.annotate(target, ann_key, ann_val)
        self._record(ANNOTATE, [block_or_loop, ann_key, ann_val], {}, [])

    def unannotate(self, block_or_loop: BlockRV | LoopRV, ann_key: str) -> None:
        target = self._block_or_loop(block_or_loop, "unannotate")
        with self._updating():
            annotate.unannotate(target, ann_key)
        self._record(UNANNOTATE, [block_or_loop, ann_key], {}, [])

    # -- compute location (compute_location.py) ----------------------------------------------
    def compute_at(self, block: BlockRV, loop: LoopRV) -> None:
        """Compute the producer ``block`` under ``loop`` of its consumer, only the region
        that one iteration of ``loop`` needs."""
        b = self._block(block, "compute_at")
        if self._is_root(loop, "compute_at"):  # (TVM's root mark: the block stays)
            self._record(COMPUTE_AT, [block, loop], {}, [])
            return
        at = self._loop(loop, "compute_at")
        with self._updating():
            compute_location.compute_at(self._state, b, at)
        self._record(COMPUTE_AT, [block, loop], {}, [])

    def reverse_compute_at(self, block: BlockRV, loop: LoopRV) -> None:
        """Compute the consumer ``block`` under ``loop`` of its producer, right after the tile
        of the producer that one iteration of ``loop`` computes."""
        b = self._block(block, "reverse_compute_at")
        if self._is_root(loop, "reverse_compute_at"):
            self._record(REVERSE_COMPUTE_AT, [block, loop], {}, [])
            return
        at = self._loop(loop, "reverse_compute_at")
        with self._updating():
            compute_location.reverse_compute_at(self._state, b, at)
        self._record(REVERSE_COMPUTE_AT, [block, loop], {}, [])

    def decompose_reduction(self, block: BlockRV, loop: LoopRV) -> BlockRV:
        """Compute the reduction's initialisation right before ``loop`` (inside the loop above
        it) instead of once for the whole output; returns the init block."""
        b = self._block(block, "decompose_reduction")
        at = self._loop(loop, "decompose_reduction")
        with self._updating():
            init = compute_location.decompose_reduction(self._state, b, at)
        rv = self._new(BlockRV, (init.func, init.name))
        self._record(DECOMPOSE_REDUCTION, [block, loop], {}, [rv])
        return rv

    def compute_inline(self, block: BlockRV) -> None:
        """Inline an elementwise producer into its consumers (its block disappears)."""
        b = self._block(block, "compute_inline")
        with self._updating():
            compute_location.compute_inline(self._state, self._original, b)
        self._record(COMPUTE_INLINE, [block], {}, [])

    def reverse_compute_inline(self, block: BlockRV) -> None:
        """Inline an elementwise consumer into its producer (the producer's block computes the
        consumer's result)."""
        b = self._block(block, "reverse_compute_inline")
        with self._updating():
            compute_location.reverse_compute_inline(self._state, self._original, b)
        self._record(REVERSE_COMPUTE_INLINE, [block], {}, [])

    def add_unit_loop(self, block_or_loop: BlockRV | LoopRV) -> LoopRV:
        """A new loop of one iteration right above ``block_or_loop`` (above the outermost
        loop of a block's own nest); returns it."""
        target = self._block_or_loop(block_or_loop, "add_unit_loop")
        with self._updating():
            loop_id = unit_loop.add_unit_loop(self._state, target)
        rv = self._new(LoopRV, loop_id)
        self._record(ADD_UNIT_LOOP, [block_or_loop], {}, [rv])
        return rv

    def blockize(self, target: LoopRV) -> BlockRV:
        """Make the tile of a block under the loop ``target`` a block of its own,
        ``<B>_o``, whose loops are those above ``target`` (TVM's blockize of a loop);
        ``tensorize`` takes it (see blockize.py for what it is in the IR)."""
        loop = self._loop(target, "blockize")
        with self._updating():
            outer = blockize.blockize(self._state, loop)
        rv = self._new(BlockRV, (outer.func, outer.name))
        self._record(BLOCKIZE, [target], {}, [rv])
        return rv

    # -- reduction (reduction.py) ------------------------------------------------------------
    def rfactor(self, loop: LoopRV, factor_axis: int = 0) -> BlockRV:
        """Factor the reduction over ``loop``, one level of the block's split reduction
        dimension: a new block ``<C>_rf`` reduces over the other level and keeps ``loop`` as
        the spatial dimension ``factor_axis`` of its result; the block ``C`` then reduces that
        result over ``loop`` (TVM's rfactor). Returns the rf block."""
        target = self._loop(loop, "rfactor")
        with self._updating():
            rf = reduction.rfactor(self._state, self._original, target, factor_axis)
        rv = self._new(BlockRV, (rf.func, rf.name))
        self._record(RFACTOR, [loop, factor_axis], {}, [rv])
        return rv

    def tensorize(self, block_or_loop: BlockRV | LoopRV, tensor_intrin: str) -> None:
        """Compute the tile under a loop (or a block's whole nest) with the registered tensor
        intrinsic ``tensor_intrin`` (``mlcir.schedule.register_intrin``), which must describe
        exactly what the tile computes."""
        target = self._block_or_loop(block_or_loop, "tensorize")
        if isinstance(target, Block) and target.origin.get("kind") == blockize.KIND:
            target = blockize.tile_loop(self._state, target)
        if isinstance(target, Block):
            if not target.order:
                raise self._error("tensorize", f"block '{target.name}' has no loop")
            target = self._state.loops[target.order[0]]
        with self._updating():
            tensorize.tensorize(self._state, self._original, target, tensor_intrin)
        self._record(TENSORIZE, [block_or_loop, tensor_intrin], {}, [])

    def set_scope(self, block: BlockRV, buffer_index: int, storage_scope: str) -> None:
        """Write ``block``'s result to a buffer of its own in ``storage_scope`` (``global``,
        ``local``, or ``shared``: GPU workgroup memory)."""
        b = self._block(block, "set_scope")
        with self._updating():
            kernel = rewrites.rewritten(self._original, self._state.rewrites)
            spec = scope.check(kernel, b.func, b.name, buffer_index, storage_scope)
            self._state.rewrites.append(Rewrite(scope.KIND, b.func, spec))
        self._record(SET_SCOPE, [block, buffer_index, storage_scope], {}, [])

    def storage_align(self, block: BlockRV, buffer_index: int, axis: int, factor: int,
                      offset: int) -> None:
        """Pad the stride of ``axis`` of the buffer ``block`` writes so that it is ``offset``
        modulo ``factor`` (the second-to-last axis: its rows)."""
        b = self._block(block, "storage_align")
        with self._updating():
            kernel = rewrites.rewritten(self._original, self._state.rewrites)
            spec = align.check(kernel, b.func, b.name, buffer_index, axis, factor, offset)
            self._state.rewrites.append(Rewrite(align.KIND, b.func, spec))
        self._record(STORAGE_ALIGN, [block, buffer_index, axis, factor, offset], {}, [])

    # -- layout (layout.py) ------------------------------------------------------------------
    def transform_layout(self, block: BlockRV, buffer: tuple[str, int],
                         index_map: Callable[..., Any] | str) -> None:
        """Store the tensor ``buffer`` of ``block`` (``("write", 0)`` or ``("read", i)``, a
        tensor written by a block) in the layout ``index_map`` gives, a permutation or packing
        such as ``lambda i, j: (i // 4, j, i % 4)`` (TVM's transform_layout)."""
        b = self._block(block, "transform_layout")
        with self._updating():
            text = layout.transform_layout(self._state, self._original, b, buffer, index_map)
        self._record(TRANSFORM_LAYOUT, [block, list(buffer), text], {}, [])

    # -- cache (cache.py) --------------------------------------------------------------------
    def cache_read(self, block: BlockRV, read_buffer_index: int, storage_scope: str) -> BlockRV:
        """Stage input ``read_buffer_index`` of ``block`` in a buffer of ``storage_scope``
        (``global``/``local`` on CPU, ``shared`` on GPU); returns the copy block, which
        ``compute_at`` places (a copy per tile)."""
        b = self._block(block, "cache_read")
        with self._updating():
            stage = cache.cache_read(self._state, b, read_buffer_index, storage_scope)
        rv = self._new(BlockRV, (stage.func, stage.name))
        self._record(CACHE_READ, [self._rv_of_block(b), read_buffer_index, storage_scope], {},
                     [rv])
        return rv

    def cache_write(self, block: BlockRV, write_buffer_index: int, storage_scope: str) -> BlockRV:
        """Make ``block`` compute into a buffer of ``storage_scope`` and copy the result out;
        returns the copy-out block, which ``reverse_compute_at`` places."""
        b = self._block(block, "cache_write")
        with self._updating():
            stage = cache.cache_write(self._state, b, write_buffer_index, storage_scope)
        rv = self._new(BlockRV, (stage.func, stage.name))
        self._record(CACHE_WRITE, [self._rv_of_block(b), write_buffer_index, storage_scope], {},
                     [rv])
        return rv

    # -- sampling (sampling.py) --------------------------------------------------------------
    def sample_perfect_tile(self, loop: LoopRV, n: int, max_innermost_factor: int = 16,
                            decision: Sequence[int] | None = None) -> list[ExprRV]:
        """``n`` factors whose product is ``loop``'s extent (innermost at most
        ``max_innermost_factor``), drawn at random or given as ``decision``."""
        target = self._loop(loop, "sample_perfect_tile")
        with self._updating():
            values = sampling.sample_perfect_tile(self._state, self._rng, target, n,
                                                  max_innermost_factor, decision)
        sample = _TileSample(tuple(values), max_innermost_factor)
        rvs = [self._new(ExprRV, v) for v in values]
        for position, rv in enumerate(rvs):
            self._tile_samples[rv] = (sample, position)
        self._record(SAMPLE_PERFECT_TILE, [loop, n, max_innermost_factor], {}, list(rvs),
                     list(values))
        return rvs

    def sample_partitioned_tile(self, loop: LoopRV, n: int, partition_pos: int = 1,
                                innerpart_factor: int = 1, max_innermost_factor: int = 16,
                                decision: Sequence[int] | None = None) -> list[ExprRV]:
        """``n`` factors for a split that need not divide ``loop``'s extent: the inner part
        (from ``partition_pos``) is a multiple of ``innerpart_factor``, the outer part covers
        the rest rounding up (the last tile is partial); drawn at random or given."""
        target = self._loop(loop, "sample_partitioned_tile")
        with self._updating():
            values = sampling.sample_partitioned_tile(self._state, self._rng, target, n,
                                                      partition_pos, innerpart_factor,
                                                      max_innermost_factor, decision)
        rvs = [self._new(ExprRV, v) for v in values]
        self._record(SAMPLE_PARTITIONED_TILE,
                     [loop, n, partition_pos, innerpart_factor, max_innermost_factor], {},
                     list(rvs), list(values))
        return rvs

    def sample_categorical(self, candidates: Sequence[int], probs: Sequence[float],
                           decision: int | None = None) -> ExprRV:
        """One of ``candidates`` drawn with ``probs``; the decision is its index."""
        with self._updating():
            index = sampling.sample_categorical(self._rng, candidates, probs, decision)
        rv = self._new(ExprRV, candidates[index])
        self._record(SAMPLE_CATEGORICAL, [list(candidates), list(probs)], {}, [rv], index)
        return rv

    def sample_compute_location(self, block: BlockRV, decision: int | None = None) -> LoopRV:
        """A loop of ``block``'s consumer where ``compute_at(block, loop)`` is legal, drawn at
        random or given as ``decision`` (its index among those loops, outermost first); where
        there is none (or the decision is -1), TVM's root mark, at which ``compute_at`` leaves
        the block where it is."""
        b = self._block(block, "sample_compute_location")
        with self._updating():
            index, loop_id = sample_location.sample_compute_location(self._state, self._rng, b,
                                                                     decision)
        rv = self._new(LoopRV, loop_id)
        self._record(SAMPLE_COMPUTE_LOCATION, [block], {}, [rv], index)
        return rv

    # -- results -----------------------------------------------------------------------------
    @property
    def mod(self) -> ir.Module:
        """The scheduled module (a new copy of the original with the schedule applied)."""
        if self._mod_cache is None:
            self._mod_cache = materialize(self._original, self._state, self.trace)
        return self._mod_cache

    def as_transform(self) -> ir.Module:
        """The schedule as a transform-dialect module applying it to its kernel: a
        ``transform.named_sequence @__transform_main`` where each sampled tile size is a
        ``transform.tune.knob`` with its ``selected`` value, and the inlines are listed in the
        module's ``mlcir.inline`` attribute (``mlcir-opt --transform-script`` applies both)."""
        with self.context, ir.Location.unknown():
            return build_transform(self._state)


def _lower_graph_ops(module: ir.Module) -> None:
    """Schedules act on loop-level kernels: lower graph ops first if there are any (boolean
    tensors stored as bytes, as in the kernels tuning sees)."""
    if find_first(module.operation, lambda op: op.name.startswith("graph.")):
        from mlcir.passes import run_pipeline

        run_pipeline(module, "graph-to-loop, mlcir-bool-storage")
