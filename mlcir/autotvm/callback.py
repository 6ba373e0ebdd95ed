"""Callbacks of ``tuner.tune``: each is called as ``callback(tuner, inputs, results)`` after
every measured batch. :func:`log_to_file` appends the records (:mod:`.record`);
:func:`progress_bar` prints TVM's progress line.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any, Callable, TextIO

from .measure import MeasureInput, MeasureResult
from .record import encode

Callback = Callable[[Any, list[MeasureInput], list[MeasureResult]], None]


def log_to_file(file_out: str | Path | TextIO, protocol: str = "json") -> Callback:
    """Append each measured config to ``file_out`` (a path or an open file) as a JSON line,
    flushed at once, so an interrupted run keeps what it measured."""
    if protocol != "json":
        raise ValueError(f"log_to_file: protocol {protocol!r} is not supported (json)")

    def _callback(tuner: Any,  # noqa: ARG001 - the callback signature
                  inputs: list[MeasureInput], results: list[MeasureResult]) -> None:
        lines = "".join(encode(i, r) + "\n" for i, r in zip(inputs, results))
        if isinstance(file_out, (str, Path)):
            with open(file_out, "a") as f:
                f.write(lines)
        else:
            file_out.write(lines)
            file_out.flush()

    return _callback


def _si(value: float, prefix: str) -> float:
    scale = {"": 1.0, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}
    if prefix not in scale:
        raise ValueError(f"unknown SI prefix {prefix!r} ({', '.join(scale)})")
    return value / scale[prefix]


def progress_bar(total: int, prefix: str = "", si_prefix: str = "G",
                 stream: TextIO | None = None) -> Callback:
    """TVM's progress line (``Current/Best: <current>/<best> GFLOPS | Progress: (<done>/<total>)
    | <elapsed> s``), redrawn after every batch; a newline when the run ends (``total`` trials
    or stopped)."""
    _si(1.0, si_prefix)
    state = {"start": time.time(), "done": 0, "best": 0.0}

    def _callback(tuner: Any, inputs: list[MeasureInput], results: list[MeasureResult]) -> None:
        out = stream or sys.stdout
        state["done"] += len(results)
        current = 0.0
        for inp, res in zip(inputs, results):
            if res.ok:
                current = inp.task.flop / res.mean
                state["best"] = max(state["best"], current)
        out.write(f"\r{prefix}Current/Best: {_si(current, si_prefix):7.2f}/"
                  f"{_si(state['best'], si_prefix):7.2f} {si_prefix}FLOPS | Progress: "
                  f"({state['done']}/{total}) | {time.time() - state['start']:.2f} s")
        if state["done"] >= total or getattr(tuner, "stopped", False):
            out.write(" Done.\n")
        out.flush()

    return _callback
