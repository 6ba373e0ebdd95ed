"""What tuning prints (docs/tuning.md, "Reading the progress"): in a pipe or a log, a header
line, one line per round and the task table once at the end; on a terminal, one live line
(``\\r``) with the ETA and the whole-model latency against the default schedules; the table
every round only with ``verbose=2`` / ``mlcir tune --verbose``."""

from __future__ import annotations

import io
import math

import onnx

from mlcir.frontend import from_onnx
from mlcir.testing import onnx_models as om
from mlcir.tune import tune_module
from mlcir.tune.progress import Progress, TaskRow, format_table, model_latency

from test_cli import run_cli


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def _rows() -> list[TaskRow]:
    return [TaskRow("a", 1e6, 2, trials=4, best_secs=1e-5), TaskRow("b", 2e6, 1, trials=4,
                                                                    best_secs=3e-5)]


def test_model_latency_weights_tasks_and_compares_with_the_default():
    best, default = model_latency(_rows(), [2e-5, 3e-5])
    assert math.isclose(best, 2 * 1e-5 + 3e-5) and math.isclose(default, 2 * 2e-5 + 3e-5)
    assert model_latency(_rows(), [2e-5, math.inf]) == (math.inf, math.inf)


def test_terminal_shows_one_live_line_and_no_table_per_round(tmp_path):
    term = Terminal()
    progress = Progress(tmp_path, total=8, stream=term)
    for _ in range(4):
        progress.step(1, "a: 0.01 ms")
    progress.round_done("a", _rows(), [2e-5, 6e-5])
    progress.step(1)
    text = term.getvalue()
    assert "\n" not in text and text.count("\r") == 5
    assert "5/8 trials" in text and "ETA" in text
    assert "model 50.0 us (2.00x the default)" in text
    assert "Weighted Latency" not in text  # the table waits for the end
    progress.table(_rows())
    progress.close()
    assert "Weighted Latency" in term.getvalue()


def test_a_pipe_gets_a_line_per_round(tmp_path):
    out = io.StringIO()
    progress = Progress(tmp_path, total=8, stream=out)
    for i in range(2):
        progress.step(4)
        progress.round_done("ab"[i], _rows(), [2e-5, 3e-5])
    lines = out.getvalue().splitlines()
    assert [line.split(":")[0] for line in lines] == ["round 1 (a)", "round 2 (b)"]
    assert "\r" not in out.getvalue()
    progress.close()
    log = (tmp_path / "logs" / "tune.log").read_text()
    assert "round 2 (b)" in log


def test_tune_module_output_in_a_pipe_is_short(tmp_path, capsys):
    """A non-terminal run: the header, one line per round, the table once."""
    module = from_onnx(om.mlp())
    tune_module(module, target="llvm -threads=1", work_dir=tmp_path, max_trials_global=8,
                num_trials_per_iter=2, cost_model="random", verbose=1)
    lines = capsys.readouterr().err.splitlines()
    rounds = [line for line in lines if line.startswith("round ")]
    tasks = len([line for line in lines if line.startswith(("  0 |", "  1 |", "  2 |"))])
    table = len(format_table([TaskRow("x", 1, 1)] * tasks).splitlines())
    assert len(rounds) >= 4
    assert lines[0].startswith("tuning ")
    assert len(lines) == 1 + len(rounds) + 1 + table  # header, rounds, blank + table
    assert sum("Weighted Latency" in line for line in lines) == 1
    assert "x the default" in rounds[-1]


def test_cli_tune_verbose_prints_the_table_every_round(tmp_path):
    onnx.save(om.mlp(), tmp_path / "mlp.onnx")
    quiet = run_cli("tune", tmp_path / "mlp.onnx", "--trials", 4, "--trials-per-round", 2,
                    "--cost-model", "random", "-o", tmp_path / "a.json",
                    "--work-dir", tmp_path / "a")
    loud = run_cli("tune", tmp_path / "mlp.onnx", "--trials", 4, "--trials-per-round", 2,
                   "--cost-model", "random", "-o", tmp_path / "b.json",
                   "--work-dir", tmp_path / "b", "--verbose")
    assert quiet.stderr.count("Weighted Latency") == 1
    assert loud.stderr.count("Weighted Latency") >= 3
