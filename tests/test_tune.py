"""The autotuner: database, workers (crashes and hangs contained), strategies, cost model,
tasks, resume, and tuned builds that still compute the right numbers."""

from __future__ import annotations

import json
import math
import random

import numpy as np
import pytest
from mlir import ir

import mlcir
from mlcir.passes.bind_params import bind_params
from mlcir.schedule import Schedule
from mlcir.target import Target
from mlcir.testing import kernels, mlp
from mlcir.testing.fake_tuning import NothingBuilt
from mlcir.tune import (BuildResult, BuildRunCoordinator, Database, LocalBuilder, LocalRunner,
                        Record, RunResult, extract_tasks, tune_kernel, tune_module, workload_hash)
from mlcir.tune.cost_model import XGBModel, ranking_quality
from mlcir.tune.database import trace_key


# A graph-level model of one matmul with a relu epilogue: one fused kernel, one task.
MATMUL_RELU = """
    func.func @main(%x: tensor<4x8xf32>, %w: tensor<8x16xf32>) -> tensor<4x16xf32> {
      %0 = "graph.matmul"(%x, %w) : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
      %1 = "graph.relu"(%0) : (tensor<4x16xf32>) -> tensor<4x16xf32>
      return %1 : tensor<4x16xf32>
    }"""


@pytest.fixture(scope="module")
def small_mm():
    text, ref = kernels.matmul(32, 64, 16)
    ctx = mlcir.make_context()
    with ctx:
        module = mlcir.parse(text)
    return module, ref


def split_space(sch: Schedule) -> None:
    """A small space: the split of j (extent 64) into two factors, 7 possibilities."""
    c = sch.get_block("C")
    i, j, k = sch.get_loops(c)
    j0, j1 = sch.split(j, sch.sample_perfect_tile(j, n=2, max_innermost_factor=64))
    sch.reorder(i, j0, k, j1)


class AnalyticRunner:
    """Runs nothing: the 'time' of a candidate is a known function of its j split (best at
    j1 = 16), so a search's result is exact and reproducible."""

    cores = 0

    def __init__(self):
        self.seen: list[list[int]] = []

    def prepare(self, workload, kernel):
        pass

    def run_candidate(self, _workload, trace, _build):
        decision = next(d for i, d in trace["decisions"])
        self.seen.append(decision)
        return RunResult([1e-3 * (1 + abs(math.log2(decision[1]) - 4))])

    def close(self):
        pass


def test_database_round_trip_and_corrupt_lines(tmp_path, small_mm):
    module, _ = small_mm
    db = Database(tmp_path)
    w = db.commit_workload(module, "mm")
    assert w.hash == workload_hash(module) and len(w.hash) == 24
    sch = Schedule(module, seed=1)
    split_space(sch)
    trace = sch.trace.as_json()
    db.commit_record(Record(w.hash, "llvm", trace, [1e-3, 2e-3]))
    db.commit_record(Record(w.hash, "llvm", trace, None, "build: boom"))
    db.commit_record(Record(w.hash, "llvm -threads=2", trace, [5e-4]))
    with open(db.records_path, "a") as f:
        f.write('{"version": 1, "workload": "x", "trace": {}\n')  # truncated
        f.write("not json at all\n")
        f.write(json.dumps({"version": 99, "workload": w.hash}) + "\n")
    with pytest.warns(RuntimeWarning) as caught:
        again = Database(tmp_path)
    messages = [str(c.message) for c in caught]
    assert any(m.startswith(f"{again.records_path}:4: skipped a corrupt") for m in messages)
    assert any(f"{again.records_path}:5:" in m for m in messages)
    assert any(f"{again.records_path}:6:" in m and "schema version 99" in m for m in messages)
    assert len(again) == 3
    best = again.best(w.hash, "llvm")
    assert len(best) == 1 and best[0].mean_secs == pytest.approx(1.5e-3)
    assert again.best(w.hash, "llvm -threads=2")[0].mean_secs == pytest.approx(5e-4)
    assert again.has(w.hash, "llvm", trace) and not again.has(w.hash, "cuda", trace)


def test_workload_hash_ignores_names_and_locations():
    a, _ = kernels.matmul(16, 16, 16)
    b = a.replace("%A", "%lhs").replace("%B", "%rhs").replace("%e ", "%empty ")
    ctx = mlcir.make_context()
    with ctx:
        ha = workload_hash(mlcir.parse(a, source_name="one.mlir"))
        hb = workload_hash(mlcir.parse("\n\n" + b, source_name="two.mlir"))
        hc = workload_hash(mlcir.parse(kernels.matmul(16, 16, 32)[0]))
    assert ha == hb != hc


