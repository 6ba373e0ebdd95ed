"""``mlcir-distinct-results``: a function never returns the same computed tensor twice.

A model may have two outputs that are one value (an ONNX Slice over the whole range folds
to its input, and both are outputs). Each result becomes its own out-parameter, and
``buffer-results-to-out-params`` aborts the process on a buffer returned twice
(docs/decisions.md#distinct-results). Every repeated occurrence of a value in a
``func.return`` becomes a copy (``bufferization.alloc_tensor ... copy``). Function arguments and
constants returned twice are left alone: bufferization copies those already.
"""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir
from mlir.dialects import bufferization

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
        if not repeated or not _computed_tensor(value):
            continue
        with ir.InsertionPoint(ret), ret.location:
            copy = bufferization.AllocTensorOp(value.type, [], copy=value)
        ret.operands[index] = copy.result


def _computed_tensor(value: ir.Value) -> bool:
    if not isinstance(value.type, ir.RankedTensorType) or isinstance(value, ir.BlockArgument):
        return False
    return ir.OpResult(value).owner.name != "arith.constant"
