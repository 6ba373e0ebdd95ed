"""Tuning runs as data: ``mlcir report`` / ``mlcir.tune.report`` (CSV columns and rows, plots,
the page), the run manifest ``run.json``, and seeded random search proposing the same traces."""

from __future__ import annotations

import csv
import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from mlir import ir

import mlcir
from mlcir.schedule import Schedule
from mlcir.testing.fake_tuning import NothingBuilt
from mlcir.tune import Database, RunResult, tune_module
from mlcir.tune.report import TRIAL_COLUMNS, load_run

MLCIR = Path(sys.executable).with_name("mlcir")


def _relu_model(*shapes: tuple[int, int]) -> ir.Module:
    types = [f"tensor<{m}x{n}xf32>" for m, n in shapes]
    args = ", ".join(f"%x{i}: {t}" for i, t in enumerate(types))
    body = "\n".join(f'%r{i} = "graph.relu"(%x{i}) : ({t}) -> {t}' for i, t in enumerate(types))
    text = (f"func.func @main({args}) -> ({', '.join(types)}) {{\n{body}\n"
            f"return {', '.join(f'%r{i}' for i in range(len(types)))} : {', '.join(types)}\n}}")
    with mlcir.make_context():
        return mlcir.parse(text)


def tile_everything(sch: Schedule) -> None:
    for loop in sch.get_loops(sch.get_block("relu")):
        sch.split(loop, sch.sample_perfect_tile(loop, n=3, max_innermost_factor=256))


class TileRunner:
    """'Time' = a known function of the candidate's decisions (the `scale` of each workload
    changes which task the gradient scheduler favours); every 7th candidate fails."""

    cores = 0

    def __init__(self, scale: dict[int, float] | None = None):
        self.scale = scale or {}
        self.elements: dict[str, int] = {}
        self.count = 0

    def prepare(self, workload, kernel):
        shape = ir.RankedTensorType(next(iter(kernel.body.operations)).arguments[0].type).shape
        self.elements[workload] = math.prod(shape)

    def run_candidate(self, workload, trace, _build):
        self.count += 1
        if self.count % 7 == 0:
            return RunResult(error="run: wrong result: made up by the test")
        inner = [d[-1] for _, d in trace["decisions"]]
        elements = self.elements[workload]
        return RunResult([elements * self.scale.get(elements, 1.0) * 1e-9
                          * (1 + abs(math.log2(inner[-1]) - 3))])

    def close(self):
        pass


def _tune(work_dir: Path, strategy: str = "random", cost_model: str = "xgb", seed: int = 0,
          runner: TileRunner | None = None, trials: int = 20):
    return tune_module(_relu_model((64, 64), (16, 16)), target="llvm", work_dir=work_dir,
                       max_trials_global=trials, num_trials_per_iter=4, space=tile_everything,
                       strategy=strategy, cost_model=cost_model, seed=seed,
                       builder=NothingBuilt(), runner=runner or TileRunner(), verbose=0)


def _rows(path: Path) -> list[dict[str, str]]:
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("runs")
    _tune(root / "random", "random", "random", seed=1)
    _tune(root / "evolutionary", "evolutionary", "xgb", seed=2)
    return root / "random", root / "evolutionary"


def test_trials_csv_has_a_row_per_measured_candidate_in_proposal_order(tmp_path, two_runs):
    page = mlcir.tune.report(list(two_runs), tmp_path / "out")
    assert page == tmp_path / "out" / "index.html"
    with open(tmp_path / "out" / "trials.csv", newline="") as f:
        assert next(csv.reader(f)) == TRIAL_COLUMNS
    rows = _rows(tmp_path / "out" / "trials.csv")
    assert len(rows) == 40
    assert {r["run"] for r in rows} == {"random, random, seed 1", "evolutionary, xgb, seed 2"}
    for label, strategy in [("random, random, seed 1", "random"),
                            ("evolutionary, xgb, seed 2", "evolutionary")]:
        run = [r for r in rows if r["run"] == label]
        assert len(run) == 20 and {r["strategy"] for r in run} == {strategy}
        assert {r["task"] for r in run} == {"relu", "relu_1"}
        for task in ("relu", "relu_1"):
            mine = [r for r in run if r["task"] == task]
            # the trial index within the task counts up in proposal order, rounds likewise
            assert [int(r["trial"]) for r in mine] == list(range(len(mine)))
            assert [int(r["round"]) for r in mine] == sorted(int(r["round"]) for r in mine)
            best = [float(r["best_so_far_s"]) for r in mine if r["best_so_far_s"]]
            assert best == sorted(best, reverse=True)
        failed = [r for r in run if r["error"]]
        assert failed and all(not r["latency_s"] and "wrong result" in r["error"] for r in failed)
        for r in run:
            trace = json.loads(r["trace"])
            assert [d for _, _, d in json.loads(r["decisions"])] == \
                [d for _, d in trace["decisions"]]
            assert r["target"] == "llvm" and r["weight"] == "1" and float(r["timestamp"]) > 0
            assert float(r["elapsed_s"]) >= 0 and r["predicted_score"] != ""
    # the xgb model, trained after 8 measurements, predicts latencies for later rounds
    evo = [r for r in rows if r["run"] == "evolutionary, xgb, seed 2"]
    assert sum(1 for r in evo if r["predicted_latency_s"]) >= 4
    model = [float(r["model_latency_so_far_s"]) for r in evo if r["model_latency_so_far_s"]]
    assert model and model == sorted(model, reverse=True)
    features = _rows(tmp_path / "out" / "features.csv")
    assert len(features) == 40
    assert len(features[0]) == 4 + 111 and features[0]["f0"]


