"""Tuning runs as data: ``mlcir report`` / :func:`report` turns work dirs into CSV, plots, HTML.

A work dir's database holds every measured candidate with how it was proposed (each record's
``info``: strategy, round, trial index within the task, the cost model's prediction) and
``run.json`` what the run was made of (:mod:`.run_info`). :func:`report` writes, for one or
several work dirs (their curves overlaid, labelled by strategy, cost model and seed):

- ``trials.csv``: one row per measured candidate in proposal order;
- ``features.csv``: the feature vector of each row (``run``, ``task``, ``trial``, ``f0``...);
- ``curve_trials.png`` / ``curve_time.png``: the best latency so far against trials and
  against wall-clock time, per task and for the whole model (weighted by calls);
- ``predicted_vs_measured.png``: the cost model's predicted latency against the measured one;
- ``index.html``: all of it on one page.

The plots need matplotlib (``pip install 'mlcir[report]'``), imported only when plotting and
drawn without a display (Agg canvas).
"""

from __future__ import annotations

import csv
import html
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

from mlcir.errors import MlcirError

from .database import Database, Record
from .run_info import read_runs

TRIAL_COLUMNS = ["run", "task", "workload", "weight", "trial", "strategy", "round", "target",
                 "timestamp", "elapsed_s", "latency_s", "error", "predicted_score",
                 "predicted_latency_s", "best_so_far_s", "model_latency_so_far_s", "build_s",
                 "trace", "decisions"]
MODEL = "whole model (weighted)"


class ReportError(MlcirError):
    """A work dir that cannot be reported on, or plotting without matplotlib."""


@dataclass
class Trial:
    """One measured candidate, as a row of ``trials.csv``."""

    task: str
    workload: str
    weight: int
    trial: int
    target: str
    record: Record
    strategy: str = ""
    round: int | None = None
    elapsed: float = 0.0
    best_so_far: float = math.inf
    model_so_far: float = math.inf

    @property
    def latency(self) -> float:
        return self.record.mean_secs

    @property
    def predicted_secs(self) -> float | None:
        value = (self.record.info or {}).get("predicted_secs")
        return float(value) if isinstance(value, (int, float)) else None


@dataclass
class Run:
    """The trials of one work dir, in proposal order, and how to label them."""

    work_dir: Path
    label: str
    settings: dict[str, Any]
    trials: list[Trial] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    @property
    def tasks(self) -> list[str]:
        return list(dict.fromkeys(t.task for t in self.trials))


def _info(rec: Record) -> dict[str, Any]:
    return rec.info if isinstance(rec.info, dict) else {}


def _number_in(info: dict[str, Any], key: str, default: float) -> float:
    """``info[key]`` if it is a number (a hand-edited database may hold anything)."""
    value = info.get(key)
    return float(value) if isinstance(value, (int, float)) else default


def _proposal_order(records: list[Record]) -> list[Record]:
    """Records in the order they were proposed: by round (proposal time), then trial index;
    records without ``info`` (older databases) keep their file order."""
    def key(item: tuple[int, Record]) -> tuple[float, float, int]:
        index, rec = item
        info = _info(rec)
        return (_number_in(info, "proposed", rec.timestamp), _number_in(info, "trial", 0.0),
                index)
    return [rec for _, rec in sorted(enumerate(records), key=key)]


def _label(settings: dict[str, Any], work_dir: Path) -> str:
    roles = settings.get("roles", {})
    if not roles:
        return work_dir.name
    return (f"{roles.get('strategy', {}).get('name', '?')}, "
            f"{roles.get('cost_model', {}).get('name', '?')}, seed {settings.get('seed', '?')}")


def load_run(work_dir: str | Path) -> Run:
    """The trials of a work dir (a corrupt line is reported as a warning and skipped)."""
    work_dir = Path(work_dir)
    if not work_dir.is_dir():
        raise ReportError(f"{work_dir}: no such directory")
    if not (work_dir / "database" / "records.json").is_file():
        raise ReportError(f"{work_dir}: not a tuning work dir (no database/records.json)")
    db = Database(work_dir)
    runs = read_runs(work_dir)
    settings = runs[-1] if runs else {}
    weights = {t.get("workload"): t["weight"] for r in runs for t in r.get("tasks") or []
               if isinstance(t, dict) and isinstance(t.get("weight"), int)}
    run = Run(work_dir, _label(settings, work_dir), settings, problems=list(db.problems))
    starts = [r["started"] for r in runs if isinstance(r.get("started"), (int, float))]
    records = _proposal_order(db.records())
    start = min(starts + [_number_in(_info(r), "proposed", r.timestamp) for r in records],
                default=0.0)
    tasks_on: dict[str, set[str]] = {}
    for rec in records:
        tasks_on.setdefault(rec.target, set()).add(rec.workload)
    best: dict[tuple[str, str], float] = {}
    count: dict[tuple[str, str], int] = {}
    for rec in records:
        task_key = (rec.workload, rec.target)
        info = _info(rec)
        workload = db.workloads.get(rec.workload)
        trial = _number_in(info, "trial", count.get(task_key, 0))
        count[task_key] = count.get(task_key, 0) + 1
        best[task_key] = min(best.get(task_key, math.inf), rec.mean_secs)
        row = Trial(workload.name if workload else rec.workload, rec.workload,
                    weights.get(rec.workload, 1), int(trial), rec.target, rec,
                    str(info.get("strategy", "")),
                    int(info["round"]) if isinstance(info.get("round"), int) else None,
                    rec.timestamp - start, best[task_key])
        # The model's latency once every task on this target has a measured candidate.
        row.model_so_far = sum(weights.get(w, 1) * best.get((w, rec.target), math.inf)
                               for w in tasks_on[rec.target])
        run.trials.append(row)
    return run


