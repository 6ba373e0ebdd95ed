"""The search's candidates made on the cluster: :class:`RayCandidateMaker`.

Making candidates (replaying a trace on the kernel with a decision drawn afresh, computing the
features) is most of the tuner's own work: some 60 schedules for every candidate measured, with
the default evolutionary search. Done on the driver, it would not grow with the cluster, so
each batch of the search (:func:`mlcir.tune.search.make_candidates`: a generation's mutants, an
initial population's samples) is split into one Ray task per CPU of the matching nodes, run
between rounds, when no node measures. Each job carries its own seed, so the candidates are
those the driver would make. A chunk whose node is lost is made on the driver instead.
"""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING, Any

from ..search import Candidate, Job, SearchContext, make_candidate

if TYPE_CHECKING:
    from .roles import RayRunner


class RayCandidateMaker:
    """Makes each batch of candidates on the matching nodes of ``runner``'s cluster."""

    def __init__(self, runner: RayRunner):
        self.runner = runner
        # id(cx) -> (cx, the ObjectRef of what a node needs of it), put once per task
        self._contexts: dict[int, tuple[SearchContext, Any]] = {}

    def _context(self, cx: SearchContext) -> Any:
        import ray

        if id(cx) not in self._contexts:
            text = str(cx.kernel)
            shared = (hashlib.sha256(text.encode()).hexdigest()[:24], text, cx.space,
                      cx.feature_extractor)
            self._contexts[id(cx)] = (cx, ray.put(shared))
        return self._contexts[id(cx)][1]

    def make(self, cx: SearchContext, jobs: list[Job]) -> list[Candidate | None]:
        import ray
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        from .remote import make_candidates

        if not jobs:
            return []
        slots = [node for node in self.runner.nodes() for _ in range(node.cpus)]
        parts = min(len(slots), len(jobs))
        chunks = [jobs[i * len(jobs) // parts:(i + 1) * len(jobs) // parts]
                  for i in range(parts)]
        shared = self._context(cx)
        refs = [make_candidates.options(
                    num_cpus=1, scheduling_strategy=NodeAffinitySchedulingStrategy(
                        node.id, soft=False)).remote(shared, chunk)
                for node, chunk in zip(slots, chunks)]
        made: list[Candidate | None] = []
        for ref, chunk in zip(refs, chunks):
            try:
                made += ray.get(ref)
            except ray.exceptions.RayTaskError as error:  # the search's own error: as here
                raise error.as_instanceof_cause() from None
            except ray.exceptions.RayError:  # the node or its worker was lost
                made += [make_candidate(cx, job) for job in chunk]
        return made
