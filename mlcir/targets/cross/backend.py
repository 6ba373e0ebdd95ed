"""The ``llvm`` backend of targets naming a triple, CPU or features (``-mtriple``, ``-mcpu``,
``-mattr``): code compiled ahead of time for exactly them, the host's or another machine's.

The ExecutionEngine always compiles for the CPU it runs on, so these targets take the
toolchain of :mod:`.toolchain` instead: the ``mlcir-cpu`` pipeline without OpenMP (parallel
loops run serially: no OpenMP runtime is shipped for other machines), then LLVM IR, ``opt``,
``llc`` (with ``-fp-contract=fast``: multiply-adds become FMAs) and ``zig cc``. The library links only libc and libm (:file:`memref_copy.c` stands in
for the MLIR runner utilities). A library for this machine's architecture is loaded with
ctypes like any saved model; one for another runs there, or here under emulation
(:mod:`.remote`).
"""

from __future__ import annotations

import functools
import tempfile
from importlib import resources
from pathlib import Path
from typing import Any, Callable

from mlir import ir

from mlcir.errors import BuildError, LoadError
from mlcir.passes.pipelines import cpu_bufferize, cpu_to_llvm, entry_points
from mlcir.runtime.aot import library_shim
from mlcir.runtime.c_interface import interface_source
from mlcir.runtime.compile import PreparedModule
from mlcir.runtime.executable import Executable
from mlcir.runtime.model_file import (LIBRARY, CompiledLibrary, SavedModel, metadata,
                                      write_model)
from mlcir.runtime.signature import Signature
from mlcir.schedule import Schedule
from mlcir.target import Target

from ..cpu import CpuBackend
from ..cpu.backend import cpu_kernels
from ..cpu.defaults import default_schedule
from ..cpu.space import cpu_space
from ..plan import BuildPlan
from ..space_rules import SpaceFn
from .toolchain import emit_object, link_library


def serial_pipeline() -> str:
    """``mlcir-cpu``'s codegen with ``scf.forall`` loops run serially instead of on OpenMP
    threads."""
    steps = [("scf-forall-to-for" if step == "scf-forall-to-parallel" else step)
             for step in cpu_to_llvm(0) if not step.startswith("convert-scf-to-openmp")]
    return ", ".join(entry_points() + cpu_bufferize() + steps)


def target_section(target: Target) -> dict[str, Any]:
    """What ``metadata.json`` records of the machine the code is for (its ``cpu`` section)."""
    options = dict(target.options)
    return {"triple": target.triple, "cpu": options.get("mcpu", "generic"),
            "features": [f for f in options.get("mattr", "").split(",") if f]}


def _cpu_features(target: Target) -> list[str]:
    """The CPU features the loader checks (``/proc/cpuinfo`` names): those ``-mattr`` adds."""
    return sorted(f[1:] for f in target_section(target)["features"] if f.startswith("+"))


def _platform(target: Target) -> dict[str, str]:
    return {"system": "Linux", "machine": target.triple.split("-")[0]}


