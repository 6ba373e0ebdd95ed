"""The ``cuda`` backend: what differs for CUDA in compiling, saving, loading and tuning.

- ``mlcir.build(mod, target="cuda")`` → :meth:`CudaBackend.compile`: the ``mlcir-cuda``
  pipeline (passes/pipelines_cuda.py) lowers the module to LLVM host code plus a
  ``gpu.binary`` per kernel, and the ExecutionEngine JITs the host code with the MLIR CUDA
  runtime (``libmlir_cuda_runtime.so``, the ``mgpu*`` functions) loaded; its global
  constructors (``engine.initialize()``) load the kernels into the driver. numpy arrays go in
  and come out: the host function copies them to device buffers and back (see
  ``mlcir-gpu-device-buffers``).
- ``mlcir.compile(mod, "cuda", path)`` → :meth:`CudaBackend.compile_to_file`: the same
  pipeline, then the host code and the embedded kernels into a shared library
  (:func:`~.library.compile_cuda_shared_object`), written as a saved model. No JIT and no
  driver: this works on a machine without a GPU; ``mlcir.load`` runs the file on one
  (:meth:`CudaBackend.load`, :class:`~.library.CudaSharedObject`).
- The tuner's builder makes the same shared library (:meth:`CudaBackend.build_candidate`);
  its runner loads it only after the driver check says the driver is there
  (:meth:`CudaBackend.open_candidate`).
"""

from __future__ import annotations

import functools
import tempfile
from pathlib import Path
from typing import Any, Callable

from mlir import ir
from mlir.execution_engine import ExecutionEngine

from mlcir.errors import BuildError, CudaDriverError, LoadError
from mlcir.passes.pipelines_cuda import cuda_kernels
from mlcir.runtime.compile import PreparedModule
from mlcir.runtime.executable import Executable
from mlcir.runtime.jit import shared_libraries
from mlcir.runtime.library import CallbackErrors
from mlcir.runtime.model_file import (LIBRARY, METADATA, CompiledLibrary, SavedModel, metadata,
                                      model_signatures, write_model)
from mlcir.runtime.signature import Signature
from mlcir.schedule import Schedule
from mlcir.target import Target

from ..plan import BuildPlan
from ..space_rules import SpaceFn
from .codegen import compile_cuda, cuda_metadata, pipeline_for, refuse_libraries
from .driver import (cuda_runtime_library, device_capability, device_problem, driver_problem,
                     require_driver)
from .library import CudaSharedObject, compile_cuda_shared_object, cuda_library
from .space import gpu_space

LOAD_HINT = ("Running it needs an NVIDIA GPU and its driver: copy the file to a machine with "
             "one (docs/cuda.md)")


def _refuse_externs(prepared: PreparedModule) -> None:
    if prepared.externs:
        names = ", ".join(sorted({c.backend for c in prepared.externs.calls}))
        raise BuildError(f"target 'cuda': the module calls external C functions of UMA "
                         f"backend(s) {names}, which run on the CPU; build for 'llvm'")


