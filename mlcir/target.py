"""Compilation targets: ``llvm`` (the host CPU) and ``cuda``, written as TVM-style strings.

``Target.parse("llvm -threads=2 -opt-level=3")``; a :class:`Target` is also accepted wherever a
string is. Records of tuning keep ``str(target)`` so a record is applied only to its target.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

KINDS = ("llvm", "cuda")


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
        if isinstance(text, Target):
            return text
        parts = text.split()
        if not parts or parts[0] not in KINDS:
            raise ValueError(f"unknown target {text!r}: the kind must be one of {', '.join(KINDS)}")
        target = Target(kind=parts[0])
        extra = []
        for part in parts[1:]:
            key, _, value = part.lstrip("-").partition("=")
            if key == "threads":
                target = replace(target, threads=int(value))
            elif key == "opt-level":
                target = replace(target, opt_level=int(value))
            elif key in ("arch", "mcpu") and target.kind == "cuda":
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
