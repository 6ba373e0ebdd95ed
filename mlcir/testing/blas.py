"""Controlling the OpenBLAS that numpy uses, so benchmarks can time numpy with 1 and 2 threads
in the same process and print the kernel ("core") OpenBLAS chose."""

from __future__ import annotations

import ctypes
import functools
import glob
import os

import numpy as np


@functools.lru_cache(maxsize=1)
def _openblas() -> ctypes.CDLL | None:
    libs_dir = os.path.join(os.path.dirname(os.path.dirname(np.__file__)), "numpy.libs")
    for path in glob.glob(os.path.join(libs_dir, "libscipy_openblas*.so*")):
        return ctypes.CDLL(path)
    return None


def _symbol(*names: str):
    lib = _openblas()
    for name in names:
        if lib is not None and hasattr(lib, name):
            return getattr(lib, name)
    return None


def set_threads(threads: int) -> bool:
    """Set OpenBLAS's thread count; False if numpy's OpenBLAS was not found."""
    fn = _symbol("scipy_openblas_set_num_threads64_", "openblas_set_num_threads")
    if fn is None:
        return False
    fn(ctypes.c_int(threads))
    return True


def core_name() -> str:
    """The CPU kernel OpenBLAS selected (SkylakeX, Haswell, …), as OPENBLAS_VERBOSE=2 prints."""
    fn = _symbol("scipy_openblas_get_corename64_", "openblas_get_corename")
    if fn is None:
        return "unknown"
    fn.restype = ctypes.c_char_p
    return fn().decode()
