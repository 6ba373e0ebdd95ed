"""Hardware fingerprints: which machines may time candidates of a target.

A timing says something only about the machine it was taken on, so a Ray node measures for a
target only when its fingerprint (LLVM triple, LLVM host CPU name, vector features, thread
count) equals the target's. A node declares its fingerprint when it starts, as a Ray custom
resource named after the fingerprint's hash::

    ray start --address=HEAD:6379 --num-cpus=8 \\
        --resources="$(python -m mlcir.tune.distributed --threads 8)"

and its measurement actor reports the fingerprint it finds where it runs, which every record
measured there carries.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import subprocess
from pathlib import Path
from typing import Any

from mlcir.paths import llvm_tool
from mlcir.target import Target

RESOURCE_PREFIX = "mlcir-hw-"
# /proc/cpuinfo flags that change the code LLVM generates for a kernel.
VECTOR_FLAG_PREFIXES = ("sse", "ssse", "avx", "fma", "f16c", "amx", "neon", "asimd", "sve")


@functools.lru_cache(maxsize=1)
def _llvm_host() -> tuple[str, str]:
    """LLVM's default triple and host CPU name (``llc --version``)."""
    text = subprocess.run([llvm_tool("llc"), "--version"], capture_output=True, text=True,
                          check=True).stdout
    facts = dict(line.strip().split(": ", 1) for line in text.splitlines() if ": " in line)
    return facts.get("Default target", "unknown"), facts.get("Host CPU", "unknown")


def _vector_features() -> list[str]:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith(("flags", "Features")):
                flags = line.split(":", 1)[1].split()
                return sorted(f for f in flags if f.startswith(VECTOR_FLAG_PREFIXES))
    except OSError:
        pass
    return []


def host_fingerprint(threads: int | None = None) -> dict[str, Any]:
    """This machine's fingerprint; ``threads`` defaults to the CPUs this process may use."""
    triple, cpu = _llvm_host()
    if threads is None:
        threads = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else \
            (os.cpu_count() or 1)
    return {"triple": triple, "cpu": cpu, "features": _vector_features(), "threads": threads}


def target_fingerprint(target: Target) -> dict[str, Any]:
    """The fingerprint a node needs to measure ``target``: this machine's (the one tuning),
    with the target's ``-mtriple``/``-mcpu``/``-mattr`` and ``-threads`` where it names them."""
    if target.kind != "llvm":
        raise ValueError(f"the Ray runner measures llvm targets, not {target.kind!r}")
    options = dict(target.options)
    fingerprint = host_fingerprint(target.threads or None)
    if "mtriple" in options:
        fingerprint["triple"] = options["mtriple"]
    if "mcpu" in options:
        fingerprint["cpu"] = options["mcpu"]
    if "mattr" in options:
        fingerprint["features"] = sorted(f.lstrip("+") for f in options["mattr"].split(",")
                                         if not f.startswith("-"))
    return fingerprint


def resource_name(fingerprint: dict[str, Any]) -> str:
    """The Ray custom resource a node with this fingerprint carries."""
    text = json.dumps(fingerprint, sort_keys=True, separators=(",", ":"))
    return RESOURCE_PREFIX + hashlib.sha256(text.encode()).hexdigest()[:16]


def describe(fingerprint: dict[str, Any]) -> str:
    return (f"{fingerprint['triple']} {fingerprint['cpu']} {len(fingerprint['features'])} "
            f"vector features, {fingerprint['threads']} thread(s)")
