"""Thread count of parallel loops: compiled ``scf.forall`` loops run on LLVM's OpenMP runtime.

The count can be fixed at build time (``Target(threads=N)``, which becomes the ``num_threads``
of each parallel region) or set at run time with :func:`set_num_threads` (``omp_set_num_threads``
of the same ``libomp.so`` the compiled code is linked against) or ``OMP_NUM_THREADS``.
"""

from __future__ import annotations

import ctypes
import functools

from mlcir.errors import RuntimeInputError
from mlcir.paths import openmp_library


@functools.lru_cache(maxsize=1)
def _libomp() -> ctypes.CDLL:
    return ctypes.CDLL(openmp_library(), mode=ctypes.RTLD_GLOBAL)


def set_num_threads(threads: int) -> None:
    if isinstance(threads, bool) or not isinstance(threads, int) or threads < 1:
        raise RuntimeInputError(f"threads must be an integer >= 1, got {threads!r}")
    _libomp().omp_set_num_threads(ctypes.c_int(threads))


def get_max_threads() -> int:
    return int(_libomp().omp_get_max_threads())
