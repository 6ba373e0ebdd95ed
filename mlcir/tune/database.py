"""The tuning database: append-only JSON lines of workloads and measured records.

:class:`TuningDatabase` is the role's interface (what the tuner and ``mlcir.build(...,
records=)`` use); :class:`Database` is the JSON-lines implementation, the default.
``<work_dir>/database/workloads.json`` holds one line per workload (a kernel, identified by a
structural hash), ``records.json`` one line per measured candidate: the workload, the target it
was measured on, the decided trace, the measured seconds (or why the candidate failed) and its
cost-model features, and whether the trace is the target's default schedule (the tuner's
first candidate). Every line carries the schema version. A record is written (and flushed)
as soon as its measurement finishes, so a killed run loses nothing already measured, and a
re-run with the same ``work_dir`` resumes from it. A corrupt or truncated line is reported
with its file and line number and skipped; a last line without its newline (a killed writer's)
is repaired before anything is appended.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
import warnings
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping, Protocol, Sequence, runtime_checkable

from mlir import ir

from mlcir.errors import MlcirError
from mlcir.targets.kernels import canonical_text, workload_hash

SCHEMA_VERSION = 1


@dataclass
class Workload:
    hash: str
    name: str
    text: str  # the kernel module (loop level, function "main"), as MLIR text

    def to_json(self) -> dict[str, Any]:
        return {"version": SCHEMA_VERSION, **asdict(self)}


@dataclass
class Record:
    workload: str
    target: str
    trace: dict[str, Any]
    run_secs: list[float] | None = None
    error: str | None = None
    features: list[float] | None = None
    build_secs: float | None = None
    timestamp: float = field(default_factory=time.time)
    # How the candidate was proposed (strategy, round, trial, prediction): for reports.
    info: dict[str, Any] | None = None
    default_schedule: bool = False  # the trace is the target's default schedule
    # Measured on a Ray cluster: the node's id and hardware fingerprint (absent otherwise).
    node: str | None = None
    node_fingerprint: dict[str, Any] | None = None

    @property
    def ok(self) -> bool:
        return self.error is None and bool(self.run_secs)

    @property
    def mean_secs(self) -> float:
        return sum(self.run_secs) / len(self.run_secs) if self.ok else float("inf")

    @property
    def trace_key(self) -> str:
        return trace_key(self.trace)

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        for optional in ("node", "node_fingerprint"):
            if data[optional] is None:
                del data[optional]
        return {"version": SCHEMA_VERSION, **data}


@dataclass(frozen=True)
class Specialization:
    """Input sizes of a function with dynamic dims that were tuned as a static copy of it:
    ``build`` with these records adds the copy, and calls of that size dispatch to it."""

    function: str
    shapes: tuple[tuple[str, tuple[int, ...]], ...]  # (input name, shape), in order

    @staticmethod
    def of(shapes: "Mapping[str, Sequence[int]]", function: str = "main") -> "Specialization":
        return Specialization(function, tuple((n, tuple(int(d) for d in s))
                                              for n, s in shapes.items()))

    def shape_dict(self) -> dict[str, list[int]]:
        return {name: list(shape) for name, shape in self.shapes}

    def to_json(self) -> dict[str, Any]:
        return {"version": SCHEMA_VERSION, "function": self.function,
                "shapes": self.shape_dict()}

    @staticmethod
    def from_json(d: dict[str, Any]) -> "Specialization":
        return Specialization.of(d["shapes"], d["function"])


@dataclass(frozen=True)
class Confirmation:
    """A tuned record timed against the default schedule inside the whole model
    (``mlcir.confirm_in_model``): whether it stays the workload's best. A record that is not
    faster there (cache state between kernels, the model's own data) gives way to the default
    schedule, so a tuned build is never slower than an untuned one."""

    workload: str
    target: str
    record: str          # the trace key of the tuned record judged
    kept: bool
    tuned_secs: float    # in the model, per call of the model, over the kernel's calls
    default_secs: float
    timestamp: float = field(default_factory=time.time)

    def to_json(self) -> dict[str, Any]:
        return {"version": SCHEMA_VERSION, **asdict(self)}


def trace_key(trace_json: dict[str, Any]) -> str:
    """Identity of a decided trace (instructions and decisions), for skipping repeats."""
    return hashlib.sha256(json.dumps(trace_json, sort_keys=True, separators=(",", ":"))
                          .encode()).hexdigest()[:24]


class DatabaseError(MlcirError, ValueError):
    """A tuning database or records file that cannot be used (not one, another schema version,
    read only); the message names the file."""


@runtime_checkable
class TuningDatabase(Protocol):
    """Stores workloads and measured records; answers which records are fastest."""

    def commit_workload(self, module: ir.Module, name: str = "") -> Workload:
        """The workload of a kernel module (its hash is :func:`workload_hash`), added once."""

    def commit_record(self, rec: Record) -> None:
        """Add a measured record of a committed workload."""

    def records(self, workload: str | None = None, target: str | None = None) -> list[Record]:
        """Every record (of a workload, of a target key)."""

    def best(self, workload: str, target: str, k: int = 1) -> list[Record]:
        """The ``k`` fastest successful records of a workload on ``target``."""


class Database:
    """Workloads and records in ``work_dir`` (created if missing)."""

    def __init__(self, work_dir: str | Path):
        self.dir = Path(work_dir) / "database"
        self.dir.mkdir(parents=True, exist_ok=True)
        self.workloads_path = self.dir / "workloads.json"
        self.records_path = self.dir / "records.json"
        self.specializations_path = self.dir / "specializations.json"
        self.confirmations_path = self.dir / "confirmations.json"
        self.problems: list[str] = []
        self.workloads: dict[str, Workload] = {}
        self._records: list[Record] = []
        self._keys: set[tuple[str, str, str]] = set()
        for path in (self.workloads_path, self.records_path):
            self._repair_last_line(path)
        # The input sizes tuned as static specialisations of a dynamic model (in order).
        self.specializations: list[Specialization] = []
        # Verdicts of mlcir.confirm_in_model, by (workload, target, record's trace key).
        self.confirmations: dict[tuple[str, str, str], Confirmation] = {}
        self._load()

    # -- reading -----------------------------------------------------------------------------
    def _lines(self, path: Path | None) -> Iterable[tuple[int, dict[str, Any]]]:
        if path is None or not path.exists():
            return
        with open(path, encoding="utf-8", errors="replace") as f:
            for number, line in enumerate(f, start=1):
                if not line.strip():
                    continue
                try:
                    data = json.loads(line)
                    if not isinstance(data, dict):
                        raise ValueError("not a JSON object")
                    if data.get("version") != SCHEMA_VERSION:
                        raise ValueError(f"schema version {data.get('version')!r}, this mlcir "
                                         f"reads {SCHEMA_VERSION}")
                except ValueError as error:
                    self._problem(f"{path}:{number}: skipped a corrupt or truncated line ({error})")
                    continue
                yield number, data

    def _problem(self, message: str) -> None:
        self.problems.append(message)
        warnings.warn(message, RuntimeWarning, stacklevel=3)

    def _load(self) -> None:
        for number, data in self._lines(self.workloads_path):
            try:
                w = Workload(data["hash"], data["name"], data["text"])
            except KeyError as error:
                self._problem(f"{self.workloads_path}:{number}: skipped a workload without {error}")
                continue
            self.workloads[w.hash] = w
        for number, data in self._lines(self.records_path):
            try:
                rec = Record(data["workload"], data["target"], data["trace"], data.get("run_secs"),
                             data.get("error"), data.get("features"), data.get("build_secs"),
                             data.get("timestamp", 0.0), data.get("info"),
                             data.get("default_schedule", False),
                             data.get("node"), data.get("node_fingerprint"))
                if not isinstance(rec.trace, dict):
                    raise KeyError("trace")
            except KeyError as error:
                self._problem(f"{self.records_path}:{number}: skipped a record without {error}")
                continue
            if rec.run_secs is None and rec.error is None:
                self._problem(f"{self.records_path}:{number}: skipped a record without "
                              "'run_secs' or 'error'")
                continue
            self._add(rec)
        for number, data in self._lines(self.specializations_path):
            try:
                self._add_specialization(Specialization.from_json(data))
            except (KeyError, TypeError) as error:
                self._problem(f"{self.specializations_path}:{number}: skipped a "
                              f"specialization without {error}")
        for number, data in self._lines(getattr(self, "confirmations_path", None)):
            try:
                data.pop("version")
                self._add_confirmation(Confirmation(**data))
            except TypeError as error:
                self._problem(f"{self.confirmations_path}:{number}: skipped a confirmation "
                              f"({error})")

    def _add_confirmation(self, verdict: Confirmation) -> None:
        self.confirmations[(verdict.workload, verdict.target, verdict.record)] = verdict

    def _add_specialization(self, spec: "Specialization") -> None:
        if spec not in self.specializations:
            self.specializations.append(spec)

    def _add(self, rec: Record) -> None:
        self._records.append(rec)
        self._keys.add((rec.workload, rec.target, rec.trace_key))

    # -- writing -----------------------------------------------------------------------------
    def _repair_last_line(self, path: Path) -> None:
        """End a last line that has no newline (what a killed writer leaves) before anything is
        appended: a complete JSON object gets its newline, a partial one is cut off with a
        warning naming the file and line. Otherwise the next record would be glued onto it."""
        if not path.exists() or path.stat().st_size == 0:
            return
        data = path.read_bytes()
        if data.endswith(b"\n"):
            return
        start = data.rfind(b"\n") + 1
        number = data.count(b"\n") + 1
        try:
            complete = isinstance(json.loads(data[start:]), dict)
        except ValueError:
            complete = False
        if complete:
            self._write_line(path, b"\n")
            return
        with open(path, "r+b") as f:
            f.truncate(start)
        self._problem(f"{path}:{number}: removed a partial last line ({len(data) - start} "
                      "bytes without a newline, left by a writer that was stopped)")

    @staticmethod
    def _write_line(path: Path, line: bytes) -> None:
        """Append ``line`` with one ``write`` on an ``O_APPEND`` descriptor: a line is whole or
        absent, even with concurrent writers."""
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            written = os.write(fd, line)
            if written != len(line):
                raise DatabaseError(f"{path}: wrote {written} of {len(line)} bytes (disk full?)")
            os.fsync(fd)
        finally:
            os.close(fd)

    def _append(self, path: Path, data: dict[str, Any]) -> None:
        line = json.dumps(data, sort_keys=True, separators=(",", ":")) + "\n"
        self._write_line(path, line.encode("utf-8"))

    def commit_workload(self, module: ir.Module, name: str = "") -> Workload:
        """The workload of a kernel module (added once)."""
        h = workload_hash(module)
        if h not in self.workloads:
            w = Workload(h, name or h, canonical_text(module))
            self._append(self.workloads_path, w.to_json())
            self.workloads[h] = w
        return self.workloads[h]

    def commit_specialization(self, spec: "Specialization") -> None:
        """Remember that ``spec`` (input sizes of a dynamic function) was tuned."""
        if spec not in self.specializations:
            self._append(self.specializations_path, spec.to_json())
            self.specializations.append(spec)

    def commit_confirmation(self, verdict: Confirmation) -> None:
        """Remember whether a tuned record stays its workload's best (:class:`Confirmation`)."""
        self._append(self.confirmations_path, verdict.to_json())
        self._add_confirmation(verdict)

    def commit_record(self, rec: Record) -> None:
        if rec.workload not in self.workloads:
            raise DatabaseError(f"record for unknown workload {rec.workload}")
        self._append(self.records_path, rec.to_json())
        self._add(rec)

    # -- queries -----------------------------------------------------------------------------
    def records(self, workload: str | None = None, target: str | None = None) -> list[Record]:
        return [r for r in self._records
                if (workload is None or r.workload == workload)
                and (target is None or r.target == target)]

    def has(self, workload: str, target: str, trace_json: dict[str, Any]) -> bool:
        return (workload, target, trace_key(trace_json)) in self._keys

    def best(self, workload: str, target: str, k: int = 1) -> list[Record]:
        """The ``k`` fastest successful records of a workload on ``target``; the default
        schedule first where the fastest one was not faster in the model
        (:class:`Confirmation`)."""
        ok = sorted((r for r in self.records(workload, target) if r.ok),
                    key=lambda r: r.mean_secs)
        verdict = self.confirmations.get((workload, target, ok[0].trace_key)) if ok else None
        default = next((r for r in ok if r.default_schedule), None)
        if verdict is not None and not verdict.kept and default is not None:
            ok.remove(default)
            ok.insert(0, default)
        return ok[:k]

    def __len__(self) -> int:
        return len(self._records)