def _check_png(path: Path) -> None:
    from matplotlib.image import imread

    assert path.stat().st_size > 5000, path
    pixels = imread(path)
    assert pixels.ndim == 3 and pixels.shape[0] > 100 and pixels.shape[1] > 100
    colours = np.unique(pixels.reshape(-1, pixels.shape[2]), axis=0)
    assert len(colours) > 20, f"{path}: a nearly blank image"
    assert pixels[..., :3].std() > 0.02


def test_plots_and_page_are_written(tmp_path, two_runs):
    mlcir.tune.report(list(two_runs), tmp_path)
    for name in ("curve_trials.png", "curve_time.png", "predicted_vs_measured.png"):
        _check_png(tmp_path / name)
    page = (tmp_path / "index.html").read_text()
    for name in ("curve_trials.png", "curve_time.png", "predicted_vs_measured.png",
                 "trials.csv", "evolutionary, xgb, seed 2"):
        assert name in page


def test_run_json_records_what_repeats_the_run(two_runs):
    data = json.loads((two_runs[1] / "run.json").read_text())
    (run,) = data["runs"]
    assert run["seed"] == 2 and run["target"] == "llvm"
    assert run["roles"]["strategy"] == {"name": "evolutionary"}
    assert run["roles"]["cost_model"] == {"name": "xgb"}
    assert run["roles"]["space"]["name"] == "tile_everything"
    assert run["budget"] == {"max_trials_global": 20, "max_trials_per_task": 20,
                             "num_trials_per_iter": 4, "builders": 1}
    assert [(t["name"], t["seed"], t["weight"]) for t in run["tasks"]] == \
        [("relu", 2, 1), ("relu_1", 3, 1)]
    assert run["versions"]["mlcir"] == mlcir.__version__
    assert {"numpy", "xtc-mlir-python-bindings", "python"} <= set(run["versions"])
    assert run["machine"]["cpu_count"] >= 1 and run["command_line"]
    if Path("/proc/cpuinfo").exists():
        assert run["machine"]["cpu_model"] and run["machine"]["cpu_flags"]


def _proposals(work_dir: Path) -> dict[str, list[str]]:
    """Each task's traces in proposal order."""
    out: dict[str, list[str]] = {}
    for t in load_run(work_dir).trials:
        out.setdefault(t.task, []).append(json.dumps(t.record.trace, sort_keys=True))
    return out


def test_seeded_random_search_proposes_the_same_traces_per_task(tmp_path):
    """Different measured times make the task scheduler interleave the tasks differently; each
    task's sequence of proposed traces stays the same."""
    _tune(tmp_path / "a", seed=5, runner=TileRunner())
    _tune(tmp_path / "b", seed=5, runner=TileRunner({64 * 64: 1 / 64, 16 * 16: 64.0}))
    a, b = _proposals(tmp_path / "a"), _proposals(tmp_path / "b")
    assert [len(x) for x in a.values()] != [len(x) for x in b.values()]  # interleaved otherwise
    for task in a:
        n = min(len(a[task]), len(b[task]))
        assert n >= 4 and a[task][:n] == b[task][:n]
    _tune(tmp_path / "c", seed=6, runner=TileRunner())
    assert _proposals(tmp_path / "c")["relu"] != a["relu"]


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(MLCIR), *map(str, args)], capture_output=True, text=True,
                          timeout=300)


def test_cli_report_skips_a_corrupt_line_and_says_where(tmp_path, two_runs):
    work = tmp_path / "work"
    (work / "database").mkdir(parents=True)
    for name in ("workloads.json", "records.json"):
        (work / "database" / name).write_text((two_runs[0] / "database" / name).read_text())
    (work / "run.json").write_text((two_runs[0] / "run.json").read_text())
    records = work / "database" / "records.json"
    lines = records.read_text().splitlines(keepends=True)
    lines[3] = lines[3][:40] + "\n"
    records.write_text("".join(lines))
    result = _cli("report", work, "-o", tmp_path / "out")
    assert result.returncode == 0, result.stderr
    assert f"mlcir: warning: {records}:4: skipped a corrupt or truncated line" in result.stderr
    assert len(_rows(tmp_path / "out" / "trials.csv")) == 19
    assert (tmp_path / "out" / "index.html").exists()
    with pytest.warns(RuntimeWarning, match="records.json:4: skipped"):
        assert len(Database(work).problems) == 1


def test_cli_report_on_a_missing_dir_is_an_error(tmp_path):
    result = _cli("report", tmp_path / "missing", "-o", tmp_path / "out")
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert result.stderr.startswith(f"mlcir: error: {tmp_path / 'missing'}: no such directory")
    (tmp_path / "empty").mkdir()
    result = _cli("report", tmp_path / "empty", "-o", tmp_path / "out")
    assert result.returncode == 1
    assert "not a tuning work dir (no database/records.json)" in result.stderr


def test_plots_without_matplotlib_name_the_extra(tmp_path, two_runs, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)  # import fails
    with pytest.raises(mlcir.MlcirError, match=r"pip install 'mlcir\[report\]'"):
        mlcir.tune.report(two_runs[0], tmp_path)
    assert len(_rows(tmp_path / "trials.csv")) == 20  # the tables are written first


def test_a_resumed_run_continues_the_trial_and_round_numbers(tmp_path):
    _tune(tmp_path, seed=3, trials=10)
    _tune(tmp_path, seed=3, trials=20)
    assert len(json.loads((tmp_path / "run.json").read_text())["runs"]) == 2
    run = load_run(tmp_path)
    for task in run.tasks:
        mine = [t for t in run.trials if t.task == task]
        assert [t.trial for t in mine] == list(range(len(mine)))
        rounds = [t.round for t in mine]
        assert rounds == sorted(rounds) and len(set(rounds)) >= 2
