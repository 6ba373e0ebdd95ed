"""A schedule fuzzer: random schedules over every primitive, each built and checked against
numpy in a worker process with a time-out.

    python -m mlcir.testing.fuzz_schedules --cases 2000 --seed 0 [--jobs 2] [--timeout 120]

Each case draws a kernel kind (``KERNELS``) with random, often odd or prime, extents, then a
few primitives from ``PRIMITIVES``. A primitive entry picks well-formed arguments at random
(a producer and a loop of one of its consumers for ``compute_at``, any loops of one block for
``reorder``, any factors for ``split``…) and applies them; whether they are *legal* is the
schedule's business. The case's outcome is ``ok`` (built, matches numpy), ``refused`` (a
``ScheduleError``: a primitive or the materialisation refused, with its reason), ``wrong``
(built, but the numbers differ), ``crashed`` (any other exception, or the worker process died:
LLVM is an assertions build) or ``hung`` (past the time-out). The run prints the counts, the
refusal reasons grouped, and the seeds of the bad cases; ``--case I`` replays one case and
prints its trace.

Adding a primitive is one entry in ``PRIMITIVES``: a name, a weight and a function
``(sch, rng) -> bool`` that applies it (False when it has nothing to apply to).
"""

from __future__ import annotations

import json
import random
import re
import sys
import traceback
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from .workers import (fuzzer_arguments, outcome_counts, refusal_counts, run_in_workers, serve,
                      write_results)

TOLERANCE = 1e-4  # error relative to the largest magnitude of numpy's answer
LIKELY = 0.9  # how often a primitive's arguments are drawn among those that can be legal
# A worker is replaced after this many cases: the memory of the modules and execution engines
# it made is not all given back (two workers grew to 7 and 10 GB over ~4000 cases).
CASES_PER_WORKER = 200


# -- kernels ---------------------------------------------------------------------------------

def _extent(rng: random.Random, low: int, high: int) -> int:
    """An extent, uniform in a range: half odd, many prime (real shapes rarely divide
    nicely)."""
    return rng.randint(low, high)


def _matmul_bias_relu(rng: random.Random):
    from . import kernels
    return kernels.matmul_bias_relu(_extent(rng, 3, 40), _extent(rng, 3, 40), _extent(rng, 3, 40))


def _conv2d(rng: random.Random):
    from . import kernels
    h, w = _extent(rng, 4, 12), _extent(rng, 4, 12)
    return kernels.conv2d(1, _extent(rng, 1, 5), h, w, _extent(rng, 1, 8), 3, 3)


def _softmax(rng: random.Random):
    from . import kernels
    return kernels.softmax(_extent(rng, 2, 24), _extent(rng, 3, 70))


def _row_sum(rng: random.Random):
    from . import kernels
    return kernels.row_sum(_extent(rng, 2, 40), _extent(rng, 3, 100))


def _transpose_relu(rng: random.Random):
    from . import kernels
    rank = rng.choice([2, 3, 4])
    perm = list(range(rank))
    while perm == sorted(perm):
        rng.shuffle(perm)
    return kernels.transpose_relu([_extent(rng, 2, 20) for _ in range(rank)], perm)


KERNELS: dict[str, Callable[[random.Random], tuple[str, Callable[..., np.ndarray]]]] = {
    "matmul_bias_relu": _matmul_bias_relu,
    "conv2d": _conv2d,
    "softmax": _softmax,
    "row_sum": _row_sum,
    "transpose_relu": _transpose_relu,
}


# -- primitives ------------------------------------------------------------------------------

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


def split(sch, rng: random.Random) -> bool:
    loops = _some_block_loops(sch, rng)
    if not loops:
        return False
    loop = rng.choice(loops)
    sch.split(loop, _factors(rng, max(sch.get(loop).extent, 1)))
    return True


def sample_split(sch, rng: random.Random) -> bool:
    loops = _some_block_loops(sch, rng)
    if not loops:
        return False
    loop = rng.choice(loops)
    n = rng.choice([2, 3])
    if rng.random() < 0.5:
        factors = sch.sample_perfect_tile(loop, n=n, max_innermost_factor=rng.choice([4, 16]))
    else:
        factors = sch.sample_partitioned_tile(loop, n=n, partition_pos=rng.randint(1, n - 1),
                                              max_innermost_factor=rng.choice([4, 16]))
    sch.split(loop, factors)
    return True


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


