"""The builder and runner roles on a Ray cluster: :class:`RayBuilder` and :class:`RayRunner`.

Both speak the tuner's protocols (:mod:`mlcir.tune.builder`, :mod:`mlcir.tune.runner`) and
share one :class:`~.cluster.RayCluster`. A built library stays in Ray's object store, named by
its content hash (``BuildResult.artifact``); the reference data of a workload is made on a node
and put there once. The tuner drives them with :class:`~.coordinator.RayCoordinator`, which
keeps every matching node busy; called one by one through the protocols they work too, one
candidate at a time.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from mlir import ir

from mlcir.target import Target

from ..builder import BuildResult
from ..database import trace_key
from ..runner import RunResult
from .cluster import Node, RayCluster
from .fingerprint import target_fingerprint


class RayBuilder:
    """Builds candidates as Ray tasks (one CPU each) on the cluster of ``runner``."""

    def __init__(self, runner: "RayRunner", timeout: float = 120.0):
        self.runner = runner
        self.timeout = timeout
        self._kernels: dict[str, str] = {}

    @property
    def workers(self) -> int:
        return max(1, sum(node.cpus for node in self.runner.nodes()))

    def prepare(self, workload: str, kernel: ir.Module) -> None:
        self._kernels[workload] = str(kernel)

    def submit(self, workload: str, trace: dict[str, Any], node: Node | None = None
               ) -> tuple[Any, Any]:
        """Start one build (on ``node`` when given): the ObjectRefs of its answer and of its
        library's bytes."""
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        from .remote import build

        options: dict[str, Any] = {"num_cpus": 1}
        if node is not None:
            options["scheduling_strategy"] = NodeAffinitySchedulingStrategy(node.id, soft=False)
        return build.options(**options).remote(workload, self._kernels[workload], trace,
                                               str(self.runner.target), self.timeout)

    def build_candidate(self, workload: str, trace: dict[str, Any]) -> BuildResult:
        import ray

        answer_ref, library_ref = self.submit(workload, trace)
        try:
            answer = ray.get(answer_ref)
        except ray.exceptions.RayError as error:
            return BuildResult(error=f"Ray: {error}".splitlines()[0])
        if not answer["ok"]:
            return BuildResult(error=answer["error"])
        self.runner.cluster.artifacts[answer["hash"]] = library_ref
        return BuildResult(answer["hash"], None, answer["build_secs"])

    def close(self) -> None:
        """Nothing of its own: the runner holds the cluster."""


@dataclass
class _Reference:
    """A workload's random inputs and reference outputs, in the object store: made by a task
    on a node (``answer``, ``made``), then put there by the driver (``ref``, so that they
    outlive that node) at the first measurement; made here if that node was lost."""

    kernel: str
    answer: Any
    made: Any
    hash: str = ""
    ref: Any = None
    signature: dict[str, Any] | None = None

    def resolve(self) -> None:
        import ray

        from .remote import make_reference

        if self.ref is not None:
            return
        try:
            answer, data = ray.get([self.answer, self.made])
        except ray.exceptions.RayTaskError as error:
            raise error.as_instanceof_cause() from None
        except ray.exceptions.RayError:
            answer, data = make_reference(self.kernel)
        self.hash, self.signature = answer["hash"], answer["signature"]
        self.ref = ray.put(data)


class RayRunner:
    """Measures candidates on the cluster at ``address`` (``None``: ``RAY_ADDRESS``), in the
    measurement actor of each node whose fingerprint matches the target's."""

    cores = 0  # every run is on a node of the cluster, none on this machine's cores

    def __init__(self, address: str | None = None, target: str | Target | None = None,
                 timeout: float = 30.0, repeat: int = 3, min_repeat_ms: float = 20.0):
        self.address = address
        self.target = Target.parse(target) if target is not None else None
        self.timeout = timeout
        self.repeat = repeat
        self.min_repeat_ms = min_repeat_ms
        self._cluster: RayCluster | None = None
        self._references: dict[str, _Reference] = {}

    def bind(self, target: Target) -> None:
        """Measure for ``target`` (the tuner's, when the runner was made without one)."""
        if self.target is None:
            self.target = target
        elif self.target.key != target.key:
            raise ValueError(f"this RayRunner measures for '{self.target}', not '{target}'")

    @property
    def cluster(self) -> RayCluster:
        return self.connect()

    def connect(self) -> RayCluster:
        """The cluster, connected on first use."""
        if self._cluster is None:
            self._cluster = RayCluster(self.address)
        return self._cluster

    @property
    def fingerprint(self) -> dict[str, Any]:
        assert self.target is not None, "bind(target) first"
        return target_fingerprint(self.target)

    def nodes(self) -> list[Node]:
        """The alive nodes that measure for the target; an error when there is none."""
        nodes = self.cluster.nodes_for(self.fingerprint)
        if not nodes:
            raise RuntimeError(f"no alive Ray node matches the target '{self.target}' (see the "
                               "messages above; docs/tuning.md, distributed tuning)")
        return nodes

    def prepare(self, workload: str, kernel: ir.Module) -> None:
        """Start making the workload's reference data on a node (the driver compiles nothing:
        its CPU is the one part of tuning that does not grow with the cluster)."""
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        from .remote import reference_data

        if workload in self._references:
            return
        nodes = self.nodes()
        node = nodes[len(self._references) % len(nodes)]
        text = str(kernel)
        answer, made = reference_data.options(
            num_cpus=1, scheduling_strategy=NodeAffinitySchedulingStrategy(node.id, soft=False)
        ).remote(text)
        self._references[workload] = _Reference(text, answer, made)

    def submit(self, node: Node, workload: str, trace: dict[str, Any], library_hash: str,
               library_ref: Any) -> Any:
        """Start measuring one built library on ``node``: the ObjectRef of the worker's answer."""
        reference = self._references[workload]
        reference.resolve()
        request = {"id": 1, "key": trace_key(trace), "signature": reference.signature,
                   "target": str(self.target), "repeat": self.repeat,
                   "min_repeat_ms": self.min_repeat_ms}
        return node.actor.measure.remote(request, library_ref, library_hash, reference.hash,
                                         [reference.ref], self.timeout)

    def run_candidate(self, workload: str, trace: dict[str, Any],
                      build: BuildResult) -> RunResult:
        import ray

        assert build.artifact is not None
        library_ref = self.cluster.artifacts.pop(build.artifact)
        node = self.nodes()[0]
        try:
            answer = ray.get(self.submit(node, workload, trace, build.artifact, library_ref))
        except ray.exceptions.RayError as error:
            self.cluster.mark_dead(node.id, str(error))
            return RunResult(error=f"Ray node {node.id} lost: {error}".splitlines()[0])
        if not answer.get("ok"):
            return RunResult(error=answer["error"])
        return RunResult(answer["run_secs"])

    def close(self) -> None:
        if self._cluster is not None:
            self._cluster.close()
            self._cluster = None
        self._references.clear()
