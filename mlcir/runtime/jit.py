"""JIT compilation of an LLVM-dialect module with the MLIR ExecutionEngine.

Library declarations are bound to their Python functions *before* the first lookup (the
engine resolves symbols then), and the runtime libraries the lowered code calls are loaded
(``memrefCopy`` from the C runner utils; OpenMP for parallel loops).
"""

from __future__ import annotations

import ctypes
from typing import Any, Sequence

import numpy as np
from mlir import ir
from mlir.execution_engine import ExecutionEngine

from mlcir.dialects.dtypes import numpy_dtype
from mlcir.errors import BuildError
from mlcir.paths import openmp_library, runtime_library

from .library import CallbackErrors, make_callback


def shared_libraries(extra: Sequence[str] = ()) -> list[str]:
    """The runtime libraries compiled code may call, then ``extra`` ones (the CUDA runtime)."""
    libs = [runtime_library("libmlir_c_runner_utils.so"), runtime_library("libmlir_runner_utils.so")]
    try:
        libs.append(openmp_library())
    except FileNotFoundError:
        pass
    return libs + list(extra)


def create_engine(module: ir.Module, *, opt_level: int,
                  libraries: dict[str, tuple[str, list[tuple[int, np.dtype]]]],
                  errors: CallbackErrors, externs: dict[str, int] | None = None
                  ) -> tuple[ExecutionEngine, list[Any]]:
    """An engine for ``module`` with each library declaration (``symbol -> (library name,
    argument specs)``) bound; returns the engine and the callbacks, which must stay alive as
    long as it. ``externs`` binds each external declaration's symbol to its adapter's address
    (UMA, :mod:`.externs`): by address, not by name, so that two models' adapters of the same
    name never meet."""
    try:
        engine = ExecutionEngine(module, opt_level=opt_level, shared_libs=shared_libraries())
    except Exception as error:  # noqa: BLE001 - the bindings raise RuntimeError with LLVM's message
        raise BuildError(f"JIT compilation failed: {error}") from None
    callbacks = []
    for symbol, (name, specs) in libraries.items():
        callback = make_callback(name, specs, errors)
        engine.register_runtime(symbol, callback)
        callbacks.append(callback)
    for symbol, address in (externs or {}).items():
        engine.raw_register_runtime("_mlir_ciface_" + symbol, ctypes.c_void_p(address))
    return engine, callbacks


def memref_specs(types: list[ir.Type]) -> list[tuple[int, np.dtype]]:
    specs = []
    for t in types:
        st = ir.ShapedType(t)
        specs.append((st.rank, numpy_dtype(st.element_type)))
    return specs
