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
from pathlib import Path
from typing import Any

from mlir import ir
from mlir.dialects import transform
from mlir.dialects.transform import loop as tloop
from mlir.dialects.transform import memref as tmemref
from mlir.dialects.transform import structured, tune

from mlcir.dialects.loop import BLOCK_ATTR, SCHEDULED_ATTR
from mlcir.ir import clone_module, parse
from mlcir.transform import TransformError, annotate, apply, match_attr, new_script

from .contiguous import gathers_read_contiguous
from .blockize import KIND as BLOCKIZE
from .annotate import block_attributes, emit_unrolls, gpu_mapping, group_kind, loop_attributes
from .cache import emit_promotion, promoted_at
from .emit import LOOP_NAME, Emitted, any_op, param_i64
from .errors import ScheduleError
from .reduction import emit_rfactors
from .rewrite import Rewrite
from .rewrites import apply_rewrite
from .state import (SPATIAL, Block, KernelState, Loop)
from .trace import Trace
from .vector_tile import emit_vector_tile, finish_vector_tiles, vector_tile_problem

SERIAL = "loop.serial"
INLINE_ATTR = "mlcir.inline"



class Emitter:
    """Builds the transform script for a kernel state (inside a ``new_script`` sequence)."""

    def __init__(self, state: KernelState):
        self.state = state
        self.not_vectorized: dict[str, str] = {}  # block -> why its vector tile is scalar
        self.peeled: dict[str, set[int]] = {}  # block -> its dims whose tiling loop is peeled

    def _size(self, block: Block, loop: Loop, dim: int, emitted_params: dict[int, ir.Value]) -> Any:
        """The tile size of ``dim`` for the loop ``loop``: the product of its inner levels
        (a knob param when it comes from a sampled tiling)."""
        levels = block.levels[dim]
        inner = levels[levels.index(loop.id) + 1:]
        size = math.prod(self._part(self.state.loops[i], dim) for i in inner)
        knob = loop.knob
        # (Once a nest is peeled, its block is several ops, which one param cannot size.)
        if knob is not None and knob.selected == size and len(loop.parts) == 1 \
                and block.name not in self.peeled:
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
            for block in blocks:
                # (an outer block of blockize is a view of its tile: the inner block's op)
                op = self.state.blocks[(func_name, block.origin["inner"])] \
                    if block.origin.get("kind") == BLOCKIZE else block
                for key, value in ([] if op.origin else block_attributes(block).items()):
                    annotate(self._op(op, fn), key, value)
            params: dict[int, ir.Value] = {}
            roots = [b for b in blocks if b.attach is None and not b.origin.get("kind")]
            for block in roots:
                self._emit_nest(block, em, params)
            transform.ApplyDeadCodeEliminationOp(em.func)  # the copies fusion leaves behind
            finish_vector_tiles(self.state, em)
            emit_unrolls(self.state, em)

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
        if None in block.extents:
            self._resolve_dims(em)
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
            if cache.origin.get("source") == block.name and promoted_at(self.state, cache) is None:
                emit_promotion(cache, handle)

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
            kind = group_kind(self.state.loops[lid].annotations)
            if groups and kind and group_kind(self.state.loops[groups[-1][0]].annotations) == kind \
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
            kind = group_kind(self.state.loops[lid].annotations)
            if runs and kind and kind.startswith("bind") and runs[-1][-1] not in attached \
                    and group_kind(self.state.loops[runs[-1][0]].annotations) == kind \
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
        groups = self._groups(loops)
        for index, group in enumerate(groups):
            first = self.state.loops[group[0]]
            if all(self.state.loops[lid].extent == 1 for lid in group):
                continue  # a one-trip loop: nothing to emit (attachments go one level up)
            last = all(self.state.loops[lid].extent == 1 for later in groups[index + 1:]
                       for lid in later)
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
            if not forall and owner is block and self._peels(block, group, last):
                # Whole tiles of a dynamic dim, or of a static one its tile does not divide,
                # then the partial one: the whole ones have static shapes (their vector tiles
                # need no masks).
                handle, loop_handle = self._peel(block, loop_handle, sizes)
            if not forall:
                em.for_loops.append((group[0], loop_name))
            for lid in group:
                for name, value in loop_attributes(self.state.loops[lid]).items():
                    annotate(loop_handle, name, value)
            path.append(loop_handle)
        return handle

    def _peel(self, block: Block, loop_handle: ir.Value, sizes: list[Any]) -> tuple[ir.Value, ir.Value]:
        """Peel the tiling loop of a dynamic dim: its whole tiles (static once their sizes
        fold), then the rest one row at a time (static too): neither needs masks. Returns the
        block's ops in both and the loop of the whole tiles."""
        dim = next(d for d, size in enumerate(sizes) if size)
        self.peeled.setdefault(block.name, set()).add(dim)
        peel = tloop.LoopPeelOp(any_op(), any_op(), loop_handle)
        whole = peel.peeled_loop
        patterns = transform.ApplyPatternsOp(whole)
        with ir.InsertionPoint(patterns.patterns):
            transform.ApplyCanonicalizationPatternsOp()
        name = ir.StringAttr.get(block.name)
        rest = structured.TileUsingForOp(any_op(), match_attr(peel.remainder_loop, BLOCK_ATTR, name),
                                         sizes=[1 if d == dim else 0 for d in range(len(sizes))])
        return transform.MergeHandlesOp([match_attr(whole, BLOCK_ATTR, name),
                                         rest.tiled_linalg_op]).result, whole

    def _peels(self, block: Block, group: list[int], last: bool) -> bool:
        """Whether the loop ``group`` (one loop) is peeled: it tiles a dynamic dim, or a static
        spatial one out of the lanes with a partial last tile (``last``: no tiling loop follows
        it), right above that dim's innermost level, the vector tile's, and nothing is placed
        at or under it. A masked vector tile of a static partial tile reads and writes its
        accumulators at every step (docs/decisions.md#partial-tiles)."""
        if len(group) != 1 or len(self.state.loops[group[0]].parts) != 1:
            return False
        lid = group[0]
        dim = self.state.loops[lid].parts[0][0]
        levels = block.levels[dim]
        if len(levels) < 2 or levels[-2] != lid:
            return False
        extent, tile = block.extents[dim], self.state.loops[levels[-1]].extent
        if tile is not None and tile <= 1 or block.name in self.peeled or (
                extent is None and block.kinds[dim] != SPATIAL):
            # Tiles of one row leave no rest; and once a nest is peeled its block is two ops
            # (whole tiles and rest), which a later peel cannot take as one loop: a second
            # dynamic dim keeps masked tiles.
            return False
        if extent is not None and not (
                last and block.kinds[dim] == SPATIAL and tile is not None and tile > 1
                and extent % tile and self._just_above_vector_tile(block, lid)
                and self.state.loops[block.order[-1]].parts[0][0] != dim):
            # A static dim tiled evenly has nothing to peel; a partial reduction tile or one
            # in the lanes stays masked.
            return False
        below = block.order[block.order.index(lid):]
        return not any(b.attach is not None and b.attach.loop in below and not b.inlined
                       for b in self.state.blocks.values() if b.func == block.func)

    def _just_above_vector_tile(self, block: Block, lid: int) -> bool:
        """Whether only one-trip loops and reduction loops (each tiling the peeled tiles on
        their own) lie between loop ``lid`` and ``block``'s vector tile."""
        for later in block.order[block.order.index(lid) + 1:]:
            loop = self.state.loops[later]
            if loop.annotations.get("vectorize"):
                return True
            if loop.extent != 1 and any(block.kinds[d] == SPATIAL for d, _ in loop.parts):
                return False
        return False

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
            by_dim[dims(loop.parts[0][0])] = gpu_mapping(loop.annotations["bind"])
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
        emit_vector_tile(self.state, block, handle, implicit, em,
                         self.not_vectorized.get(block.name), self.peeled.get(block.name, set()))

    def _fuse_attached(self, block: Block, loops: list[int], path: list[ir.Value], em: Emitted,
                       params: dict[int, ir.Value]) -> None:
        for lid in loops:
            for producer in self._consumers_first(self.state.attached_at(lid, block.func)):
                if producer.attach.kind != "compute_at" or producer.origin.get("kind"):
                    continue
                if not path:
                    continue  # attached at a one-trip outermost loop: stays at the root
                fused = self._op(producer, em.func)
                if None in producer.extents:
                    self._resolve_dims(em)
                for loop_handle in path:
                    fused = structured.FuseIntoContainingOp(any_op(), any_op(), fused,
                                                            loop_handle).fused_op
                self._promote_root_caches(producer, fused)
                self._emit_loops(producer, fused, producer.order, path, em, params)

    @staticmethod
    def _resolve_dims(em: Emitted) -> None:
        """Dynamic sizes read from the inputs, not from results: a tile's ``tensor.dim`` of a
        producer's result is a use fusion cannot follow."""
        patterns = transform.ApplyPatternsOp(em.func)
        with ir.InsertionPoint(patterns.patterns):
            tmemref.ApplyResolveRankedShapedTypeResultDimsPatternsOp()

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
            if cache.origin.get("source") == block.name and promoted_at(self.state, cache) == lid:
                emit_promotion(cache, handle)

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

