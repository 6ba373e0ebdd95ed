"""``mlcir-distinct-results``: a function never returns the same buffer twice.

A model may have two outputs that are one value (an ONNX Slice over the whole range folds
to its input; a cast there and back is no kernel at all), and both are outputs. Each result
becomes its own out-parameter, and ``buffer-results-to-out-params`` aborts the process on a
buffer returned twice (docs/decisions.md#distinct-results). Every repeated occurrence of a
value in a ``func.return`` becomes a copy: on tensors (``bufferization.alloc_tensor ... copy``,
before bufferization) and again on memrefs (``memref.alloc`` + ``memref.copy``, right before
``buffer-results-to-out-params``: bufferization finds kernels whose result is their input).
Arguments, and constants on tensors, returned twice are left alone: bufferization copies those.
"""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir
from mlir.dialects import arith, bufferization, memref

from .graph_to_loop import functions
from .registry import ModulePass, register_pass


@register_pass
@dataclass
class DistinctResults(ModulePass):
    name = "mlcir-distinct-results"
    summary = "Copy a computed tensor that a function returns more than once"

    def run(self, module: ir.Operation) -> None:
        with module.context:
            for fn in functions(module):
                if fn.regions[0].blocks:
                    for block in fn.regions[0].blocks:
                        ret = block.operations[len(block.operations) - 1]
                        if ret.name == "func.return":
                            _copy_repeats(ret)


def _copy_repeats(ret: ir.Operation) -> None:
    seen: list[ir.Value] = []
    for index, value in enumerate(list(ret.operands)):
        repeated = any(value == earlier for earlier in seen)
        seen.append(value)
        if not repeated or isinstance(value, ir.BlockArgument):
            continue
        with ir.InsertionPoint(ret), ret.location:
            if isinstance(value.type, ir.RankedTensorType):
                if ir.OpResult(value).owner.name == "arith.constant":
                    continue
                copy = bufferization.AllocTensorOp(value.type, [], copy=value).result
            elif isinstance(value.type, ir.MemRefType):
                copy = _memref_copy(value)
            else:
                continue
        ret.operands[index] = copy


def _memref_copy(value: ir.Value) -> ir.Value:
    """A new buffer (identity layout) holding a copy of ``value``."""
    t = ir.MemRefType(value.type)
    sizes = [memref.DimOp(value, arith.ConstantOp(ir.IndexType.get(), i)).result
             for i in range(t.rank) if t.is_dynamic_dim(i)]
    alloc = memref.AllocOp(ir.MemRefType.get(t.shape, t.element_type, memory_space=t.memory_space),
                           sizes, []).result
    memref.CopyOp(value, alloc)
    return alloc
