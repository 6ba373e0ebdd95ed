"""Every primitive as one object: its instruction kind, with the fuzz sampler that picks
well-formed arguments for it on a schedule and applies it (``PRIMITIVES``, by kind name; the
schedule fuzzer, ``mlcir.testing.fuzz_schedules``, draws from this table).

A sampler ``(sch, rng) -> bool`` returns False when it has nothing to apply to, raises
:class:`NothingLikely` when no argument that can be legal was found, and lets the primitive's
``ScheduleError`` (a refusal) through. Whether arguments are *legal* is the schedule's business:
samplers usually draw among arguments that can be legal (``LIKELY``), sometimes anything, so
the legality checks are exercised. Adding a primitive is one ``@sampler(KIND, weight)`` here.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any, Callable

from .annotate import GPU_AXES
from .instruction import (ADD_UNIT_LOOP, ANNOTATE, BIND, BLOCKIZE, CACHE_READ, CACHE_WRITE,
                          COMPUTE_AT, COMPUTE_INLINE, DECOMPOSE_REDUCTION, FUSE, GET_BLOCK,
                          GET_CHILD_BLOCKS, GET_CONSUMERS, GET_LOOPS, GET_PRODUCERS, PARALLEL,
                          REORDER, REVERSE_COMPUTE_AT, REVERSE_COMPUTE_INLINE, RFACTOR,
                          SAMPLE_CATEGORICAL, SAMPLE_COMPUTE_LOCATION, SAMPLE_PARTITIONED_TILE,
                          SAMPLE_PERFECT_TILE, SET_SCOPE, SPLIT, STORAGE_ALIGN, TENSORIZE,
                          TRANSFORM_LAYOUT, UNANNOTATE, UNROLL, VECTORIZE, InstructionKind)
from .compute_location import init_fill
from .sample_location import candidates
from .tensorize import matmul_desc, register_intrin, tile_extents

LIKELY = 0.9  # how often a primitive's arguments are drawn among those that can be legal

Sampler = Callable[[Any, random.Random], bool]


@dataclass(frozen=True)
class Primitive:
    """A schedule primitive: its instruction kind, how often the fuzzer draws it, and its
    sampler."""

    kind: InstructionKind
    weight: float
    sample: Sampler

    @property
    def name(self) -> str:
        return self.kind.name


PRIMITIVES: dict[str, Primitive] = {}


def sampler(kind: InstructionKind, weight: float) -> Callable[[Sampler], Sampler]:
    """Register the decorated function as the fuzz sampler of ``kind``."""
    def register(sample: Sampler) -> Sampler:
        if kind.name in PRIMITIVES:
            raise ValueError(f"primitive '{kind.name}' has two samplers")
        PRIMITIVES[kind.name] = Primitive(kind, weight, sample)
        return sample
    return register


class NothingLikely(Exception):
    """A primitive found no argument that can be legal this time: it applies nothing."""



def _own_loops(sch, block_rv) -> list[Any]:
    """The loops of the block's own nest (not the shared loops it is computed under)."""
    block = next(b for (_, name), b in sch.state.blocks.items() if name == sch.get(block_rv))
    loops = sch.get_loops(block_rv)
    return [rv for rv, lid in zip(loops, sch.state.enclosing(block)) if lid in block.order]


def _pick_block(sch, rng: random.Random, want: Callable[[Any], bool] = lambda _block: True):
    """A live block that ``want`` accepts and a handle to it, or ``(None, None)``."""
    candidates = [b for b in sch.state.blocks.values() if not b.inlined and want(b)]
    if not candidates:
        return None, None
    block = rng.choice(candidates)
    return block, sch.get_block(block.name, func_name=block.func)


