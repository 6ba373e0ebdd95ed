"""Search strategies: which candidates of a design space to measure next.

A :class:`SearchStrategy` proposes candidates for one task at a time from its
:class:`SearchContext` (the kernel, its design space, the cost model, the feature extractor,
what is already measured and the task's random state), so one strategy object serves every
task of a model. ``RandomSearch`` draws fresh samples of the space. ``EvolutionarySearch`` is
MetaSchedule's: a population of the best measured traces, the target's default schedule (a
seed: mutants of it are the neighbours of a good start) and fresh samples evolves for a few
generations by mutating sampled decisions (a mutant replays its trace with one decision drawn
afresh), parents chosen in proportion to the cost model's predicted score; the best predicted
unmeasured candidates are measured, plus an ``epsilon`` share of random ones (epsilon-greedy).
Both draw every random choice from the context's ``random.Random(seed)``, so a seed reproduces
the sequence of candidates (given the same measurements). The evolutionary search makes each
generation's candidates as one batch of independent jobs (a sample or a mutant, each with a seed
drawn in order), so a :class:`CandidateMaker` can make them elsewhere (a Ray cluster's nodes:
:mod:`.distributed.search`) with the same result.
"""

from __future__ import annotations

import random
from functools import partial
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np
from mlir import ir

from mlcir.errors import TuningError
from mlcir.schedule import RESAMPLE, Schedule, ScheduleError, Trace
from mlcir.target import Target

from .cost_model import CostModel
from .database import trace_key
from .features import FeatureExtractor
from .kernel_sizes import sampling_schedule
from .space import default_space


class DesignSpace(Protocol):
    """A stochastic schedule function: shapes a fresh schedule of the kernel, drawing its
    choices with the schedule's sampling primitives (each draw a decision in the trace)."""

    def __call__(self, sch: Schedule) -> None: ...


@dataclass
class Candidate:
    trace: dict[str, Any]  # JSON form
    features: list[float]
    key: str


@dataclass
class SearchContext:
    """What a strategy works with for one task."""

    kernel: ir.Module
    space: DesignSpace
    cost_model: CostModel
    feature_extractor: FeatureExtractor
    rng: random.Random
    measured: set[str] = field(default_factory=set)            # trace keys
    best_traces: list[dict[str, Any]] = field(default_factory=list)  # fastest first
    default_trace: dict[str, Any] | None = None  # the target's default schedule: a seed
    maker: CandidateMaker | None = None  # makes batches of candidates; None: here
    _schedule_type: type[Schedule] | None = field(default=None, repr=False)

    @property
    def schedule_type(self) -> type[Schedule]:
        """What candidates are drawn and scored on: a dynamic kernel's dims read at a
        representative size (:func:`.kernel_sizes.sampling_schedule`)."""
        if self._schedule_type is None:
            self._schedule_type = sampling_schedule(self.kernel)
        return self._schedule_type

    def candidate(self, sch: Schedule) -> Candidate:
        """The candidate of a shaped schedule: its trace, features and key."""
        data = sch.trace.as_json()
        return Candidate(data, self.feature_extractor.extract(sch), trace_key(data))

    def replayed(self, trace: dict[str, Any]) -> Candidate | None:
        """The candidate of ``trace`` replayed on the kernel (None if it no longer applies)."""
        sch = self.schedule_type(self.kernel)
        try:
            Trace.from_json(trace).apply_to_schedule(sch)
        except ScheduleError:
            return None
        return self.candidate(sch)


# A job of a batch: (None, seed) is a fresh sample of the space, (trace, seed) a mutant of trace.
Job = tuple[dict[str, Any] | None, int]


class CandidateMaker(Protocol):
    """Makes a batch of candidates, in this process or elsewhere (the nodes of a cluster)."""

    def make(self, cx: SearchContext, jobs: list[Job]) -> list[Candidate | None]:
        """The candidate of each job (None where the space rejected it), in order."""


def make_candidate(cx: SearchContext, job: Job) -> Candidate | None:
    """The candidate of one job (see :data:`Job`)."""
    trace, seed = job
    return sample(cx, seed) if trace is None else mutate(cx, trace, random.Random(seed))


def make_candidates(cx: SearchContext, jobs: list[Job]) -> list[Candidate | None]:
    """The candidates of ``jobs``, by ``cx.maker`` when it has one."""
    if cx.maker is not None:
        return cx.maker.make(cx, jobs)
    return [make_candidate(cx, job) for job in jobs]


class SearchStrategy(Protocol):
    """Proposes the candidates to measure next."""

    def generate(self, cx: SearchContext, count: int) -> list[Candidate]:
        """Up to ``count`` candidates of ``cx``'s task not measured yet (none: the task's
        space is exhausted)."""


def sample(cx: SearchContext, seed: int | None = None) -> Candidate | None:
    """A fresh sample of the space drawn with ``seed`` (None: the next of ``cx.rng``); None if
    the space rejected this draw."""
    sch = cx.schedule_type(cx.kernel, seed=cx.rng.randrange(1 << 30) if seed is None else seed)
    try:
        cx.space(sch)
    except ScheduleError:
        return None
    return cx.candidate(sch)


def _redraw(chosen: set[int], index: int, _inst: Any) -> Any:
    """The decision of instruction ``index`` in a mutant: drawn afresh if chosen, else kept."""
    return RESAMPLE if index in chosen else None


