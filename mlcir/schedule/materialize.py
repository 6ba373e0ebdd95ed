"""From a schedule's logical state to a transform script, and the scheduled module.

How each piece of state becomes transform ops (measured on MLIR 22.1; see docs/schedules.md):

- Explicit loops are made one tiling op at a time, outermost first, each tiling one logical
  loop (tile size = the product of the inner levels of its dimension); consecutive
  ``parallel`` (or ``bind``) loops become one ``tile_using_forall``; a fused loop is one
  multi-size ``tile_using_for`` followed by ``loop.coalesce``. Every loop is tagged
  ``loop.name = "<block>.<loop>"``.
- The innermost loops that are the last split level of their dimension stay *implicit* (the
  tiled op's own loops), put in order with ``generalize`` + ``interchange``; a ``vectorize``d
  loop and everything inside it is the vector tile (``structured.vectorize``; split first into
  power-of-two lane parts when it has a reduction, convolution/pooling tiles decomposed to
  1-D), followed by the contraction/transfer patterns, unit-dim and slice folding, and
  hoisting of the accumulator out of the loops around it.
- ``compute_at`` fuses the producer into the loops from the nest's outermost down to the
  target (``fuse_into_containing_op``, one loop at a time). A producer that initialises the
  consumer's destination (the fill of ``decompose_reduction``) can only be fused into
  ``scf.forall``, so the consumer's loops down to that point are foralls marked
  ``loop.serial`` (made ``scf.for`` again after bufferization).
- ``reverse_compute_at`` has no consumer-fusion op upstream: the consumer is tiled with the
  shared loops and the producer fused into them, then each continues with its own loops.
- Cache stages are ``structured.promote_tensor`` of the tiled op's operand at the loop they
  are placed at (a copy per tile, in the scope's memory space).
- Sampled tile sizes are ``transform.tune.knob`` params with their ``selected`` value.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mlir import ir
from mlir.dialects import transform
from mlir.dialects.transform import loop as tloop
from mlir.dialects.transform import structured, tune
from mlir.dialects.transform import tensor as ttensor
from mlir.dialects.transform import vector as tvector

from mlcir.dialects.loop import BLOCK_ATTR, ITERATORS_ATTR, SCHEDULED_ATTR, iterators_attr
from mlcir.ir import clone_module, parse
from mlcir.transform import TransformError, annotate, apply, match_attr, new_script

from .annotate import vector_tile_problem
from .contiguous import gathers_read_contiguous
from .errors import ScheduleError
from .reduction import emit_rfactors
from .rewrite import Rewrite
from .rewrites import apply_rewrite
from .state import (DECOMPOSABLE_WINDOWS, REDUCTION, Block, KernelState, Loop,
                    folds_to_plain_dims, tile_bound)
from .trace import Trace

LOOP_NAME = "loop.name"
SERIAL = "loop.serial"
INLINE_ATTR = "mlcir.inline"
SCOPE_MEMORY_SPACE = {"shared": "#gpu.address_space<workgroup>", "local": None, "global": None}
# Window ops whose tiles are always decomposed to a 1-D op (the matmul micro-kernel,
# docs/tuning.md); other window tiles have their unit dims folded away instead when that
# leaves plain dims, else (DECOMPOSABLE_WINDOWS) they are decomposed too.
DECOMPOSED_WINDOWS = ("linalg.conv_2d_nchw_fchw",)


def any_op() -> ir.Type:
    return transform.AnyOpType.get()


def param_i64() -> ir.Type:
    return transform.ParamType.get(ir.IntegerType.get_signless(64))


@dataclass
class Emitted:
    """Transform handles made while emitting one function."""

    func: ir.Value
    # scf.for loops in emit order: (loop id, the loop.name they carry). Named, not handled:
    # the pattern sets after vectorization (canonicalization) drop the handles of the loops
    # they touch, which left unroll and hoisting silently applied to nothing.
    for_loops: list[tuple[int, str]] = field(default_factory=list)
    vectorized: list[str] = field(default_factory=list)
    masked: bool = False  # a tile was vectorized with masks


class Emitter:
    """Builds the transform script for a kernel state (inside a ``new_script`` sequence)."""

    def __init__(self, state: KernelState):
        self.state = state
        self.not_vectorized: dict[str, str] = {}  # block -> why its vector tile is scalar

    def _size(self, block: Block, loop: Loop, dim: int, emitted_params: dict[int, ir.Value]) -> Any:
        """The tile size of ``dim`` for the loop ``loop``: the product of its inner levels
        (a knob param when it comes from a sampled tiling)."""
        levels = block.levels[dim]
        inner = levels[levels.index(loop.id) + 1:]
        size = math.prod(self._part(self.state.loops[i], dim) for i in inner)
        knob = loop.knob
        if knob is not None and knob.selected == size and len(loop.parts) == 1:
            if loop.id not in emitted_params:
                owner = self.state.owner(loop)
                name = f"{owner.func}.{owner.name}.{self.state.loop_name(loop)}"
                emitted_params[loop.id] = tune.KnobOp(param_i64(), name, list(knob.options),
                                                      selected=knob.selected).result
            return emitted_params[loop.id]
        return size

    @staticmethod
    def _part(loop: Loop, dim: int) -> int:
        return math.prod(e for d, e in loop.parts if d == dim)

    # -- the script ------------------------------------------------------------------------
    def build(self, root: ir.Value) -> None:
        funcs = list(dict.fromkeys(func_name for func_name, _ in self.state.blocks))
        for func_name in funcs:
            blocks = [b for (f, _), b in self.state.blocks.items() if f == func_name and not b.inlined]
            if not any(self._scheduled(b) for b in blocks):
                continue
            fn = structured.MatchOp(any_op(), root, ops=["func.func"],
                                    op_attrs=ir.DictAttr.get({"sym_name": ir.StringAttr.get(func_name)})).result
            em = Emitted(fn)
            annotate(fn, SCHEDULED_ATTR)
            emit_rfactors(self.state, func_name, fn)
            params: dict[int, ir.Value] = {}
            roots = [b for b in blocks if b.attach is None and not b.origin.get("kind")]
            for block in roots:
                self._emit_nest(block, em, params)
            self._finish(em)

    def _scheduled(self, block: Block) -> bool:
        return (block.attach is not None or bool(block.origin) or bool(block.annotations)
                or any(len(self.state.loops[lid].parts) > 1 or self.state.loops[lid].annotations
                       for lid in block.order)
                or any(len(levels) > 1 for levels in block.levels)
                or block.order != sorted(block.order))

    def _op(self, block: Block, under: ir.Value) -> ir.Value:
        return match_attr(under, BLOCK_ATTR, ir.StringAttr.get(block.name))

    def _emit_nest(self, block: Block, em: Emitted, params: dict[int, ir.Value]) -> None:
        reverse = [b for b in self.state.blocks.values()
                   if b.func == block.func and not b.inlined and b.attach is not None
                   and b.attach.kind == "reverse_compute_at" and b.attach.target == block.name
                   and not b.origin.get("kind")]
        handle = self._op(block, em.func)
        self._promote_root_caches(block, handle)
        if not reverse:
            self._emit_loops(block, handle, block.order, [], em, params)
            return
        if len(reverse) > 1:
            raise ScheduleError(f"block '{block.name}': more than one block is reverse-computed "
                                "into its nest; MLIR can re-root one consumer per nest")
        consumer = reverse[0]
        chain = block.order
        shared = chain[:chain.index(consumer.attach.loop) + 1]
        mapping = self._correspondence(block, consumer)
        c_handle = self._op(consumer, em.func)
        path: list[ir.Value] = []
        # The producer's tiles are also yielded for its other consumers, which upstream does
        # only out of scf.forall (it asserts on scf.for): the shared loops are serial foralls.
        others = [c for c, _ in self.state.consumers(block) if c is not consumer]
        c_handle = self._tile_groups(consumer, c_handle, shared, path, em, params,
                                     dims=lambda d: mapping[d], owner=block,
                                     serial=set(shared) if others else None)
        for loop_handle in path:
            handle = structured.FuseIntoContainingOp(any_op(), any_op(), handle,
                                                     loop_handle).fused_op
        self._fuse_attached(block, shared, path, em, params)
        # The consumer's unplaced caches copy its tile of the shared loops (a cache of what
        # it reads of the producer comes after the producer's tile, as TVM places it).
        self._promote_root_caches(consumer, c_handle)
        rest = chain[len(shared):]
        self._emit_loops(block, handle, rest, path, em, params)
        self._emit_loops(consumer, c_handle, consumer.order, path, em, params)

    def _correspondence(self, producer: Block, consumer: Block) -> dict[int, int]:
        def copies_producer(name: str | None) -> bool:  # a cache_read stage of its result
            stage = self.state.blocks.get((consumer.func, name)) if name else None
            return stage is not None and stage.origin.get("kind") == "cache_read" \
                and stage.operands[0].producer == producer.name
        reads = next(op for op in consumer.operands if op.producer == producer.name
                     or copies_producer(op.producer))
        return {p_dim: reads.map_results[r] for r, p_dim in enumerate(producer.output_map)}

    def _promote_root_caches(self, block: Block, handle: ir.Value) -> None:
        for cache in self.state.blocks.values():
            if cache.origin.get("source") == block.name and self._promoted_at(cache) is None:
                self._promote(cache, handle)

    def _promoted_at(self, cache: Block) -> int | None:
        """The loop of its block a cache stage is promoted at (None: before the nest). A
        cache_write stage goes no higher than the init computed inside the nest: the init
        writes the cache (promoted above it, the tiled op would no longer read the init's
        tile, through which the init is fused)."""
        loop = cache.attach.loop if cache.attach is not None else None
        if cache.origin.get("kind") != "cache_write":
            return loop
        source = self.state.blocks[(cache.func, cache.origin["source"])]
        init = self.state.init_producer(source)
        if init is None or init.attach is None or init.attach.target != source.name:
            return loop
        chain = self.state.enclosing(source)
        if loop is None or chain.index(loop) < chain.index(init.attach.loop):
            return init.attach.loop
        return loop

    def _promote(self, cache: Block, op_handle: ir.Value) -> None:
        operand = transform.GetOperandOp(transform.AnyValueType.get(), op_handle,
                                         [cache.origin["operand"]]).result
        space = SCOPE_MEMORY_SPACE[cache.origin["scope"]]
        structured.PromoteTensorOp(operand, memory_space=ir.Attribute.parse(space) if space else None)

    def _serial_forall_loops(self, block: Block) -> set[int]:
        """Loops of ``block`` at or above where its destination's producer is computed."""
        out: set[int] = set()
        for other in self.state.blocks.values():
            if other.attach is None or other.attach.target != block.name or other.inlined:
                continue
            if other.attach.kind != "compute_at":
                continue
            is_init = any(op.is_init and op.producer == other.name for op in block.operands)
            if is_init:
                chain = block.order
                if other.attach.loop in chain:
                    out.update(chain[:chain.index(other.attach.loop) + 1])
        return out

    def _implicit_start(self, block: Block, loops: list[int]) -> int:
        """Index in ``loops`` where the implicit (not tiled) innermost loops begin."""
        vec = [i for i, lid in enumerate(loops)
               if self.state.loops[lid].annotations.get("vectorize")]
        if vec:
            loop = self.state.loops[loops[vec[0]]]
            problem = vector_tile_problem(self.state, block, loop)
            if not problem:
                return vec[0]
            # TVM's fallback: a loop that cannot be vectorized runs as a scalar loop. The
            # reason is left on the block's op (``loop.not_vectorized``).
            self.not_vectorized[block.name] = problem
        start = len(loops)
        seen_dims: set[int] = set()
        attached = {b.attach.loop for b in self.state.blocks.values()
                    if b.attach is not None and not b.inlined}
        for i in range(len(loops) - 1, -1, -1):
            loop = self.state.loops[loops[i]]
            if len(loop.parts) != 1 or loop.annotations or loop.id in attached:
                break
            dim = loop.parts[0][0]
            if block.levels[dim][-1] != loop.id or dim in seen_dims:
                break
            seen_dims.add(dim)
            start = i
        return start

    def _groups(self, loops: list[int]) -> list[list[int]]:
        """Consecutive loops emitted by one tiling op: runs of parallel loops, runs of loops
        bound to the same kind of GPU axis (blocks or threads) on distinct dimensions; every
        other loop on its own."""
        groups: list[list[int]] = []
        for lid in loops:
            kind = _group_kind(self.state.loops[lid].annotations)
            if groups and kind and _group_kind(self.state.loops[groups[-1][0]].annotations) == kind \
                    and self._joins(groups[-1], lid):
                groups[-1].append(lid)
            else:
                groups.append([lid])
        return groups

    def _joins(self, group: list[int], lid: int) -> bool:
        """Whether loop ``lid`` can join ``group`` in one forall: distinct dims and GPU axes."""
        dims = {d for other in group for d, _ in self.state.loops[other].parts}
        axes = {self.state.loops[other].annotations.get("bind") for other in group}
        loop = self.state.loops[lid]
        return not dims & {d for d, _ in loop.parts} and \
            (loop.annotations.get("bind") is None or loop.annotations["bind"] not in axes)

    def _bind_runs(self, block: Block, loops: list[int]) -> list[list[int]]:
        """``loops`` cut into what one tiling op emits in a nest: consecutive loops bound to
        the same kind of GPU axis form one multi-dimensional forall (``map_forall_to_blocks``
        and ``map_nested_forall_to_threads`` map one forall per level), unless a block or a
        cache is attached between them; every other loop is on its own."""
        attached = {b.attach.loop for b in self.state.blocks.values()
                    if b.attach is not None and not b.inlined and b.func == block.func}
        runs: list[list[int]] = []
        for lid in loops:
            kind = _group_kind(self.state.loops[lid].annotations)
            if runs and kind and kind.startswith("bind") and runs[-1][-1] not in attached \
                    and _group_kind(self.state.loops[runs[-1][0]].annotations) == kind \
                    and self._joins(runs[-1], lid):
                runs[-1].append(lid)
            else:
                runs.append([lid])
        return runs

    def _tile_groups(self, block: Block, handle: ir.Value, loops: list[int], path: list[ir.Value],
                     em: Emitted, params: dict[int, ir.Value], dims=lambda d: d,
                     owner: Block | None = None, serial: set[int] | None = None) -> ir.Value:
        """Emit the explicit ``loops`` (of ``owner``, tiling ``block``'s op) and return the
        tiled op handle; loop handles are appended to ``path``."""
        owner = owner or block
        serial = serial or set()
        n_dims = len(block.kinds)
        for group in self._groups(loops):
            first = self.state.loops[group[0]]
            if all(self.state.loops[lid].extent == 1 for lid in group):
                continue  # a one-trip loop: nothing to emit (attachments go one level up)
            sizes: list[Any] = [0] * n_dims
            order: list[int] = []
            for lid in group:
                loop = self.state.loops[lid]
                for d, _ in loop.parts:
                    sizes[dims(d)] = self._size(owner, loop, d, params)
                    order.append(dims(d))
            ann = first.annotations
            forall = bool(ann.get("parallel") or ann.get("bind") or
                          any(lid in serial for lid in group))
            if forall:
                mapping = None
                if ann.get("bind"):
                    mapping = self._mapping(owner, group, dims)
                tiled = structured.TileUsingForallOp(any_op(), any_op(), handle, tile_sizes=sizes,
                                                     mapping=mapping)
                handle, loop_handle = tiled.tiled_op, tiled.forall_op
                if not ann.get("parallel") and not ann.get("bind"):
                    annotate(loop_handle, SERIAL)
            elif len(order) > 1:
                interchange = order + [d for d in range(n_dims) if d not in order]
                tiled = structured.TileUsingForOp([any_op()] * len(order), handle, sizes=sizes,
                                                  interchange=interchange)
                loop_handle = tloop.LoopCoalesceOp(any_op(), tiled.loops[0]).transformed
                # Coalescing consumes the loops and invalidates the op inside: find it again.
                handle = match_attr(loop_handle, BLOCK_ATTR, ir.StringAttr.get(block.name))
            else:
                tiled = structured.TileUsingForOp(any_op(), handle, sizes=sizes)
                handle, loop_handle = tiled.tiled_linalg_op, tiled.loops[0]
            names = "+".join(self.state.loop_name(self.state.loops[lid]) for lid in group)
            loop_name = f"{owner.name}.{names}"
            annotate(loop_handle, LOOP_NAME, ir.StringAttr.get(loop_name))
            if not forall:
                em.for_loops.append((group[0], loop_name))
            for lid in group:
                for key, value in self.state.loops[lid].annotations.items():
                    if key not in ("parallel", "vectorize", "unroll", "bind") and not key.startswith("_"):
                        annotate(loop_handle, f"loop.{key}", _attr(value))
            path.append(loop_handle)
        return handle

    def _mapping(self, owner: Block, group: list[int], dims) -> ir.ArrayAttr:
        """The GPU mapping of a forall made from bound loops: one entry per tiled dim, in the
        order of the dims (the order of the forall's induction variables)."""
        by_dim: dict[int, ir.Attribute] = {}
        for lid in group:
            loop = self.state.loops[lid]
            if len(loop.parts) != 1:
                raise ScheduleError(f"bind of loop {self.state.loop_name(loop)} of block "
                                    f"'{owner.name}': a fused loop cannot be bound to one GPU "
                                    "axis; bind the loops before fusing them, one axis each")
            by_dim[dims(loop.parts[0][0])] = _gpu_mapping(loop.annotations["bind"])
        return ir.ArrayAttr.get([by_dim[d] for d in sorted(by_dim)])

    def _emit_loops(self, block: Block, handle: ir.Value, loops: list[int], path: list[ir.Value],
                    em: Emitted, params: dict[int, ir.Value]) -> None:
        """Tile ``block``'s remaining ``loops``, fuse what is computed at them, then shape the
        implicit innermost loops (interchange, vectorize)."""
        path = list(path)
        cut = self._implicit_start(block, loops)
        explicit, implicit = loops[:cut], loops[cut:]
        serial = self._serial_forall_loops(block)
        for run in self._bind_runs(block, explicit):
            handle = self._tile_groups(block, handle, run, path, em, params, serial=serial)
            # Blocks computed at this loop (at a one-trip loop: at its parent's level).
            self._fuse_attached(block, run, path, em, params)
            for lid in run:
                self._promote_attached_caches(block, lid, handle)
        self._shape_implicit(block, handle, implicit, em)

    def _fuse_attached(self, block: Block, loops: list[int], path: list[ir.Value], em: Emitted,
                       params: dict[int, ir.Value]) -> None:
        for lid in loops:
            for producer in self._consumers_first(self.state.attached_at(lid, block.func)):
                if producer.attach.kind != "compute_at" or producer.origin.get("kind"):
                    continue
                if not path:
                    continue  # attached at a one-trip outermost loop: stays at the root
                fused = self._op(producer, em.func)
                for loop_handle in path:
                    fused = structured.FuseIntoContainingOp(any_op(), any_op(), fused,
                                                            loop_handle).fused_op
                self._promote_root_caches(producer, fused)
                self._emit_loops(producer, fused, producer.order, path, em, params)

    def _consumers_first(self, blocks: list[Block]) -> list[Block]:
        """``blocks`` (computed at one loop) in the order they fuse into it: a block after
        those that read it (a reduction's init is fused through the reduction's tile, its
        only use inside the loop)."""
        left, out = list(blocks), []
        while left:
            ready = next((b for b in left if not any(c in left for c, _ in
                                                     self.state.consumers(b))), left[0])
            out.append(ready)
            left.remove(ready)
        return out

    def _promote_attached_caches(self, block: Block, lid: int, handle: ir.Value) -> None:
        for cache in self.state.blocks.values():
            if cache.origin.get("source") == block.name and self._promoted_at(cache) == lid:
                self._promote(cache, handle)

    def _shape_implicit(self, block: Block, handle: ir.Value, implicit: list[int],
                        em: Emitted) -> None:
        """Order the implicit loops (only loops of more than one iteration matter: interchange
        needs a generalized op, which the vectorizer handles worse for convolutions) and
        vectorize the tile."""
        dims = [self.state.loops[lid].parts[0][0] for lid in implicit]
        long_loops = [(d, lid) for d, lid in zip(dims, implicit) if self.state.loops[lid].extent > 1]
        long_dims = [d for d, _ in long_loops]
        vectorize = bool(implicit) and \
            bool(self.state.loops[implicit[0]].annotations.get("vectorize"))
        reason = self.not_vectorized.get(block.name)
        # A tile that can be partial (a split that does not divide) vectorizes with masks, at
        # the size of its largest tile.
        outside = set(self.state.enclosing(block)) - set(implicit)
        bounds = [tile_bound(self.state, block, d, outside) for d in range(len(block.kinds))]
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
                       for b in self.state.blocks.values())
        init_inside = any(b.attach is not None and b.attach.target == block.name
                          and b.op_name == "linalg.fill" for b in self.state.blocks.values())
        if vectorize and not masked and (init_inside or not rerooted) and long_loops \
                and REDUCTION in block.kinds:
            # The lanes of the accumulator: its innermost dim (a reduction dim inside the tile,
            # such as a strided pooling's window column, is not in the accumulator).
            spatial = [(d, lid) for d, lid in long_loops if block.kinds[d] != REDUCTION]
            lane_dim, lane_loop = (spatial or long_loops)[-1]
            handle = _split_lanes(handle, lane_dim, self.state.loops[lane_loop].extent)
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

    def _finish(self, em: Emitted) -> None:
        """Function-wide clean-up: the copies fusion leaves behind are dead; after
        vectorization, contraction patterns, then hoisting and unrolling."""
        transform.ApplyDeadCodeEliminationOp(em.func)
        if em.vectorized:
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
            self._hoist(em, em.vectorized)
        # Innermost first: unrolling a loop copies the loops inside it.
        for lid, loop_name in reversed(em.for_loops):
            if lid not in self.state.loops:
                continue
            factor = self.state.loops[lid].annotations.get("unroll")
            if factor:
                tloop.LoopUnrollOp(_loops_named(em, loop_name), factor=int(factor))

    def _hoist(self, em: Emitted, blocks: list[str]) -> None:
        """Hoist the accumulators of the vectorized ``blocks`` out of the reduction loops
        right around their tiles (innermost first), stopping at the first spatial loop:
        hoisting out of outer spatial loops moves whole tiles (measured 40% slower)."""
        for name in blocks:
            for lid, loop_name in reversed(em.for_loops):
                loop = self.state.loops.get(lid)
                if loop is None or loop.block != name:
                    continue
                if self.state.loop_kind(loop) != REDUCTION:
                    break
                tloop.HoistLoopInvariantSubsetsOp(_loops_named(em, loop_name))


