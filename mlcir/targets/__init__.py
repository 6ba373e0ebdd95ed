"""Backends: one object per target kind owns everything that differs by target.

:func:`backend_for` finds a target's backend by its kind; nothing else in mlcir branches on
the kind. A backend plans a build (:class:`~.plan.BuildPlan`: graph pipeline, default
schedules, codegen pipeline, which :func:`.stages.run_stages` carries a module through),
compiles the lowered module to an executable or to a saved model, loads a saved model, makes the library an executable is saved with, gives a kernel its default
schedule and the tuner its design space, and builds and opens the tuner's candidates. Adding a
target is one new module whose backend is listed in ``_BACKENDS``.

    llvm  mlcir.targets.cpu   the host CPU through LLVM, the ExecutionEngine's JIT
    llvm  mlcir.targets.cross with -mtriple/-mcpu/-mattr: ahead of time for exactly them
    cuda  mlcir.targets.cuda  gpu/nvvm kernels as PTX/cubin, the MLIR CUDA runtime
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Protocol

from mlir import ir

from mlcir.errors import TargetError
from mlcir.runtime.compile import PreparedModule, as_module
from mlcir.runtime.executable import Executable
from mlcir.runtime.model_file import CompiledLibrary, SavedModel
from mlcir.runtime.saving import register_library_maker
from mlcir.runtime.signature import Signature
from mlcir.schedule import Schedule
from mlcir.target import Target

from .cpu import CpuBackend
from .cross import CrossBackend
from .cuda import CudaBackend
from .plan import BuildPlan
from .space_rules import SpaceFn


class Backend(Protocol):
    """What differs by target kind (see the module docstring)."""

    kind: str

    def plan(self, target: Target, layout: str = "packed", profile: bool = False) -> BuildPlan:
        """How a module is built for ``target``: its graph pipeline (layout numbers from the
        target's facts), default schedules and codegen pipeline (``profile``: with timing
        hooks, where the backend has them)."""

    def compile(self, prepared: PreparedModule, target: Target, *,
                keep: Any = None) -> Executable:
        """An executable of the lowered ``prepared.work``; ``keep`` lives as long as it."""

    def compile_to_file(self, prepared: PreparedModule, target: Target,
                        path: Path) -> SavedModel:
        """Write the lowered ``prepared.work`` as the saved model ``path``."""

    def saved_library(self, executable: Executable) -> CompiledLibrary:
        """The shared library ``executable`` is saved with (``Executable.save``)."""

    def load(self, path: Path, target: Target, meta: dict[str, Any],
             library: bytes) -> Executable:
        """The executable of a saved model whose file was checked (``metadata.json`` and the
        library's bytes, :func:`mlcir.runtime.model_file.read_library`)."""

    def design_space(self, target: Target) -> SpaceFn:
        """The default design space of the tuner."""

    def default_schedule(self, kernel: ir.Module, target: Target) -> Schedule:
        """The schedule a kernel without a tuning record gets (``mlcir.build``) and the first
        candidate of its search: chosen from the target without measuring; an empty trace
        leaves the kernel to the target's pipeline."""

    def build_candidate(self, scheduled: ir.Module, target: Target, out_path: str) -> None:
        """The tuner's builder: lower a scheduled kernel (in place) into the shared library
        ``out_path``."""

    def open_candidate(self, so_path: str,
                       signature: Signature) -> tuple[Any, Callable[[Any], None]]:
        """The tuner's runner: load a candidate's library; returns it (to keep alive) and its
        function in the packed calling convention. Raises
        :class:`~mlcir.errors.CudaDriverError` (one line: why) where it cannot run here."""

    def runner_threads(self, target: Target) -> int:
        """The threads the tuner's runner uses while it times a candidate."""

    def require_runner(self, target: Target) -> None:
        """Raise :class:`~mlcir.errors.CudaDriverError` naming what is missing for the tuner's
        runner to measure candidates here (checked before a search starts)."""


def _registry(*backends: Backend) -> dict[str, Backend]:
    """The backends by kind, each registered as the way its kind's executables are saved (the
    runtime, below this layer, cannot import them)."""
    for backend in backends:
        register_library_maker(backend.kind, backend.saved_library)
    return {backend.kind: backend for backend in backends}


_BACKENDS = _registry(CpuBackend(), CudaBackend())
# ``llvm`` targets naming a triple, CPU or features: compiled ahead of time for them.
_CROSS = CrossBackend()


def backend_for(target: Target) -> Backend:
    """The backend of ``target``'s kind (for ``llvm`` naming a triple, CPU or features, the
    ahead-of-time one of :mod:`.cross`)."""
    if target.kind == "llvm" and target.names_cpu:
        return _CROSS
    try:
        return _BACKENDS[target.kind]
    except KeyError:
        raise TargetError(f"no backend for target kind '{target.kind}'; known: "
                          f"{', '.join(_BACKENDS)}") from None


def build_plan(target: "Target | str", layout: str = "packed",
               profile: bool = False) -> BuildPlan:
    """The build plan of ``target`` (:meth:`Backend.plan`)."""
    target = Target.parse(target)
    return backend_for(target).plan(target, layout, profile)


def compile_module(mod: Any, target: "Target | str" = "llvm", *,
                   pipeline: str | None = None) -> Executable:
    """Compile ``mod`` (graph or loop level, or plain upstream MLIR; no tuning records, no
    default schedules) for ``target``: what the tuner builds its reference kernels with."""
    from .stages import run_stages

    target = Target.parse(target)
    module = as_module(mod)
    staged = run_stages(module, build_plan(target), schedule="none", pipeline=pipeline)
    return backend_for(target).compile(staged.prepared, target, keep=module)


__all__ = ["Backend", "BuildPlan", "SpaceFn", "backend_for", "build_plan", "compile_module"]