class CudaBackend:
    """NVIDIA GPUs through gpu/nvvm: kernels to PTX/cubin, host code JIT-compiled or linked
    with the MLIR CUDA runtime."""

    kind = "cuda"

    def plan(self, target: Target, layout: str = "packed", profile: bool = False) -> BuildPlan:
        """The CPU's graph passes with 3x3 convolutions direct (Winograd's transforms are CPU
        vector code in OpenMP loops), kernels left to the GPU mapping, the ``mlcir-cuda``
        codegen."""
        if profile:
            raise BuildError(f"profiling builds are for the host CPU (target 'llvm'), not "
                             f"'{target}'")
        return BuildPlan(target, layout, ", ".join(cuda_kernels(layout)),
                         pipeline_for(target, graph=False),
                         functools.partial(self.default_schedule, target=target))

    def compile(self, prepared: PreparedModule, target: Target, *,
                keep: Any = None) -> Executable:
        """Check the driver and the GPU, JIT the lowered host code with the CUDA runtime."""
        _refuse_externs(prepared)
        work, sigs, libs = prepared.work, prepared.signatures, prepared.libraries
        refuse_libraries(libs)
        require_driver()  # before the engine loads libmlir_cuda_runtime.so, which needs it
        info = cuda_metadata(work, target)
        problem = device_problem(info["arch"], info["binary_format"] or "isa",
                                 device_capability())
        if problem is not None:
            raise BuildError(f"target '{target}': {problem}")
        with work.context:
            try:
                engine = ExecutionEngine(work, opt_level=target.opt_level,
                                         shared_libs=shared_libraries([cuda_runtime_library()]))
                engine.initialize()  # global constructors load the kernels into the driver
            except Exception as error:  # noqa: BLE001 - the bindings raise RuntimeError with LLVM's message
                raise BuildError(f"JIT compilation of the CUDA host code failed: {error}") \
                    from None
        return Executable(sigs, engine, target, CallbackErrors(), keep_alive=[work, keep],
                          lowered=work)

    def compile_to_file(self, prepared: PreparedModule, target: Target,
                        path: Path) -> SavedModel:
        """Compile the lowered ``prepared.work`` into a saved model, with no JIT and no
        driver."""
        _refuse_externs(prepared)
        work, sigs, libs = prepared.work, prepared.signatures, prepared.libraries
        refuse_libraries(libs)
        library = cuda_library(work, target)
        meta = metadata(sigs, libs, target, library)
        write_model(path, meta, library.data)
        return SavedModel(path, meta, sigs, work)

    def saved_library(self, executable: Executable) -> CompiledLibrary:
        """The library of an executable built by the JIT on a GPU machine: its lowered module
        compiled as :meth:`compile_to_file` does."""
        if executable.lowered is None:
            raise BuildError("this cuda executable holds no lowered module to save; compile "
                             "the model with mlcir.compile(model, target, path)")
        return cuda_library(executable.lowered, executable.target)

    def load(self, path: Path, target: Target, meta: dict[str, Any],
             library: bytes) -> Executable:
        """A checked cuda model: the driver and the GPU are checked before the library is
        loaded (its constructors load the kernels into the driver as soon as it is)."""
        sigs = model_signatures(path, meta)
        info = meta.get("cuda")
        if not (isinstance(info, dict) and isinstance(info.get("arch"), str)
                and isinstance(info.get("binary_format"), (str, type(None)))):
            raise LoadError(f"{path}: {METADATA} is corrupt (no valid 'cuda' section)")
        what = f"{path}: the model is compiled for '{target}' and"
        require_driver(what=what, hint=LOAD_HINT)  # the library needs libcuda.so.1
        try:
            problem = device_problem(info["arch"], info["binary_format"] or "isa",
                                     device_capability())
        except BuildError as error:
            raise LoadError(f"{path}: {error}") from None
        if problem is not None:
            raise LoadError(f"{path}: {problem}")
        arities = {name: len(sig.args) + len(sig.results) for name, sig in sigs.items()}
        with tempfile.TemporaryDirectory(prefix="mlcir-load-") as tmp:
            so_path = Path(tmp) / LIBRARY
            so_path.write_bytes(library)
            try:
                lib = CudaSharedObject(so_path, arities, what=what)
                for name in sigs:
                    lib.lookup(name)
            except CudaDriverError:
                raise
            except BuildError as error:
                raise LoadError(f"{path}: {error}") from None
        return Executable(sigs, lib, target, CallbackErrors(), keep_alive=[lib],
                          shared_library=library, saved_metadata=meta)

    def design_space(self, target: Target) -> SpaceFn:
        return gpu_space(target)

    def default_schedule(self, kernel: ir.Module, target: Target) -> Schedule:  # noqa: ARG002 - the protocol's
        """The unscheduled kernel (an empty trace): the ``mlcir-cuda`` pipeline maps its loops
        to blocks and threads by its default mapping, as before default schedules."""
        return Schedule(kernel)

    def build_candidate(self, scheduled: ir.Module, target: Target, out_path: str) -> None:
        """Kernels to PTX/cubin, host code into a shared library: no GPU needed."""
        compile_cuda(scheduled, target)
        compile_cuda_shared_object(scheduled, out_path)

    def open_candidate(self, so_path: str,
                       signature: Signature) -> tuple[Any, Callable[[Any], None]]:
        """The candidate's library and its packed function; a
        :class:`~mlcir.errors.CudaDriverError` with the one-line reason when the driver or a
        GPU is missing (checked before loading: the library needs libcuda.so.1)."""
        problem = driver_problem()
        if problem is not None:
            raise CudaDriverError(problem.summary)
        lib = CudaSharedObject(so_path)
        return lib, lib.packed(signature.name, len(signature.args) + len(signature.results))

    def runner_threads(self, target: Target) -> int:  # noqa: ARG002 - the protocol's signature
        return 1  # the host thread that launches the kernels

    def require_runner(self, target: Target) -> None:
        """Every candidate is measured on the GPU: the driver and a GPU must be here."""
        require_driver(what=f"tuning for {target.kind}",
                       hint="Tuning measures candidates on the GPU; compiling (`mlcir compile "
                            "--target cuda`) needs none")
