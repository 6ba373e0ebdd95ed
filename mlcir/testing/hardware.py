"""What optional hardware this machine has, for skipping tests that need it."""

from __future__ import annotations

import ctypes
import functools


@functools.lru_cache(maxsize=1)
def cuda_available() -> bool:
    """True when the CUDA driver library loads and reports at least one device."""
    try:
        cuda = ctypes.CDLL("libcuda.so.1")
    except OSError:
        return False
    count = ctypes.c_int(0)
    if cuda.cuInit(0) != 0 or cuda.cuDeviceGetCount(ctypes.byref(count)) != 0:
        return False
    return count.value > 0
