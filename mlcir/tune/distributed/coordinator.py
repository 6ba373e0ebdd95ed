"""Builds and measures candidates on every matching node of a Ray cluster at once.

Each node is either building (up to one build per CPU, as Ray tasks pinned to it) or measuring
(one candidate, in its measurement actor), never both: nothing of the tuner runs beside a
timing. A node that finishes takes the next built candidate to measure (one it built itself
first: its library is already there), else the next candidate to build. When a node dies (its
task or actor fails at the Ray level), every candidate it held is queued again once, for the
other nodes; a second loss records the candidate as failed with the reason. Results are reported
(``on_result``, where the tuner writes the database) in this process, as each arrives.
"""

from __future__ import annotations

from collections import deque
from typing import Any, Callable

from mlir import ir

from ..coordinator import TrialResult
from .cluster import Node
from .roles import RayBuilder, RayRunner
from .search import RayCandidateMaker


class RayCoordinator:
    """:class:`RayRunner` and :class:`RayBuilder` over the cluster (see the module docstring)."""

    def __init__(self, runner: RayRunner, builder: RayBuilder | None = None):
        self.runner = runner
        self.builder = builder or RayBuilder(runner)
        self.candidate_maker = RayCandidateMaker(runner)  # the search's candidates, on the nodes

    def prepare(self, workload: str, kernel: ir.Module) -> None:
        self.builder.prepare(workload, kernel)
        self.runner.prepare(workload, kernel)

    def build_and_run(self, workload: str, traces: list[dict[str, Any]],
                      on_result: Callable[[TrialResult], None] | None = None
                      ) -> list[TrialResult]:
        """Build and measure every trace; results in input order, ``on_result`` as each
        finishes."""
        import ray

        cluster = self.runner.cluster
        results: list[TrialResult | None] = [None] * len(traces)
        losses = [0] * len(traces)
        pending = deque(range(len(traces)))
        # index, answer, library ref, id of the node that built it
        built: deque[tuple[int, dict[str, Any], Any, str]] = deque()
        building: dict[Any, tuple[int, Node, Any]] = {}  # answer ref -> index, node, library
        measuring: dict[Any, tuple[int, Node, float]] = {}  # answer ref -> index, node, build s
        nodes = {node.id: node for node in self.runner.nodes()}

        def finish(index: int, result: TrialResult) -> None:
            results[index] = result
            if on_result is not None:
                on_result(result)

        def lost(index: int, node: Node, error: Exception) -> None:
            """A Ray-level failure: the node died, or (an error other than its actor's) the
            library's object was lost with the node that built it."""
            if not isinstance(error, ray.exceptions.ObjectLostError):
                cluster.mark_dead(node.id, str(error))
                nodes.pop(node.id, None)
            losses[index] += 1
            if losses[index] < 2:
                pending.appendleft(index)
            else:
                finish(index, TrialResult(traces[index], error=(
                    f"run: Ray node {node.id} lost, the second node to lose this candidate: "
                    f"{error}").splitlines()[0]))

        while pending or built or building or measuring:
            if not nodes:
                nodes = {node.id: node for node in self.runner.nodes()}  # raises if none
            busy_measuring = {node.id for _, node, _ in measuring.values()}
            builds_on = {node_id: 0 for node_id in nodes}
            for _, node, _ in building.values():
                if node.id in builds_on:
                    builds_on[node.id] += 1
            for node in list(nodes.values()):
                if node.id in busy_measuring:
                    continue
                if built and builds_on[node.id] == 0:
                    item = next((b for b in built if b[3] == node.id), built[0])
                    built.remove(item)
                    index, answer, library, _ = item
                    ref = self.runner.submit(node, workload, traces[index], answer["hash"],
                                             library)
                    measuring[ref] = (index, node, answer["build_secs"])
                    continue
                while pending and builds_on[node.id] < node.cpus and len(built) < len(nodes):
                    index = pending.popleft()
                    answer_ref, library = self.builder.submit(workload, traces[index], node)
                    building[answer_ref] = (index, node, library)
                    builds_on[node.id] += 1
            (done, *_), _ = ray.wait([*building, *measuring], num_returns=1)
            if done in building:
                index, node, library = building.pop(done)
                try:
                    answer = ray.get(done)
                except ray.exceptions.RayError as error:
                    lost(index, node, error)
                    continue
                if answer["ok"]:
                    built.append((index, answer, library, node.id))
                else:
                    finish(index, TrialResult(traces[index], error=f"build: {answer['error']}"))
            else:
                index, node, build_secs = measuring.pop(done)
                try:
                    answer = ray.get(done)
                except ray.exceptions.RayError as error:
                    lost(index, node, error)
                    continue
                error = None if answer.get("ok") else f"run: {answer['error']}"
                finish(index, TrialResult(traces[index], answer.get("run_secs"), error,
                                          build_secs, node.id, node.fingerprint))
        return [r for r in results if r is not None]
