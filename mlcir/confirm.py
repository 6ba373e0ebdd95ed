"""Confirmation in the model: a tuned record stays only where it beats the default schedule
inside the whole model.

The tuner times each kernel alone, on its own inputs, with warm caches. In a model the same
kernel runs between others, reading what they left in the caches and writing what the next
one reads, so a candidate that wins alone can lose there (MobileNetV2, issue 39).
:func:`confirm_in_model` builds the model twice, with the records and with the default
schedules, profiles the two builds in turns (:meth:`Executable.profile`:
each kernel's time in the model), and keeps a record only where its kernel is faster than the
default by more than ``noise``; the others give way to the default schedule in the database
(:class:`mlcir.tune.database.Confirmation`), so every later build, ``mlcir tune -o`` included,
uses the default there. If the whole model, estimated with those verdicts, is still not faster
than the default build, every record gives way: a tuned build is never slower than an untuned
one. ``mlcir tune`` runs it after tuning (``--no-confirm`` skips it; docs/tuning.md).
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

from mlcir.driver import build
from mlcir.runtime.compile import as_module
from mlcir.target import Target
from mlcir.tune.apply import as_database
from mlcir.tune.database import Confirmation, DatabaseError
from mlcir.tune.evaluation import random_inputs
from mlcir.tune.tasks import extract_tasks

# A record is kept when its kernels take less than (1 - NOISE) of the default's time in the
# model: above the spread of in-turn medians of one kernel's profile on quiet cores.
NOISE = 0.03
ROUNDS = 5


@dataclass
class KernelVerdict:
    """One tuned workload judged in the model."""

    name: str
    workload: str
    kept: bool
    tuned_secs: float    # per call of the model, over the kernel's calls
    default_secs: float


@dataclass
class ConfirmationReport:
    """What :func:`confirm_in_model` measured and decided."""

    verdicts: list[KernelVerdict] = field(default_factory=list)
    tuned_secs: float = 0.0     # the whole model with every tuned record (profiled, median)
    default_secs: float = 0.0   # the whole model with the default schedules
    kept_secs: float = 0.0      # estimate with the verdicts applied
    all_default: bool = False   # the estimate was not faster: every record gave way
    written: bool = True        # the verdicts are in the database (not a read-only file)

    def table(self) -> str:
        """The verdicts as text, the whole model's figures last."""
        lines = [f"{'kernel':44s} {'tuned us':>10s} {'default us':>10s}  verdict"]
        for v in sorted(self.verdicts, key=lambda v: v.default_secs - v.tuned_secs):
            lines.append(f"{v.name[:44]:44s} {v.tuned_secs * 1e6:10.1f} "
                         f"{v.default_secs * 1e6:10.1f}  {'kept' if v.kept else 'default'}")
        lines.append(f"whole model: default {self.default_secs * 1e6:.1f} us, every record "
                     f"{self.tuned_secs * 1e6:.1f} us, as confirmed {self.kept_secs * 1e6:.1f} us"
                     + (" (not faster: the default schedules everywhere)" if self.all_default
                        else ""))
        return "\n".join(lines)


def _kernel_seconds(profile: Any) -> tuple[dict[str, float], float]:
    """Seconds per call of each kernel function (summed over its call sites) and the total."""
    seconds: dict[str, float] = {}
    for kernel in profile.kernels:
        seconds[kernel.name] = seconds.get(kernel.name, 0.0) + kernel.seconds
    return seconds, profile.total_seconds


def confirm_in_model(mod: Any, records: Any, target: "str | Target" = "llvm", *,
                     rounds: int = ROUNDS, noise: float = NOISE, function: str = "main",
                     inputs: Sequence[np.ndarray] | None = None, layout: str | None = None,
                     backend: Any = None) -> ConfirmationReport:
    """Time every tuned kernel of ``mod`` against its default schedule in the model, in turns
    (``rounds`` profiles of each build), and write the verdicts to ``records`` (a database or
    work dir; a records file is read only and only reported on). ``inputs`` default to seeded
    random arrays of ``function``'s signature."""
    target = Target.parse(target)
    module = as_module(mod)
    db = as_database(records)
    tasks = extract_tasks(module, target, backend=backend)
    judged = []
    for task in tasks:
        best = db.best(task.workload, target.key)
        if best and not best[0].default_schedule:
            judged.append((task, best[0]))
    report = ConfirmationReport()
    if not judged:
        return report
    tuned = build(module, target, records=db, layout=layout, profile=True, backend=backend)
    default = build(module, target, records=None, layout=layout, profile=True, backend=backend)
    args = list(inputs) if inputs is not None else random_inputs(tuned, function)
    samples: dict[str, list[tuple[dict[str, float], float]]] = {"tuned": [], "default": []}
    for _ in range(rounds):
        for name, executable in (("tuned", tuned), ("default", default)):
            samples[name].append(_kernel_seconds(executable.profile(*args, function=function,
                                                                    repeat=3)))

    def median(name: str, functions: Sequence[str]) -> float:
        return statistics.median(sum(per.get(f, 0.0) for f in functions)
                                 for per, _ in samples[name])

    report.tuned_secs = statistics.median(total for _, total in samples["tuned"])
    report.default_secs = statistics.median(total for _, total in samples["default"])
    report.kept_secs = report.tuned_secs
    for task, _ in judged:
        tuned_secs = median("tuned", task.functions)
        default_secs = median("default", task.functions)
        kept = tuned_secs < (1.0 - noise) * default_secs
        if not kept:
            report.kept_secs += default_secs - tuned_secs
        report.verdicts.append(KernelVerdict(task.name, task.workload, kept, tuned_secs,
                                             default_secs))
    if report.kept_secs >= report.default_secs:
        report.all_default = True
        for verdict in report.verdicts:
            verdict.kept = False
    commit = getattr(db, "commit_confirmation", None)
    records_by_workload = {task.workload: record for task, record in judged}
    try:
        for verdict in report.verdicts if commit is not None else ():
            commit(Confirmation(verdict.workload, target.key,
                                records_by_workload[verdict.workload].trace_key, verdict.kept,
                                verdict.tuned_secs, verdict.default_secs))
    except DatabaseError:
        report.written = False  # a read-only records file: the verdicts are only reported
    return report
