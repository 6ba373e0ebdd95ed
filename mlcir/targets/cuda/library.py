"""CUDA models as shared libraries: built from a lowered module without a driver
(:func:`compile_cuda_shared_object`: LLVM IR → ``llc`` → ``cc -shared``, linked with the MLIR
CUDA runtime), loaded once the driver check passes (:class:`CudaSharedObject`)."""

from __future__ import annotations

import ctypes
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from mlir import ir
from mlir.dialects import llvm

from mlcir.errors import BuildError
from mlcir.paths import llvm_tool, openmp_library, runtime_library
from mlcir.runtime.aot import compiler, link_arguments
from mlcir.runtime.model_file import LIBRARY, CompiledLibrary
from mlcir.target import Target

from .codegen import cuda_metadata
from .driver import cuda_runtime_library, require_driver
from .elf import needed_libraries

DEVICE_SUFFIX = "__device"


def compile_cuda_shared_object(module: ir.Module, path: str | Path, *, opt_level: int = 2) -> Path:
    """A lowered module (LLVM host code + ``gpu.binary``) → a shared library linked with the
    CUDA runtime; works without a driver. The ExecutionEngine is not used: its object file
    drops global constructors (ORC runs them itself), and the kernels are loaded by one
    (``<kernel>_load``, in ``.init_array``, hands the embedded ``<kernel>_binary`` to
    ``mgpuModuleLoad``/``mgpuModuleLoadJIT`` when the library is loaded).

    ``llc`` compiles the host code for the generic CPU of the machine's architecture (no
    ``-mcpu``): it only copies buffers and launches kernels, and the library then runs on any
    host of that architecture. ``-Bsymbolic``: the library's calls to its own functions
    (``_mlir_ciface_main`` → ``main``) never bind to a symbol of the same name elsewhere in
    the process (an executable exporting ``main``, another model)."""
    path = Path(path)
    with module.context:
        text = str(llvm.translate_module_to_llvmir(module.operation))
    with tempfile.TemporaryDirectory(prefix="mlcir-cuda-") as tmp:
        ll, obj = Path(tmp) / "module.ll", Path(tmp) / "module.o"
        ll.write_text(text)
        steps = [[llvm_tool("llc"), f"-O{max(0, min(opt_level, 3))}", "-relocation-model=pic",
                  "-filetype=obj", str(ll), "-o", str(obj)],
                 [compiler(), "-shared", "-Wl,-Bsymbolic", "-o", str(path), str(obj)]
                 + link_arguments()
                 + [cuda_runtime_library(), f"-Wl,-rpath,{Path(cuda_runtime_library()).parent}"]]
        for cmd in steps:
            result = subprocess.run(cmd, capture_output=True, text=True)
            if result.returncode != 0:
                raise BuildError(f"{Path(cmd[0]).name} failed building {path.name}: "
                                 f"{result.stderr.strip()[:2000]}")
    return path


def cuda_library(lowered: ir.Module, target: Target) -> CompiledLibrary:
    """The shared library of a module lowered by ``mlcir-cuda``, with its ``cuda`` section of
    ``metadata.json``. ``llc`` compiles the host code for the generic CPU: no CPU features."""
    with tempfile.TemporaryDirectory(prefix="mlcir-cuda-save-") as tmp:
        path = compile_cuda_shared_object(lowered, Path(tmp) / LIBRARY,
                                          opt_level=target.opt_level)
        return CompiledLibrary(path.read_bytes(), [], {"cuda": cuda_metadata(lowered, target)})


def preload_runtime_libraries(library: bytes) -> None:
    """Load, in the global scope, the MLIR runtime libraries (``libmlir_*.so``, from this
    installation's wheel) and LLVM's OpenMP runtime that ``library`` needs, and only those: its
    run path names the folder of the machine that compiled it, and a library it does not need
    may need others (``libmlir_c_runner_utils.so`` needs the 180 MB ``libMLIR.so``)."""
    for soname in needed_libraries(library):
        try:
            if soname.startswith("libmlir_"):
                ctypes.CDLL(runtime_library(soname), mode=ctypes.RTLD_GLOBAL)
            elif soname == "libomp.so":
                ctypes.CDLL(openmp_library(), mode=ctypes.RTLD_GLOBAL)
        except (FileNotFoundError, OSError) as error:
            raise BuildError(f"the compiled library needs {soname}, which cannot be loaded: "
                             f"{error}") from None


class CudaSharedObject:
    """A library made by :func:`compile_cuda_shared_object`, loaded once the driver check
    passes (loading it runs the constructors that load the kernels into the driver).

    It has the C interface ``_mlir_ciface_<name>`` but not the packed wrappers the
    ExecutionEngine adds; :meth:`packed` supplies the packed calling convention
    (``fn(void **args)``) that :class:`~mlcir.runtime.Function` uses, and :meth:`lookup` (the
    ExecutionEngine's name, so an :class:`~mlcir.runtime.Executable` can hold either) the same
    for the functions of ``arities`` (name → number of memref arguments, results included;
    ``<name>__device`` takes as many as ``<name>``).

    The MLIR runtime libraries it needs (``libmlir_cuda_runtime.so``, by its soname) are loaded
    first from this installation (:func:`preload_runtime_libraries`). ``what`` names the
    library in the missing-driver error."""

    def __init__(self, path: str | Path, arities: dict[str, int] | None = None, *,
                 what: str | None = None):
        self.path = Path(path)
        if what is None:
            require_driver()
        else:
            require_driver(what=what, hint="Running it needs an NVIDIA GPU and its driver: "
                                           "copy the file to a machine with one (docs/cuda.md)")
        self.arities = dict(arities or {})
        try:
            preload_runtime_libraries(self.path.read_bytes())
        except OSError as error:
            raise BuildError(f"cannot read compiled library {self.path}: {error}") from None
        try:
            self._lib = ctypes.CDLL(str(self.path))
        except OSError as error:
            raise BuildError(f"cannot load compiled library {self.path}: {error}") from None

    def packed(self, name: str, count: int) -> Any:
        """A packed-convention callable for ``name`` taking ``count`` memref descriptors."""
        symbol = f"_mlir_ciface_{name}"
        if not hasattr(self._lib, symbol):
            raise BuildError(f"{self.path.name} has no compiled function '{name}'")
        fn = getattr(self._lib, symbol)
        fn.argtypes = [ctypes.c_void_p] * count
        fn.restype = None
        pointer = ctypes.POINTER(ctypes.c_void_p)

        def call(packed: Any) -> None:
            fn(*[ctypes.cast(packed[i], pointer).contents.value for i in range(count)])

        return call

    def lookup(self, name: str) -> Any:
        base = name.removesuffix(DEVICE_SUFFIX)
        if base not in self.arities:
            raise BuildError(f"{self.path.name}: no signature for function '{base}'")
        return self.packed(name, self.arities[base])
