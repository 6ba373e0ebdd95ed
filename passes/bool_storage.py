"""``mlcir-bool-storage``: boolean (``i1``) tensors are stored as bytes (``i8``, 0 or 1).

MLIR 22.1's memref-to-LLVM lowering asserts (aborts the process) on loads and stores of
``i1`` elements ("integralElementType.getWidth() >= 8"), and numpy's ``bool_`` is one byte
anyway. So on loop-level kernels, before bufferization and before any schedule, every
``tensor<...xi1>`` becomes ``tensor<...xi8>``: function signatures, calls, views, constants
and empty tensors change type, and scalars convert at the edges where an element is read or
written: a linalg block argument that reads an ``i8`` element is ``arith.trunci``-ed to ``i1``
for the payload, a yielded ``i1`` is ``arith.extui``-ed to ``i8``, and likewise around
``tensor.extract``/``insert``/``from_elements``/``splat``/``pad``. The compiled code then reads
and writes the caller's numpy ``bool_`` arrays as bytes. Anything that still holds an ``i1``
tensor or memref afterwards is refused with a located error rather than reaching the abort.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from mlir import ir
from mlir.dialects import arith

from mlcir.errors import LoweringError
from mlcir.ir import find_first, located

from .registry import ModulePass, register_pass


def _is_i1(t: ir.Type) -> bool:
    return isinstance(t, ir.IntegerType) and ir.IntegerType(t).width == 1


def _bool_shaped(t: ir.Type) -> bool:
    return isinstance(t, (ir.RankedTensorType, ir.MemRefType, ir.UnrankedTensorType)) and \
        _is_i1(ir.ShapedType(t).element_type)


def _bytes_type(t: ir.Type) -> ir.Type:
    """``t`` with ``i1`` elements stored as ``i8`` (other types unchanged)."""
    if isinstance(t, ir.RankedTensorType) and _is_i1(ir.RankedTensorType(t).element_type):
        rt = ir.RankedTensorType(t)
        return ir.RankedTensorType.get(rt.shape, ir.IntegerType.get_signless(8), rt.encoding)
    return t


def _to_bool(value: ir.Value, ip: ir.InsertionPoint, loc: ir.Location) -> ir.Value:
    with ip, loc:
        return arith.trunci(ir.IntegerType.get_signless(1), value)


def _to_byte(value: ir.Value, before: ir.Operation) -> ir.Value:
    with ir.InsertionPoint(before), before.location:
        return arith.extui(ir.IntegerType.get_signless(8), value)


def _read_as_bool(value: ir.Value, after: ir.InsertionPoint, loc: ir.Location) -> None:
    """``value`` (an ``i1`` scalar that now holds a stored byte) becomes ``i8``; its users
    see it truncated back to ``i1``."""
    value.set_type(ir.IntegerType.get_signless(8))
    truncated = _to_bool(value, after, loc)
    value.replace_all_uses_except(truncated, truncated.owner.operation)


def _write_as_byte(op: ir.Operation, index: int) -> None:
    """Operand ``index`` of ``op`` (an ``i1`` scalar stored into an ``i8`` tensor) extended."""
    value = op.operands[index]
    if _is_i1(value.type):
        op.operands[index] = _to_byte(value, op)


def _region_edges(op: ir.Operation, element_operands: list[ir.Value]) -> None:
    """A linalg-like region: block argument ``i`` reads an element of ``element_operands[i]``
    (the op's tensor operands, or scalars), the terminator yields the outputs' elements."""
    block = op.regions[0].blocks[0]
    for arg, operand in zip(block.arguments, element_operands):
        if _is_i1(arg.type) and isinstance(operand.type, ir.RankedTensorType) and \
                not _is_i1(ir.RankedTensorType(operand.type).element_type):
            _read_as_bool(arg, ir.InsertionPoint.at_block_begin(block), op.location)
    terminator = block.operations[len(block.operations) - 1]
    for i in range(len(terminator.operands)):
        _write_as_byte(terminator, i)


def _fix_constant(op: ir.Operation) -> None:
    attr = op.attributes["value"]
    if not isinstance(attr, ir.DenseElementsAttr) or not _bool_shaped(attr.type):
        return
    old = ir.RankedTensorType(attr.type)
    new_type = ir.RankedTensorType.get(old.shape, ir.IntegerType.get_signless(8))
    if attr.is_splat:
        value = bool(ir.IntegerAttr(attr.get_splat_value()).value)
        new = ir.DenseElementsAttr.get_splat(
            new_type, ir.IntegerAttr.get(ir.IntegerType.get_signless(8), int(value)))
    else:
        flat = ir.DenseIntElementsAttr(attr)
        values = np.array([bool(flat[i]) for i in range(len(flat))], np.int8).reshape(old.shape)
        new = ir.DenseElementsAttr.get(values, type=new_type)
    op.attributes["value"] = new


def _fix_function(op: ir.Operation) -> None:
    fn_type = ir.FunctionType(ir.TypeAttr(op.attributes["function_type"]).value)
    inputs = [_bytes_type(t) for t in fn_type.inputs]
    results = [_bytes_type(t) for t in fn_type.results]
    if inputs != list(fn_type.inputs) or results != list(fn_type.results):
        op.attributes["function_type"] = ir.TypeAttr.get(ir.FunctionType.get(inputs, results))


def _fix(op: ir.Operation) -> None:
    name = op.name
    if name == "func.func":
        _fix_function(op)
    elif name == "arith.constant":
        _fix_constant(op)
    for region in op.regions:
        for block in region.blocks:
            for arg in block.arguments:
                if _bool_shaped(arg.type):
                    arg.set_type(_bytes_type(arg.type))
    for result in op.results:
        if _bool_shaped(result.type):
            result.set_type(_bytes_type(result.type))
    if name.startswith("linalg.") and op.regions and op.regions[0].blocks:
        _region_edges(op, list(op.operands))
    elif name == "tensor.extract" and _is_i1(op.results[0].type):
        _read_as_bool(op.results[0], ir.InsertionPoint.after(op), op.location)
    elif name in ("tensor.insert", "tensor.splat"):
        _write_as_byte(op, 0)
    elif name == "tensor.from_elements":
        for i in range(len(op.operands)):
            _write_as_byte(op, i)
    elif name == "tensor.pad" and op.regions[0].blocks:
        _region_edges(op, [])


def _remaining_bool_buffer(op: ir.Operation) -> bool:
    types = [r.type for r in op.results] + [v.type for v in op.operands]
    for region in op.regions:
        for block in region.blocks:
            types += [a.type for a in block.arguments]
    if op.name == "func.func":
        fn_type = ir.FunctionType(ir.TypeAttr(op.attributes["function_type"]).value)
        types += list(fn_type.inputs) + list(fn_type.results)
    return any(_bool_shaped(t) for t in types)


@register_pass
@dataclass
class BoolStorage(ModulePass):
    name = "mlcir-bool-storage"
    summary = ("Store boolean (i1) tensors as bytes (i8 0/1), converting at element reads and "
               "writes (the memref-to-LLVM lowering aborts on i1 elements)")

    def run(self, module: ir.Operation) -> None:
        if find_first(module, _remaining_bool_buffer) is None:
            return
        ops: list[ir.Operation] = []

        def collect(op: ir.Operation) -> ir.WalkResult:
            ops.append(op)
            return ir.WalkResult.ADVANCE

        module.walk(collect, ir.WalkOrder.PRE_ORDER)
        for op in ops:
            _fix(op)
        left = find_first(module, _remaining_bool_buffer)
        if left is not None:
            raise LoweringError(located(left.location, f"'{left.name}' op keeps a boolean (i1) "
                                        "tensor or memref, which the CPU pipeline cannot store "
                                        "(MLIR 22.1's memref lowering aborts on i1 elements); "
                                        "use i8"))
