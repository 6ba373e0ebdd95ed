"""Timing the kernels alone (GPU only): :func:`time_device` calls ``<name>__device`` on device
buffers, without the host↔device copies every call of ``<name>`` makes;
``bench/cuda_matmul.py`` uses it."""

from __future__ import annotations

import ctypes
import functools
from typing import Any, Sequence

import numpy as np

from mlcir.runtime.evaluator import time_calls
from mlcir.runtime.memref import aligned_empty, descriptor_type

from .driver import cuda_runtime_library, require_driver
from .library import DEVICE_SUFFIX


@functools.lru_cache(maxsize=1)
def _runtime() -> ctypes.CDLL:
    require_driver()
    lib = ctypes.CDLL(cuda_runtime_library())
    lib.mgpuStreamCreate.restype = ctypes.c_void_p
    lib.mgpuMemAlloc.restype = ctypes.c_void_p
    lib.mgpuMemAlloc.argtypes = [ctypes.c_uint64, ctypes.c_void_p, ctypes.c_bool]
    lib.mgpuMemFree.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
    lib.mgpuMemcpy.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p]
    lib.mgpuStreamSynchronize.argtypes = [ctypes.c_void_p]
    lib.mgpuStreamDestroy.argtypes = [ctypes.c_void_p]
    return lib


class DeviceArrays:
    """Device copies of numpy arrays (through the MLIR CUDA runtime), freed by :meth:`free`."""

    def __init__(self, arrays: Sequence[np.ndarray]):
        self.lib = _runtime()
        self.arrays = [np.ascontiguousarray(a) for a in arrays]
        self.stream = self.lib.mgpuStreamCreate()
        self.pointers = []
        for a in self.arrays:
            ptr = self.lib.mgpuMemAlloc(max(a.nbytes, 1), self.stream, False)
            self.lib.mgpuMemcpy(ptr, a.ctypes.data, a.nbytes, self.stream)
            self.pointers.append(ptr)
        self.lib.mgpuStreamSynchronize(self.stream)

    def descriptors(self) -> list[ctypes.Structure]:
        out = []
        for a, ptr in zip(self.arrays, self.pointers):
            desc = descriptor_type(a.ndim, a.dtype.name)()
            desc.allocated = ptr
            desc.aligned = ctypes.cast(ptr, type(desc)._fields_[1][1])
            desc.offset = 0
            if a.ndim:
                desc.shape[:] = a.shape
                desc.strides[:] = [s // a.itemsize for s in a.strides]
            out.append(desc)
        return out

    def read(self, index: int) -> np.ndarray:
        out = np.empty_like(self.arrays[index])
        self.lib.mgpuMemcpy(out.ctypes.data, self.pointers[index], out.nbytes, self.stream)
        self.lib.mgpuStreamSynchronize(self.stream)
        return out

    def free(self) -> None:
        for ptr in self.pointers:
            self.lib.mgpuMemFree(ptr, self.stream)
        self.pointers = []
        self.lib.mgpuStreamDestroy(self.stream)


def time_device(executable: Any, name: str, *inputs: np.ndarray, number: int = 10,
                repeat: int = 5, warmup: int = 2) -> Any:
    """Time the kernels of ``name`` alone: ``<name>__device`` called on device buffers (the
    inputs copied once, outputs allocated on the device). Returns a ``TimingResult`` and the
    outputs read back after the last call, ``(timing, outputs)``."""
    sig = executable.signatures[name]
    outputs = [aligned_empty(r.shape, r.dtype) for r in sig.results]
    buffers = DeviceArrays(list(inputs) + outputs)
    try:
        raw = executable.engine.lookup(name + DEVICE_SUFFIX)
        descs = buffers.descriptors()
        pointers = [ctypes.pointer(d) for d in descs]
        packed = (ctypes.c_void_p * len(pointers))()
        for i, p in enumerate(pointers):
            packed[i] = ctypes.cast(ctypes.pointer(p), ctypes.c_void_p)

        def call() -> None:
            raw(packed)  # the device function synchronises its stream before returning

        timing = time_calls(call, number=number, repeat=repeat, warmup=warmup)
        results = [buffers.read(len(inputs) + i) for i in range(len(outputs))]
    finally:
        buffers.free()
    return timing, results
