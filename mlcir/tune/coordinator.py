"""Builds and runs candidates with a builder and a runner working at the same time.

``BuildRunCoordinator(builder, runner).build_and_run(workload, traces)`` hands each candidate
to the builder (``builder.workers`` at a time) and, as soon as one is built, to the runner
(one at a time). When a run needs every core (the runner's cores plus the builders' exceed
this machine's: 2 threads on 2 cores), building pauses while the runner runs and the runner
waits for the builds, so timings are of the whole machine. The builder and runner are called
from threads of this process; results are reported (``on_result``) from the calling thread.
"""

from __future__ import annotations

import os
from collections import deque
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from typing import Any, Callable

from mlir import ir

from .builder import Builder, BuildResult
from .runner import Runner, RunResult


@dataclass
class TrialResult:
    """One candidate built and run: the seconds of each timed repeat, or why it failed
    (``"build: …"`` or ``"run: …"``)."""

    trace: dict[str, Any]
    run_secs: list[float] | None = None
    error: str | None = None
    build_secs: float | None = None
    node: str | None = None  # where it was measured, on a cluster (its Ray node id)
    node_fingerprint: dict[str, Any] | None = None


class BuildRunCoordinator:
    """A builder and a runner working together (see the module docstring)."""

    candidate_maker = None  # the search makes its candidates in this process

    def __init__(self, builder: Builder, runner: Runner):
        self.builder = builder
        self.runner = runner

    def prepare(self, workload: str, kernel: ir.Module) -> None:
        self.builder.prepare(workload, kernel)
        self.runner.prepare(workload, kernel)

    def build_and_run(self, workload: str, traces: list[dict[str, Any]],
                      on_result: Callable[[TrialResult], None] | None = None
                      ) -> list[TrialResult]:
        """Build and run every trace; results in input order. ``on_result`` is called as each
        finishes (the tuner writes the record then)."""
        results: list[TrialResult | None] = [None] * len(traces)
        pending = deque(range(len(traces)))
        built: deque[tuple[int, BuildResult]] = deque()
        building: dict[Future[BuildResult], int] = {}
        running: dict[Future[RunResult], tuple[int, BuildResult]] = {}

        def finish(index: int, result: TrialResult) -> None:
            results[index] = result
            if on_result is not None:
                on_result(result)

        exclusive = self.runner.cores + self.builder.workers > (os.cpu_count() or 1)
        with ThreadPoolExecutor(self.builder.workers + 1) as threads:
            while pending or built or building or running:
                while pending and len(building) < self.builder.workers and not (
                        exclusive and running):
                    index = pending.popleft()
                    future = threads.submit(self.builder.build_candidate, workload,
                                            traces[index])
                    building[future] = index
                if not running and built and not (exclusive and building):
                    index, build = built.popleft()
                    future = threads.submit(self.runner.run_candidate, workload, traces[index],
                                            build)
                    running[future] = (index, build)
                done, _ = wait([*building, *running], return_when=FIRST_COMPLETED)
                for future in done:
                    if future in building:
                        index = building.pop(future)
                        build = future.result()
                        if build.error is None:
                            built.append((index, build))
                        else:
                            finish(index, TrialResult(traces[index],
                                                      error=f"build: {build.error}"))
                    else:
                        index, build = running.pop(future)
                        run = future.result()
                        error = None if run.error is None else f"run: {run.error}"
                        finish(index, TrialResult(traces[index], run.run_secs, error,
                                                  build.build_secs))
        return [r for r in results if r is not None]
