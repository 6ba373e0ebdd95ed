"""A connection to a Ray cluster and the nodes in it that may measure a target.

A node measures for a target when it carries the target's fingerprint resource
(:mod:`.fingerprint`) and its measurement actor finds that same fingerprint where it runs;
other nodes are skipped, each with one message. A node whose task or actor fails at the Ray
level (the node died, its processes were killed) is not used again.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from typing import Any, Callable

from .fingerprint import RESOURCE_PREFIX, describe, resource_name


@dataclass
class Node:
    """A node that measures for the target: its id, CPUs, actor and the fingerprint it found."""

    id: str
    cpus: int
    actor: Any
    fingerprint: dict[str, Any]


class RayCluster:
    """``ray.init(address)`` (``address=None``: ``RAY_ADDRESS``), unless this process is
    connected already; :meth:`close` disconnects what it connected."""

    def __init__(self, address: str | None = None,
                 log: Callable[[str], None] | None = None):
        try:
            import ray
        except ImportError as error:
            raise ImportError("tuning on a Ray cluster needs Ray: pip install 'mlcir[ray]'") \
                from error

        self.address = address or os.environ.get("RAY_ADDRESS")
        self.log = log or (lambda message: print(f"mlcir: {message}", file=sys.stderr))
        self._connected_here = not ray.is_initialized()
        if self._connected_here:
            if not self.address:
                raise ValueError("no Ray cluster to tune on: give address='HOST:PORT' (of "
                                 "`ray start --head`) or set RAY_ADDRESS")
            ray.init(address=self.address, logging_level="ERROR", log_to_driver=False)
        self.artifacts: dict[str, Any] = {}  # content hash -> ObjectRef of a built library
        self.dead: set[str] = set()
        self._nodes: dict[str, Node] = {}
        self._told: set[tuple[str, str]] = set()

    def _tell(self, node_id: str, message: str) -> None:
        if (node_id, message) not in self._told:
            self._told.add((node_id, message))
            self.log(message)

    def nodes_for(self, fingerprint: dict[str, Any]) -> list[Node]:
        """The alive nodes that measure for ``fingerprint`` (a measurement actor on each)."""
        import ray
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        from .remote import MeasureActor

        wanted = resource_name(fingerprint)
        nodes = []
        for info in ray.nodes():
            node_id = info["NodeID"]
            if not info["Alive"] or node_id in self.dead:
                continue
            resources = info["Resources"]
            if wanted not in resources:
                declared = [r for r in resources if r.startswith(RESOURCE_PREFIX)]
                self._tell(node_id, f"Ray node {node_id[:12]} skipped: it declares "
                           + (f"hardware {', '.join(declared)}" if declared else
                              "no hardware fingerprint")
                           + f", the target needs {wanted} ({describe(fingerprint)}); "
                           "docs/tuning.md says how to start a node with its fingerprint")
                continue
            if node_id not in self._nodes:
                cpus = int(resources.get("CPU", 1))
                actor = MeasureActor.options(
                    num_cpus=0, scheduling_strategy=NodeAffinitySchedulingStrategy(
                        node_id, soft=False)).remote(fingerprint["threads"])
                try:
                    found = ray.get(actor.describe.remote(), timeout=120)["fingerprint"]
                except ray.exceptions.RayError as error:
                    self.mark_dead(node_id, f"its measurement actor did not start: {error}")
                    continue
                self._nodes[node_id] = Node(node_id, cpus, actor, found)
            node = self._nodes[node_id]
            if node.fingerprint != fingerprint:
                self._tell(node_id, f"Ray node {node_id[:12]} skipped: it declares {wanted} "
                           f"but is {describe(node.fingerprint)}, the target needs "
                           f"{describe(fingerprint)}")
                continue
            nodes.append(node)
        return nodes

    def mark_dead(self, node_id: str, reason: str) -> None:
        """Use ``node_id`` no more (its node died or its processes were killed)."""
        if node_id not in self.dead:
            self.dead.add(node_id)
            self.log(f"Ray node {node_id[:12]} lost ({reason.splitlines()[0][:200]}); its "
                     "candidates go to the other matching nodes")
        self._nodes.pop(node_id, None)

    def close(self) -> None:
        import ray

        closing = [node.actor.close.remote() for node in self._nodes.values()]
        ray.wait(closing, num_returns=len(closing), timeout=30)
        for node in self._nodes.values():
            ray.kill(node.actor)
        self._nodes.clear()
        self.artifacts.clear()
        if self._connected_here and ray.is_initialized():
            ray.shutdown()