def _loops_named(em: Emitted, loop_name: str) -> ir.Value:
    """The scf.for loops of ``em``'s function that carry ``loop_name`` (found again where
    they are needed: see :attr:`Emitted.for_loops`)."""
    return match_attr(em.func, LOOP_NAME, ir.StringAttr.get(loop_name), ["scf.for"])


def _split_lanes(handle: ir.Value, dim: int, extent: int) -> ir.Value:
    """The tiled op(s) of ``handle`` split along ``dim`` into parts whose extents are powers of
    two (24 -> 16 + 8, 26 -> 16 + 8 + 2), as one handle. LLVM's type legalizer scalarizes a
    vector of any other length where it crosses basic blocks, and a vector tile's
    accumulators cross the loops of its reduction (docs/tuning.md: an 8 x 24 tile ran 20x
    slower than its 16 + 8 split)."""
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


def _group_kind(annotations: dict[str, Any]) -> str | None:
    """What loops a tiling op may group: parallel loops, or loops bound to one kind of GPU
    axis (``bind:blockIdx`` / ``bind:threadIdx``)."""
    if annotations.get("parallel"):
        return "parallel"
    if annotations.get("bind"):
        return "bind:" + str(annotations["bind"]).split(".")[0]
    return None


def _gpu_mapping(axis: str) -> ir.Attribute:
    kind, dim = axis.split(".")
    prefix = "block" if kind == "blockIdx" else "thread"
    return ir.Attribute.parse(f"#gpu.{prefix}<{dim}>")


