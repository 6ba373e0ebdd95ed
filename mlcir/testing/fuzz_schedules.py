"""A schedule fuzzer: random schedules over every primitive, each built and checked against
numpy in a worker process with a time-out.

    python -m mlcir.testing.fuzz_schedules --cases 2000 --seed 0 [--jobs 2] [--timeout 120]

Each case draws a kernel kind (``KERNELS``) with random, often odd or prime, extents, then a
few primitives from the table of primitives (``mlcir.schedule.instruction.KINDS``: every
primitive with the sampler its home module registered, which picks well-formed arguments at random — a producer
and a loop of one of its consumers for ``compute_at``, any factors for ``split``… — and
applies them); whether they are *legal* is the schedule's business. The case's outcome is
``ok`` (built, matches numpy), ``refused`` (a ``ScheduleError``: a primitive or the
materialisation refused, with its reason), ``wrong`` (built, but the numbers differ),
``crashed`` (any other exception, or the worker process died: LLVM is an assertions build) or
``hung`` (past the time-out). The run prints the counts, the
refusal reasons grouped, and the seeds of the bad cases; ``--case I`` replays one case and
prints its trace.
"""

from __future__ import annotations

import json
import random
import re
import sys
import traceback
from typing import Any, Callable

import numpy as np

from mlcir.schedule.fuzz_support import NothingLikely
from mlcir.schedule.instruction import KINDS

from .workers import (fuzzer_arguments, outcome_counts, refusal_counts, run_in_workers, serve,
                      write_results)

TOLERANCE = 1e-4  # error relative to the largest magnitude of numpy's answer
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
    names = list(KINDS)
    weights = [p.weight for p in KINDS.values()]
    applied: list[str] = []
    try:
        for _ in range(rng.randint(*steps)):
            primitive = KINDS[rng.choices(names, weights)[0]]
            try:
                if primitive.sample(sch, rng):
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


# Refusals of schedules TensorIR refuses too (docs/schedules.md, "The refusals that remain"),
# or of arguments no schedule takes (an unknown thread axis, a missing annotation): every
# other refusal is a limit of this implementation, of a schedule TensorIR accepts.
ILLEGAL_IN_TENSORIR = tuple(re.compile(p) for p in (
    r"^compute_at: .*is also read by .*every consumer must be under the target loop",
    r"they are not a single chain",
    r"is a reduction loop, but",  # a consumer or an init at or below a reduction loop
    r"is a reduction loop$",  # parallel / bind of a reduction loop
    r"cannot fuse a spatial loop with a reduction loop",
    r"multiply to \d+, less than",
    r"at most one factor may be None",
    r"its result is complete only after the last reduction step",
    r"must read exactly one block",
    r"^reverse_compute_inline: producer '[^']*' has other consumers",
    r"must be complete before it",
    r"cannot be computed in its own nest",
    r"does not enclose block",
    r"does not read block",
    r"does not index the data",
    r"is already placed inside its nest",  # a second decompose_reduction
    r"its memory is the caller's",  # set_scope / storage_align of a function's result
    r"unknown thread axis",
    r"annotation values must be.*got (?!list)",  # (TVM takes lists)
    r"keys starting with '_' are reserved",
    r"no annotation '",
    r"^tensorize: .*has extents .*computes",  # the intrinsic's shape is not the tile's
    r"is not a reduction$",
    r"has no init block",
    r"initialises a consumer's output",  # compute_inline of an init
    r"was already factored",  # a second rfactor
    r"is not a reduction loop",  # rfactor of a spatial loop
    r"the tile holds block '[^']*' only",  # blockize around another block
))


def illegal_in_tensorir(reason: str) -> bool:
    """Whether a refusal is of a schedule TensorIR refuses too (else a limit of ours)."""
    reason = re.sub(r" \(instruction \d+\)", "", reason.split("\n")[0])
    return any(p.search(reason) for p in ILLEGAL_IN_TENSORIR)


def refusal_split(results: list[dict[str, Any]]) -> str:
    """The refusals as illegal in TensorIR too / limits of this implementation, and the share
    of the cases TensorIR accepts that are refused (the limits among them)."""
    refused = [r for r in results if r["outcome"] == "refused"]
    illegal = sum(illegal_in_tensorir(r["reason"]) for r in refused)
    limits = len(refused) - illegal
    total = max(len(results), 1)
    legal = max(len(results) - illegal, 1)
    return (f"refused as illegal in TensorIR too {illegal} ({100 * illegal / total:.1f}%), "
            f"for limits of this implementation {limits} ({100 * limits / total:.1f}%): "
            f"{100 * limits / legal:.1f}% of the {len(results) - illegal} TensorIR-legal cases")


def summary(results: list[dict[str, Any]]) -> str:
    lines = [outcome_counts(results), refusal_split(results)]
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