class CrossBackend:
    """Ahead-of-time code for a named triple, CPU or features (see the module docstring)."""

    kind = "llvm"

    def _check(self, target: Target) -> None:
        if target.threads > 1:
            raise BuildError(f"target '{target}': -threads={target.threads} with -mtriple, "
                             "-mcpu or -mattr is not supported: these libraries are "
                             "single-threaded (no OpenMP runtime ships for other machines)")

    def plan(self, target: Target, layout: str = "packed", profile: bool = False) -> BuildPlan:
        """The CPU's plan for the named CPU's vectors, lowered without OpenMP."""
        if profile:
            raise BuildError(f"profiling builds are for the host CPU (target 'llvm'), not "
                             f"'{target}'")
        self._check(target)
        return BuildPlan(target, layout, cpu_kernels(target, layout), serial_pipeline(),
                         functools.partial(default_schedule, target=target, materialize=False))

    def _library(self, prepared: PreparedModule, target: Target) -> CompiledLibrary:
        """Link the lowered ``prepared.work`` into a shared library for ``target``."""
        self._check(target)
        work, sigs, libs, externs = prepared
        with tempfile.TemporaryDirectory(prefix="mlcir-cross-") as tmp:
            folder = Path(tmp)
            obj = folder / "model.o"
            emit_object(work, target, obj)
            interface = folder / "interface.c"
            interface.write_text(interface_source(
                sigs, [name for name, _ in libs.values()], str(target),
                packed_wrappers=True))
            sources = [obj, interface, Path(str(resources.files(__package__) / "memref_copy.c"))]
            if libs:
                shim = folder / "library_shim.c"
                shim.write_text(library_shim([(s, len(specs)) for s, (_, specs) in libs.items()]))
                sources.append(shim)
            flags: list[str] = []
            if externs:  # the UMA backends' C code, compiled for the target (docs/uma.md)
                sources += [Path(s) for s in externs.write_sources(folder)]
                flags = externs.compile_flags() + externs.link_flags()
            out = folder / LIBRARY
            link_library(target, sources, out, *flags)
            return CompiledLibrary(out.read_bytes(), _cpu_features(target),
                                   {"cpu": target_section(target)})

    def _metadata(self, prepared: PreparedModule, target: Target,
                  library: CompiledLibrary) -> dict[str, Any]:
        return metadata(prepared.signatures, prepared.libraries, target, library,
                        platform=_platform(target))

    def compile(self, prepared: PreparedModule, target: Target, *,
                keep: Any = None) -> Executable:
        """The library for ``target``, loaded here when this machine runs its code."""
        if not target.runs_here:
            raise BuildError(f"target '{target}' compiles for {target.triple}, which this "
                             "machine cannot run: write a saved model instead (mlcir.compile, "
                             "`mlcir compile`) and run it there, or here under emulation "
                             "(`mlcir run`)")
        library = self._library(prepared, target)
        meta = self._metadata(prepared, target, library)
        executable = self.load(Path("<build>"), target, meta, library.data)
        executable.keep_alive.append(keep)
        executable.lowered = prepared.work
        return executable

    def compile_to_file(self, prepared: PreparedModule, target: Target,
                        path: Path) -> SavedModel:
        library = self._library(prepared, target)
        meta = self._metadata(prepared, target, library)
        write_model(path, meta, library.data)
        return SavedModel(path, meta, prepared.signatures, prepared.work)

    def saved_library(self, executable: Executable) -> CompiledLibrary:
        """Executables of this backend always carry their library (saved unchanged)."""
        raise BuildError(f"target '{executable.target}': no library to save")

    def load(self, path: Path, target: Target, meta: dict[str, Any],
             library: bytes) -> Executable:
        """A library for this machine's architecture, loaded as the host backend loads one."""
        if not target.runs_here:
            raise LoadError(f"{path}: compiled for {target.triple} (target '{target}'), which "
                            "this machine cannot run; run it there, or here under emulation "
                            "with `mlcir run`")
        return CpuBackend().load(path, target, meta, library)

    def design_space(self, target: Target) -> SpaceFn:
        return cpu_space(target)

    def default_schedule(self, kernel: ir.Module, target: Target) -> Schedule:
        """The CPU rules with the facts of the CPU the target names (NEON/SVE registers and
        vector width from ``-mtriple``/``-mcpu``/``-mattr``, :mod:`..cpu.facts`)."""
        return default_schedule(kernel, target)

    def build_candidate(self, scheduled: ir.Module, target: Target,  # noqa: ARG002
                        out_path: str) -> None:  # noqa: ARG002 - the protocol's signature
        self.require_runner(target)

    def open_candidate(self, so_path: str,
                       signature: Signature) -> tuple[Any, Callable[[Any], None]]:
        raise BuildError(f"{so_path}: cannot measure {signature.name}: tuning is not "
                         "supported for targets naming -mtriple, -mcpu or -mattr")

    def runner_threads(self, target: Target) -> int:  # noqa: ARG002 - the protocol's signature
        return 1

    def require_runner(self, target: Target) -> None:
        """Tuning measures candidates built by the JIT's toolchain for this CPU: not (yet) for
        a named triple, CPU or features."""
        raise BuildError(f"target '{target}': tuning is not supported for targets naming "
                         "-mtriple, -mcpu or -mattr; tune for 'llvm' on the machine itself")