@pytest.mark.parametrize("strategy", ["random", "evolutionary"])
def test_strategies_find_the_known_best_split(tmp_path, small_mm, strategy):
    module, _ = small_mm
    runner = AnalyticRunner()
    best = tune_kernel(module, work_dir=tmp_path / strategy, max_trials=7, space=split_space,
                       strategy=strategy, num_trials_per_iter=4, seed=3, verbose=0,
                       builder=NothingBuilt(), runner=runner)
    assert best.trace.insts[2].decision == [4, 16]
    assert best.latency == pytest.approx(1e-3)
    # the same seed gives the same sequence of candidates
    again = AnalyticRunner()
    tune_kernel(module, work_dir=tmp_path / f"{strategy}-again", max_trials=7, space=split_space,
                strategy=strategy, num_trials_per_iter=4, seed=3, verbose=0,
                builder=NothingBuilt(), runner=again)
    assert again.seen == runner.seen


def test_resume_skips_measured_traces(tmp_path, small_mm):
    module, _ = small_mm
    first = AnalyticRunner()
    tune_kernel(module, work_dir=tmp_path, max_trials=3, space=split_space, strategy="random",
                seed=0, verbose=0, builder=NothingBuilt(), runner=first)
    second = AnalyticRunner()
    tune_kernel(module, work_dir=tmp_path, max_trials=6, space=split_space, strategy="random",
                seed=0, verbose=0, builder=NothingBuilt(), runner=second)
    assert len(first.seen) == 3 and len(second.seen) == 3
    assert not {tuple(d) for d in first.seen} & {tuple(d) for d in second.seen}
    assert len(Database(tmp_path).records()) == 6


def test_real_tuning_measures_and_the_result_is_correct(tmp_path, small_mm):
    module, ref = small_mm
    best = tune_kernel(module, target="llvm -threads=1", work_dir=tmp_path, max_trials=6,
                       strategy="evolutionary", num_trials_per_iter=3, seed=0, verbose=0)
    records = Database(tmp_path).records()
    assert len(records) == 6 and all(r.ok for r in records), [r.error for r in records]
    assert all(r.features and len(r.features) > 100 for r in records)
    ex = mlcir.build(best.mod)
    a, b = kernels.random_inputs(kernels.matmul(32, 64, 16)[0])
    np.testing.assert_allclose(ex.main(a, b), ref(a, b), rtol=1e-4, atol=1e-4)


def _candidates(module, n, seed=0):
    from mlcir.tune.space import default_space

    out = []
    rng = random.Random(seed)
    while len(out) < n:
        sch = Schedule(module, seed=rng.randrange(1 << 20))
        default_space("llvm")(sch)
        if all(trace_key(sch.trace.as_json()) != trace_key(t) for t in out):
            out.append(sch.trace.as_json())
    return out


def test_crashing_hanging_and_wrong_candidates_are_contained(tmp_path, small_mm, monkeypatch):
    module, _ = small_mm
    traces = _candidates(module, 5)
    keys = [trace_key(t) for t in traces]
    monkeypatch.setenv("MLCIR_TUNE_FAULTS", json.dumps({
        keys[0]: "build-crash", keys[1]: "run-crash", keys[2]: "run-hang", keys[3]: "build-hang"}))
    target = Target.parse("llvm -threads=1")
    workload = workload_hash(module)
    # (Time-outs with room for a worker to start on a loaded machine: CI runs a test per core.)
    builder, runner = LocalBuilder(tmp_path, target, timeout=20), LocalRunner(tmp_path, target, timeout=15)
    try:
        coordinator = BuildRunCoordinator(builder, runner)
        coordinator.prepare(workload, module)
        results = coordinator.build_and_run(workload, traces)
    finally:
        builder.close()
        runner.close()
    errors = {trace_key(r.trace): r.error for r in results}
    assert errors[keys[0]].startswith("build: builder crashed (signal 6, SIGABRT)")
    assert errors[keys[1]].startswith("run: runner crashed (signal 6, SIGABRT)")
    assert errors[keys[2]].startswith("run: runner timed out after 15 s")
    assert errors[keys[3]].startswith("build: builder timed out after 20 s")
    assert errors[keys[4]] is None  # the search goes on after each failure

    # A candidate whose result differs from the reference run is recorded as failed.
    data = dict(np.load(runner.reference_path(workload)))
    data["output0"] = data["output0"] + 1.0
    np.savez(runner.reference_path(workload), **data)
    builder, runner = LocalBuilder(tmp_path, target), LocalRunner(tmp_path, target)
    monkeypatch.delenv("MLCIR_TUNE_FAULTS")
    try:
        coordinator = BuildRunCoordinator(builder, runner)
        coordinator.prepare(workload, module)
        (result,) = coordinator.build_and_run(workload, traces[4:])
    finally:
        builder.close()
        runner.close()
    assert result.error.startswith("run: wrong result: output 0 differs from the reference")


