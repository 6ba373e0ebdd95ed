"""Keep the large temporaries of compiled kernels on the heap between calls.

A kernel allocates its temporaries (a padded input, a convolution's deinterleaved phases, an
accumulator) with ``malloc`` and frees them before it returns. glibc serves a block above its
mmap threshold with a fresh ``mmap``, and its threshold moves with the history of the process,
so a call could fault in every page of its temporaries again (measured:
docs/measurements/runtime.md#large-temporaries). Fixing the thresholds once per process (what
``MALLOC_MMAP_THRESHOLD_`` does) keeps freed blocks for the next call, as onnxruntime's arena
does; glibc only, a no-op elsewhere.
"""

from __future__ import annotations

import ctypes
import functools

M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3
MMAP_THRESHOLD_BYTES = 32 << 20  # glibc's largest allowed value on 64-bit
TRIM_THRESHOLD_BYTES = 2 * MMAP_THRESHOLD_BYTES


@functools.cache
def keep_freed_blocks() -> None:
    """Fix glibc's mmap and trim thresholds once per process (module docstring)."""
    mallopt = getattr(ctypes.CDLL(None), "mallopt", None)
    if mallopt is not None:
        mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES)
        mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD_BYTES)
