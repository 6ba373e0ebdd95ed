"""Random schedules for property testing: every trace must build and match numpy, or be
rejected with a ScheduleError — never a wrong result, never a crash of the process.

    python -m mlcir.testing.random_schedules --kernel matmul --seeds 0:50

prints one JSON line per seed (``{"seed", "status": "ok"|"rejected"|"wrong"|"error", ...}``),
after a ``START <seed>`` line flushed before each attempt, so a parent process can name the
seed that crashed the interpreter (LLVM is an assertions build).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import traceback
from typing import Callable

import numpy as np

KERNELS: dict[str, Callable] = {}


def _kernels() -> dict[str, tuple[str, Callable]]:
    from . import kernels

    return {
        "matmul": kernels.matmul(32, 48, 24),
        "matmul_bias_relu": kernels.matmul_bias_relu(16, 32, 24),
        "conv2d": kernels.conv2d(1, 4, 8, 8, 8, 3, 3),
        "row_sum": kernels.row_sum(16, 64),
        "softmax": kernels.softmax(8, 32),
    }


def _divisor_split(rng: random.Random, extent: int) -> list[int | None]:
    n = rng.choice([2, 2, 3])
    factors: list[int | None] = []
    rest = extent
    for _ in range(n - 1):
        divs = [d for d in range(1, rest + 1) if rest % d == 0]
        f = rng.choice(divs)
        factors.append(f)
        rest //= f
    factors.append(rest)
    if rng.random() < 0.2:
        factors[rng.randrange(n)] = None
    if rng.random() < 0.05:
        factors[0] = (factors[0] or 1) + 1  # sometimes wrong on purpose
    return factors


def random_schedule(sch, rng: random.Random, steps: int) -> None:
    """Apply ``steps`` random primitives with random arguments; illegal ones are skipped
    (their ScheduleError is the expected answer)."""
    from mlcir.schedule import ScheduleError

    names = sorted({name for (_, name) in sch.state.blocks})
    blocks = {}  # (function, block name) -> its BlockRV, for the names that are unique
    for name in names:
        try:
            rv = sch.get_block(name)
        except ScheduleError:
            continue
        blocks[next(key for key in sch.state.blocks if key[1] == name)] = rv
    for _ in range(steps):
        live = [rv for key, rv in blocks.items() if not sch.state.blocks[key].inlined]
        if not live:
            return
        block = rng.choice(live)
        try:
            loops = sch.get_loops(block)
            kind = rng.choice(["split", "split", "split", "reorder", "reorder", "fuse",
                               "parallel", "vectorize", "unroll", "compute_inline",
                               "reverse_compute_inline", "compute_at", "reverse_compute_at",
                               "decompose_reduction", "cache_read", "cache_write", "annotate",
                               "sample"])
            loop = rng.choice(loops) if loops else None
            if kind == "split" and loop is not None:
                sch.split(loop, _divisor_split(rng, max(sch.get(loop).extent, 1)))
            elif kind == "sample" and loop is not None:
                factors = sch.sample_perfect_tile(loop, n=rng.choice([2, 3]),
                                                  max_innermost_factor=rng.choice([4, 16, 64]))
                sch.split(loop, factors)
            elif kind == "reorder" and len(loops) > 1:
                sub = rng.sample(loops, rng.randint(2, len(loops)))
                sch.reorder(*sub)
            elif kind == "fuse" and len(loops) > 1:
                i = rng.randrange(len(loops) - 1)
                sch.fuse(loops[i], loops[i + 1])
            elif kind == "parallel" and loop is not None:
                sch.parallel(loops[0] if rng.random() < 0.7 else loop)
            elif kind == "vectorize" and loop is not None:
                sch.vectorize(loops[-1] if rng.random() < 0.6 else loop)
            elif kind == "unroll" and loop is not None:
                sch.unroll(loop, factor=rng.choice([None, 2, 4]))
            elif kind == "compute_inline":
                sch.compute_inline(block)
            elif kind == "reverse_compute_inline":
                sch.reverse_compute_inline(block)
            elif kind in ("compute_at", "reverse_compute_at"):
                other = rng.choice(live)
                other_loops = sch.get_loops(other)
                if other_loops:
                    getattr(sch, kind)(block, rng.choice(other_loops))
            elif kind == "decompose_reduction" and loop is not None:
                sch.decompose_reduction(block, loop)
            elif kind == "cache_read":
                cache = sch.cache_read(block, rng.randrange(2), rng.choice(["global", "local"]))
                if loops and rng.random() < 0.7:
                    sch.compute_at(cache, rng.choice(loops))
            elif kind == "cache_write":
                cache = sch.cache_write(block, 0, "local")
                if loops and rng.random() < 0.7:
                    sch.reverse_compute_at(cache, rng.choice(loops))
            elif kind == "annotate" and loop is not None:
                sch.annotate(loop, "note", rng.randrange(10))
        except ScheduleError:
            continue


def check(kernel: str, seed: int, steps: int = 6) -> dict:
    import mlcir
    from mlcir.schedule import ScheduleError

    from .kernels import random_inputs

    text, reference = _kernels()[kernel]
    rng = random.Random(seed)
    sch = mlcir.Schedule(text, seed=seed)
    random_schedule(sch, rng, steps)
    result = {"kernel": kernel, "seed": seed, "trace": sch.trace.as_python()}
    try:
        ex = mlcir.build(sch.mod, target="llvm -opt-level=1")
    except ScheduleError as error:
        return {**result, "status": "rejected", "reason": str(error).split("\ntrace:")[0]}
    except Exception as error:  # noqa: BLE001 - reported with the trace
        return {**result, "status": "error", "reason": f"{type(error).__name__}: {error}",
                "traceback": traceback.format_exc()}
    inputs = random_inputs(text, seed)
    out = ex.main(*inputs)
    ref = reference(*inputs)
    err = float(np.abs(out - ref).max() / max(np.abs(ref).max(), 1e-6))
    return {**result, "status": "ok" if err < 1e-4 else "wrong", "error": err}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kernel", choices=sorted(_kernels()), required=True)
    parser.add_argument("--seeds", default="0:20", help="start:stop")
    parser.add_argument("--steps", type=int, default=6)
    args = parser.parse_args(argv)
    start, stop = (int(x) for x in args.seeds.split(":"))
    for seed in range(start, stop):
        print(f"START {seed}", flush=True)
        try:
            result = check(args.kernel, seed, args.steps)
        except Exception as error:  # noqa: BLE001 - reported, the parent decides
            result = {"kernel": args.kernel, "seed": seed, "status": "error",
                      "reason": f"{type(error).__name__}: {error}",
                      "traceback": traceback.format_exc()}
        print(json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
