"""numpy dtypes <-> MLIR element types: one table for the whole stack.

An IR helper (it needs only the bindings and numpy), so passes that make constants from arrays,
the frontend and the runtime's memref descriptors all use the same mapping.
"""

from __future__ import annotations

import numpy as np
from mlir import ir

# MLIR element type text -> numpy dtype
_DTYPES = {
    "f16": np.float16, "f32": np.float32, "f64": np.float64,
    "i1": np.bool_, "i8": np.int8, "i16": np.int16, "i32": np.int32, "i64": np.int64,
    "ui8": np.uint8, "ui16": np.uint16, "ui32": np.uint32, "ui64": np.uint64,
    "index": np.int64,
}


def numpy_dtype(element_type: ir.Type | str) -> np.dtype:
    key = str(element_type)
    if key not in _DTYPES:
        raise TypeError(f"no numpy dtype for MLIR element type {key}")
    return np.dtype(_DTYPES[key])


def mlir_element_type(dtype: np.dtype) -> ir.Type:
    """The MLIR element type of a numpy dtype (current context)."""
    dtype = np.dtype(dtype)
    for key, value in _DTYPES.items():
        if np.dtype(value) == dtype and key not in ("index",) and not key.startswith("ui"):
            return ir.Type.parse(key)
    raise TypeError(f"numpy dtype {dtype} has no MLIR element type in mlcir")