def _attr(value: Any) -> ir.Attribute:
    if isinstance(value, bool):
        return ir.BoolAttr.get(value)
    if isinstance(value, int):
        return ir.IntegerAttr.get(ir.IntegerType.get_signless(64), value)
    if isinstance(value, float):
        return ir.FloatAttr.get(ir.F64Type.get(), value)
    return ir.StringAttr.get(str(value))


def build_transform(state: KernelState) -> ir.Module:
    """The transform module of ``state`` (inlines recorded as the ``mlcir.inline`` attribute)."""
    script = new_script(Emitter(state).build)
    if state.rewrites:
        script.operation.attributes[INLINE_ATTR] = ir.ArrayAttr.get([
            ir.ArrayAttr.get([ir.StringAttr.get(x) for x in r.strings()]) for r in state.rewrites])
    return script


def apply_schedule_script(payload: ir.Module, script: ir.Module) -> None:
    """Apply a schedule's transform module: its recorded inlines, then its named sequence."""
    if INLINE_ATTR in script.operation.attributes:
        for entry in ir.ArrayAttr(script.operation.attributes[INLINE_ATTR]):
            apply_rewrite(payload, Rewrite.from_strings(
                [ir.StringAttr(x).value for x in ir.ArrayAttr(entry)]))
        with payload.context, ir.Location.unknown():
            gathers_read_contiguous(payload)
    apply(payload, script)


def apply_schedule_file(payload: ir.Module, path: str) -> None:
    """``mlcir-opt --transform-script``: apply a schedule's transform module read from ``path``."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as error:
        raise TransformError(f"cannot read transform script {path}: {error.strerror}") from None
    except UnicodeDecodeError:
        raise TransformError(f"transform script {path} is not MLIR text (not UTF-8)") from None
    apply_schedule_script(payload, parse(text, context=payload.context, source_name=str(path),
                                         verify=False))


def materialize(original: ir.Module, state: KernelState, trace: Trace) -> ir.Module:
    """A copy of ``original`` with the schedule that made ``state`` applied; ``trace`` (that
    schedule's) names it in errors."""
    with original.context, ir.Location.unknown():
        module = clone_module(original)
        script = build_transform(state)
        try:
            apply_schedule_script(module, script)
        except Exception as error:  # noqa: BLE001 - name the schedule in the message
            if isinstance(error, (TransformError, ScheduleError)):
                raise ScheduleError(f"the schedule could not be applied:\n{error}\n"
                                    f"trace:\n{trace.as_python()}") from None
            raise
        return module