def _decisions(trace: dict[str, Any]) -> list[list[Any]]:
    """``[index, instruction kind, decision]`` of each sampled decision of a trace."""
    insts = trace.get("insts", [])
    return [[i, insts[i][0] if 0 <= i < len(insts) else "?", d]
            for i, d in trace.get("decisions", [])]


def _number(value: float | None) -> str:
    return "" if value is None or not math.isfinite(value) else repr(float(value))


def write_trials_csv(runs: Sequence[Run], path: Path) -> int:
    """``trials.csv``; returns the number of rows."""
    rows = 0
    with open(path, "w", newline="", encoding="utf-8") as f:
        out = csv.writer(f)
        out.writerow(TRIAL_COLUMNS)
        for run in runs:
            for t in run.trials:
                rec, info = t.record, _info(t.record)
                score = info.get("predicted_score")
                out.writerow([run.label, t.task, t.workload, t.weight, t.trial, t.strategy,
                              "" if t.round is None else t.round, t.target, rec.timestamp,
                              _number(t.elapsed), _number(t.latency) if rec.ok else "",
                              "" if rec.ok else (rec.error or "no measurement"),
                              _number(score if isinstance(score, (int, float)) else None),
                              _number(t.predicted_secs), _number(t.best_so_far),
                              _number(t.model_so_far), _number(rec.build_secs),
                              json.dumps(rec.trace, sort_keys=True, separators=(",", ":")),
                              json.dumps(_decisions(rec.trace), separators=(",", ":"))])
                rows += 1
    return rows


def write_features_csv(runs: Sequence[Run], path: Path) -> int:
    """``features.csv``: each trial's feature vector; returns the number of rows."""
    width = max((len(t.record.features or []) for r in runs for t in r.trials), default=0)
    rows = 0
    with open(path, "w", newline="", encoding="utf-8") as f:
        out = csv.writer(f)
        out.writerow(["run", "task", "workload", "trial", *(f"f{i}" for i in range(width))])
        for run in runs:
            for t in run.trials:
                if t.record.features:
                    out.writerow([run.label, t.task, t.workload, t.trial,
                                  *(repr(float(x)) for x in t.record.features)])
                    rows += 1
    return rows


# -- plots -------------------------------------------------------------------------------------

def _figure(panels: int, title: str) -> tuple[Any, list[Any]]:
    try:
        from matplotlib.figure import Figure
    except ImportError as error:
        raise ReportError("the plots of `mlcir report` need matplotlib: "
                          "pip install 'mlcir[report]'") from error
    cols = min(panels, 3)
    rows = (panels + cols - 1) // cols
    fig = Figure(figsize=(4.2 * cols, 3.2 * rows), dpi=90, layout="constrained")
    axes = [fig.add_subplot(rows, cols, i + 1) for i in range(panels)]
    fig.suptitle(title)
    return fig, axes


def _curves(run: Run, by_time: bool) -> dict[str, tuple[list[float], list[float]]]:
    """Per task and for the model: (trials or seconds, best latency so far in us). Against
    time, in the order the measurements finished; finite points only."""
    trials = sorted(run.trials, key=lambda t: t.elapsed) if by_time else run.trials
    weights = {(t.workload, t.target): t.weight for t in run.trials}
    best: dict[tuple[str, str], float] = {}
    out: dict[str, tuple[list[float], list[float]]] = {}

    def add(name: str, x: float, secs: float) -> None:
        if math.isfinite(secs):
            xs, ys = out.setdefault(name, ([], []))
            xs.append(x)
            ys.append(secs * 1e6)

    for n, t in enumerate(trials, start=1):
        key = (t.workload, t.target)
        best[key] = min(best.get(key, math.inf), t.latency)
        add(t.task, t.elapsed if by_time else t.trial + 1, best[key])
        if len(weights) > 1:
            add(MODEL, t.elapsed if by_time else n,
                sum(w * best.get(k, math.inf) for k, w in weights.items() if k[1] == t.target))
    return out


