"""``mlcir-flatten-globals``: constant globals held in resource blobs become one-dimensional,
and each read of one views it in its shape again (``memref.expand_shape``, free).

Why: MLIR 22.1 translates a global's initial value to LLVM IR as nested arrays with one LLVM
constant per innermost row. A convolution's weights have rows of 1, 3 or 7 elements (a 1x1
convolution's ``2048x512x1x1`` weights became a million one-element arrays), so ResNet-50's
25.5 M weights made 15.9 M LLVM constants, nearly all of its compile time and memory. A
one-dimensional global is a single LLVM constant over the blob's bytes (the figures:
docs/decisions.md#compile-time).

The blob is not copied when :func:`mlcir.dialects.dtypes.constant_attr` made it (the import
and the graph passes do): the flat attribute shares its array. A blob parsed from text is read
once from the printed global. Runs after bufferization (it rewrites ``memref.global``) and
before ``expand-strided-metadata`` (which lowers the views).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from mlir import ir
from mlir.dialects import memref

from mlcir.dialects.dtypes import constant_attr, numpy_dtype, resource_array

from .constants import read_resource
from .registry import ModulePass, register_pass


def _flat_initial_value(global_op: ir.Operation, t: ir.MemRefType) -> ir.Attribute | None:
    """The global's resource blob as a one-dimensional attribute, or None when it has no
    resource initial value or it cannot be read."""
    value = global_op.attributes["initial_value"] if "initial_value" in global_op.attributes \
        else None
    if value is None or not str(value).startswith("dense_resource<"):
        return None
    try:
        dtype = numpy_dtype(t.element_type)
    except TypeError:
        return None
    array = resource_array(value)
    if array is None:
        array = read_resource(global_op, t.shape, dtype)
    if array is None or array.dtype != dtype or array.size != int(np.prod(t.shape)):
        return None
    return constant_attr(array.reshape(-1))


@register_pass
@dataclass
class FlattenGlobals(ModulePass):
    name = "mlcir-flatten-globals"
    summary = ("Make constant resource globals one-dimensional, viewed in their shape where "
               "read (fast LLVM translation of weights)")

    def run(self, module: ir.Operation) -> None:
        shapes: dict[str, ir.MemRefType] = {}
        for op in module.regions[0].blocks[0].operations:
            if op.operation.name != "memref.global" or "constant" not in op.attributes:
                continue
            t = ir.MemRefType(ir.TypeAttr(op.attributes["type"]).value)
            if t.rank < 2 or t != ir.MemRefType.get(t.shape, t.element_type):
                continue  # a scalar, a row already, or a layout or memory space to keep
            flat = _flat_initial_value(op.operation, t)
            if flat is None:
                continue
            op.attributes["initial_value"] = flat
            op.attributes["type"] = ir.TypeAttr.get(
                ir.MemRefType.get([int(np.prod(t.shape))], t.element_type))
            shapes[ir.StringAttr(op.attributes["sym_name"]).value] = t
        if not shapes:
            return
        reads: list[ir.Operation] = []

        def collect(op: ir.Operation) -> ir.WalkResult:
            if op.name == "memref.get_global" \
                    and ir.FlatSymbolRefAttr(op.attributes["name"]).value in shapes:
                reads.append(op)
            return ir.WalkResult.ADVANCE

        module.walk(collect)
        for read in reads:
            name = ir.FlatSymbolRefAttr(read.attributes["name"]).value
            t = shapes[name]
            with ir.InsertionPoint(read), read.location:
                flat = memref.GetGlobalOp(
                    ir.MemRefType.get([int(np.prod(t.shape))], t.element_type), name)
                view = memref.ExpandShapeOp(t, flat.result, [list(range(t.rank))], [],
                                            list(t.shape))
            read.results[0].replace_all_uses_with(view.result)
            read.erase()
