"""The ``llvm`` backend: the host CPU through LLVM, JIT-compiled by the MLIR ExecutionEngine.

Its build plan (:meth:`CpuBackend.plan`) sizes layouts for the target's vectors
(:mod:`.facts`) and lowers with the ``mlcir-cpu`` codegen; compiling JITs the lowered module; saving links the code the JIT
compiled into a shared library (:mod:`mlcir.runtime.aot`, with the shim that binds library
functions); loading binds the registered library functions to it again. The tuner's builder
links the same kind of library, and its runner loads it with ctypes.
"""

from __future__ import annotations

import functools
import os
import tempfile
from pathlib import Path
from typing import Any, Callable

from mlir import ir

from mlcir.errors import BuildError, LoadError
from mlcir.passes import run_pipeline
from mlcir.passes.pipelines import kernel_passes
from mlcir.runtime.aot import SharedObject, compile_shared_object, compiler, link_shared_object
from mlcir.runtime.c_interface import interface_source
from mlcir.runtime.compile import PreparedModule
from mlcir.runtime.executable import Executable
from mlcir.runtime.externs import build_host_library, load_host_library
from mlcir.runtime.jit import create_engine
from mlcir.runtime.library import CallbackErrors, make_callback
from mlcir.runtime.model_file import (LIBRARY, METADATA, CompiledLibrary, SavedModel,
                                      cpu_features, metadata, model_library_functions,
                                      model_signatures, write_model)
from mlcir.runtime.signature import Signature
from mlcir.schedule import Schedule
from mlcir.target import Target

from ..plan import BuildPlan
from ..space_rules import SpaceFn
from .defaults import default_schedule
from .facts import target_facts
from .space import cpu_space


def cpu_pipeline(target: Target, profile: bool = False) -> str:
    """The codegen pipeline of ``target``: loop-level kernels to the LLVM dialect."""
    return f"mlcir-cpu{{graph=0 threads={target.threads}{' profile=1' if profile else ''}}}"


def cpu_kernels(target: Target, layout: str, winograd: bool = True) -> str:
    """The graph pipeline of ``target``: layouts sized for its vectors of f32."""
    lanes = target_facts(target).lanes(4)
    return ", ".join(kernel_passes(lanes, layout, winograd))


class CpuBackend:
    """The host CPU (its vector extensions), single- or multi-threaded."""

    kind = "llvm"

    def plan(self, target: Target, layout: str = "packed", profile: bool = False) -> BuildPlan:
        """Layouts for the target's vectors, the default schedules of :mod:`.defaults`, the
        ``mlcir-cpu`` codegen (``profile``: with timing hooks)."""
        return BuildPlan(target, layout, cpu_kernels(target, layout),
                         cpu_pipeline(target, profile),
                         functools.partial(default_schedule, target=target, materialize=False))

    def compile(self, prepared: PreparedModule, target: Target, *,
                keep: Any = None) -> Executable:
        """JIT the lowered ``prepared.work``; ``keep`` (the source module) lives as long as
        the executable."""
        work, sigs, libs, externs = prepared
        extern_lib, addresses = None, {}
        if externs:  # the UMA backends' C code, compiled for the JIT to call (docs/uma.md)
            with tempfile.TemporaryDirectory(prefix="mlcir-uma-") as folder:
                path = build_host_library(externs, Path(folder), compiler())
                extern_lib, addresses = load_host_library(externs, path)
        with work.context:
            errors = CallbackErrors()
            engine, callbacks = create_engine(work, opt_level=target.opt_level, libraries=libs,
                                              errors=errors, externs=addresses)
        return Executable(sigs, engine, target, errors,
                          keep_alive=[callbacks, work, keep, extern_lib],
                          libraries=libs, lowered=work, externs=externs or None)

    def compile_to_file(self, prepared: PreparedModule, target: Target,
                        path: Path) -> SavedModel:
        """The JIT's code written as a saved model: exactly :meth:`compile` followed by
        :meth:`Executable.save`."""
        executable = self.compile(prepared, target)
        library = self.saved_library(executable)
        meta = metadata(prepared.signatures, prepared.libraries, target, library)
        write_model(path, meta, library.data)
        return SavedModel(path, meta, prepared.signatures, executable.lowered)

    def saved_library(self, executable: Executable) -> CompiledLibrary:
        """The code the JIT compiled, linked into a shared library with the shim that binds
        library functions and the C interface (mlcir.h); it needs this CPU's vector
        extensions."""
        symbols = [(symbol, len(specs)) for symbol, (_, specs) in executable.libraries.items()]
        with tempfile.TemporaryDirectory(prefix="mlcir-save-") as tmp:
            names = [name for name, _ in executable.libraries.values()]
            path = link_shared_object(executable.engine, Path(tmp) / LIBRARY,
                                      library_symbols=symbols,
                                      function=next(iter(executable.signatures)),
                                      interface=interface_source(executable.signatures, names,
                                                                 str(executable.target)),
                                      externs=executable.externs)
            sections = {"profile": executable.profile_sites} if executable.profile_sites else {}
            return CompiledLibrary(path.read_bytes(), cpu_features(), sections)

    def load(self, path: Path, target: Target, meta: dict[str, Any],
             library: bytes) -> Executable:
        """A checked model's library loaded with ctypes, its library functions bound."""
        sigs = model_signatures(path, meta)
        libs = model_library_functions(path, meta)
        errors = CallbackErrors()
        callbacks = {symbol: make_callback(name, specs, errors)
                     for symbol, (name, specs) in libs.items()}
        # ctypes needs a file to load; once loaded, the file is not needed any more.
        with tempfile.TemporaryDirectory(prefix="mlcir-load-") as tmp:
            so_path = Path(tmp) / LIBRARY
            so_path.write_bytes(library)
            try:
                lib = SharedObject(so_path)
                if sorted(lib.library_symbols()) != sorted(libs):
                    raise LoadError(f"{path}: {LIBRARY} binds library symbols "
                                    f"{lib.library_symbols()}, {METADATA} lists {sorted(libs)}")
                lib.bind_library(callbacks)
                for name in sigs:
                    lib.packed(name)
            except BuildError as error:
                raise LoadError(f"{path}: {error}") from None
        return Executable(sigs, lib, target, errors, keep_alive=[callbacks, lib],
                          libraries=libs, shared_library=library, saved_metadata=meta,
                          profile_sites=meta.get("profile"))

    def design_space(self, target: Target) -> SpaceFn:
        return cpu_space(target)

    def default_schedule(self, kernel: ir.Module, target: Target) -> Schedule:
        """The design space with decisions chosen from the target's facts (:mod:`.defaults`)."""
        return default_schedule(kernel, target)

    def build_candidate(self, scheduled: ir.Module, target: Target, out_path: str) -> None:
        """Lower with the target's pipeline and link a shared library."""
        run_pipeline(scheduled, cpu_pipeline(target))
        compile_shared_object(scheduled, out_path, opt_level=target.opt_level)

    def open_candidate(self, so_path: str,
                       signature: Signature) -> tuple[Any, Callable[[Any], None]]:
        """The candidate's library and its packed function."""
        lib = SharedObject(so_path)
        return lib, lib.packed(signature.name)

    def runner_threads(self, target: Target) -> int:
        """The target's threads, else every core."""
        return target.threads if target.threads > 0 else (os.cpu_count() or 1)

    def require_runner(self, target: Target) -> None:
        """The host CPU runs every candidate."""
