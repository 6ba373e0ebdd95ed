"""Feedback while tuning: a progress bar, the course's task table, and a log in ``work_dir``.

``verbose=0`` is quiet (the log is still written), 1 prints the table after each round and a
progress bar, 2 also prints every measured candidate.
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


@dataclass
class Progress:
    work_dir: Path
    total: int
    verbose: int = 1
    stream: TextIO = field(default_factory=lambda: sys.stderr)
    done: int = 0
    started: float = field(default_factory=time.perf_counter)

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

    def log(self, message: str, level: int = 1) -> None:
        self.logger.info(message)
        if self.verbose >= level:
            self._clear_bar()
            print(message, file=self.stream, flush=True)

    def step(self, n: int = 1, note: str = "") -> None:
        """One more trial: redraw the bar on a terminal, else a line every 25%."""
        before, self.done = self.done, self.done + n
        if self.verbose < 1:
            return
        elapsed = time.perf_counter() - self.started
        rate = self.done / elapsed * 60 if elapsed > 0 else 0.0
        status = f"{self.done}/{self.total} trials, {elapsed:6.1f} s, {rate:5.1f}/min"
        if self._tty:
            width = 30
            filled = int(width * min(self.done, self.total) / max(self.total, 1))
            bar = "#" * filled + "." * (width - filled)
            self.stream.write(f"\r[{bar}] {status} {note[:40]:<40}")
            self.stream.flush()
        elif self.done * 4 // max(self.total, 1) > before * 4 // max(self.total, 1):
            print(f"progress: {status}", file=self.stream, flush=True)

    @property
    def _tty(self) -> bool:
        return hasattr(self.stream, "isatty") and self.stream.isatty()

    def _clear_bar(self) -> None:
        if self.verbose >= 1 and self.done and self._tty:
            self.stream.write("\r" + " " * 110 + "\r")

    def table(self, rows: list[TaskRow]) -> None:
        self.log("\n" + format_table(rows))

    def close(self) -> None:
        self._clear_bar()
        self.logger.removeHandler(self._handler)
        self._handler.close()
