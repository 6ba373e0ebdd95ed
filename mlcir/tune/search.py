"""Search strategies: which candidates of a design space to measure next.

``RandomSearch`` draws fresh samples of the space. ``EvolutionarySearch`` is MetaSchedule's: a
population of the best measured traces plus fresh samples evolves for a few generations by
mutating sampled decisions (a mutant replays its trace with one decision drawn afresh), parents
chosen in proportion to the cost model's predicted score; the best predicted unmeasured
candidates are measured, plus an ``epsilon`` share of random ones (epsilon-greedy). Both draw
every random choice from one ``random.Random(seed)``, so a seed reproduces the sequence of
candidates (given the same measurements).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np
from mlir import ir

from mlcir.schedule import RESAMPLE, Schedule, ScheduleError, Trace

from .cost_model import CostModel
from .database import trace_key
from .features import extract

SpaceFn = Callable[[Schedule], None]


@dataclass
class Candidate:
    trace: dict[str, Any]  # JSON form
    features: list[float]
    key: str


@dataclass
class SearchContext:
    """What a strategy works with: the kernel, its space, what is already measured."""

    kernel: ir.Module
    space: SpaceFn
    measured: set[str] = field(default_factory=set)            # trace keys
    best_traces: list[dict[str, Any]] = field(default_factory=list)  # fastest first


def _candidate(sch: Schedule) -> Candidate:
    data = sch.trace.as_json()
    return Candidate(data, extract(sch), trace_key(data))


def sample(cx: SearchContext, rng: random.Random) -> Candidate | None:
    """A fresh sample of the space (None if the space rejected this draw)."""
    sch = Schedule(cx.kernel, seed=rng.randrange(1 << 30))
    try:
        cx.space(sch)
    except ScheduleError:
        return None
    return _candidate(sch)


def mutate(cx: SearchContext, trace: dict[str, Any], rng: random.Random,
           attempts: int = 4) -> Candidate | None:
    """Replay ``trace`` with one sampling decision drawn afresh (a later decision that no
    longer fits is redrawn too); None if no valid mutant was found."""
    base = Trace.from_json(trace)
    sampling = [i for i, inst in enumerate(base.insts) if inst.kind.is_sampling]
    if not sampling:
        return None
    for _ in range(attempts):
        chosen = {rng.choice(sampling)}
        for _ in range(len(sampling)):
            sch = Schedule(cx.kernel, seed=rng.randrange(1 << 30))
            try:
                base.apply_to_schedule(sch, decision_provider=lambda i, inst: RESAMPLE if i in chosen else None)
            except ScheduleError as error:
                failed = len(sch.trace.insts)
                if failed in sampling and failed not in chosen:
                    chosen.add(failed)
                    continue
                break
            cand = _candidate(sch)
            if cand.key != trace_key(trace):
                return cand
            break
    return None


class RandomSearch:
    name = "random"

    def __init__(self, cx: SearchContext, cost_model: CostModel | None = None, seed: int = 0):
        self.cx = cx
        self.rng = random.Random(seed)

    def generate(self, count: int, max_draws: int | None = None) -> list[Candidate]:
        out: list[Candidate] = []
        seen = set(self.cx.measured)
        draws = max_draws or count * 20
        while len(out) < count and draws > 0:
            draws -= 1
            cand = sample(self.cx, self.rng)
            if cand is not None and cand.key not in seen:
                seen.add(cand.key)
                out.append(cand)
        return out


class EvolutionarySearch:
    name = "evolutionary"

    def __init__(self, cx: SearchContext, cost_model: CostModel, seed: int = 0,
                 population: int = 64, generations: int = 3, init_measured: int = 8,
                 mutation_prob: float = 0.85, epsilon: float = 0.1):
        self.cx = cx
        self.model = cost_model
        self.rng = random.Random(seed)
        self.population = population
        self.generations = generations
        self.init_measured = init_measured
        self.mutation_prob = mutation_prob
        self.epsilon = epsilon

    def _initial(self) -> list[Candidate]:
        pop: list[Candidate] = []
        for data in self.cx.best_traces[:self.init_measured]:
            sch = Schedule(self.cx.kernel)
            try:
                Trace.from_json(data).apply_to_schedule(sch)
            except ScheduleError:
                continue
            pop.append(_candidate(sch))
        draws = self.population * 4
        while len(pop) < self.population and draws > 0:
            draws -= 1
            cand = sample(self.cx, self.rng)
            if cand is not None:
                pop.append(cand)
        return pop

    def _scores(self, pop: list[Candidate]) -> np.ndarray:
        scores = np.asarray(self.model.predict([c.features for c in pop]), float)
        return np.maximum(scores, 0.0) + 1e-6

    def generate(self, count: int) -> list[Candidate]:
        pop = self._initial()
        if not pop:
            return []
        pool: dict[str, Candidate] = {c.key: c for c in pop}
        for _ in range(self.generations):
            scores = self._scores(pop)
            weights = (scores / scores.sum()).tolist()
            nxt: list[Candidate] = []
            for _ in range(self.population):
                parent = self.rng.choices(pop, weights=weights)[0]
                child = mutate(self.cx, parent.trace, self.rng) \
                    if self.rng.random() < self.mutation_prob else parent
                nxt.append(child or parent)
            pop = nxt
            for c in pop:
                pool.setdefault(c.key, c)
        unmeasured = [c for c in pool.values() if c.key not in self.cx.measured]
        if not unmeasured:
            return []
        scores = self._scores(unmeasured)
        order = sorted(range(len(unmeasured)), key=lambda i: (-scores[i], unmeasured[i].key))
        n_random = int(round(count * self.epsilon))
        chosen = [unmeasured[i] for i in order[:max(0, count - n_random)]]
        rest = [unmeasured[i] for i in order[len(chosen):]]
        self.rng.shuffle(rest)
        chosen += rest[:count - len(chosen)]
        return chosen


def make_strategy(kind: str, cx: SearchContext, model: CostModel, seed: int = 0, **options: Any):
    if kind == "random":
        return RandomSearch(cx, model, seed)
    if kind == "evolutionary":
        return EvolutionarySearch(cx, model, seed, **options)
    raise ValueError(f"unknown search strategy {kind!r} (random, evolutionary)")