def plot_curves(runs: Sequence[Run], path: Path, by_time: bool) -> None:
    """Best latency so far against trials (or seconds), a panel per task and the model."""
    names = list(dict.fromkeys(name for r in runs for name in r.tasks))
    if any(len(r.tasks) > 1 for r in runs):
        names.append(MODEL)
    fig, axes = _figure(max(1, len(names)), "best latency so far")
    for color, run in enumerate(runs):
        curves = _curves(run, by_time)
        for ax, name in zip(axes, names):
            if name in curves and curves[name][0]:
                ax.step(*curves[name], where="post", color=f"C{color % 10}", label=run.label)
    for ax, name in zip(axes, names):
        ax.set_title(name, fontsize=9)
        ax.set_xlabel("wall-clock time (s)" if by_time else
                      ("trials (all tasks)" if name == MODEL else "trials"))
        ax.set_ylabel("latency (us)")
        if ax.lines:
            ax.set_yscale("log")
        ax.grid(alpha=0.3, which="both")
    if runs and names:
        axes[0].legend(fontsize=7)
    fig.savefig(path)


def plot_predictions(runs: Sequence[Run], path: Path) -> None:
    """The cost model's predicted latency (at proposal time) against the measured one."""
    fig, (ax,) = _figure(1, "cost model: predicted vs measured")
    points = 0
    for color, run in enumerate(runs):
        pairs = [(t.latency * 1e6, t.predicted_secs * 1e6) for t in run.trials
                 if t.record.ok and t.predicted_secs]
        if pairs:
            xs, ys = zip(*pairs)
            ax.scatter(xs, ys, s=10, alpha=0.6, color=f"C{color % 10}", label=run.label)
            points += len(pairs)
    if points:
        lo = min(c.get_offsets().min() for c in ax.collections)
        hi = max(c.get_offsets().max() for c in ax.collections)
        ax.plot([lo, hi], [lo, hi], color="gray", linewidth=0.8, label="predicted = measured")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.legend(fontsize=7)
    else:
        ax.text(0.5, 0.5, "no predictions (the cost model was never trained)",
                ha="center", va="center", transform=ax.transAxes)
    ax.set_xlabel("measured latency (us)")
    ax.set_ylabel("predicted latency (us)")
    ax.grid(alpha=0.3)
    fig.savefig(path)


# -- the page ----------------------------------------------------------------------------------

def _summary(run: Run) -> list[str]:
    ok = [t for t in run.trials if t.record.ok]
    best = run.trials[-1].model_so_far if run.trials else math.inf
    versions = run.settings.get("versions", {})
    return [run.label, str(run.work_dir), str(run.settings.get("target", "")),
            str(len(run.trials)), str(len(run.trials) - len(ok)),
            f"{best * 1e6:.2f}" if math.isfinite(best) else "n/a",
            str(versions.get("mlcir", "")),
            str(run.settings.get("machine", {}).get("cpu_model", ""))]


def write_index(runs: Sequence[Run], out_dir: Path, images: list[str]) -> Path:
    head = ["run", "work dir", "target", "trials", "failed", "best latency (us, weighted)",
            "mlcir", "CPU"]
    cells = "".join(f"<th>{html.escape(h)}</th>" for h in head)
    rows = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in _summary(r))
                   + "</tr>" for r in runs)
    problems = [p for r in runs for p in r.problems]
    skipped = "".join(f"<li>{html.escape(p)}</li>" for p in problems)
    notes = f"<h2>Skipped lines</h2><ul>{skipped}</ul>" if problems else ""
    figures = "".join(f'<p><img src="{name}" alt="{name}"></p>' for name in images)
    page = (f"<!doctype html><html><head><meta charset='utf-8'><title>mlcir tuning report</title>"
            f"<style>body{{font-family:sans-serif}}td,th{{border:1px solid #ccc;"
            f"padding:2px 6px}}table{{border-collapse:collapse}}</style></head><body>"
            f"<h1>Tuning report</h1><table><tr>{cells}</tr>{rows}</table>"
            f"<p>Data: <a href='trials.csv'>trials.csv</a>, "
            f"<a href='features.csv'>features.csv</a>; each work dir's run.json records how to "
            f"repeat its run.</p>{figures}{notes}</body></html>\n")
    path = out_dir / "index.html"
    path.write_text(page, encoding="utf-8")
    return path


def report(work_dirs: str | Path | Sequence[str | Path], out_dir: str | Path) -> Path:
    """Write the CSVs, plots and ``index.html`` of tuning work dirs to ``out_dir``; returns the
    page. Several work dirs overlay their curves; labels that coincide get the dir's name."""
    if isinstance(work_dirs, (str, Path)):
        work_dirs = [work_dirs]
    runs = [load_run(d) for d in work_dirs]
    if not runs:
        raise ReportError("no work dir to report on")
    labels = [r.label for r in runs]
    for r in runs:
        if labels.count(r.label) > 1:
            r.label = f"{r.label} ({r.work_dir.name})"
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    write_trials_csv(runs, out / "trials.csv")
    write_features_csv(runs, out / "features.csv")
    plot_curves(runs, out / "curve_trials.png", by_time=False)
    plot_curves(runs, out / "curve_time.png", by_time=True)
    plot_predictions(runs, out / "predicted_vs_measured.png")
    return write_index(runs, out, ["curve_trials.png", "curve_time.png",
                                   "predicted_vs_measured.png"])