def test_task_extraction_deduplicates_identical_kernels():
    # After fusion (mlcir-kernels): relu(x) and the first add+relu have two users each, so
    # their groups end there; the two add+relu groups are identical: one primitive function
    # called twice.
    text = """
    func.func @main(%x: tensor<4x8xf32>, %y: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
      %0 = "graph.relu"(%x) : (tensor<4x8xf32>) -> tensor<4x8xf32>
      %1 = "graph.add"(%0, %y) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
      %2 = "graph.relu"(%1) : (tensor<4x8xf32>) -> tensor<4x8xf32>
      %3 = "graph.add"(%0, %2) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
      %4 = "graph.relu"(%3) : (tensor<4x8xf32>) -> tensor<4x8xf32>
      return %2, %4 : tensor<4x8xf32>, tensor<4x8xf32>
    }"""
    ctx = mlcir.make_context()
    with ctx:
        tasks = extract_tasks(mlcir.parse(text))
    by_name = {t.name: t for t in tasks}
    assert sorted(by_name) == ["fused_add_relu", "relu"]
    assert by_name["fused_add_relu"].weight == 2 and by_name["relu"].weight == 1
    assert by_name["fused_add_relu"].flops == 64  # two blocks of 32 elements


def test_tuned_mlp_matches_numpy(tmp_path):
    params = mlp.random_params(0)
    module = mlp.build_module("compiled")
    with module.context:
        bind_params(module, params)
    db = tune_module(module, target="llvm -threads=1", work_dir=tmp_path, max_trials_global=8,
                     num_trials_per_iter=2, strategy="random", verbose=0)
    assert len(db.records()) == 8
    ex = mlcir.build(module, target="llvm -threads=1", records=db)
    x = np.random.default_rng(1).standard_normal((1, 784)).astype(np.float32)
    ref = mlp.reference(x, params)
    np.testing.assert_allclose(ex.main(x), ref, rtol=1e-4, atol=1e-4 * np.abs(ref).max())
    # records from another target are not applied
    from mlcir.driver import staged_module

    for target, applied in (("llvm -threads=2", False), ("llvm -threads=1", True)):
        staged = staged_module(module, target, records=db, schedule="none", until="scheduled")
        assert bool(staged.schedule_sources) == applied


def test_cost_model_ranks_better_than_chance():
    # A synthetic but realistic signal: time grows with the distance of two features from
    # their best values; the model sees 60 samples and ranks 40 held-out ones.
    rng = np.random.default_rng(0)
    x = rng.uniform(0, 8, size=(100, 12))
    secs = 1e-3 * (1 + (x[:, 0] - 5) ** 2 + 0.5 * (x[:, 3] - 2) ** 2) * rng.uniform(0.95, 1.05, 100)
    model = XGBModel(seed=0)
    model.update("w", x[:60].tolist(), secs[:60].tolist())
    quality = ranking_quality(model.predict(x[60:].tolist()), secs[60:], k=5)
    assert quality["spearman"] > 0.7 and quality["top_k_recall"] >= 0.4


def _tuner(weight: int, history: list[float], done: bool = False):
    from types import SimpleNamespace

    return SimpleNamespace(task=SimpleNamespace(weight=weight), history=history, done=done)


