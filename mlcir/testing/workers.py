"""Worker processes for fuzzers: each case runs in a child that may crash or hang.

LLVM is an assertions build, so a bad case can abort the process (MLIR-NOTES.md); the parent
sends one JSON request per line to a worker (``python -m MODULE --worker``), reads one JSON
answer per line, and replaces a worker that died (the case is ``crashed``), that passed its
time limit (``hung``) or that answered ``cases_per_worker`` cases (memory the modules and
execution engines it made is not all given back).
"""

from __future__ import annotations

import argparse
import json
import os
import select
import signal
import subprocess
import sys
import time
import traceback
from collections import Counter
from typing import Any, Callable


class Worker:
    """A worker process answering one request at a time."""

    def __init__(self, module: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", module, "--worker"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
            start_new_session=True)
        self.case: Any = None
        self.deadline = 0.0
        self.answered = 0

    def send(self, request: dict[str, Any], timeout: float, now: float) -> None:
        self.case, self.deadline = request["case"], now + timeout
        self.proc.stdin.write(json.dumps(request) + "\n")
        self.proc.stdin.flush()

    def kill(self) -> None:
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait()


def run_in_workers(module: str, requests: list[dict[str, Any]], jobs: int = 1,
                   timeout: float = 300.0,
                   progress: Callable[[dict[str, Any]], None] | None = None,
                   cases_per_worker: int = 200) -> list[dict[str, Any]]:
    """Answer ``requests`` (each with a distinct ``"case"``) in ``jobs`` workers of ``module``;
    the answers in the order of the requests."""
    pending = list(requests)[::-1]
    results: dict[Any, dict[str, Any]] = {}
    workers = [Worker(module) for _ in range(min(jobs, len(requests)))]
    idle = list(workers)
    try:
        while len(results) < len(requests):
            while idle and pending:
                idle.pop().send(pending.pop(), timeout, time.monotonic())
            busy = [w for w in workers if w.case is not None]
            wait = min(w.deadline for w in busy) - time.monotonic()
            ready, _, _ = select.select([w.proc.stdout for w in busy], [], [],
                                        min(max(wait, 0.0), 1.0))
            now = time.monotonic()
            for w in busy:
                result = None
                if now > w.deadline:  # an answer after the deadline is too late too
                    result = {"case": w.case, "outcome": "hung",
                              "reason": f"no answer in {timeout:g} s"}
                elif w.proc.stdout in ready:
                    line = w.proc.stdout.readline()
                    if line:
                        result = json.loads(line)
                    else:
                        w.proc.wait()
                        result = {"case": w.case, "outcome": "crashed",
                                  "reason": f"worker died (status {w.proc.returncode})"}
                if result is None:
                    continue
                results[w.case] = result
                if progress:
                    progress(result)
                w.answered += 1
                if result["outcome"] == "hung" or w.proc.poll() is not None \
                        or w.answered >= cases_per_worker:
                    w.kill()
                    workers[workers.index(w)] = w = Worker(module)
                w.case = None
                idle.append(w)
    finally:
        for w in workers:
            w.kill()
    return [results[r["case"]] for r in requests]


def serve(handle: Callable[[dict[str, Any]], dict[str, Any]]) -> int:
    """The worker's loop: one JSON request a line in, one JSON answer a line out; an exception
    is answered as a crash with its traceback."""
    for line in sys.stdin:
        request = json.loads(line)
        try:
            result = handle(request)
        except Exception as error:  # noqa: BLE001 - reported to the parent as a crash
            result = {"case": request["case"], "outcome": "crashed",
                      "reason": f"{type(error).__name__}: {error}"[:2000],
                      "traceback": traceback.format_exc()[-3000:]}
        print(json.dumps(result), flush=True)
    return 0


OUTCOMES = ("ok", "refused", "wrong", "crashed", "hung")


def outcome_counts(results: list[dict[str, Any]]) -> str:
    """``N cases: ok N (P%), refused ...`` for a fuzzer's results."""
    counts = Counter(r["outcome"] for r in results)
    total = len(results)
    return f"{total} cases: " + ", ".join(
        f"{k} {counts.get(k, 0)} ({100 * counts.get(k, 0) / max(total, 1):.1f}%)"
        for k in OUTCOMES)


def refusal_counts(results: list[dict[str, Any]], group: Callable[[str], str]) -> list[str]:
    """The refusals counted by reason (``group`` strips a reason's particulars), commonest
    first, under a ``refusals:`` line; nothing when none was refused."""
    reasons = Counter(group(r["reason"]) for r in results if r["outcome"] == "refused")
    if not reasons:
        return []
    return ["refusals:"] + [f"  {n:5d}  {reason}" for reason, n in reasons.most_common()]


def fuzzer_arguments(description: str) -> argparse.ArgumentParser:
    """A fuzzer's command line: ``--cases --seed --jobs --timeout --json`` (and the hidden
    ``--worker`` its worker processes run with)."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--cases", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--timeout", type=float, default=300.0,
                        help="seconds per case (a case compiles in seconds; a loaded machine "
                        "takes minutes)")
    parser.add_argument("--json", help="write every case's result to this JSON-lines file")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    return parser


def write_results(path: str, results: list[dict[str, Any]]) -> None:
    with open(path, "w", encoding="utf-8") as out:
        for r in results:
            out.write(json.dumps(r) + "\n")
