"""Cost models: predict how fast a candidate will run, to choose what to measure.

:class:`CostModel` is the role's interface. ``RandomModel`` (shorthand ``"random"``) predicts
noise. ``XGBModel`` (``"xgb"``) is MetaSchedule's: gradient-boosted trees (XGBoost, imported
lazily) trained online on the features of every measured candidate (:mod:`.features`) against
its *normalized throughput* — the workload's best measured time divided by the candidate's
(1.0 for the best, near 0 for slow or failed ones). Normalizing per workload lets one model
learn from several tasks. Until it has seen ``min_samples`` measurements it predicts a
constant, and the search falls back to random choices.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Protocol, Sequence

import numpy as np

from mlcir.errors import TuningError


class CostModel(Protocol):
    """Learns from measured candidates; scores unmeasured ones (higher: expected faster)."""

    def update(self, workload: str, features: Sequence[Sequence[float]],
               seconds: Sequence[float]) -> None:
        """Add measurements of a workload's candidates (``inf`` seconds: failed)."""

    def predict(self, features: Sequence[Sequence[float]]) -> np.ndarray:
        """A score per candidate's features."""


class RandomModel:
    """Predicts noise: the search without a model."""

    def __init__(self, seed: int = 0):
        self.rng = np.random.default_rng(seed)

    def update(self, workload: str, features: Sequence[Sequence[float]],
               seconds: Sequence[float]) -> None:
        pass

    def predict(self, features: Sequence[Sequence[float]]) -> np.ndarray:
        return self.rng.random(len(features))


class XGBModel:
    """Gradient-boosted trees on normalized throughput (see the module docstring)."""

    def __init__(self, seed: int = 0, min_samples: int = 8, rounds: int = 60,
                 max_depth: int = 6, learning_rate: float = 0.2):
        self.min_samples = min_samples
        self.rounds = rounds
        self.params = {"max_depth": max_depth, "eta": learning_rate, "objective": "reg:squarederror",
                       "subsample": 1.0, "min_child_weight": 1, "seed": seed, "nthread": 1,
                       "verbosity": 0}
        self._data: dict[str, tuple[list[list[float]], list[float]]] = defaultdict(lambda: ([], []))
        self._booster = None

    @property
    def samples(self) -> int:
        return sum(len(x) for x, _ in self._data.values())

    def update(self, workload: str, features: Sequence[Sequence[float]],
               seconds: Sequence[float]) -> None:
        """Add measurements (``inf`` seconds for failed candidates) and retrain."""
        xs, ys = self._data[workload]
        for f, s in zip(features, seconds):
            if f is not None:
                xs.append(list(f))
                ys.append(float(s))
        if self.samples >= self.min_samples:
            self._train()

    def _training_set(self) -> tuple[np.ndarray, np.ndarray]:
        xs, ys = [], []
        for feats, secs in self._data.values():
            finite = [s for s in secs if np.isfinite(s) and s > 0]
            best = min(finite) if finite else 1.0
            for f, s in zip(feats, secs):
                xs.append(f)
                ys.append(best / s if np.isfinite(s) and s > 0 else 0.0)
        return np.asarray(xs, np.float32), np.asarray(ys, np.float32)

    def _train(self) -> None:
        import xgboost as xgb

        x, y = self._training_set()
        self._booster = xgb.train(self.params, xgb.DMatrix(x, label=y), num_boost_round=self.rounds)

    def predict(self, features: Sequence[Sequence[float]]) -> np.ndarray:
        if self._booster is None or not features:
            return np.zeros(len(features))
        import xgboost as xgb

        return self._booster.predict(xgb.DMatrix(np.asarray(features, np.float32)))


def make_cost_model(model: str | CostModel, seed: int = 0) -> CostModel:
    """The model named by a shorthand (``"xgb"``, ``"random"``), or ``model``."""
    if not isinstance(model, str):
        return model
    if model == "xgb":
        return XGBModel(seed=seed)
    if model == "random":
        return RandomModel(seed)
    raise TuningError(f"unknown cost model {model!r} (xgb, random)")


def ranking_quality(predicted: Sequence[float], seconds: Sequence[float], k: int = 5
                    ) -> dict[str, float]:
    """How well predictions rank held-out candidates: Spearman's rank correlation between
    predicted score and measured throughput, and top-k recall (the share of the k truly
    fastest among the k predicted fastest)."""
    pred = np.asarray(predicted, float)
    thr = 1.0 / np.asarray(seconds, float)
    n = len(pred)
    if n < 3:
        return {"spearman": float("nan"), "top_k_recall": float("nan"), "n": n}
    rp = np.argsort(np.argsort(pred))
    rt = np.argsort(np.argsort(thr))
    spearman = float(np.corrcoef(rp, rt)[0, 1])
    k = min(k, n)
    top_true = set(np.argsort(-thr)[:k])
    top_pred = set(np.argsort(-pred)[:k])
    return {"spearman": spearman, "top_k_recall": len(top_true & top_pred) / k, "n": n}
