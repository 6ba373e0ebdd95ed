"""The logical loop nests a schedule manipulates, read from a loop-level kernel.

Each compute block (a named linalg op) starts with one loop per iteration dimension, in the op's
dimension order. Primitives change this state only — which loops exist (``split``/``fuse``), in
which order (``reorder``), with which annotations, where a block is computed (``compute_at``)
and which blocks are inlined — and the materializer turns the final state into a transform
script. So the Python schedule and the emitted IR cannot disagree.

A loop is identified by a global id and owned by one block (:meth:`KernelState.owner`), which
names it (:meth:`KernelState.loop_name`: ``i``, ``j_0``, ``i_0_j_0_fused``) and gives its kind
(spatial or reduction). Its *parts* ``(dim, extent)`` say which iteration dimensions it walks and
how far (``fuse`` gives a loop several parts); a dimension split into several loops lists them
in ``Block.levels[dim]``, outer level first.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Collection, Sequence

from mlir import ir
from mlir.dialects import linalg

from mlcir.dialects import loop as loop_dialect

from .errors import ScheduleError
from .rewrite import Rewrite

SPATIAL, REDUCTION = loop_dialect.SPATIAL, loop_dialect.REDUCTION
# Loop names: the block's dimensions in order (a dimension past these is d<N>).
DIM_NAMES = "ijklmnopqrstuvwxyzabcdefgh"


@dataclass(frozen=True)
class TileKnob:
    """The tile size of a loop made by a split with the factors of one ``sample_perfect_tile``:
    every size the sampled tiling could give it and the one it gave. It is emitted as a
    ``transform.tune.knob``."""

    options: tuple[int, ...]
    selected: int


# The extent of a loop (or of one part of a fused loop) known only at run time.
DYNAMIC = -1


@dataclass
class Loop:
    id: int
    block: str
    parts: list[tuple[int, int]]  # (dim, extent), outer part first
    annotations: dict[str, Any] = field(default_factory=dict)
    knob: TileKnob | None = None

    @property
    def extent(self) -> int:
        """Its iterations: the product of its parts', or DYNAMIC when a part is dynamic."""
        if any(e < 0 for _, e in self.parts):
            return DYNAMIC
        return math.prod(e for _, e in self.parts)

    @property
    def dims(self) -> list[int]:
        return [d for d, _ in self.parts]


@dataclass
class Attach:
    """Where a block is computed: under ``loop`` (owned by ``target``)."""

    kind: str  # "compute_at" (producer moved into its consumer's nest) or "reverse_compute_at"
    target: str
    loop: int


# A map result as a linear form of the loop dims: ({dim: coefficient}, constant), or None
# when it is not linear (floordiv, mod).
Linear = tuple[dict[int, int], int] | None


@dataclass
class Operand:
    """How a block reads one operand: the producing block (if any) and the indexing map as
    ``(num_dims, results)``, each result a dim index or ``None`` (constant/complex), and each
    result as a linear form (``terms``)."""

    producer: str | None
    map_results: list[int | None]
    is_init: bool  # the operand is the block's output/destination (DPS init)
    terms: list[Linear] = field(default_factory=list)
    shape: list[int] = field(default_factory=list)  # the operand's tensor shape


@dataclass
class Block:
    name: str
    func: str
    kinds: list[str]
    extents: list[int | None]
    levels: list[list[int]]  # per dim: its loops' ids, outer level first
    order: list[int]  # the block's own loops, outermost first
    operands: list[Operand]
    output_map: list[int | None]  # dims of the (first) result in terms of the block's dims
    op_name: str
    attach: Attach | None = None
    inlined: bool = False
    annotations: dict[str, Any] = field(default_factory=dict)
    # Blocks created by the schedule (cache stages): how to build them.
    origin: dict[str, Any] = field(default_factory=dict)
    # An operand is read through an expression of the loop dims (``oh + kh``): a convolution
    # or pooling window, which the vectorizer takes only once the tile's unit dims are gone.
    window: bool = False
    # A block computed at a loop of another (compute_at/reverse_compute_at): its dims that
    # cover the tile of a dim of that block at that loop (own dim -> the target's dim).
    region: dict[int, int] = field(default_factory=dict)
    # Dims that are split levels of an original dim (their levels were reordered, expand.py):
    # dim -> the name of its loop ("i_1").
    dim_names: dict[int, str] = field(default_factory=dict)
    # Those rewrites in order, each ``(dim, level extents, level dims)`` (the first level dim is
    # ``dim``): what a block computed at this one replays to index the same levels.
    expansions: list[tuple[int, tuple[int, ...], tuple[int, ...]]] = field(default_factory=list)
    # The block's dims as they were before its first expansion (what compute_at restores when
    # it moves the block and so drops its loops, reordered levels included).
    unexpanded: dict[str, Any] | None = None
    # An init fill that replayed its reduction's expansions to move with it: that reduction.
    followed: str | None = None
    # Blocks whose result this block reads by tensor.extract in its body, not as an operand
    # (a tensor whose layout transform_layout changed): dataflow the operands do not show.
    reads_by_index: set[str] = field(default_factory=set)


