"""The model-based tuner: TVM's ``XGBTuner`` with mlcir's XGBoost cost model.

Every ``plan_size`` measured configs, gradient-boosted trees (mlcir's
:class:`~mlcir.tune.cost_model.XGBModel`, trained on normalized throughput) are refitted on the
features of the measured configs, and the ``plan_size`` unmeasured configs it scores best are
measured next (with a 5% chance per trial of a random config instead). Until the first plan the
configs are random. Where TVM runs simulated annealing over the space to find the best
predicted configs, this scores a random pool of ``pool_size`` unmeasured configs (every one in
a space that small): the same role, for the spaces templates have (docs/autotvm.md).
"""

from __future__ import annotations

import numpy as np

from mlcir.errors import TuningError
from mlcir.tune.cost_model import XGBModel
from mlcir.tune.features import LENGTH, LoopNestFeatures

from ..measure import MeasureInput, MeasureResult
from ..space import ConfigEntity
from ..template import Task
from .tuner import Tuner

LOSS_TYPES = ("reg", "rank", "rank-binary")
FEATURE_TYPES = ("knob", "itervar", "curve")
EPSILON = 0.05


class _TunerModel(XGBModel):
    """mlcir's XGBoost model with TVM's tree settings and loss: ``reg`` (squared error on
    normalized throughput), ``rank`` (pairwise ranking of it), ``rank-binary`` (pairwise
    ranking of two classes: the faster half of the successful configs against the rest)."""

    def __init__(self, loss_type: str, seed: int):
        super().__init__(seed=seed, min_samples=2, rounds=60, max_depth=3, learning_rate=0.3)
        self.loss_type = loss_type
        self.params["gamma"] = 1e-4
        self.params["objective"] = "reg:squarederror" if loss_type == "reg" else "rank:pairwise"

    def _training_set(self) -> tuple[np.ndarray, np.ndarray]:
        x, y = super()._training_set()
        if self.loss_type == "rank-binary" and (y > 0).any():
            y = (y >= np.median(y[y > 0])).astype(np.float32)
        return x, y


class XGBTuner(Tuner):
    """See the module docstring. ``feature_type``: ``knob`` (the knobs' values), ``itervar``
    (mlcir's loop-nest features of the scheduled kernel: per loop, extent, kind, vector,
    unroll, strides and footprints), ``curve`` (the same loop-nest features: they are
    already a fixed-length vector, which is what TVM's curve sampling is for).
    ``num_threads``, ``optimizer``, ``diversity_filter_ratio`` and ``log_interval`` are
    accepted for TVM's signature."""

    def __init__(self, task: Task, plan_size: int = 64, feature_type: str = "itervar",
                 loss_type: str = "reg", num_threads: int | None = None, optimizer: str = "sa",
                 diversity_filter_ratio: float | None = None, log_interval: int = 50,
                 seed: int = 0, pool_size: int = 1024):
        super().__init__(task, seed)
        if loss_type not in LOSS_TYPES:
            raise TuningError(f"XGBTuner: unknown loss_type {loss_type!r} "
                              f"({', '.join(LOSS_TYPES)})")
        if feature_type not in FEATURE_TYPES:
            raise TuningError(f"XGBTuner: unknown feature_type {feature_type!r} "
                              f"({', '.join(FEATURE_TYPES)})")
        self.plan_size, self.pool_size = plan_size, pool_size
        # TVM's knobs of its own model and annealer, kept for reference (not used here)
        self.num_threads, self.optimizer = num_threads, optimizer
        self.diversity_filter_ratio, self.log_interval = diversity_filter_ratio, log_interval
        self.feature_type, self.loss_type = feature_type, loss_type
        self.model = _TunerModel(loss_type, seed)
        self._extractor = LoopNestFeatures()
        self._features: dict[int, list[float]] = {}
        self.measured = 0
        self.any_ok = False  # planning needs a successful measurement to learn from
        self.train_ct = 0
        self.trials: list[int] = []
        self.trial_pt = 0

    def features(self, index: int) -> list[float]:
        """The cost model's features of config ``index`` (zeros if the template rejects it)."""
        if index not in self._features:
            config = self.space.get(index)
            if self.feature_type == "knob":
                self._features[index] = config.get_flatten_feature()
            else:
                try:
                    sch, _ = self.task.instantiate(config)
                    self._features[index] = list(self._extractor.extract(sch))
                except Exception:  # noqa: BLE001 - a rejected config scores like a failed one
                    self._features[index] = [0.0] * LENGTH
        return self._features[index]

    def next_batch(self, batch_size: int) -> list[ConfigEntity]:
        out = []
        while len(out) < batch_size and self.has_next():
            index: int | None
            if self.trial_pt < len(self.trials) and self.rng.random() >= EPSILON:
                index = self.trials[self.trial_pt]
                self.trial_pt += 1
                if index in self.visited:
                    continue
            else:
                index = self._random_unvisited()
                if index is None:
                    break
            out.append(self._take(index))
        return out

    def update(self, inputs: list[MeasureInput], results: list[MeasureResult]) -> None:
        indices = [inp.config.index for inp in inputs]
        self.model.update(self.task.workload_hash if self.task.kernel is not None
                          else self.task.name,
                          [self.features(i) for i in indices],
                          [res.mean for res in results])
        self.measured += len(inputs)
        self.any_ok = self.any_ok or any(res.ok for res in results)
        if self.measured >= self.plan_size * (self.train_ct + 1) and self.any_ok:
            self._plan()
            self.train_ct += 1

    def _plan(self) -> None:
        """The ``plan_size`` unmeasured configs of the pool the model scores best."""
        unvisited = len(self.space) - len(self.visited)
        if unvisited <= 0:
            self.trials, self.trial_pt = [], 0
            return
        if unvisited <= self.pool_size:
            pool = [i for i in range(len(self.space)) if i not in self.visited]
        else:
            chosen: set[int] = set()
            while len(chosen) < self.pool_size:
                index = self.rng.randrange(len(self.space))
                if index not in self.visited:
                    chosen.add(index)
            pool = sorted(chosen)
        scores = self.model.predict([self.features(i) for i in pool])
        order = np.argsort(-np.asarray(scores), kind="stable")
        self.trials = [pool[i] for i in order[:self.plan_size]]
        self.trial_pt = 0