def test_gradient_scheduler_spends_trials_where_the_weighted_gain_is_largest():
    from mlcir.tune.task_scheduler import GradientScheduler

    pick = GradientScheduler().pick
    converged = _tuner(1, [6000e-6, 900e-6] + [345e-6] * 17)  # 19 rounds, flat for long
    fresh = _tuner(1, [190e-6])                               # one round so far
    assert pick([converged, fresh]) is fresh
    # ...until the fresh task has had its rounds and stopped improving too
    assert pick([converged, _tuner(1, [190e-6, 60e-6, 20e-6] + [20e-6] * 16)]) is converged
    # the weight (calls per model run) scales the gain
    assert pick([_tuner(1, [100e-6]), _tuner(3, [50e-6])]).task.weight == 3
    # at the same latency and rounds, a task still dropping beats a flat one
    dropping = _tuner(1, [2000e-6, 1500e-6, 1000e-6, 700e-6, 500e-6, 400e-6])
    assert pick([_tuner(1, [400e-6] * 6), dropping]) is dropping
    # every task gets a first round; a task whose every candidate failed waits; done is skipped
    first = _tuner(1, [])
    assert pick([converged, first]) is first
    failed = _tuner(1, [math.inf, math.inf])
    assert pick([failed, converged]) is converged
    assert pick([_tuner(1, [1e-3], done=True), converged]) is converged


class WorkRunner:
    """'Time' = elements / a speed that grows with every candidate run per task."""

    cores = 0

    def __init__(self):
        self.count: dict[str, int] = {}
        self.elements: dict[str, int] = {}

    def prepare(self, workload, kernel):
        shape = ir.RankedTensorType(next(iter(kernel.body.operations)).arguments[0].type).shape
        self.elements[workload] = math.prod(shape)

    def run_candidate(self, workload, _trace, _build):
        n = self.count[workload] = self.count.get(workload, 0) + 1
        return RunResult([self.elements[workload] * 1e-9 / n])

    def close(self):
        pass


def tile_everything(sch: Schedule) -> None:
    """A space with enough distinct candidates for every relu task below."""
    for loop in sch.get_loops(sch.get_block("relu")):
        sch.split(loop, sch.sample_perfect_tile(loop, n=3, max_innermost_factor=256))


def _relu_model(*shapes: tuple[int, int]) -> ir.Module:
    types = [f"tensor<{m}x{n}xf32>" for m, n in shapes]
    args = ", ".join(f"%x{i}: {t}" for i, t in enumerate(types))
    body = "\n".join(f'%r{i} = "graph.relu"(%x{i}) : ({t}) -> {t}' for i, t in enumerate(types))
    text = (f"func.func @main({args}) -> ({', '.join(types)}) {{\n{body}\n"
            f"return {', '.join(f'%r{i}' for i in range(len(types)))} : {', '.join(types)}\n}}")
    ctx = mlcir.make_context()
    with ctx:
        return mlcir.parse(text)


def _trials(db) -> dict[str, int]:
    return {w.name: len(db.records(h, "llvm")) for h, w in db.workloads.items()}


def test_tune_module_gives_a_slow_task_more_rounds(tmp_path):
    """Two tasks, one 256x the work of the other: the gradient scheduler gives the big one more
    trials than round-robin would (12 and 12); both get their first round."""
    db = tune_module(_relu_model((256, 256), (16, 16)), target="llvm", work_dir=tmp_path,
                     max_trials_global=24, num_trials_per_iter=2, space=tile_everything,
                     strategy="random", cost_model="random", builder=NothingBuilt(),
                     runner=WorkRunner(), verbose=0)
    trials = _trials(db)
    assert sum(trials.values()) == 24
    assert trials["relu"] > 3 * trials["relu_1"] >= 6, trials


def test_a_small_budget_still_reaches_every_task(tmp_path):
    """Fewer trials than tasks x trials per round: first rounds shrink so every task gets one."""
    db = tune_module(_relu_model((64, 64), (32, 32), (16, 16), (8, 8)), target="llvm",
                     work_dir=tmp_path, max_trials_global=10, num_trials_per_iter=8,
                     space=tile_everything, strategy="random", cost_model="random",
                     builder=NothingBuilt(), runner=WorkRunner(), verbose=0)
    trials = _trials(db)
    assert sum(trials.values()) == 10 and len(trials) == 4 and min(trials.values()) >= 2, trials


def test_task_kernels_are_measured_without_copies_of_their_output():
    """A model's kernels are destination-passing; as tuning workloads the destinations become
    tensor.empty, so a measurement times the kernel, not a copy of its output in and out."""
    from mlcir.ir import clone_module
    from mlcir.passes import run_pipeline

    text = MATMUL_RELU
    ctx = mlcir.make_context()
    with ctx:
        (task,) = extract_tasks(mlcir.parse(text))
        fn = next(iter(task.module.body.operations))
        assert [str(t) for t in ir.FunctionType(fn.attributes["function_type"].value).inputs] \
            == ["tensor<4x8xf32>", "tensor<8x16xf32>"]
        lowered = clone_module(task.module)
        run_pipeline(lowered, "mlcir-cpu-bufferize")
        assert "memref.copy" not in str(lowered)


