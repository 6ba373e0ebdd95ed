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


#: Set on some machines so that old OpenBLAS builds stay safe; numpy then runs an older, slower
#: kernel (Haswell instead of SkylakeX: about half the speed). A benchmark removes them from
#: ``os.environ`` before numpy is imported, in its own process only (never in tests or CI).
OVERRIDES = ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")


def describe() -> str:
    """numpy's BLAS as threadpoolctl sees it: library, version, the kernel it chose
    (SkylakeX, Haswell, …) and its threads; flagged when an override is still set."""
    from threadpoolctl import threadpool_info

    infos = [i for i in threadpool_info() if i.get("user_api") == "blas"]
    if not infos:
        return "no BLAS found"
    info = infos[0]
    text = (f"{info.get('internal_api')} {info.get('version')}, kernel "
            f"{info.get('architecture', 'unknown')}, {info.get('num_threads')} threads")
    forced = [f"{name}={os.environ[name]}" for name in OVERRIDES if name in os.environ]
    if forced:
        text += f" (NOT numpy's best kernel: {', '.join(forced)} is set)"
    return text
