"""Per-kernel profiles of one model call: where a model's time goes.

A profiling build (``mlcir.build(..., profile=True)``, ``mlcir compile --profile``) reads the
cycle counter around every call in the public functions (``mlcir-profile-hooks``); here a
function is called several times, the counters are read back after each call and turned
into seconds (the counter's rate measured against ``time.perf_counter`` over all the calls),
and the median time of each call site makes a :class:`Profile`: a table sorted by time
(kernel, its ONNX nodes, time, share of the call, GFLOP/s and % of peak, result shape, how it
was scheduled) and a Chrome/Perfetto trace. docs/cli.md#profiling.
"""

from __future__ import annotations

import ctypes
import json
import re
import statistics
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ACCESSOR = "__mlcir_profile_buffer_{}"
MIN_SECONDS = 0.05  # the calls of one profile last at least this long (the counter's rate)


@dataclass
class KernelTime:
    """One call site of the profiled function."""

    name: str                    # the kernel or library function called
    nodes: list[str]             # the ONNX nodes (locations) it computes
    seconds: float               # median over the calls
    share: float                 # of the whole call
    flops: float = 0.0           # operations per call (0: not a compute kernel)
    peak_gflops: float = 0.0
    shape: str = ""
    schedule: str = ""
    samples: list[float] = field(default_factory=list)

    @property
    def gflops(self) -> float:
        return self.flops / self.seconds / 1e9 if self.flops and self.seconds > 0 else 0.0


@dataclass
class Profile:
    """The profile of one function: its kernels and the host code between them."""

    function: str
    total_seconds: float          # median time of a whole call (compiled code)
    kernels: list[KernelTime]
    other_seconds: float          # host code: allocation, the calls themselves, layout glue
    calls: int
    starts: list[list[float]] = field(default_factory=list)  # per call: each kernel's start

    def rows(self) -> list[KernelTime]:
        """The call sites, slowest first."""
        return sorted(self.kernels, key=lambda k: -k.seconds)

    def table(self) -> str:
        lines = [f"profile of {self.function}: {self.total_seconds * 1e6:.1f} us per call "
                 f"(median of {self.calls} calls)",
                 f"{'kernel':<40} {'us':>9} {'share':>6} {'GFLOP/s':>8} {'peak':>5}  "
                 f"{'result':<18} {'schedule':<10} onnx nodes"]
        for k in self.rows():
            gflops = f"{k.gflops:8.1f}" if k.flops else f"{'':>8}"
            peak = f"{100 * k.gflops / k.peak_gflops:4.0f}%" if k.flops and k.peak_gflops \
                else f"{'':>5}"
            lines.append(f"{k.name[:40]:<40} {k.seconds * 1e6:9.1f} {100 * k.share:5.1f}% "
                         f"{gflops} {peak}  {k.shape[:18]:<18} {k.schedule[:10]:<10} "
                         f"{', '.join(k.nodes)[:60]}")
        lines.append(f"{'(host code between kernels)':<40} {self.other_seconds * 1e6:9.1f} "
                     f"{100 * self.other_seconds / max(self.total_seconds, 1e-12):5.1f}%")
        return "\n".join(lines)

    __str__ = table

    def chrome_trace(self) -> dict[str, Any]:
        """``traceEvents``: one complete event (``ph: X``) per kernel call, times in us."""
        events = []
        for call, starts in enumerate(self.starts):
            for k, start in zip(self.kernels, starts):
                duration = k.samples[call] if call < len(k.samples) else k.seconds
                events.append({"name": k.name, "ph": "X", "pid": 1, "tid": 1,
                               "ts": start * 1e6, "dur": duration * 1e6, "cat": "kernel",
                               "args": {"onnx_nodes": k.nodes, "schedule": k.schedule,
                                        "call": call}})
        return {"traceEvents": events, "displayTimeUnit": "ms"}

    def write_chrome_trace(self, path: str | Path) -> None:
        Path(path).write_text(json.dumps(self.chrome_trace()))


def buffer_address(engine: Any, function: str) -> int:
    """The address of ``function``'s counters in a JIT engine or a loaded shared library,
    from the accessor's packed wrapper (``void f(void **args)``, the result in ``args[0]``)."""
    symbol = ACCESSOR.format(function)
    if hasattr(engine, "raw_lookup"):
        address = engine.raw_lookup(symbol)  # the ExecutionEngine's packed wrapper
    else:
        lib = getattr(engine, "_lib", engine)
        try:
            address = ctypes.cast(getattr(lib, "_mlir_" + symbol), ctypes.c_void_p).value
        except AttributeError:
            address = 0
    if not address:
        raise ValueError(f"no profiling counters for '{function}' (not a profiling build)")
    result = ctypes.c_int64()
    args = (ctypes.c_void_p * 1)(ctypes.cast(ctypes.pointer(result), ctypes.c_void_p))
    ctypes.CFUNCTYPE(None, ctypes.c_void_p)(address)(args)
    return result.value


_NODE = re.compile(r'loc\("([^"]+)"')


def _nodes(location: str) -> list[str]:
    """The ONNX node names in a call's location (a fused group's several)."""
    return list(dict.fromkeys(n for n in _NODE.findall(location) if not n.startswith("/")))


def profile_calls(call: Any, function: str, engine: Any, sites: list[dict[str, Any]],
                  repeat: int = 10, peak_gflops: float = 0.0) -> Profile:
    """Call ``call()`` (the function ``function`` of a profiling build, its arguments bound)
    at least ``repeat`` times and ``MIN_SECONDS`` long, and profile it. ``sites`` is the
    profiling build's call table (callee, location, flops, shape, schedule)."""
    slots = 2 * (len(sites) + 1)
    counters = (ctypes.c_int64 * slots).from_address(buffer_address(engine, function))
    call()  # warm-up (first-touch of outputs, thread pools)
    readings = []
    begin = time.perf_counter()
    while len(readings) < repeat or time.perf_counter() - begin < MIN_SECONDS:
        call()
        readings.append(list(counters))
    elapsed = time.perf_counter() - begin
    span = readings[-1][1] - readings[0][0]
    rate = span / elapsed if span > 0 and elapsed > 0 else 1e9  # counter ticks per second
    totals = [(r[1] - r[0]) / rate for r in readings]
    kernels = []
    for i, site in enumerate(sites):
        samples = [(r[3 + 2 * i] - r[2 + 2 * i]) / rate for r in readings]
        kernels.append(KernelTime(site["callee"], _nodes(site.get("location", "")),
                                  statistics.median(samples), 0.0, float(site.get("flops", 0)),
                                  peak_gflops, site.get("shape", ""), site.get("schedule", ""),
                                  samples))
    total = statistics.median(totals)
    for k in kernels:
        k.share = k.seconds / total if total > 0 else 0.0
    starts = [[(r[2 + 2 * i] - r[0]) / rate for i in range(len(sites))] for r in readings]
    other = max(total - sum(k.seconds for k in kernels), 0.0)
    return Profile(function, total, kernels, other, len(readings), starts)
