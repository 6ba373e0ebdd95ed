"""Tuning records in one file: the best schedules of a database, for ``build`` and ``mlcir``.

A tuning database is a folder (``work_dir/database/workloads.json`` + ``records.json``) that
keeps every measured candidate so a run can resume. What a build needs is smaller: each kernel's
fastest record per target. :func:`export_best_records` writes those to one JSON-lines file
(``mlcir tune -o records.json``); :class:`RecordsFile` reads it back as a read-only
:class:`~mlcir.tune.database.Database`, so ``mlcir.build(..., records="records.json")`` and
``mlcir compile --tuning-records records.json`` accept it.

Each line is a JSON object with the database's ``"version"`` and a ``"kind"``: ``"workload"``
lines have the fields of ``workloads.json`` (``hash``, ``name``, ``text``), ``"record"`` lines
those of ``records.json`` (``workload``, ``target``, ``trace``, ``run_secs``, …). Workloads come
first; ``"specialization"`` lines (``function``, ``shapes``: the input sizes tuned as static
specialisations of a dynamic model, which ``build`` adds) come last. A corrupt or truncated
line is reported as ``<file>:<line>: …`` and skipped, as in the
database.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, NoReturn

from mlcir.runtime.model_file import write_atomically

from .database import SCHEMA_VERSION, Database, DatabaseError, Record, Specialization, Workload


def export_best_records(db: Database, path: str | Path) -> tuple[int, int]:
    """Write the workloads of ``db`` that have a successful record and, for each of them and
    each target, the fastest record, to ``path``; returns (workloads, records) written."""
    best: list[Record] = []
    for workload in db.workloads:
        for target in sorted({r.target for r in db.records(workload)}):
            best += db.best(workload, target)
    used = sorted({r.workload for r in best})
    lines = [{"kind": "workload", **db.workloads[h].to_json()} for h in used]
    lines += [{"kind": "record", **r.to_json()} for r in best]
    lines += [{"kind": "specialization", **spec.to_json()}
              for spec in getattr(db, "specializations", [])]
    text = "".join(json.dumps(data, sort_keys=True, separators=(",", ":")) + "\n"
                   for data in lines)
    write_atomically(Path(path), text.encode("utf-8"))
    return len(used), len(best)


class RecordsFile(Database):
    """A file written by :func:`export_best_records`, read as a database (read only)."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.dir = self.path.parent
        self.workloads_path = self.records_path = self.path
        self.problems: list[str] = []
        self.workloads: dict[str, Workload] = {}
        self._records: list[Record] = []
        self._keys: set[tuple[str, str, str]] = set()
        self.specializations: list[Specialization] = []
        self.confirmations = {}  # the file holds the records as confirmed
        self._load()

    def _load(self) -> None:
        self._check_first_line()
        for number, data in self._lines(self.path):
            kind = data.get("kind")
            try:
                if kind == "workload":
                    w = Workload(data["hash"], data["name"], data["text"])
                    self.workloads[w.hash] = w
                elif kind == "record":
                    rec = Record(data["workload"], data["target"], data["trace"],
                                 data.get("run_secs"), data.get("error"), data.get("features"),
                                 data.get("build_secs"), data.get("timestamp", 0.0),
                                 default_schedule=data.get("default_schedule", False))
                    if not isinstance(rec.trace, dict):
                        raise KeyError("'trace'")
                    self._add(rec)
                elif kind == "specialization":
                    self._add_specialization(Specialization.from_json(data))
                else:
                    self._problem(f"{self.path}:{number}: skipped a line of unknown kind {kind!r}")
            except KeyError as error:
                self._problem(f"{self.path}:{number}: skipped a {kind} without {error}")

    def _check_first_line(self) -> None:
        """Refuse a file that is not a records file at all (rather than report every line)."""
        with open(self.path, encoding="utf-8", errors="replace") as f:
            for number, line in enumerate(f, start=1):
                if not line.strip():
                    continue
                try:
                    data = json.loads(line)
                except ValueError:
                    data = None
                if not isinstance(data, dict) or data.get("kind") not in (
                        "workload", "record", "specialization"):
                    raise DatabaseError(f"{self.path}:{number}: not a tuning-records file (a "
                                        "line of `mlcir tune -o` output is a JSON object with "
                                        "\"kind\": \"workload\" or \"record\")")
                if data.get("version") != SCHEMA_VERSION:
                    raise DatabaseError(f"{self.path}:{number}: tuning records of schema "
                                        f"version {data.get('version')!r}; this mlcir reads "
                                        f"version {SCHEMA_VERSION}")
                return

    def commit_workload(self, *_args: Any, **_kwargs: Any) -> NoReturn:  # type: ignore[override]
        raise DatabaseError(f"{self.path} is a read-only records file; tune into a work_dir")

    commit_record = commit_workload  # type: ignore[assignment]
    commit_confirmation = commit_workload  # type: ignore[assignment]
