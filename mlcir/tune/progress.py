"""Feedback while tuning: a live progress line, the course's task table, a log in
``work_dir``.

``verbose=0`` is quiet (the log is still written); 1 prints a live line on a terminal (a line
per round in a pipe) and the task table at the end; 2 also prints the table after every round
and every measured candidate.
"""

from __future__ import annotations

import logging
import math
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO


@dataclass
class TaskRow:
    name: str
    flops: float
    weight: int
    trials: int = 0
    best_secs: float = math.inf
    done: bool = False

    @property
    def gflops(self) -> float:
        return self.flops / self.best_secs / 1e9 if math.isfinite(self.best_secs) else 0.0


def format_table(rows: list[TaskRow]) -> str:
    """MetaSchedule's task table (ID, name, FLOP, weight, speed, latency, weighted latency,
    trials, done) with a total line."""
    header = (f"{'ID':>3} | {'Name':<24} | {'FLOP':>12} | {'Weight':>6} | {'Speed (GFLOPS)':>14} | "
              f"{'Latency (us)':>12} | {'Weighted Latency (us)':>21} | {'Trials':>6} | Done")
    lines = [header, "-" * len(header)]
    total = 0.0
    for i, r in enumerate(rows):
        lat = r.best_secs * 1e6
        weighted = lat * r.weight
        if math.isfinite(weighted):
            total += weighted
        lat_s = f"{lat:12.2f}" if math.isfinite(lat) else f"{'N/A':>12}"
        w_s = f"{weighted:21.2f}" if math.isfinite(weighted) else f"{'N/A':>21}"
        lines.append(f"{i:>3} | {r.name[:24]:<24} | {r.flops:>12.0f} | {r.weight:>6} | "
                     f"{r.gflops:>14.2f} | {lat_s} | {w_s} | {r.trials:>6} | {'Y' if r.done else ''}")
    lines.append("-" * len(header))
    trials = sum(r.trials for r in rows)
    lines.append(f"Total trials: {trials}; total weighted latency: {total:.2f} us")
    return "\n".join(lines)


def _clock(seconds: float) -> str:
    seconds = int(max(seconds, 0))
    return f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}" if seconds >= 3600 \
        else f"{seconds // 60:02d}:{seconds % 60:02d}"


def model_latency(rows: list[TaskRow], default: list[float]) -> tuple[float, float]:
    """The whole model's estimated latency (sum of weight x best latency of every task) and
    that of the default schedules, over the tasks measured both ways (else inf)."""
    pairs = [(r.weight * r.best_secs, r.weight * d) for r, d in zip(rows, default)
             if math.isfinite(r.best_secs) and math.isfinite(d)]
    if not pairs or len(pairs) < len(rows):
        return math.inf, math.inf
    return sum(b for b, _ in pairs), sum(d for _, d in pairs)


@dataclass
class Progress:
    """What a tuning run prints, as tvmc and tqdm do. On a terminal: one live line (trials
    done of the budget, elapsed, rate, ETA, the best whole-model latency so far and its gain
    over the default schedules), the task table at the end (every round with ``verbose`` 2,
    and every ``TABLE_EVERY_S`` on a long run). In a pipe or a log file: one line per round,
    the table at the end. Everything goes to ``work_dir/logs/tune.log`` too."""

    work_dir: Path
    total: int
    verbose: int = 1
    stream: TextIO = field(default_factory=lambda: sys.stderr)
    done: int = 0
    started: float = field(default_factory=time.perf_counter)
    TABLE_EVERY_S = 300.0

    def __post_init__(self) -> None:
        logs = Path(self.work_dir) / "logs"
        logs.mkdir(parents=True, exist_ok=True)
        self.logger = logging.getLogger(f"mlcir.tune.{id(self)}")
        self.logger.setLevel(logging.INFO)
        self.logger.propagate = False
        handler = logging.FileHandler(logs / "tune.log")
        handler.setFormatter(logging.Formatter("%(asctime)s %(message)s"))
        self.logger.addHandler(handler)
        self._handler = handler
        self._first_done: int | None = None
        self._model = (math.inf, math.inf)  # best and default whole-model latency
        self._table_at = time.perf_counter()
        self._rounds = 0

    def log(self, message: str, level: int = 1) -> None:
        self.logger.info(message)
        if self.verbose >= level:
            self._clear_bar()
            print(message, file=self.stream, flush=True)

    def _status(self) -> str:
        elapsed = time.perf_counter() - self.started
        first = self._first_done if self._first_done is not None else self.done
        new = self.done - first
        rate = new / elapsed if elapsed > 0 else 0.0
        eta = (self.total - self.done) / rate if rate > 0 else math.inf
        text = (f"{self.done}/{self.total} trials, {_clock(elapsed)} elapsed, {rate:.1f}/s, "
                f"ETA {_clock(eta) if math.isfinite(eta) else '--:--'}")
        best, default = self._model
        if math.isfinite(best):
            text += f", model {best * 1e6:.1f} us ({default / best:.2f}x the default)"
        return text

    def step(self, n: int = 1, note: str = "") -> None:
        """One more trial: redraw the live line on a terminal."""
        if self._first_done is None:
            self._first_done = self.done
        self.done += n
        if self.verbose >= 1 and self._tty:
            width = 20
            filled = int(width * min(self.done, self.total) / max(self.total, 1))
            self.stream.write(f"\r[{'#' * filled}{'.' * (width - filled)}] {self._status()} "
                              f"{note[:30]:<30}")
            self.stream.flush()

    def round_done(self, task: str, rows: list[TaskRow], default: list[float]) -> None:
        """After a round of ``task``: a line in a pipe, the live line's figures on a terminal,
        the table every round with ``verbose`` 2 (or every few minutes)."""
        self._rounds += 1
        self._model = model_latency(rows, default)
        line = f"round {self._rounds} ({task}): {self._status()}"
        self.logger.info(line)
        if self.verbose >= 2 or (self._tty and self.verbose >= 1 and
                                 time.perf_counter() - self._table_at > self.TABLE_EVERY_S):
            self._table_at = time.perf_counter()
            self.log("\n" + format_table(rows))
        elif self.verbose >= 1 and not self._tty:
            print(line, file=self.stream, flush=True)

    @property
    def _tty(self) -> bool:
        return hasattr(self.stream, "isatty") and self.stream.isatty()

    def _clear_bar(self) -> None:
        if self.verbose >= 1 and self.done and self._tty:
            self.stream.write("\r" + " " * 140 + "\r")

    def table(self, rows: list[TaskRow]) -> None:
        self.log("\n" + format_table(rows))

    def close(self) -> None:
        self._clear_bar()
        self.logger.removeHandler(self._handler)
        self._handler.close()
