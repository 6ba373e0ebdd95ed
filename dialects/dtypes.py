"""numpy <-> MLIR: element types, and the attribute that holds an array. One table for the stack.

In the lowest layer (it needs only the bindings and numpy), so the dialects' numpy semantics,
passes that make constants, the frontend and the runtime's memref descriptors all agree.
"""

from __future__ import annotations

import itertools
import weakref

import numpy as np
from mlir import ir

# MLIR element type text -> numpy dtype. The signless ones (and floats) are what a graph
# tensor holds; unsigned and index types appear in memrefs the runtime reads.
_DTYPES = {
    "f16": np.float16, "f32": np.float32, "f64": np.float64,
    "i1": np.bool_, "i8": np.int8, "i16": np.int16, "i32": np.int32, "i64": np.int64,
    "ui8": np.uint8, "ui16": np.uint16, "ui32": np.uint32, "ui64": np.uint64,
    "index": np.int64,
}
# numpy dtype -> the MLIR element type a graph tensor of it has (signless, no index).
_ELEMENT_TYPES = {np.dtype(v): k for k, v in _DTYPES.items()
                  if k != "index" and not k.startswith("ui")}


def numpy_dtype(element_type: ir.Type | str) -> np.dtype:
    """The numpy dtype of an MLIR element type; TypeError when it has none."""
    key = str(element_type)
    if key not in _DTYPES:
        raise TypeError(f"no numpy dtype for MLIR element type {key}")
    return np.dtype(_DTYPES[key])


def mlir_element_type(dtype: np.dtype) -> ir.Type:
    """The MLIR element type of a numpy dtype (current context); TypeError when it has none."""
    key = _ELEMENT_TYPES.get(np.dtype(dtype))
    if key is None:
        raise TypeError(f"numpy dtype {np.dtype(dtype)} has no mlcir element type (supported: "
                        f"{', '.join(str(d) for d in _ELEMENT_TYPES)})")
    return ir.Type.parse(key)


def signless_dtype(dtype: np.dtype) -> np.dtype:
    """The dtype whose MLIR element type stores ``dtype`` in a graph: an unsigned integer is
    stored as the signless (signed numpy) integer of its width, the same bits; others are
    themselves. Ops whose meaning depends on the sign are refused on them at import."""
    dtype = np.dtype(dtype)
    return np.dtype(f"i{dtype.itemsize}") if dtype.kind == "u" else dtype


# Arrays with at least this many elements are stored as resources rather than inline text.
RESOURCE_THRESHOLD = 256
_resource_ids = itertools.count()
# The array behind each live resource blob that constant_attr made, by (context, blob name):
# the bindings cannot read a blob back, and passes that re-type one (mlcir-flatten-globals)
# should neither copy it nor print it. A blob dies with its context, and its entry with it.
_BLOBS: "weakref.WeakValueDictionary[tuple[int, str], np.ndarray]" = weakref.WeakValueDictionary()


def _blob_key(attr: ir.Attribute) -> tuple[int, str]:
    return id(attr.context), str(attr).split("<", 1)[1].split(">", 1)[0].strip('"')


def resource_array(attr: ir.Attribute) -> np.ndarray | None:
    """The array a ``dense_resource`` attribute made by :func:`constant_attr` holds (not a
    copy), or None for any other attribute (a blob parsed from text, say)."""
    if not str(attr).startswith("dense_resource<"):
        return None
    return _BLOBS.get(_blob_key(attr))


def constant_attr(array: np.ndarray) -> ir.Attribute:
    """The elements attribute of a constant holding ``array`` (current context); large arrays
    become ``dense_resource`` blobs, so the IR text stays small."""
    array = np.asarray(array)
    array = np.ascontiguousarray(array).reshape(array.shape)  # ascontiguousarray makes 0-d 1-d
    t = ir.RankedTensorType.get(list(array.shape), mlir_element_type(array.dtype))
    if array.size >= RESOURCE_THRESHOLD and array.dtype != np.bool_:
        held = array.view()  # referenced by the blob alone: its entry in _BLOBS dies with it
        attr = ir.DenseResourceElementsAttr.get_from_buffer(
            held, f"mlcir_param_{next(_resource_ids)}", t, alignment=64)
        _BLOBS[_blob_key(attr)] = held
        return attr
    if array.dtype == np.bool_:
        return ir.DenseElementsAttr.get(np.packbits(array, bitorder="little"), type=t)
    return ir.DenseElementsAttr.get(array, type=t)
