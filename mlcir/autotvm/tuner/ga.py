"""The genetic-algorithm tuner: TVM's ``GATuner`` on the knob indices of a config."""

from __future__ import annotations

from ..measure import MeasureInput, MeasureResult
from ..space import ConfigEntity
from ..template import Task
from .tuner import Tuner


class GATuner(Tuner):
    """A population of ``pop_size`` configs (genes: each knob's entity index) is measured;
    the next generation keeps the ``elite_num`` best, and breeds the rest from parents drawn
    in proportion to their FLOPS (one-point crossover, then each knob redrawn with
    ``mutation_prob``), never proposing a config measured before."""

    def __init__(self, task: Task, pop_size: int = 100, elite_num: int = 3,
                 mutation_prob: float = 0.1, seed: int = 0):
        super().__init__(task, seed)
        self.pop_size = max(1, min(pop_size, len(self.space)))
        self.elite_num = min(elite_num, self.pop_size)
        self.mutation_prob = mutation_prob
        self.dims = self.space.dims
        self.genes: list[list[int]] = []
        planned: set[int] = set()
        for _ in range(self.pop_size):
            index = self._random_fresh(planned)
            if index is None:
                break
            planned.add(index)
            self.genes.append(self.space.point2knob(index))
        self.scores: list[float | None] = [None] * len(self.genes)  # FLOPS of each gene
        self._position: dict[int, int] = {}  # a proposed config index -> its gene
        self.elites: list[list[int]] = []
        self.elite_scores: list[float] = []
        self.trial_pt = 0

    def _random_fresh(self, planned: set[int]) -> int | None:
        """A random index neither measured nor planned (None when none is left)."""
        if len(self.visited) + len(planned) >= len(self.space):
            return None
        while True:
            index = self.rng.randrange(len(self.space))
            if index not in self.visited and index not in planned:
                return index

    def next_batch(self, batch_size: int) -> list[ConfigEntity]:
        out: list[ConfigEntity] = []
        while len(out) < batch_size and self.has_next():
            if self.trial_pt >= len(self.genes):
                if out:
                    break  # this generation's last configs: measure them before breeding
                if self.genes:
                    self._next_generation()  # every gene was skipped (measured before)
                if not self.genes:
                    index = self._random_unvisited()
                    if index is None:
                        break
                    out.append(self._take(index))
                continue
            index = self.space.knob2point(self.genes[self.trial_pt])
            self.trial_pt += 1
            if index in self.visited:
                self.scores[self.trial_pt - 1] = 0.0
                continue
            self._position[index] = self.trial_pt - 1
            out.append(self._take(index))
        return out

    def update(self, inputs: list[MeasureInput], results: list[MeasureResult]) -> None:
        for inp, res in zip(inputs, results):
            position = self._position.pop(inp.config.index, None)
            if position is not None:
                self.scores[position] = inp.task.flop / res.mean if res.ok else 0.0
        if self.genes and self.trial_pt >= len(self.genes) and None not in self.scores:
            self._next_generation()

    def _next_generation(self) -> None:
        pool = self.genes + self.elites
        scores = [s or 0.0 for s in self.scores] + self.elite_scores
        order = sorted(range(len(pool)), key=lambda i: -scores[i])
        self.elites = [pool[i] for i in order[:self.elite_num]]
        self.elite_scores = [scores[i] for i in order[:self.elite_num]]
        total = sum(scores)
        weights = [s / total for s in scores] if total > 0 else None
        children: list[list[int]] = []
        planned: set[int] = set()
        tries = 0
        while len(children) < self.pop_size and tries < 20 * self.pop_size:
            tries += 1
            p1, p2 = self.rng.choices(pool, weights=weights, k=2)
            point = self.rng.randrange(len(self.dims))
            child = p1[:point] + p2[point:]
            child = [self.rng.randrange(d) if self.rng.random() < self.mutation_prob else k
                     for k, d in zip(child, self.dims)]
            index = self.space.knob2point(child)
            if index in self.visited or index in planned:
                continue
            planned.add(index)
            children.append(child)
        while len(children) < self.pop_size:  # the neighbourhood is exhausted: fresh genes
            index = self._random_fresh(planned)
            if index is None:
                break
            planned.add(index)
            children.append(self.space.point2knob(index))
        self.genes, self.scores, self.trial_pt = children, [None] * len(children), 0