@dataclass
class KernelState:
    """All blocks of the scheduled module, by name within their function."""

    blocks: dict[tuple[str, str], Block] = field(default_factory=dict)  # (func, name) -> block
    loops: dict[int, Loop] = field(default_factory=dict)  # the live loops
    next_loop_id: int = 0
    # The rewrites applied before the transform script, since no transform op does them, in
    # order (rewrite.py: inlines, renames, layout, scope and stride changes, moves, expanded
    # and collapsed dimensions).
    rewrites: list[Rewrite] = field(default_factory=list)

    def new_loop(self, block: Block, parts: list[tuple[int, int]]) -> Loop:
        loop = Loop(self.next_loop_id, block.name, parts)
        self.loops[loop.id] = loop
        self.next_loop_id += 1
        return loop

    def owner(self, loop: Loop) -> Block:
        """The block whose nest ``loop`` is part of."""
        for (_, name), block in self.blocks.items():
            if name == loop.block and loop.id in block.order:
                return block
        raise ScheduleError(f"internal: loop {loop.id} has no block")

    def loop_name(self, loop: Loop) -> str:
        """``i``, ``j_1`` (a split level), ``i_0_j_0_fused``: from the owner's dimensions."""
        block = self.owner(loop)
        names = []
        for dim, _ in loop.parts:
            base = block.dim_names.get(dim) or (DIM_NAMES[dim] if dim < len(DIM_NAMES)
                                                else f"d{dim}")
            levels = block.levels[dim]
            names.append(base if len(levels) == 1 else f"{base}_{levels.index(loop.id)}")
        return "_".join(names) + ("_fused" if len(names) > 1 else "")

    def loop_kind(self, loop: Loop) -> str:
        """REDUCTION if the loop walks a reduction dimension of its owner, else SPATIAL."""
        block = self.owner(loop)
        kinds = {block.kinds[d] for d, _ in loop.parts}
        return REDUCTION if REDUCTION in kinds else SPATIAL

    def init_producer(self, block: Block) -> Block | None:
        """The block that writes ``block``'s destination before it (its init: a fill, or an
        earlier block accumulating into the same tensor), if any."""
        for operand in block.operands:
            if operand.is_init and operand.producer is not None:
                return self.blocks.get((block.func, operand.producer))
        return None

    def consumers(self, block: Block) -> list[tuple[Block, int]]:
        """The live blocks that read ``block``'s result, with the operand that reads it."""
        out = []
        for b in self.blocks.values():
            if b.func == block.func and not b.inlined:
                for i, operand in enumerate(b.operands):
                    if operand.producer == block.name:
                        out.append((b, i))
        return out

    def enclosing(self, block: Block) -> list[int]:
        """Loop ids enclosing ``block``, outermost first (shared loops of the block it is
        computed at, then its own)."""
        outer: list[int] = []
        if block.attach is not None:
            target = self.blocks[(block.func, block.attach.target)]
            chain = self.enclosing(target)
            outer = chain[:chain.index(block.attach.loop) + 1]
        return outer + list(block.order)

    def expanded(self, block: Block) -> bool:
        """Whether ``block``'s op is rewritten for reordered split levels (expand.py) or a
        split across a fused loop's parts (collapse.py): it then reads reshaped operands,
        through which nothing fuses."""
        return any(r.kind in ("expand_dim", "collapse_dims") and r.of_block(block.func, block.name)
                   for r in self.rewrites)

    def reshape_reason(self, block: Block) -> str:
        """Why ``block`` reads reshaped operands (for the errors of what that forbids)."""
        kinds = {r.kind for r in self.rewrites if r.of_block(block.func, block.name)}
        return "its split levels were reordered" if "expand_dim" in kinds else \
            "a fused loop of it was split across its parts"

    def attached_at(self, loop_id: int, func: str) -> list[Block]:
        return [b for (f, _), b in self.blocks.items()
                if f == func and b.attach is not None and b.attach.loop == loop_id and not b.inlined]


def _linear(expr: ir.AffineExpr) -> Linear:
    if isinstance(expr, ir.AffineDimExpr):
        return {expr.position: 1}, 0
    if isinstance(expr, ir.AffineConstantExpr):
        return {}, expr.value
    if isinstance(expr, ir.AffineAddExpr):
        lhs, rhs = _linear(expr.lhs), _linear(expr.rhs)
        if lhs is None or rhs is None:
            return None
        terms = dict(lhs[0])
        for d, c in rhs[0].items():
            terms[d] = terms.get(d, 0) + c
        return {d: c for d, c in terms.items() if c}, lhs[1] + rhs[1]
    if isinstance(expr, ir.AffineMulExpr):
        lhs, rhs = _linear(expr.lhs), _linear(expr.rhs)
        if lhs is None or rhs is None or (lhs[0] and rhs[0]):
            return None
        (terms, const), scale = (lhs, rhs[1]) if lhs[0] else (rhs, lhs[1])
        return {d: c * scale for d, c in terms.items() if c * scale}, const * scale
    return None


