"""The kernels of a module at the ``kernels`` stage, as a build schedules them and tuning
measures them: each a standalone module whose function is ``main`` (so a workload does not
depend on the name the lowering gave it), identified by the hash of its text."""

from __future__ import annotations

import hashlib
import math

from mlir import ir
from mlir.dialects import func, tensor

from mlcir.dialects.loop import KERNEL_ATTR, iterator_kinds, linalg_ops, loop_extents
from mlcir.ir import clone_module
from mlcir.passes.graph_to_loop import linalg_outputs


def canonical_text(module: ir.Module) -> str:
    """The kernel's text in generic form without locations: independent of the platform,
    Python's hash seed and the SSA names the author wrote."""
    return module.operation.get_asm(print_generic_op_form=True, enable_debug_info=False,
                                    assume_verified=True)


# Function attributes that say how tuning measures a kernel, not what it computes (the sizes a
# dynamic kernel is timed at): left out of its workload hash.
MEASUREMENT_ATTR_PREFIX = "tune."


def workload_hash(module: ir.Module) -> str:
    """The key of a workload in tuning records (measurement attributes left out)."""
    return hashlib.sha256(canonical_text(_without_measurement(module)).encode()).hexdigest()[:24]


def _without_measurement(module: ir.Module) -> ir.Module:
    fns = [op for op in module.body.operations if op.operation.name == "func.func"]
    if not any(a.startswith(MEASUREMENT_ATTR_PREFIX) for fn in fns for a in fn.attributes):
        return module
    module = clone_module(module)
    for fn in module.body.operations:
        if fn.operation.name == "func.func":
            for name in [a for a in fn.attributes if a.startswith(MEASUREMENT_ATTR_PREFIX)]:
                del fn.attributes[name]
    return module


def kernel_functions(module: ir.Module) -> list[func.FuncOp]:
    return [op for op in module.body.operations
            if isinstance(op, func.FuncOp) and KERNEL_ATTR in op.attributes and op.regions[0].blocks]


def extract_kernel(fn: func.FuncOp) -> ir.Module:
    """A module holding a copy of kernel ``fn`` as the public function ``main``."""
    module = ir.Module.create(loc=fn.location)
    with ir.InsertionPoint(module.body):
        copy = fn.operation.clone()
    copy.attributes["sym_name"] = ir.StringAttr.get("main")
    if "sym_visibility" in copy.attributes:
        del copy.attributes["sym_visibility"]
    return module


def _only_destination(value: ir.Value) -> bool:
    """Whether every use of ``value`` is as a destination: the ``outs`` (``init``) of a linalg
    op, the tensor a ``tensor.insert_slice`` writes into, or a slice or reshaped view of it
    used so (a padding's border strips, a layout change's merged ``H*W``)."""
    uses = list(value.uses)
    return bool(uses) and all(_writes_into(use.owner, use.operand_number) for use in uses)


def _writes_into(op: ir.OpView, operand: int) -> bool:
    if op.name == "tensor.insert_slice":
        return operand == 1
    if op.name in ("tensor.extract_slice", "tensor.collapse_shape", "tensor.expand_shape"):
        return _only_destination(op.results[0])
    outputs = linalg_outputs(op.operation)  # destinations are a linalg op's last operands
    return outputs is not None and operand >= len(op.operands) - len(outputs)


def workload_kernel(kernel: ir.Module) -> ir.Module:
    """The kernel as tuning measures it: its destination arguments (the last ones, one per
    result, only ever written; mlcir's kernels are destination-passing) become
    ``tensor.empty`` inside. Measured as a public function, a destination argument is a
    read-only caller array that bufferization must copy into a new buffer and back out; a
    ``tensor.empty`` is allocated straight into the result (a result that is a reshaped view
    of it, a layout change's, is still copied out once). The blocks, and so the schedules,
    are the same in both forms; ``kernel`` is left as it is."""
    module = clone_module(kernel)
    fn = next(op for op in module.body.operations if isinstance(op, func.FuncOp))
    fn_type = ir.FunctionType(fn.attributes["function_type"].value)
    results, inputs = list(fn_type.results), list(fn_type.inputs)
    entry = fn.regions[0].blocks[0]
    n = len(results)
    if not n or len(inputs) < n or [str(t) for t in inputs[-n:]] != [str(t) for t in results]:
        return module
    dests = list(entry.arguments)[-n:]
    if not all(_only_destination(a) and ir.RankedTensorType(a.type).has_static_shape
               for a in dests):
        return module
    with ir.InsertionPoint.at_block_begin(entry), fn.location:
        for arg in dests:
            t = ir.RankedTensorType(arg.type)
            arg.replace_all_uses_with(tensor.EmptyOp(t.shape, t.element_type).result)
    for index in reversed(range(len(inputs) - n, len(inputs))):
        entry.erase_argument(index)
    fn.attributes["function_type"] = ir.TypeAttr.get(ir.FunctionType.get(inputs[:-n], results))
    if "arg_attrs" in fn.attributes:
        fn.attributes["arg_attrs"] = ir.ArrayAttr.get(
            list(ir.ArrayAttr(fn.attributes["arg_attrs"]))[:-n])
    return module


def flops(module: ir.Module) -> float:
    """Operations of a kernel: 2 per multiply-add of a reduction block, 1 per element else."""
    total = 0.0
    for fn in module.body.operations:
        if not isinstance(fn, func.FuncOp):
            continue
        for op in linalg_ops(fn.operation):
            extents = [e or 1 for e in loop_extents(op)]
            per = 2.0 if "reduction" in iterator_kinds(op) else 1.0
            if op.name == "linalg.fill":
                per = 0.0
            total += per * math.prod(extents)
    return total
