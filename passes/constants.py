"""Constant tensors of a graph module as numpy arrays, and back (used by the graph passes).

A graph constant is an ``arith.constant`` holding a dense elements attribute (``dense<…>``,
splat or not) or a ``dense_resource`` blob (what ``graph-bind-params`` makes of large
weights). The bindings read dense attributes through the buffer protocol but have no reader
for resource blobs, so a blob is read from the printed form of a module holding only a copy
of its constant (the ``dialect_resources`` section: a 4-byte alignment, then the raw bytes).
"""

from __future__ import annotations

import re

import numpy as np
from mlir import ir
from mlir.dialects import arith

from mlcir.dialects.dtypes import (RESOURCE_THRESHOLD, constant_attr, mlir_element_type,
                                  numpy_dtype, resource_array)



def is_constant(value: ir.Value) -> bool:
    """Whether ``value`` is the result of an ``arith.constant`` with a tensor type."""
    owner = value.owner
    return (isinstance(owner, (ir.Operation, ir.OpView)) and owner.name == "arith.constant"
            and isinstance(value.type, ir.RankedTensorType))


def constant_array(value: ir.Value) -> np.ndarray | None:
    """The array held by the constant ``value``, or None if it is not a readable constant."""
    if not is_constant(value):
        return None
    t = ir.RankedTensorType(value.type)
    try:
        dtype = numpy_dtype(t.element_type)
    except TypeError:
        return None
    attr = value.owner.attributes["value"]
    if str(attr).startswith("dense_resource<"):  # the bindings do not downcast these
        held = resource_array(attr)
        if held is not None:  # a blob constant_attr made: its array, read-only, not a copy
            view = held.view()
            view.flags.writeable = False
            return view
        return read_resource(value.owner, t.shape, dtype)
    if not isinstance(attr, ir.DenseElementsAttr):
        return None
    dense = ir.DenseElementsAttr(attr)
    if dense.is_splat:
        scalar = dense.get_splat_value()
        scalar = ir.FloatAttr(scalar).value if dtype.kind == "f" else ir.IntegerAttr(scalar).value
        return np.full(t.shape, scalar, dtype=dtype)
    return np.array(dense, dtype=dtype, copy=True).reshape(t.shape)


def read_resource(op: ir.OpView | ir.Operation, shape: list[int],
                  dtype: np.dtype) -> np.ndarray | None:
    """The array of ``shape`` in the resource blob that ``op`` (a constant or a global) holds,
    read from its printed form (None when it is not there or has another size)."""
    holder = ir.Module.create(loc=op.location)
    with ir.InsertionPoint(holder.body):
        op.operation.clone()
    text = str(holder)
    attr = op.attributes["value" if "value" in op.attributes else "initial_value"]
    name = str(attr).split("<", 1)[1].split(">", 1)[0]
    found = re.search(r'(?:^|\s)"?' + re.escape(name) + r'"?\s*:\s*"0x([0-9A-Fa-f]*)"', text)
    if not found:
        return None
    blob = bytes.fromhex(found.group(1))[4:]  # the first 4 bytes give the blob's alignment
    count = int(np.prod(shape, dtype=np.int64))
    if len(blob) != count * dtype.itemsize:
        return None
    return np.frombuffer(blob, dtype=dtype).reshape(shape).copy()


def elements_attr(array: np.ndarray, t: ir.RankedTensorType) -> ir.Attribute:
    """The attribute of a constant of type ``t`` holding ``array``: a splat when every element
    is equal, a resource blob when large (as ``graph-bind-params`` makes them), else inline."""
    array = np.asarray(array, dtype=numpy_dtype(t.element_type)).reshape(t.shape)
    elem = t.element_type
    if array.size > 1 and array.dtype != np.bool_ and np.all(array == array.flat[0]):
        scalar = array.flat[0].item()
        value = (ir.FloatAttr.get(elem, float(scalar)) if array.dtype.kind == "f"
                 else ir.IntegerAttr.get(elem, int(scalar)))
        return ir.DenseElementsAttr.get_splat(t, value)
    stored = _stored_as(array.dtype)
    if array.size >= RESOURCE_THRESHOLD and stored is not None and stored == elem:
        return constant_attr(array)
    data = np.ascontiguousarray(array)
    if array.dtype == np.bool_:
        data = np.packbits(data, bitorder="little")
    return ir.DenseElementsAttr.get(data, type=t)


def _stored_as(dtype: np.dtype) -> ir.Type | None:
    try:
        return mlir_element_type(dtype)
    except TypeError:
        return None


def make_constant(array: np.ndarray, t: ir.Type) -> ir.Value:
    """An ``arith.constant`` of type ``t`` holding ``array``, at the current insertion point."""
    rt = ir.RankedTensorType(t)
    return arith.ConstantOp(rt, elements_attr(array, rt)).result
