"""Cache primitives: ``cache_read`` and ``cache_write`` (TVM's cache_read_write). Each adds a
copy block (a cache stage) that ``compute_at`` / ``reverse_compute_at`` place; the materializer
emits it as a promotion of the tiled op's operand."""

from __future__ import annotations

from mlir import ir
from mlir.dialects import transform
from mlir.dialects.transform import structured

import random

from .compute_location import ACCUMULATOR_IN_REDUCTION_LOOP, compute_at
from .errors import PrimitiveError
from .state import REDUCTION, SPATIAL, Block, KernelState, Operand
from .fuzz_support import LIKELY, mostly, own_loops, pick_block, spatial_prefix
from .instruction import CACHE_READ, CACHE_WRITE

STORAGE_SCOPES = ("global", "local", "shared")


def cache_read(state: KernelState, block: Block, read_buffer_index: int,
               storage_scope: str) -> Block:
    """Stage input ``read_buffer_index`` of ``block`` in a buffer of ``storage_scope``;
    returns the copy block."""
    inputs = [i for i, op in enumerate(block.operands) if not op.is_init]
    if not 0 <= read_buffer_index < len(inputs):
        raise PrimitiveError("cache_read", f"block '{block.name}' has {len(inputs)} inputs, no "
                             f"input #{read_buffer_index}")
    producer = block.operands[inputs[read_buffer_index]].producer
    stage = _cache(state, block, "cache_read", inputs[read_buffer_index], read_buffer_index,
                   storage_scope)
    computed_inside = state.blocks.get((block.func, producer)) if producer else None
    if computed_inside is not None and computed_inside.attach is not None \
            and computed_inside.attach.kind == "compute_at" \
            and computed_inside.attach.target == block.name:
        # As TVM places a cache stage right after the block that writes the buffer: the
        # producer is computed at a loop of `block`, so its result exists only there.
        compute_at(state, stage, state.loops[computed_inside.attach.loop])
    return stage


def cache_write(state: KernelState, block: Block, write_buffer_index: int,
                storage_scope: str) -> Block:
    """Make ``block`` compute into a buffer of ``storage_scope`` and copy the result out;
    returns the copy-out block."""
    outputs = [i for i, op in enumerate(block.operands) if op.is_init]
    if not 0 <= write_buffer_index < len(outputs):
        raise PrimitiveError("cache_write", f"block '{block.name}' has {len(outputs)} outputs")
    if block.attach is not None and block.attach.kind == "reverse_compute_at" and any(
            block.kinds[d] == REDUCTION for d in block.region):
        raise PrimitiveError("cache_write", ACCUMULATOR_IN_REDUCTION_LOOP.format(block.name))
    return _cache(state, block, "cache_write", outputs[write_buffer_index], write_buffer_index,
                  storage_scope)


def _cache(state: KernelState, b: Block, kind: str, operand: int, index: int,
           scope: str) -> Block:
    if state.expanded(b) and (not b.expansions or None in b.operands[operand].map_results):
        # A copy of a reshaped operand is made of its levels (one dim each); through a window
        # (``oh + kh``) or after a collapse, the operand's shape is not the state's.
        raise PrimitiveError(kind, f"block '{b.name}' reads reshaped operands "
                             f"({state.reshape_reason(b)}): cache them first")
    if scope not in STORAGE_SCOPES:
        raise PrimitiveError(kind, f"storage_scope must be global, local or shared, got {scope!r}")
    if any(x.origin.get("source") == b.name and x.origin.get("operand") == operand
           for x in state.blocks.values()):
        what = "input" if kind == "cache_read" else "output"
        raise PrimitiveError(kind, f"{what} #{index} of '{b.name}' is already cached")
    name = f"{b.name}_{'read' if kind == 'cache_read' else 'write'}{index}_{scope}"
    rank = len(b.operands[operand].map_results)
    if rank == 0:
        raise PrimitiveError(kind, f"operand #{index} of '{b.name}' is a scalar, not a tensor")
    read = b.operands[operand].map_results
    shape = b.operands[operand].shape
    # A dim read through an expression (a window, ``oh + kh``) has the operand's extent.
    extents = [b.extents[d] if d is not None else shape[r] for r, d in enumerate(read)]
    if any(e is None or e < 0 for e in extents):
        raise PrimitiveError(kind, f"operand #{index} of '{b.name}' has a dynamic shape")
    cache = Block(name, b.func, [SPATIAL] * rank, extents, [], [],
                  [Operand(b.name if kind == "cache_write" else b.operands[operand].producer,
                           list(range(rank)), False)],
                  list(range(rank)), "linalg.copy",
                  origin={"kind": kind, "source": b.name, "operand": operand, "scope": scope})
    for dim, extent in enumerate(extents):
        loop = state.new_loop(cache, [(dim, extent)])
        cache.levels.append([loop.id])
        cache.order.append(loop.id)
    state.blocks[(b.func, name)] = cache
    if kind == "cache_read":
        b.operands[operand] = Operand(name, list(read), False)
    return cache