class FreshSamples:
    """A user's search strategy: fresh samples of the space, in the order drawn."""

    def __init__(self):
        self.calls = 0

    def generate(self, cx, count):
        self.calls += 1
        out: dict[str, object] = {}
        for _ in range(count * 20):
            sch = Schedule(cx.kernel, seed=cx.rng.randrange(1 << 30))
            cx.space(sch)
            cand = cx.candidate(sch)
            if cand.key not in cx.measured:
                out.setdefault(cand.key, cand)
            if len(out) == count:
                break
        return list(out.values())


class LoopCount:
    """A user's feature extractor: the number of scheduling instructions."""

    def __init__(self):
        self.calls = 0

    def extract(self, sch):
        self.calls += 1
        return [float(len(sch.trace.insts))]


class RememberingModel:
    """A user's cost model: remembers what it was told, predicts nothing."""

    def __init__(self):
        self.seconds: list[float] = []

    def update(self, _workload, features, seconds):
        assert all(len(f) == 1 for f in features)  # the user's features reach the model
        self.seconds += list(seconds)

    def predict(self, features):
        return np.zeros(len(features))


class MemoryDatabase:
    """A user's database: records in a list."""

    def __init__(self):
        self.workloads: dict[str, mlcir.tune.Workload] = {}
        self.committed: list[Record] = []

    def commit_workload(self, module, name=""):
        from mlcir.tune.database import canonical_text

        h = workload_hash(module)
        return self.workloads.setdefault(h, mlcir.tune.Workload(h, name, canonical_text(module)))

    def commit_record(self, rec):
        self.committed.append(rec)

    def records(self, workload=None, target=None):
        return [r for r in self.committed if workload in (None, r.workload)
                and target in (None, r.target)]

    def best(self, workload, target, k=1):
        return sorted((r for r in self.records(workload, target) if r.ok),
                      key=lambda r: r.mean_secs)[:k]


class CheckingRunner:
    """A user's runner around the local one: checks each library exists before it runs."""

    def __init__(self, local: LocalRunner):
        self.local = local
        self.cores = local.cores
        self.runs = 0

    def prepare(self, workload, kernel):
        self.local.prepare(workload, kernel)

    def run_candidate(self, workload, trace, build):
        from pathlib import Path

        assert Path(build.artifact).is_file()
        self.runs += 1
        return self.local.run_candidate(workload, trace, build)

    def close(self):
        self.local.close()


def test_user_written_roles_are_called_and_their_record_applies(tmp_path):
    """Every role is swappable: a strategy, feature extractor, cost model, database and runner
    written here tune a model's kernel; the record applies and computes the right numbers."""
    from mlcir.driver import staged_module

    text = MATMUL_RELU
    ctx = mlcir.make_context()
    with ctx:
        model = mlcir.parse(text)
    target = Target.parse("llvm -threads=1")
    strategy, extractor, cost_model = FreshSamples(), LoopCount(), RememberingModel()
    db, runner = MemoryDatabase(), CheckingRunner(LocalRunner(tmp_path, target))
    try:
        returned = tune_module(model, target=target, work_dir=tmp_path, max_trials_global=4,
                               num_trials_per_iter=2, strategy=strategy, cost_model=cost_model,
                               feature_extractor=extractor, database=db, runner=runner,
                               verbose=0)
    finally:
        runner.close()
    assert returned is db and len(db.committed) == 4 and all(r.ok for r in db.committed)
    assert strategy.calls == 2 and runner.runs == 4 and len(cost_model.seconds) == 4
    assert extractor.calls >= 4 and all(r.features == [float(len(r.trace["insts"]))]
                                        for r in db.committed)
    assert not (tmp_path / "database").exists()  # the user's database was the only one
    with model.context:
        staged = staged_module(model, target, records=db, schedule="none", until="scheduled")
        assert staged.schedule_sources == {"fused_matmul_relu": "record"}
    ex = mlcir.build(model, target=target, records=db)
    rng = np.random.default_rng(0)
    x, w = rng.standard_normal((4, 8), np.float32), rng.standard_normal((8, 16), np.float32)
    np.testing.assert_allclose(ex.main(x, w), np.maximum(x @ w, 0), rtol=1e-5, atol=1e-5)


