"""The tuner base class: TVM's ``Tuner.tune`` loop over a task's config space.

A tuner proposes configs (:meth:`Tuner.next_batch`), a :class:`~mlcir.autotvm.measure.Measurer`
builds and runs them with mlcir's isolated builder and runner, the tuner learns from the
results (:meth:`Tuner.update`) and the callbacks see them (logging, progress). Failed configs
(the template rejects them, the build or run fails, crashes or times out) count as trials with
0 FLOPS and the search goes on. Each trial is logged at DEBUG level on the ``autotvm`` logger
in TVM's form (``No: <n>  GFLOPS: <this>/<best>  result: …  config``).
"""

from __future__ import annotations

import logging
import random
from collections.abc import Iterable, Sequence
from typing import Any

from mlcir.errors import TuningError

from ..measure import MeasureInput, MeasureResult, Measurer, measure_option as _measure_option
from ..space import ConfigEntity
from ..template import Task

logger = logging.getLogger("autotvm")

BATCH = 8  # configs measured per step (builds of a batch overlap the runs)


class Tuner:
    """Base class: subclasses define :meth:`next_batch`, :meth:`has_next` and may override
    :meth:`update`. ``seed`` fixes every random choice."""

    def __init__(self, task: Task, seed: int = 0):
        if len(task.config_space) == 0:
            raise TuningError(f"task {task.name!r} has an empty config space")
        self.task = task
        self.space = task.config_space
        self.rng = random.Random(seed)
        self.seed = seed
        self.visited: set[int] = set()
        self.best_config: ConfigEntity | None = None
        self.best_flops = 0.0
        self.best_measure_pair: tuple[MeasureInput, MeasureResult] | None = None
        self.best_iter = 0
        self.stopped = False
        self._default_pending = False

    # -- what a tuner defines ------------------------------------------------------------------
    def has_next(self) -> bool:
        """Whether there are configs left to propose."""
        return len(self.visited) < len(self.space)

    def next_batch(self, batch_size: int) -> list[ConfigEntity]:
        """Up to ``batch_size`` configs not measured yet."""
        raise NotImplementedError

    def update(self, inputs: list[MeasureInput], results: list[MeasureResult]) -> None:
        """Learn from measured configs (the base class learns nothing)."""

    def _take(self, index: int) -> ConfigEntity:
        self.visited.add(index)
        return self.space.get(index)

    def _random_unvisited(self) -> int | None:
        """A random index not visited yet (None when every config is)."""
        n = len(self.space)
        if len(self.visited) >= n:
            return None
        if len(self.visited) < n // 2:
            while True:
                index = self.rng.randrange(n)
                if index not in self.visited:
                    return index
        return self.rng.choice([i for i in range(n) if i not in self.visited])

    # -- the loop --------------------------------------------------------------------------------
    def tune(self, n_trial: int, measure_option: dict[str, Any] | None = None,
             early_stopping: int | None = None, callbacks: Sequence[Any] = (),
             si_prefix: str = "G") -> None:
        """Measure up to ``n_trial`` configs; stop early after ``early_stopping`` trials without
        a better one. ``callbacks`` are called after each batch with ``(tuner, inputs,
        results)``."""
        if isinstance(n_trial, bool) or not isinstance(n_trial, int) or n_trial < 1:
            raise TuningError(f"n_trial must be an integer >= 1, got {n_trial!r}")
        option = measure_option or _measure_option()
        stop_after = early_stopping if early_stopping is not None else float("inf")
        scale = {"": 1.0, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}[si_prefix]
        self.stopped = False
        default = self.task.default_index
        self._default_pending = default is not None and default not in self.visited
        i = 0
        with Measurer(self.task, option) as measurer:
            batch = max(BATCH, measurer.n_parallel)
            while i < n_trial and self.has_next():
                configs = self._default_first()
                configs += self.next_batch(min(batch, n_trial - i) - len(configs))
                if not configs:
                    break
                inputs = [MeasureInput(self.task.target, self.task, c) for c in configs]
                results = measurer.measure(inputs)
                for k, (inp, res) in enumerate(zip(inputs, results)):
                    flops = self.task.flop / res.mean if res.ok else 0.0
                    if flops > self.best_flops:
                        self.best_flops, self.best_config = flops, inp.config
                        self.best_measure_pair, self.best_iter = (inp, res), i + k
                    logger.debug("No: %d\t%sFLOPS: %.2f/%.2f\tresult: %s\t%s", i + k + 1,
                                 si_prefix, flops / scale, self.best_flops / scale, res,
                                 inp.config)
                i += len(results)
                self.update(inputs, results)
                self.stopped = i >= self.best_iter + stop_after or i >= n_trial \
                    or not self.has_next()
                for callback in callbacks:
                    callback(self, inputs, results)
                if i >= self.best_iter + stop_after:
                    logger.debug("Early stopped. Best iter: %d.", self.best_iter)
                    break

    def _default_first(self) -> list[ConfigEntity]:
        """The task's default config while it is not measured (a model's kernel: its default
        schedule), so the best record is never slower than a build without records."""
        if not self._default_pending:
            return []
        self._default_pending = False
        return [self._take(self.task.default_index)]

    def load_history(self, data_set: Iterable[tuple[MeasureInput, MeasureResult]],
                     min_seed_records: int = 500) -> None:  # noqa: ARG002 - TVM's signature
        """Learn from earlier records of this task and do not measure them again
        (``min_seed_records`` is accepted for TVM's signature; every matching record is used)."""
        inputs, results = [], []
        for inp, res in data_set:
            if inp.task.workload != self.task.workload or inp.config.index < 0:
                continue
            self.visited.add(inp.config.index)
            inputs.append(inp)
            results.append(res)
        if inputs:
            self.update(inputs, results)