def fuse(sch, rng: random.Random) -> bool:
    loops = _some_block_loops(sch, rng)
    pairs = [(a, b) for a, b in zip(loops, loops[1:]) if sch.get(a).kind == sch.get(b).kind]
    if not pairs:
        return False
    sch.fuse(*rng.choice(pairs))
    return True


def parallel(sch, rng: random.Random) -> bool:
    loops = _some_block_loops(sch, rng)
    spatial = [rv for rv in loops if sch.get(rv).kind == "spatial"]
    if not spatial:
        return False
    sch.parallel(spatial[0] if rng.random() < 0.7 else rng.choice(spatial))
    return True


def vectorize(sch, rng: random.Random) -> bool:
    loops = _some_block_loops(sch, rng)
    if not loops:
        return False
    sch.vectorize(loops[-1] if rng.random() < 0.7 or len(loops) < 2 else loops[-2])
    return True


def unroll(sch, rng: random.Random) -> bool:
    loops = _some_block_loops(sch, rng)
    if not loops:
        return False
    sch.unroll(rng.choice(loops), factor=rng.choice([None, 2, 4]))
    return True


class NothingLikely(Exception):
    """A primitive found no argument that can be legal this time: it applies nothing."""


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


def compute_inline(sch, rng: random.Random) -> bool:
    _, rv = _pick_block(sch, rng, lambda b: "reduction" not in b.kinds and not b.origin
                        and b.op_name != "linalg.fill" and bool(_consumers(sch, b)))
    if rv is None:
        return False
    sch.compute_inline(rv)
    return True


def reverse_compute_inline(sch, rng: random.Random) -> bool:
    def producers(b) -> set[str]:
        return {op.producer for op in b.operands if op.producer and not op.is_init}

    def elementwise(b) -> bool:
        return "reduction" not in b.kinds and not b.origin and b.op_name != "linalg.fill"

    def after_elementwise(b) -> bool:
        names = producers(b)
        return len(names) == 1 and elementwise(sch.state.blocks[(b.func, names.pop())])

    likely = rng.random() < LIKELY
    _, rv = _pick_block(sch, rng, lambda b: elementwise(b) and bool(producers(b))
                        and (after_elementwise(b) or not likely))
    if rv is None:
        return False
    sch.reverse_compute_inline(rv)
    return True


def decompose_reduction(sch, rng: random.Random) -> bool:
    from mlcir.schedule.compute_location import init_fill

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


def add_unit_loop(sch, rng: random.Random) -> bool:
    block, rv = _pick_block(sch, rng, lambda b: not b.origin)
    if rv is None:
        return False
    loops = _own_loops(sch, rv)
    sch.add_unit_loop(rng.choice(loops) if loops and rng.random() < 0.5 else rv)
    return True


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


def set_scope(sch, rng: random.Random) -> bool:
    inner = _intermediate(sch, rng)
    _, rv = _pick_block(sch, rng, lambda b: not b.origin and b.op_name != "linalg.fill"
                        and inner(b))
    if rv is None:
        return False
    sch.set_scope(rv, 0, rng.choice(["global", "local"]))
    return True


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


@dataclass(frozen=True)
class Primitive:
    name: str
    weight: float
    apply: Callable[[Any, random.Random], bool]


PRIMITIVES: list[Primitive] = [
    Primitive("split", 4, split),
    Primitive("sample_split", 2, sample_split),
    Primitive("reorder", 3, reorder),
    Primitive("fuse", 1, fuse),
    Primitive("parallel", 1, parallel),
    Primitive("vectorize", 2, vectorize),
    Primitive("unroll", 1, unroll),
    Primitive("compute_at", 1, compute_at),
    Primitive("reverse_compute_at", 1, reverse_compute_at),
    Primitive("compute_inline", 1, compute_inline),
    Primitive("reverse_compute_inline", 1, reverse_compute_inline),
    Primitive("decompose_reduction", 1, decompose_reduction),
    Primitive("cache_read", 1, cache_read),
    Primitive("cache_write", 1, cache_write),
    Primitive("rfactor", 1, rfactor),
    Primitive("add_unit_loop", 0.5, add_unit_loop),
    Primitive("blockize", 0.5, blockize),
    Primitive("set_scope", 0.5, set_scope),
    Primitive("storage_align", 0.5, storage_align),
    Primitive("transform_layout", 0.5, transform_layout),
]


# -- one case --------------------------------------------------------------------------------

def case_rng(seed: int, case: int) -> random.Random:
    return random.Random(seed * 1_000_003 + case)


