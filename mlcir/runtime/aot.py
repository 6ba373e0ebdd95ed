"""Ahead-of-time compilation: an LLVM-dialect module to a shared library, loaded with ctypes.

The ExecutionEngine compiles the module (the same LLVM settings as the JIT) and writes an ELF
object (``dump_to_object_file``); ``cc -shared`` links it against the MLIR C runner utilities
(``memrefCopy``…) and LLVM's OpenMP runtime. The tuner's builder processes produce these and its
runner process measures them; saved models use them too. Functions are called through their C
interface (``_mlir_ciface_<name>``) with memref descriptors, exactly as the JIT path does.
"""

from __future__ import annotations

import ctypes
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

from mlir import ir
from mlir.execution_engine import ExecutionEngine

from mlcir.errors import BuildError

from .jit import shared_libraries


def compiler() -> str:
    for name in (os.environ.get("CC", ""), "cc", "gcc", "clang"):
        if name and shutil.which(name):
            return shutil.which(name)  # type: ignore[return-value]
    raise BuildError("no C compiler (cc, gcc or clang) found to link the shared library; "
                     "install one or set CC")


def link_arguments() -> list[str]:
    args = []
    for lib in shared_libraries():
        folder = os.path.dirname(lib)
        args += [lib, f"-Wl,-rpath,{folder}"]
    return args


def compile_shared_object(module: ir.Module, path: str | Path, *, opt_level: int = 3) -> Path:
    """Compile an LLVM-dialect ``module`` into the shared library ``path``."""
    path = Path(path)
    obj = path.with_suffix(".o")
    try:
        engine = ExecutionEngine(module, opt_level=opt_level, shared_libs=shared_libraries())
        engine.dump_to_object_file(str(obj))
    except Exception as error:  # the bindings raise RuntimeError with LLVM's message
        raise BuildError(f"code generation failed: {error}") from None
    cmd = [compiler(), "-shared", "-o", str(path), str(obj)] + link_arguments()
    result = subprocess.run(cmd, capture_output=True, text=True)
    obj.unlink(missing_ok=True)
    if result.returncode != 0:
        raise BuildError(f"linking {path.name} failed: {result.stderr.strip()[:2000]}")
    return path


class SharedObject:
    """A loaded shared library of compiled functions."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        try:
            self._lib = ctypes.CDLL(str(self.path))
        except OSError as error:
            raise BuildError(f"cannot load compiled library {self.path}: {error}") from None

    def packed(self, name: str) -> Any:
        """The packed wrapper ``_mlir__mlir_ciface_<name>(void **args)`` — the calling
        convention of ``ExecutionEngine.lookup``, so :class:`~mlcir.runtime.Function` can use
        either."""
        symbol = f"_mlir__mlir_ciface_{name}"
        if not hasattr(self._lib, symbol):
            raise BuildError(f"{self.path.name} has no compiled function '{name}'")
        fn = getattr(self._lib, symbol)
        fn.argtypes = [ctypes.c_void_p]
        fn.restype = None
        return fn
