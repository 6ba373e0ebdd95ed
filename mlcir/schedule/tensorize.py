"""``tensorize`` with registered tensor intrinsics (TVM's ``TensorIntrin.register`` and
``sch.tensorize``).

An intrinsic is a description — a kernel (MLIR text) whose one compute block is the
computation the intrinsic performs, e.g. an 8x32x1 matmul accumulation — and an
implementation, how a matching tile is compiled. ``tensorize(loop, name)`` checks that the tile
under ``loop`` (``loop`` and every loop inside it, each the innermost level of its dimension)
computes exactly the description: same iterator kinds, indexing maps, body operations, element
types and tile extents. The implementation mlcir has is ``"vector.contract"``: the tile becomes
one vector tile, which the contraction patterns of the materializer turn into a
``vector.contract`` (lowered to FMAs) — the matmul micro-kernel of docs/tuning.md, now
asserted by name rather than hoped for.
"""

from __future__ import annotations

import random

from dataclasses import dataclass

from mlir import ir
from mlir.dialects import linalg

from mlcir.dialects.loop import iterator_kinds, loop_extents, name_blocks
from mlcir.ir import make_context, parse

from . import vector_tile
from .errors import PrimitiveError
from .payload import find_block_op
from .rewrites import rewritten
from .state import Block, KernelState, Loop
from .fuzz_support import LIKELY, NothingLikely, pick_block
from .instruction import TENSORIZE

IMPLEMENTATIONS = ("vector.contract",)


@dataclass(frozen=True)
class TensorIntrin:
    desc: str  # a kernel whose one compute block (not an init fill) is the intrinsic
    impl: str = "vector.contract"


@dataclass(frozen=True)
class Signature:
    """What a tile must share with an intrinsic's description."""

    kinds: tuple[str, ...]
    maps: tuple[str, ...]
    body: tuple[str, ...]
    element_types: tuple[str, ...]


_INTRINSICS: dict[str, tuple[TensorIntrin, Signature, tuple[int, ...]]] = {}


def register_intrin(name: str, desc: str, impl: str = "vector.contract",
                    override: bool = False) -> None:
    """Register the tensor intrinsic ``name`` (TVM's ``TensorIntrin.register``)."""
    if impl not in IMPLEMENTATIONS:
        raise PrimitiveError("register_intrin", f"implementation {impl!r} is not one of "
                             f"{', '.join(IMPLEMENTATIONS)}")
    if name in _INTRINSICS and not override:
        raise PrimitiveError("register_intrin", f"intrinsic '{name}' is already registered "
                             "(pass override=True)")
    with make_context():
        module = parse(desc, source_name=f"<intrin {name}>")
        fn = next(op for op in module.body.operations if op.operation.name == "func.func")
        blocks = [b for b in name_blocks(fn.operation) if b.op.name != "linalg.fill"]
        if len(blocks) != 1:
            raise PrimitiveError("register_intrin", f"the description of '{name}' must have one "
                                 f"compute block (besides fills), has {len(blocks)}")
        op = blocks[0].op
        extents = tuple(loop_extents(op))
        _INTRINSICS[name] = (TensorIntrin(desc, impl), signature(op), extents)


def matmul_desc(m: int, n: int, k: int, element: str = "f32") -> str:
    """The description of an ``m x n x k`` matmul accumulation (``C += A @ B``)."""
    a, b, c = (f"tensor<{m}x{k}x{element}>", f"tensor<{k}x{n}x{element}>",
               f"tensor<{m}x{n}x{element}>")
    return (f"func.func @intrin(%A: {a}, %B: {b}, %C: {c}) -> {c} {{\n"
            f"  %r = linalg.matmul ins(%A, %B : {a}, {b}) outs(%C : {c}) -> {c}\n"
            f"  return %r : {c}\n}}")


