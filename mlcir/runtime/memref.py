"""numpy arrays <-> MLIR memref descriptors (the C interface of compiled functions).

A ranked memref is passed as a pointer to ``{allocated, aligned, offset, sizes[r], strides[r]}``;
descriptor classes are cached per (rank, element ctype) because building a ctypes Structure
class is slow and calls are hot.
"""

from __future__ import annotations

import ctypes
import functools

import numpy as np


def aligned_empty(shape, dtype, alignment: int = 64) -> np.ndarray:
    """An uninitialised C-contiguous array whose data starts on an ``alignment``-byte boundary
    (numpy's own allocations are only 16-byte aligned, and vector loads that straddle cache
    lines are slower: docs/measurements/runtime.md#alignment)."""
    dtype = np.dtype(dtype)
    shape = tuple(int(d) for d in shape)
    nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    raw = np.empty(nbytes + alignment, np.uint8)
    offset = (-raw.ctypes.data) % alignment
    return raw[offset:offset + nbytes].view(dtype).reshape(shape)


def aligned_array(array: np.ndarray, alignment: int = 64) -> np.ndarray:
    """A 64-byte-aligned C-contiguous copy of ``array``."""
    out = aligned_empty(np.shape(array), np.asarray(array).dtype, alignment)
    out[...] = array
    return out


@functools.lru_cache(maxsize=None)
def descriptor_type(rank: int, dtype_str: str) -> type[ctypes.Structure]:
    # ctypes has no half float: a float16 element is addressed as its 16 bits.
    special = {"bool": ctypes.c_bool, "float16": ctypes.c_uint16}
    elem = special.get(dtype_str) or np.ctypeslib.as_ctypes_type(np.dtype(dtype_str))
    fields = [("allocated", ctypes.c_void_p), ("aligned", ctypes.POINTER(elem)),
              ("offset", ctypes.c_longlong)]
    if rank > 0:
        fields += [("shape", ctypes.c_longlong * rank), ("strides", ctypes.c_longlong * rank)]
    return type(f"MemRef{rank}D_{dtype_str}", (ctypes.Structure,), {"_fields_": fields})


def descriptor(array: np.ndarray) -> ctypes.Structure:
    """A descriptor viewing ``array`` (which must stay alive while it is used)."""
    desc = descriptor_type(array.ndim, array.dtype.name)()
    desc.allocated = array.ctypes.data
    desc.aligned = ctypes.cast(array.ctypes.data, type(desc)._fields_[1][1])
    desc.offset = 0
    if array.ndim:
        desc.shape[:] = array.shape
        desc.strides[:] = [s // array.itemsize for s in array.strides]
    return desc


class _ArrayInterface:
    """Exposes raw memory through ``__array_interface__`` (the cheapest zero-copy view)."""

    __slots__ = ("__array_interface__",)

    def __init__(self, address: int, shape: tuple[int, ...], strides: tuple[int, ...], typestr: str):
        self.__array_interface__ = {"data": (address, False), "shape": shape,
                                    "strides": strides, "typestr": typestr, "version": 3}


def view(desc_ptr, dtype: np.dtype, rank: int) -> np.ndarray:
    """A numpy view of the memory a descriptor pointer describes (no copy)."""
    desc = desc_ptr.contents
    itemsize = dtype.itemsize
    address = (ctypes.cast(desc.aligned, ctypes.c_void_p).value or 0) + desc.offset * itemsize
    if rank == 0:
        return np.asarray(_ArrayInterface(address, (), (), dtype.str))
    strides = tuple(s * itemsize for s in desc.strides)
    return np.asarray(_ArrayInterface(address, tuple(desc.shape), strides, dtype.str))