def _factors(rng: random.Random, extent: int) -> list[int | None]:
    """Split factors: a perfect tiling, one that does not divide, or one with ``None``."""
    n = rng.choice([2, 2, 3])
    inner = [rng.randint(1, max(1, min(extent, 16))) for _ in range(n - 1)]
    if rng.random() < 0.4:  # a perfect tiling
        rest, inner = extent, []
        for _ in range(n - 1):
            f = rng.choice([d for d in range(1, rest + 1) if rest % d == 0])
            inner.append(f)
            rest //= f
        return [rest, *inner]
    if rng.random() < 0.5:
        return [None, *inner]
    product = 1
    for f in inner:
        product *= f
    return [-(-extent // product), *inner]


def _some_block_loops(sch, rng: random.Random) -> list:
    """The own loops of a random block that is not a cache stage (none when there is no
    such block)."""
    _, block = _pick_block(sch, rng, lambda b: not b.origin)
    return _own_loops(sch, block) if block is not None else []


def _on_loops(sch, rng: random.Random, apply: Callable[[list[Any]], Any]) -> bool:
    """``apply`` to the own loops of a random block that is not a cache stage, if it has any."""
    loops = _some_block_loops(sch, rng)
    if loops:
        apply(loops)
    return bool(loops)


def _on_block(sch, rng: random.Random, apply: Callable[[Any], Any],
              want: Callable[[Any], bool] = lambda _block: True) -> bool:
    """``apply`` to a handle of a random live block that ``want`` accepts, if there is one."""
    _, rv = _pick_block(sch, rng, want)
    if rv is not None:
        apply(rv)
    return rv is not None


@sampler(SPLIT, 4)
def split(sch, rng: random.Random) -> bool:
    def apply(loops: list[Any]) -> None:
        loop = rng.choice(loops)
        sch.split(loop, _factors(rng, max(sch.get(loop).extent, 1)))
    return _on_loops(sch, rng, apply)


def _sampled_split(sch, rng: random.Random, perfect: bool) -> bool:
    loops = _some_block_loops(sch, rng)
    if not loops:
        return False
    loop = rng.choice(loops)
    n = rng.choice([2, 3])
    if perfect:
        factors = sch.sample_perfect_tile(loop, n=n, max_innermost_factor=rng.choice([4, 16]))
    else:
        factors = sch.sample_partitioned_tile(loop, n=n, partition_pos=rng.randint(1, n - 1),
                                              max_innermost_factor=rng.choice([4, 16]))
    sch.split(loop, factors)
    return True


@sampler(SAMPLE_PERFECT_TILE, 1)
def sample_perfect_tile(sch, rng: random.Random) -> bool:
    return _sampled_split(sch, rng, perfect=True)


@sampler(SAMPLE_PARTITIONED_TILE, 1)
def sample_partitioned_tile(sch, rng: random.Random) -> bool:
    return _sampled_split(sch, rng, perfect=False)


@sampler(REORDER, 3)
def reorder(sch, rng: random.Random) -> bool:
    block, rv = _pick_block(sch, rng, lambda b: not b.origin)
    loops = _own_loops(sch, rv) if rv is not None else []
    if len(loops) < 2:
        return False
    # Legal below the innermost loop another block is computed at (TVM's single chain).
    attached = [i for i, lid in enumerate(block.order) if sch.state.attached_at(lid, block.func)]
    free = loops[max(attached) + 1:] if attached else loops
    if rng.random() < LIKELY:
        if len(free) < 2:
            raise NothingLikely
        pool = free
    else:
        pool = loops
    sch.reorder(*rng.sample(pool, rng.randint(2, len(pool))))
    return True


@sampler(FUSE, 1)
def fuse(sch, rng: random.Random) -> bool:
    loops = _some_block_loops(sch, rng)
    pairs = [(a, b) for a, b in zip(loops, loops[1:]) if sch.get(a).kind == sch.get(b).kind]
    if not pairs:
        return False
    sch.fuse(*rng.choice(pairs))
    return True


@sampler(PARALLEL, 1)
def parallel(sch, rng: random.Random) -> bool:
    loops = _some_block_loops(sch, rng)
    spatial = [rv for rv in loops if sch.get(rv).kind == "spatial"]
    if not spatial:
        return False
    sch.parallel(spatial[0] if rng.random() < 0.7 else rng.choice(spatial))
    return True


@sampler(VECTORIZE, 2)
def vectorize(sch, rng: random.Random) -> bool:
    return _on_loops(sch, rng, lambda loops: sch.vectorize(
        loops[-1] if rng.random() < 0.7 or len(loops) < 2 else loops[-2]))


@sampler(UNROLL, 1)
def unroll(sch, rng: random.Random) -> bool:
    return _on_loops(sch, rng, lambda loops: sch.unroll(rng.choice(loops),
                                                        factor=rng.choice([None, 2, 4])))


def _mostly(rng: random.Random, likely: list[Any], anything: list[Any]) -> Any:
    """Usually one of ``likely`` (arguments that can be legal, as TVM's sampling of compute
    locations draws only those), sometimes anything, so the legality checks are exercised."""
    if rng.random() < LIKELY:
        if not likely:
            raise NothingLikely
        return rng.choice(likely)
    return rng.choice(anything)


def _spatial_prefix(sch, loops: list[Any]) -> list[Any]:
    """The loops above the first reduction loop."""
    out = []
    for rv in loops:
        if sch.get(rv).kind != "spatial":
            break
        out.append(rv)
    return out


def _consumers(sch, block) -> list[Any]:
    return [c for c, _ in sch.state.consumers(block)]


@sampler(COMPUTE_AT, 1)
def compute_at(sch, rng: random.Random) -> bool:
    # Not the fills that initialise reductions: in TensorIR the init is part of the reduction
    # block, and decompose_reduction places it.
    # Likely legal: a producer with one consumer (all its consumers must be under the loop),
    # which is computed at no other block (its loops would be shared ones).
    likely = rng.random() < LIKELY
    producer, rv = _pick_block(sch, rng, lambda b: b.attach is None and b.op_name != "linalg.fill"
                               and bool(_consumers(sch, b)) and (not likely or (
                                   len(_consumers(sch, b)) == 1
                                   and _consumers(sch, b)[0].attach is None)))
    if producer is None:
        return False
    consumer = rng.choice(_consumers(sch, producer))
    loops = sch.get_loops(sch.get_block(consumer.name))
    if not loops:
        return False
    sch.compute_at(rv, _mostly(rng, _own_loops(sch, sch.get_block(consumer.name)), loops))
    return True


@sampler(REVERSE_COMPUTE_AT, 1)
def reverse_compute_at(sch, rng: random.Random) -> bool:
    consumer, rv = _pick_block(sch, rng, lambda b: b.attach is None and any(
        op.producer and not op.is_init for op in b.operands))
    if consumer is None:
        return False
    producer = rng.choice([op.producer for op in consumer.operands
                           if op.producer and not op.is_init])
    loops = sch.get_loops(sch.get_block(producer))
    if not loops:
        return False
    # Likely legal: loops above the producer's reductions, of a producer computed at no
    # other block (its loops would be shared ones), for a consumer whose other producers do
    # not read the producer (TVM's rule: they must be complete before the loop).
    target = next(b for b in sch.state.blocks.values() if b.name == producer)
    others = [sch.state.blocks[(consumer.func, op.producer)] for op in consumer.operands
              if op.producer and op.producer != producer]
    waits = any(op.producer == producer for other in others for op in other.operands)
    likely = _spatial_prefix(sch, _own_loops(sch, sch.get_block(producer))) \
        if target.attach is None and not waits else []
    sch.reverse_compute_at(rv, _mostly(rng, likely, loops))
    return True


@sampler(COMPUTE_INLINE, 1)
def compute_inline(sch, rng: random.Random) -> bool:
    return _on_block(sch, rng, sch.compute_inline, lambda b: "reduction" not in b.kinds
                     and not b.origin and b.op_name != "linalg.fill" and bool(_consumers(sch, b)))


@sampler(REVERSE_COMPUTE_INLINE, 1)
def reverse_compute_inline(sch, rng: random.Random) -> bool:
    def producers(b) -> set[str]:
        return {op.producer for op in b.operands if op.producer and not op.is_init}

    def elementwise(b) -> bool:
        return "reduction" not in b.kinds and not b.origin and b.op_name != "linalg.fill"

    def after_elementwise(b) -> bool:
        names = producers(b)
        return len(names) == 1 and elementwise(sch.state.blocks[(b.func, names.pop())])

    likely = rng.random() < LIKELY
    return _on_block(sch, rng, sch.reverse_compute_inline, lambda b: elementwise(b)
                     and bool(producers(b)) and (after_elementwise(b) or not likely))


@sampler(DECOMPOSE_REDUCTION, 1)
def decompose_reduction(sch, rng: random.Random) -> bool:
    block, rv = _pick_block(sch, rng, lambda b: "reduction" in b.kinds and not b.origin)
    loops = _own_loops(sch, rv) if rv is not None else []
    if not loops:
        return False
    # Legal where every loop above is spatial (the init then runs once per output tile) and
    # none of them vectorized, once per block (the init is then placed).
    init = init_fill(sch.state, block)
    placed = init is None or init.attach is not None and init.attach != block.attach
    prefix = loops[:len(_spatial_prefix(sch, loops)) + 1]
    likely = [] if placed else [
        rv for i, rv in enumerate(prefix)
        if not any(sch.get(above).annotations.get("vectorize") for above in prefix[:i])]
    sch.decompose_reduction(rv, _mostly(rng, likely, loops))
    return True


@sampler(CACHE_READ, 1)
def cache_read(sch, rng: random.Random) -> bool:
    block, rv = _pick_block(sch, rng, lambda b: not b.origin and any(
        not op.is_init and op.map_results for op in b.operands))
    if block is None:
        return False
    inputs = [i for i, op in enumerate(op for op in block.operands if not op.is_init)]
    cached = {b.origin.get("operand") for b in sch.state.blocks.values()
              if b.origin.get("source") == block.name}
    loops = sch.get_loops(rv)
    cache = sch.cache_read(rv, _mostly(rng, [i for i in inputs if i not in cached], inputs),
                           rng.choice(["global", "local"]))
    if loops and rng.random() < 0.7:
        sch.compute_at(cache, _mostly(rng, _own_loops(sch, rv), loops))
    return True


@sampler(CACHE_WRITE, 1)
def cache_write(sch, rng: random.Random) -> bool:
    def uncached(b) -> bool:
        return not any(x.origin.get("source") == b.name and x.origin.get("kind") == "cache_write"
                       for x in sch.state.blocks.values())

    likely = rng.random() < LIKELY
    block, rv = _pick_block(sch, rng, lambda b: not b.origin and b.op_name != "linalg.fill"
                            and (uncached(b) or not likely))
    if block is None:
        return False
    loops = sch.get_loops(rv)
    cache = sch.cache_write(rv, 0, rng.choice(["global", "local"]))
    if loops and rng.random() < 0.7:
        sch.reverse_compute_at(cache, _mostly(rng, _spatial_prefix(sch, _own_loops(sch, rv)),
                                              loops))
    return True


@sampler(RFACTOR, 1)
def rfactor(sch, rng: random.Random) -> bool:
    # rfactor factors a block with one reduction dimension over one level of its perfect
    # split (split_reduction reshapes the dimension exactly): split it first where it is not.
    # Likely legal (TVM's rfactor rules too): a block nothing else is computed at or caches,
    # itself computed at its own place, not factored yet, its reduction split in two at most.
    def alone(b) -> bool:
        return b.attach is None and not any(
            x.attach is not None and x.attach.target == b.name or x.origin.get("source") == b.name
            for x in sch.state.blocks.values() if not x.inlined) \
            and (b.func, f"{b.name}_rf") not in sch.state.blocks

    likely = rng.random() < LIKELY
    block, rv = _pick_block(sch, rng, lambda b: b.kinds.count("reduction") == 1
                            and not b.origin and b.op_name != "linalg.fill"
                            and (not likely or alone(b)))
    if rv is None:
        return False
    levels = [lv for lv in _own_loops(sch, rv) if sch.get(lv).kind == "reduction"]
    if likely and (len(levels) > 2 or len(levels) == 2 and sch.get(levels[0]).extent
                   * sch.get(levels[1]).extent != block.extents[block.kinds.index("reduction")]):
        raise NothingLikely
    if len(levels) == 1:
        extent = sch.get(levels[0]).extent
        divisors = [d for d in range(2, extent) if extent % d == 0]
        if not divisors:
            raise NothingLikely
        levels = sch.split(levels[0], [None, rng.choice(divisors)])
    rank = len([d for d in block.output_map if d is not None])
    sch.rfactor(rng.choice(levels), factor_axis=rng.randint(0, rank))
    return True


@sampler(ADD_UNIT_LOOP, 0.5)
def add_unit_loop(sch, rng: random.Random) -> bool:
    block, rv = _pick_block(sch, rng, lambda b: not b.origin)
    if rv is None:
        return False
    loops = _own_loops(sch, rv)
    sch.add_unit_loop(rng.choice(loops) if loops and rng.random() < 0.5 else rv)
    return True


@sampler(BLOCKIZE, 0.5)
def blockize(sch, rng: random.Random) -> bool:
    # Likely legal: a loop with no other block computed at it or inside it.
    block, rv = _pick_block(sch, rng, lambda b: not b.origin and bool(b.order))
    if rv is None:
        return False
    loops = _own_loops(sch, rv)
    inner = [lv for i, lv in enumerate(loops)
             if not any(sch.state.attached_at(lid, block.func) for lid in block.order[i:])]
    sch.blockize(_mostly(rng, inner, loops))
    return True


def _intermediate(sch, rng: random.Random) -> Callable[[Any], bool]:
    """Likely legal for the memory primitives: a block whose result is not the function's
    (whose memory and layout are the caller's), here one that other blocks (not only its
    cache stage) read."""
    likely = rng.random() < LIKELY
    return lambda b: not likely or any(not c.origin for c in _consumers(sch, b))


@sampler(SET_SCOPE, 0.5)
def set_scope(sch, rng: random.Random) -> bool:
    inner = _intermediate(sch, rng)
    _, rv = _pick_block(sch, rng, lambda b: not b.origin and b.op_name != "linalg.fill"
                        and inner(b))
    if rv is None:
        return False
    sch.set_scope(rv, 0, rng.choice(["global", "local"]))
    return True


@sampler(STORAGE_ALIGN, 0.5)
def storage_align(sch, rng: random.Random) -> bool:
    inner = _intermediate(sch, rng)
    block, rv = _pick_block(sch, rng, lambda b: not b.origin and b.op_name != "linalg.fill"
                            and len([d for d in b.output_map if d is not None]) >= 2
                            and inner(b))
    if rv is None:
        return False
    rank = len([d for d in block.output_map if d is not None])
    factor = rng.choice([4, 8, 16])
    sch.storage_align(rv, 0, rank - 2, factor, rng.randrange(factor))
    return True


@sampler(TRANSFORM_LAYOUT, 0.5)
def transform_layout(sch, rng: random.Random) -> bool:
    inner = _intermediate(sch, rng)
    block, rv = _pick_block(sch, rng, lambda b: not b.origin and b.op_name != "linalg.fill"
                            and bool(b.output_map) and inner(b))
    if rv is None:
        return False
    names = [f"v{i}" for i in range(len(block.output_map))]
    results = list(names)
    rng.shuffle(results)  # a permutation,
    extents = [block.extents[d] if d is not None else 1 for d in block.output_map]
    position = rng.randrange(len(names))
    divisors = [c for c in range(2, 9) if extents[position] % c == 0]
    if divisors and rng.random() < 0.5:  # or a packing of one dim
        c = rng.choice(divisors)
        v = names[position]
        at = results.index(v)
        results[at:at + 1] = [f"{v} // {c}"]
        results.append(f"{v} % {c}")
    sch.transform_layout(rv, ("write", 0), f"lambda {', '.join(names)}: ({', '.join(results)},)")
    return True


# -- lookups: every sampler looks blocks and loops up; these draw the lookups themselves ------

def _some_block_or_loop(sch, rng: random.Random) -> Any:
    """A handle to a random live block or to one of its loops, or None (no block)."""
    _, rv = _pick_block(sch, rng)
    if rv is None:
        return None
    loops = sch.get_loops(rv)
    return rng.choice(loops) if loops and rng.random() < 0.7 else rv


@sampler(GET_BLOCK, 0.25)
def get_block(sch, rng: random.Random) -> bool:
    return _pick_block(sch, rng)[1] is not None


@sampler(GET_CHILD_BLOCKS, 0.25)
def get_child_blocks(sch, rng: random.Random) -> bool:
    target = _some_block_or_loop(sch, rng)
    if target is not None:
        sch.get_child_blocks(target)
    return target is not None


for _lookup in (GET_LOOPS, GET_PRODUCERS, GET_CONSUMERS):  # of a random block
    sampler(_lookup, 0.25)(
        lambda sch, rng, name=_lookup.name: _on_block(sch, rng, getattr(sch, name)))


# -- annotations and bindings ----------------------------------------------------------------

@sampler(BIND, 0.5)
def bind(sch, rng: random.Random) -> bool:
    # Likely legal: a spatial loop and a known axis (on a CPU a bound loop runs as a serial
    # scf.forall); else any loop (a reduction loop is refused) or an unknown axis (refused).
    loops = _some_block_loops(sch, rng)
    if not loops:
        return False
    spatial = [rv for rv in loops if sch.get(rv).kind == "spatial"]
    axis = rng.choice(GPU_AXES) if rng.random() < LIKELY else "warpIdx.x"
    sch.bind(_mostly(rng, spatial, loops), axis)
    return True


# Keys codegen does not read (annotate's documented use: a note for later passes).
ANNOTATION_KEYS = ("fuzz_note", "pragma_hint")


@sampler(ANNOTATE, 0.5)
def annotate(sch, rng: random.Random) -> bool:
    target = _some_block_or_loop(sch, rng)
    if target is None:
        return False
    value = rng.choice([1, 2.5, "x", True])
    if rng.random() < LIKELY:
        sch.annotate(target, rng.choice(ANNOTATION_KEYS), value)
    else:  # refused: a reserved key or a value of another type
        sch.annotate(target, *rng.choice([("_reserved", value), ("fuzz_note", [value])]))
    return True


@sampler(UNANNOTATE, 0.25)
def unannotate(sch, rng: random.Random) -> bool:
    target = _some_block_or_loop(sch, rng)
    if target is None:
        return False
    if rng.random() >= LIKELY:  # refused unless present
        sch.unannotate(target, rng.choice(ANNOTATION_KEYS))
        return True
    # Likely legal: annotate, then take the note off again.
    key = rng.choice(ANNOTATION_KEYS)
    sch.annotate(target, key, rng.choice([1, "x"]))
    sch.unannotate(target, key)
    return True


# -- sampling --------------------------------------------------------------------------------

@sampler(SAMPLE_CATEGORICAL, 0.5)
def sample_categorical(sch, rng: random.Random) -> bool:
    # A sampled inner split factor, as MetaSchedule samples unroll depths and tile sizes.
    def apply(loops: list[Any]) -> None:
        factor = sch.sample_categorical([1, 2, 4, 8], [0.25, 0.25, 0.25, 0.25])
        sch.split(rng.choice(loops), [None, factor])
    return _on_loops(sch, rng, apply)


@sampler(SAMPLE_COMPUTE_LOCATION, 0.5)
def sample_compute_location(sch, rng: random.Random) -> bool:
    # Likely legal: a producer with a loop it can be computed at (else the sampling refuses).
    likely = rng.random() < LIKELY
    block, rv = _pick_block(sch, rng, lambda b: b.attach is None and b.op_name != "linalg.fill"
                            and bool(_consumers(sch, b)))
    if block is None:
        return False
    if likely and not candidates(sch.state, block):
        raise NothingLikely
    sch.compute_at(rv, sch.sample_compute_location(rv))
    return True


# -- tensorize -------------------------------------------------------------------------------

MAX_TENSORIZED_TILE = 1024  # elements of a tile made one vector.contract (compile time)


@sampler(TENSORIZE, 0.5)
def tensorize(sch, rng: random.Random) -> bool:
    # Likely legal: a loop of a matmul-like block (two spatial dims, one reduction) whose tile
    # is small, with a matmul intrinsic of the tile's extents registered for it; else an
    # intrinsic of other extents (refused: the tile does not match).
    block, rv = _pick_block(sch, rng, lambda b: not b.origin and b.op_name != "linalg.fill"
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
