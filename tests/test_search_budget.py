"""Search strategies with a budget smaller than their space must choose well.

The space: the splits of i (extent 32) and j (extent 64) of a matmul into two factors each,
6 x 7 = 42 candidates. The runner times nothing: a candidate's time is a known, smooth
function of its two inner factors (best at i1 = 4, j1 = 16), so results are exact and
reproducible. With 20 trials (under half of the space) the evolutionary search, guided by its
cost model, reaches the best candidate for every seed tried, while a random non-repeating search
of the same budget misses it for some seed: a strategy that only avoided repeats would fail.
"""

from __future__ import annotations

import math

import pytest

import mlcir
from mlcir.schedule import Schedule
from mlcir.testing import kernels
from mlcir.testing.fake_tuning import NothingBuilt
from mlcir.tune import RunResult, tune_kernel

SPACE_SIZE = 6 * 7
BUDGET = 20
SEEDS = range(5)
BEST_SECS = 1e-3


def two_splits(sch: Schedule) -> None:
    c = sch.get_block("C")
    i, j, k = sch.get_loops(c)
    i0, i1 = sch.split(i, sch.sample_perfect_tile(i, n=2, max_innermost_factor=64))
    j0, j1 = sch.split(j, sch.sample_perfect_tile(j, n=2, max_innermost_factor=64))
    sch.reorder(i0, j0, k, i1, j1)


def analytic_secs(i_inner: int, j_inner: int) -> float:
    return BEST_SECS * (1 + abs(math.log2(i_inner) - 2) + abs(math.log2(j_inner) - 4))


class AnalyticRunner:
    """The runner interface of tune_kernel, with times from :func:`analytic_secs`."""

    cores = 0

    def __init__(self):
        self.seen: list[tuple] = []

    def prepare(self, workload, kernel):
        pass

    def run_candidate(self, _workload, trace, _build):
        (_, i_split), (_, j_split) = trace["decisions"]
        self.seen.append((tuple(i_split), tuple(j_split)))
        return RunResult([analytic_secs(i_split[1], j_split[1])])

    def close(self):
        pass


@pytest.fixture(scope="module")
def kernel():
    ctx = mlcir.make_context()
    with ctx:
        yield mlcir.parse(kernels.matmul(32, 64, 16)[0])


def _search(kernel, strategy: str, seed: int, tmp_path) -> tuple[float, AnalyticRunner]:
    measurer = AnalyticRunner()
    best = tune_kernel(kernel, work_dir=tmp_path / f"{strategy}-{seed}", max_trials=BUDGET,
                       space=two_splits, strategy=strategy, num_trials_per_iter=4, seed=seed,
                       verbose=0, builder=NothingBuilt(), runner=measurer)
    assert len(measurer.seen) == BUDGET < SPACE_SIZE
    assert len(set(measurer.seen)) == BUDGET  # never measures a candidate twice
    return best.latency, measurer


@pytest.mark.slow
def test_evolutionary_search_finds_the_best_with_half_the_space(kernel, tmp_path):
    for seed in SEEDS:
        latency, _ = _search(kernel, "evolutionary", seed, tmp_path)
        assert latency == pytest.approx(BEST_SECS), f"seed {seed}"


@pytest.mark.slow
def test_a_random_search_of_the_same_budget_can_miss_the_best(kernel, tmp_path):
    """The test above has power: with 20 of 42 candidates, a search that only avoids repeats
    misses the best for some of the seeds (all five hits: probability (20/42)^5, about 2%)."""
    latencies = [_search(kernel, "random", seed, tmp_path)[0] for seed in SEEDS]
    assert max(latencies) > BEST_SECS * 1.5
