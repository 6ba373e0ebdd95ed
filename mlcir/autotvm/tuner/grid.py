"""Tuners without a model: every config in index order, or a random order."""

from __future__ import annotations

from ..space import ConfigEntity
from ..template import Task
from .tuner import Tuner


class GridSearchTuner(Tuner):
    """Every config exactly once, in index order (small spaces are best searched whole)."""

    def __init__(self, task: Task, seed: int = 0):
        super().__init__(task, seed)
        self.counter = 0

    def next_batch(self, batch_size: int) -> list[ConfigEntity]:
        out = []
        while len(out) < batch_size and self.counter < len(self.space):
            if self.counter not in self.visited:
                out.append(self._take(self.counter))
            self.counter += 1
        return out

    def has_next(self) -> bool:
        return self.counter < len(self.space)


class RandomTuner(Tuner):
    """Configs in a random order, each at most once (``range_idx``: only indices in
    ``[start, end]``)."""

    def __init__(self, task: Task, range_idx: tuple[int, int] | None = None, seed: int = 0):
        super().__init__(task, seed)
        if range_idx is not None:
            start, end = range_idx
            self.visited |= set(range(0, start)) | set(range(end + 1, len(self.space)))

    def next_batch(self, batch_size: int) -> list[ConfigEntity]:
        out = []
        while len(out) < batch_size:
            index = self._random_unvisited()
            if index is None:
                break
            out.append(self._take(index))
        return out
