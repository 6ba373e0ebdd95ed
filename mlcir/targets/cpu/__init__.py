"""The ``llvm`` target: the host CPU through LLVM. :mod:`.backend` holds :class:`CpuBackend`
(what :func:`mlcir.targets.backend_for` returns for ``llvm``), :mod:`.space` its default
design space, :mod:`.facts` what the target's CPU offers a schedule, :mod:`.defaults` the
default schedule of a kernel chosen from those facts."""

from __future__ import annotations

from .backend import CpuBackend, cpu_pipeline
from .defaults import default_schedule
from .facts import CpuFacts, target_facts
from .space import cpu_space

__all__ = ["CpuBackend", "CpuFacts", "cpu_pipeline", "cpu_space", "default_schedule",
           "target_facts"]