def test_unknown_shorthands_name_the_choices(tmp_path, small_mm):
    module, _ = small_mm
    with pytest.raises(ValueError, match=r"unknown search strategy 'greedy' \(random, evolutionary\)"):
        tune_kernel(module, work_dir=tmp_path, strategy="greedy", verbose=0)
    with pytest.raises(ValueError, match=r"unknown task scheduler 'fifo'"):
        tune_module(module, work_dir=tmp_path, task_scheduler="fifo", verbose=0)


class Sleeper:
    """A builder and runner in one: each call sleeps a little and notes when it ran."""

    workers = 1

    def __init__(self, cores):
        self.cores = cores
        self.spans: list[tuple[str, float, float]] = []

    def prepare(self, workload, kernel):
        pass

    def _sleep(self, kind, trace):
        import time

        start = time.monotonic()
        time.sleep(0.05)
        self.spans.append((kind, start, time.monotonic()))
        return trace["n"]

    def build_candidate(self, _workload, trace):
        n = self._sleep("build", trace)
        return BuildResult(error="no" if n == 2 else None, build_secs=float(n))

    def run_candidate(self, _workload, trace, _build):
        return RunResult([float(self._sleep("run", trace))])

    def close(self):
        pass


@pytest.mark.parametrize("exclusive", [False, True])
def test_builds_and_runs_overlap_unless_a_run_needs_every_core(exclusive):
    import os

    roles = Sleeper(cores=(os.cpu_count() or 1) if exclusive else 0)
    traces = [{"n": n} for n in range(4)]
    seen = []
    results = BuildRunCoordinator(roles, roles).build_and_run("w", traces, seen.append)
    assert [r.trace for r in results] == traces and len(seen) == 4  # input order, each reported
    assert results[2].error == "build: no" and results[3].run_secs == [3.0]
    assert results[3].build_secs == 3.0 and results[3].error is None
    builds = [(a, b) for kind, a, b in roles.spans if kind == "build"]
    runs = [(a, b) for kind, a, b in roles.spans if kind == "run"]
    overlap = any(a < d and c < b for a, b in builds for c, d in runs)
    assert overlap != exclusive


def test_padded_and_transposed_task_kernels_take_no_destination_argument():
    """The destination of a kernel that writes a padded tensor (border strips and interior,
    each a slice of it: graph-pad-windows) and of a layout change (a transpose's init, a view
    of it) is a tensor.empty as a workload too: kept as a read-only argument, it was copied in
    before the kernel ran and its measurement timed that copy."""
    from mlcir.frontend import from_onnx
    from mlcir.ir import clone_module
    from mlcir.passes import run_pipeline
    from mlcir.testing import onnx_models as om

    model = om.depthwise_conv(32, 14, seed=3)
    tasks = {t.name: t for t in extract_tasks(from_onnx(model))}
    assert sorted(tasks) == ["conv2d_nchwc", "fused_layout_transform_pad_window",
                             "layout_transform"]
    for name, task in tasks.items():
        fn = next(iter(task.module.body.operations))
        inputs = [str(t) for t in ir.FunctionType(fn.attributes["function_type"].value).inputs]
        assert len(inputs) == (2 if name == "conv2d_nchwc" else 1), (name, inputs)
    lowered = clone_module(tasks["fused_layout_transform_pad_window"].module)
    run_pipeline(lowered, "mlcir-cpu-bufferize")
    assert "copy" not in str(lowered)


def test_an_integer_modulo_is_tuned_without_dividing_by_zero(tmp_path):
    """The reference run happens in the tuner's process: random integer inputs with zeros
    made an int32 Mod divide by zero, a SIGFPE that killed it (fuzz seed 7 case 1752)."""
    import onnx
    from onnx import TensorProto, helper

    from mlcir.frontend import from_onnx

    vi = [helper.make_tensor_value_info(n, TensorProto.INT32, [4, 16]) for n in ("a", "b", "y")]
    graph = helper.make_graph([helper.make_node("Mod", ["a", "b"], ["y"])], "mod", vi[:2], vi[2:])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    db = mlcir.tune.tune_module(from_onnx(model), work_dir=tmp_path, max_trials_global=1,
                                verbose=0)
    a = np.arange(1, 65, dtype=np.int32).reshape(4, 16)
    b = np.full((4, 16), 7, np.int32)
    np.testing.assert_array_equal(mlcir.build(from_onnx(model), records=db).main(a, b), a % b)
    onnx.checker.check_model(model)
