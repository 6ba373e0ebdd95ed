"""Compilation targets: ``llvm`` (the host CPU) and ``cuda``, written as TVM-style strings.

``Target.parse("llvm -threads=2 -opt-level=3")``, once, where a target comes in (the driver,
the CLI, the tuner's entry points, a saved model's metadata); below them functions take a
:class:`Target`. Records of tuning keep ``str(target)`` so a record is applied only to its
target.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import Any

from mlcir.errors import TargetError

KINDS = ("llvm", "cuda")
# The options each kind understands (``-name=value``); anything else is refused.
OPTIONS = {"llvm": ("threads", "opt-level"), "cuda": ("arch", "threads", "opt-level", "format")}
OPT_LEVELS = range(0, 4)
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
        for part in parts[1:]:
            key, _, value = part.lstrip("-").partition("=")
            if key not in known:
                raise TargetError(f"target {text!r}: unknown option {part!r}; {target.kind} "
                                  f"takes {', '.join('-' + k for k in known)}")
            if key == "threads":
                target = replace(target, threads=_count(text, part, value))
            elif key == "opt-level":
                level = _count(text, part, value)
                if level not in OPT_LEVELS:
                    raise TargetError(f"target {text!r}: {part!r} is out of range; -opt-level "
                                      "is 0, 1, 2 or 3")
                target = replace(target, opt_level=level)
            elif key == "arch":
                if not CUDA_ARCH.match(value):
                    raise TargetError(f"target {text!r}: {part!r} is not a CUDA architecture; "
                                      "-arch is sm_ and a compute capability (sm_80, sm_90, "
                                      "sm_90a, ...)")
                target = replace(target, arch=value)
            else:
                extra.append((key, value))
        return replace(target, options=tuple(extra))

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
        count (schedules tuned for one thread count are not applied at another)."""
        if self.kind == "cuda":
            return f"cuda -arch={self.arch}"
        return f"llvm -threads={self.threads}" if self.threads else "llvm"

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