def _is_window_map(amap: ir.AffineMap) -> bool:
    return any(not isinstance(e, (ir.AffineDimExpr, ir.AffineConstantExpr)) for e in amap.results)


def _map_results(amap: ir.AffineMap) -> list[int | None]:
    return [ir.AffineDimExpr(e).position if isinstance(e, ir.AffineDimExpr) else None
            for e in amap.results]


def _defining_block(value: ir.Value) -> str | None:
    owner = value.owner
    if isinstance(owner, ir.Block):  # a block argument
        return None
    op = owner.operation if hasattr(owner, "operation") else owner
    if loop_dialect.BLOCK_ATTR in op.attributes and loop_dialect.is_linalg(op):
        return ir.StringAttr(op.attributes[loop_dialect.BLOCK_ATTR]).value
    return None


def read_blocks(module: ir.Module, state: KernelState, dynamic_extent: int | None = None) -> None:
    """Add one :class:`Block` per named linalg op of every function of ``module``; a dynamic
    dim reads as ``dynamic_extent`` when given (a representative size to plan a schedule
    for), else as dynamic."""
    for fn in module.body.operations:
        if fn.operation.name != "func.func" or not fn.regions[0].blocks:
            continue
        func_name = ir.StringAttr(fn.attributes["sym_name"]).value
        for b in loop_dialect.name_blocks(fn.operation):
            op = b.op
            maps = [ir.AffineMapAttr(m).value for m in linalg.get_indexing_maps(op)]
            num_inits = len(op.results) if op.results else 1
            n_ops = len(maps)
            operands = []
            for i, (value, amap) in enumerate(zip(list(op.operands)[:n_ops], maps)):
                shape = list(ir.ShapedType(value.type).shape) \
                    if isinstance(value.type, ir.ShapedType) else []
                operands.append(Operand(_defining_block(value), _map_results(amap),
                                        is_init=i >= n_ops - num_inits,
                                        terms=[_linear(e) for e in amap.results], shape=shape))
            extents = [dynamic_extent if e is None else e for e in b.extents] \
                if dynamic_extent is not None else b.extents
            block = Block(b.name, func_name, b.iterators, extents, [], [], operands,
                          _map_results(maps[-num_inits]), op.name,
                          window=any(_is_window_map(m) for m in maps))
            for dim, extent in enumerate(extents):
                loop = state.new_loop(block, [(dim, extent if extent is not None else DYNAMIC)])
                block.levels.append([loop.id])
                block.order.append(loop.id)
            state.blocks[(func_name, b.name)] = block


# Named window ops whose tiles the vectorizer takes after upstream's decomposition to a 1-D
# window, whatever their strides.
DECOMPOSABLE_WINDOWS = ("linalg.conv_2d_nchw_fchw", "linalg.pooling_nchw_")


def folds_to_plain_dims(block: Block, long_dims: Sequence[int]) -> bool:
    """Whether every operand of a tile of ``block`` whose dims of more than one iteration are
    ``long_dims`` reads plain dims once the unit dims are dropped: ``x[oh * 2 + kh, ow + kw]``
    with all but ``ow`` unit, yes; with a stride, ``x[ow * 2 + kw]``, or a window dim in the
    tile, ``x[ow + kw]``, no. Such a window tile vectorizes as an elementwise op."""
    for operand in block.operands:
        for form in operand.terms:
            if form is None:
                return False
            long = {d: c for d, c in form[0].items() if d in long_dims}
            if len(long) > 1 or any(c != 1 for c in long.values()):
                return False
    return True


def tile_bound(state: KernelState, block: Block, dim: int,
               outside: Collection[int]) -> tuple[int, bool]:
    """The most iterations of ``dim`` that one tile of ``block`` inside the loops ``outside``
    covers, and whether a tile can cover fewer (a split that does not divide makes the last
    tile partial, TVM's semantics; tiles inside a partial tile can be partial too)."""
    if block.attach is not None and dim in block.region:
        target = state.blocks[(block.func, block.attach.target)]
        size, partial = inner_extent(state, target, block.region[dim], block.attach.loop)
    else:
        size, partial = block.extents[dim], False
    levels = block.levels[dim]
    for k, lid in enumerate(levels):
        if lid not in outside:
            continue
        step = math.prod(math.prod(e for d, e in state.loops[inner].parts if d == dim)
                         for inner in levels[k + 1:])
        if size is None:  # a dynamic dim: its static tiles, the last one partial (of > 1)
            size, partial = step, step != 1
        elif step < size:
            partial = partial or size % step != 0
            size = step
    return size, partial


def inner_extent(state: KernelState, block: Block, dim: int, below: int) -> tuple[int, bool]:
    """The number of iterations of ``dim`` that the loops of ``block`` *inside* loop ``below``
    cover (the tile size of ``dim`` at that loop), and whether the tile can be partial."""
    chain = state.enclosing(block)
    return tile_bound(state, block, dim, chain[:chain.index(below) + 1])
