"""The ``llvm`` target: the host CPU through LLVM. :mod:`.backend` holds :class:`CpuBackend`
(what :func:`mlcir.targets.backend_for` returns for ``llvm``), :mod:`.space` its default
design space."""

from __future__ import annotations

from .backend import CpuBackend, cpu_pipeline
from .space import cpu_space

__all__ = ["CpuBackend", "cpu_pipeline", "cpu_space"]