def mutate(cx: SearchContext, trace: dict[str, Any], rng: random.Random | None = None,
           attempts: int = 4) -> Candidate | None:
    """Replay ``trace`` with one sampling decision drawn afresh (a later decision that no
    longer fits is redrawn too), drawing from ``rng`` (None: ``cx.rng``); None if no valid
    mutant was found."""
    rng = rng or cx.rng
    base = Trace.from_json(trace)
    sampling = [i for i, inst in enumerate(base.insts) if inst.kind.is_sampling]
    if not sampling:
        return None
    for _ in range(attempts):
        chosen = {rng.choice(sampling)}
        for _ in range(len(sampling)):
            sch = cx.schedule_type(cx.kernel, seed=rng.randrange(1 << 30))
            try:
                base.apply_to_schedule(sch, decision_provider=partial(_redraw, chosen))
            except ScheduleError:
                failed = len(sch.trace.insts)
                if failed in sampling and failed not in chosen:
                    chosen.add(failed)
                    continue
                break
            cand = cx.candidate(sch)
            if cand.key != trace_key(trace):
                return cand
            break
    return None


class RandomSearch:
    """Fresh samples of the space, at most 20 draws per candidate asked for."""

    def generate(self, cx: SearchContext, count: int) -> list[Candidate]:
        out: list[Candidate] = []
        seen = set(cx.measured)
        draws = count * 20
        while len(out) < count and draws > 0:
            draws -= 1
            cand = sample(cx)
            if cand is not None and cand.key not in seen:
                seen.add(cand.key)
                out.append(cand)
        return out


class EvolutionarySearch:
    """MetaSchedule's evolutionary search (see the module docstring)."""

    def __init__(self, population: int = 64, generations: int = 3, init_measured: int = 8,
                 mutation_prob: float = 0.85, epsilon: float = 0.1):
        self.population = population
        self.generations = generations
        self.init_measured = init_measured
        self.mutation_prob = mutation_prob
        self.epsilon = epsilon

    def _initial(self, cx: SearchContext) -> list[Candidate]:
        """The best measured traces and the default schedule, then fresh samples."""
        seeds = cx.best_traces[:self.init_measured]
        if cx.default_trace is not None and cx.default_trace not in seeds:
            seeds = seeds + [cx.default_trace]
        pop = [c for c in map(cx.replayed, seeds) if c is not None]
        draws = self.population * 4
        while len(pop) < self.population and draws > 0:
            jobs: list[Job] = [(None, cx.rng.randrange(1 << 30))
                               for _ in range(min(self.population - len(pop), draws))]
            draws -= len(jobs)
            pop += [c for c in make_candidates(cx, jobs) if c is not None]
        return pop

    @staticmethod
    def _scores(cx: SearchContext, pop: list[Candidate]) -> np.ndarray:
        scores = np.asarray(cx.cost_model.predict([c.features for c in pop]), float)
        return np.maximum(scores, 0.0) + 1e-6

    def generate(self, cx: SearchContext, count: int) -> list[Candidate]:
        pop = self._initial(cx)
        if not pop:
            return []
        pool: dict[str, Candidate] = {c.key: c for c in pop}
        for _ in range(self.generations):
            scores = self._scores(cx, pop)
            weights = (scores / scores.sum()).tolist()
            picks: list[tuple[Candidate, int | None]] = []  # a parent, its mutant's seed
            for _ in range(self.population):
                parent = cx.rng.choices(pop, weights=weights)[0]
                picks.append((parent, cx.rng.randrange(1 << 30)
                              if cx.rng.random() < self.mutation_prob else None))
            mutants = iter(make_candidates(cx, [(parent.trace, seed) for parent, seed in picks
                                                if seed is not None]))
            pop = [parent if seed is None else next(mutants) or parent
                   for parent, seed in picks]
            for c in pop:
                pool.setdefault(c.key, c)
        unmeasured = [c for c in pool.values() if c.key not in cx.measured]
        if not unmeasured:
            return []
        scores = self._scores(cx, unmeasured)
        order = sorted(range(len(unmeasured)), key=lambda i: (-scores[i], unmeasured[i].key))
        n_random = int(round(count * self.epsilon))
        chosen = [unmeasured[i] for i in order[:max(0, count - n_random)]]
        rest = [unmeasured[i] for i in order[len(chosen):]]
        cx.rng.shuffle(rest)
        chosen += rest[:count - len(chosen)]
        return chosen


def make_space(space: str | DesignSpace, target: Target) -> DesignSpace:
    """The design space named by a shorthand (``"default"``), or ``space``."""
    if not isinstance(space, str):
        return space
    if space == "default":
        return default_space(target)
    raise TuningError(f"unknown design space {space!r} (default, or a schedule function)")


def make_strategy(strategy: str | SearchStrategy) -> SearchStrategy:
    """The strategy named by a shorthand (``"random"``, ``"evolutionary"``), or ``strategy``."""
    if not isinstance(strategy, str):
        return strategy
    if strategy == "random":
        return RandomSearch()
    if strategy == "evolutionary":
        return EvolutionarySearch()
    raise TuningError(f"unknown search strategy {strategy!r} (random, evolutionary)")