# -- emission ------------------------------------------------------------------------------------

SCOPE_MEMORY_SPACE = SCOPE_MEMORY_SPACE = {"shared": "#gpu.address_space<workgroup>", "local": None, "global": None}


def promoted_at(state: KernelState, cache: Block) -> int | None:
    """The loop of its block a cache stage is promoted at (None: before the nest). A
    cache_write stage goes no higher than the init computed inside the nest: the init
    writes the cache (promoted above it, the tiled op would no longer read the init's
    tile, through which the init is fused)."""
    loop = cache.attach.loop if cache.attach is not None else None
    if cache.origin.get("kind") != "cache_write":
        return loop
    source = state.blocks[(cache.func, cache.origin["source"])]
    init = state.init_producer(source)
    if init is None or init.attach is None or init.attach.target != source.name:
        return loop
    chain = state.enclosing(source)
    if loop is None or chain.index(loop) < chain.index(init.attach.loop):
        return init.attach.loop
    return loop


def emit_promotion(cache: Block, op_handle: ir.Value) -> None:
    """A cache stage as the promotion of the tiled op's operand (a copy per tile, in the
    scope's memory space)."""
    operand = transform.GetOperandOp(transform.AnyValueType.get(), op_handle,
                                     [cache.origin["operand"]]).result
    space = SCOPE_MEMORY_SPACE[cache.origin["scope"]]
    structured.PromoteTensorOp(operand, memory_space=ir.Attribute.parse(space) if space else None)


# -- fuzzing ----------------------------------------------------------------------------------

@CACHE_READ.fuzzed_by(1)
def fuzz_cache_read(sch, rng: random.Random) -> bool:
    block, rv = pick_block(sch, rng, lambda b: not b.origin and any(
        not op.is_init and op.map_results for op in b.operands))
    if block is None:
        return False
    inputs = [i for i, op in enumerate(op for op in block.operands if not op.is_init)]
    cached = {b.origin.get("operand") for b in sch.state.blocks.values()
              if b.origin.get("source") == block.name}
    loops = sch.get_loops(rv)
    cache = sch.cache_read(rv, mostly(rng, [i for i in inputs if i not in cached], inputs),
                           rng.choice(["global", "local"]))
    if loops and rng.random() < 0.7:
        sch.compute_at(cache, mostly(rng, own_loops(sch, rv), loops))
    return True


@CACHE_WRITE.fuzzed_by(1)
def fuzz_cache_write(sch, rng: random.Random) -> bool:
    def uncached(b) -> bool:
        return not any(x.origin.get("source") == b.name and x.origin.get("kind") == "cache_write"
                       for x in sch.state.blocks.values())

    likely = rng.random() < LIKELY
    block, rv = pick_block(sch, rng, lambda b: not b.origin and b.op_name != "linalg.fill"
                            and (uncached(b) or not likely))
    if block is None:
        return False
    loops = sch.get_loops(rv)
    cache = sch.cache_write(rv, 0, rng.choice(["global", "local"]))
    if loops and rng.random() < 0.7:
        sch.reverse_compute_at(cache, mostly(rng, spatial_prefix(sch, own_loops(sch, rv)),
                                              loops))
    return True