def run_case(seed: int, case: int, steps: tuple[int, int] = (2, 7)) -> dict[str, Any]:
    """Draw, schedule, build and check one case; the outcome as a JSON-able dict."""
    import mlcir
    from mlcir.schedule import ScheduleError

    from .kernels import random_inputs

    rng = case_rng(seed, case)
    kind = rng.choice(sorted(KERNELS))
    text, reference = KERNELS[kind](rng)
    result: dict[str, Any] = {"case": case, "kernel": kind}
    sch = mlcir.Schedule(text, seed=case)
    names = [p.name for p in PRIMITIVES]
    weights = [p.weight for p in PRIMITIVES]
    applied: list[str] = []
    try:
        for _ in range(rng.randint(*steps)):
            primitive = PRIMITIVES[names.index(rng.choices(names, weights)[0])]
            try:
                if primitive.apply(sch, rng):
                    applied.append(primitive.name)
            except NothingLikely:
                pass
        module = sch.mod
        ex = mlcir.build(module, target="llvm -opt-level=1")
    except ScheduleError as error:
        return {**result, "outcome": "refused", "reason": str(error).split("\ntrace:")[0],
                "trace": sch.trace.as_python()}
    except Exception as error:  # noqa: BLE001 - every other failure is a crash, with its trace
        return {**result, "outcome": "crashed", "reason": f"{type(error).__name__}: {error}"[:2000],
                "trace": sch.trace.as_python(), "traceback": traceback.format_exc()[-3000:]}
    inputs = random_inputs(text, case)
    out, ref = ex.main(*inputs), reference(*inputs)
    err = float(np.abs(out - ref).max() / max(float(np.abs(ref).max()), 1e-6))
    outcome = "ok" if err < TOLERANCE and out.shape == ref.shape else "wrong"
    return {**result, "outcome": outcome, "error": err, "primitives": applied,
            **({"trace": sch.trace.as_python()} if outcome != "ok" else {})}


def fuzz(cases: int, seed: int = 0, jobs: int = 1, timeout: float = 300.0,
         progress: Callable[[dict[str, Any]], None] | None = None) -> list[dict[str, Any]]:
    """Run ``cases`` cases in ``jobs`` worker processes; each case's result, by case index."""
    requests = [{"seed": seed, "case": case} for case in range(cases)]
    return run_in_workers("mlcir.testing.fuzz_schedules", requests, jobs, timeout, progress,
                          CASES_PER_WORKER)


def reason_group(reason: str) -> str:
    """A refusal reason without its particulars (numbers, names), to count alike ones."""
    reason = re.sub(r"\(instruction \d+\)", "", reason)
    reason = re.sub(r"'[^']*'", "'B'", reason)
    reason = re.sub(r"\bloop \w+", "loop L", reason)
    reason = re.sub(r"\b[a-z](_\d+)+\b(, [a-z](_\d+)+\b)*", "L..", reason)
    reason = re.sub(r"\((\w+, )+\w+\)", "(L, ..)", reason)
    reason = re.sub(r"\[[^\]]*\]", "[..]", reason)
    reason = re.sub(r"\d+", "N", reason)
    return reason.split("\n")[0][:160]


def summary(results: list[dict[str, Any]]) -> str:
    lines = [outcome_counts(results)]
    lines.append("by kernel: " + ", ".join(
        f"{kind} {sum(r.get('kernel') == kind for r in results)}" for kind in sorted(KERNELS)))
    lines += refusal_counts(results, reason_group)
    bad = [r for r in results if r["outcome"] in ("wrong", "crashed", "hung")]
    for r in bad:
        lines.append(f"{r['outcome']}: case {r['case']} ({r.get('kernel')}): "
                     f"{r.get('reason', r.get('error'))}"[:600])
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = fuzzer_arguments(__doc__.split("\n\n")[0])
    parser.add_argument("--case", type=int, help="run this one case here and print it")
    args = parser.parse_args(argv)
    if args.worker:
        return serve(lambda request: run_case(request["seed"], request["case"]))
    if args.case is not None:
        result = run_case(args.seed, args.case)
        print(result.pop("trace", ""))
        print(json.dumps(result, indent=1))
        return 0 if result["outcome"] in ("ok", "refused") else 1
    results = fuzz(args.cases, args.seed, args.jobs, args.timeout)
    if args.json:
        write_results(args.json, results)
    print(summary(results))
    return 0 if not any(r["outcome"] in ("wrong", "crashed", "hung") for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