def signature(op: ir.Operation) -> Signature:
    maps = tuple(str(ir.AffineMapAttr(m).value) for m in linalg.get_indexing_maps(op))
    body = tuple(o.operation.name for o in op.regions[0].blocks[0].operations)
    types = tuple(str(ir.ShapedType(v.type).element_type) if isinstance(v.type, ir.ShapedType)
                  else str(v.type) for v in op.operands)
    return Signature(tuple(iterator_kinds(op)), maps, body, types)


def tensorize(state: KernelState, original: ir.Module, loop: Loop, name: str) -> None:
    """Compute the tile under ``loop`` with the intrinsic ``name`` (see the module doc)."""
    prim = "tensorize"
    if name not in _INTRINSICS:
        known = ", ".join(sorted(_INTRINSICS)) or "none"
        raise PrimitiveError(prim, f"no tensor intrinsic '{name}' (registered: {known})")
    intrin, wanted, wanted_extents = _INTRINSICS[name]
    block = state.owner(loop)
    problem = vector_tile.vector_tile_problem(state, block, loop)
    if problem:
        raise PrimitiveError(prim, problem)
    extents = tile_extents(state, block, loop)
    scratch = rewritten(original, state.rewrites)
    with scratch.context:
        op = find_block_op(scratch, block.func, block.name)
        if op is None:
            raise PrimitiveError(prim, f"block '{block.name}' was made by the schedule (a cache "
                                 "stage or an rf block): tensorize the block it came from")
        have = signature(op)
    if have != wanted:
        diff = next(f for f in ("kinds", "maps", "body", "element_types")
                    if getattr(have, f) != getattr(wanted, f))
        raise PrimitiveError(prim, f"block '{block.name}' does not compute what '{name}' "
                             f"describes: its {diff.replace('_', ' ')} are "
                             f"{list(getattr(have, diff))}, the intrinsic's "
                             f"{list(getattr(wanted, diff))}")
    if tuple(extents) != wanted_extents:
        raise PrimitiveError(prim, f"the tile under loop {state.loop_name(loop)} of block "
                             f"'{block.name}' has extents {extents}; '{name}' computes "
                             f"{list(wanted_extents)}")
    vector_tile.vectorize(state, loop)
    loop.annotations["_tensorize"] = name


def tile_extents(state: KernelState, block: Block, loop: Loop) -> list[int]:
    extents = [1] * len(block.kinds)
    for lid in block.order[block.order.index(loop.id):]:
        for d, e in state.loops[lid].parts:
            extents[d] *= e
    return extents


# -- fuzzing ----------------------------------------------------------------------------------

MAX_TENSORIZED_TILE = 1024  # elements of a tile made one vector.contract (compile time)


@TENSORIZE.fuzzed_by(0.5)
def fuzz_tensorize(sch, rng: random.Random) -> bool:
    # Likely legal: a loop of a matmul-like block (two spatial dims, one reduction) whose tile
    # is small, with a matmul intrinsic of the tile's extents registered for it; else an
    # intrinsic of other extents (refused: the tile does not match).
    block, rv = pick_block(sch, rng, lambda b: not b.origin and b.op_name != "linalg.fill"
                            and len(b.kinds) == 3 and b.kinds.count("reduction") == 1)
    if rv is None:
        return False
    own = [(loop, lid) for loop, lid in zip(sch.get_loops(rv), sch.state.enclosing(block))
           if lid in block.order]
    tiles = [(loop, tile_extents(sch.state, block, sch.state.loops[lid])) for loop, lid in own]
    small = [(loop, e) for loop, e in tiles if e[0] * e[1] * e[2] <= MAX_TENSORIZED_TILE]
    if not small:
        raise NothingLikely
    loop, extents = rng.choice(small)
    if rng.random() >= LIKELY:
        extents = [e + 1 for e in extents]
    m, n, k = extents
    name = f"fuzz.matmul_{m}x{n}x{k}_f32"
    register_intrin(name, matmul_desc(m, n, k), override=True)
    sch.tensorize(loop, name)
    return True
