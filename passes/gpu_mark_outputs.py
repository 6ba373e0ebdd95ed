"""``mlcir-gpu-mark-outputs``: record how many results each public function returns.

After bufferization, ``buffer-results-to-out-params`` turns the results of a public function
into its last arguments, and nothing in the IR tells them from inputs any more. The device
buffers pass (``mlcir-gpu-device-buffers``) needs to know: an output is only copied back from
the GPU, never copied to it. This pass, run before bufferization, keeps the count as the
function attribute ``mlcir.gpu.outputs``.
"""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir

from .graph_to_loop import functions
from .registry import ModulePass, register_pass

OUTPUTS_ATTR = "mlcir.gpu.outputs"


def is_public(fn: ir.Operation) -> bool:
    if not fn.regions[0].blocks:
        return False
    if "sym_visibility" not in fn.attributes:
        return True
    return ir.StringAttr(fn.attributes["sym_visibility"]).value == "public"


@register_pass
@dataclass
class GpuMarkOutputs(ModulePass):
    name = "mlcir-gpu-mark-outputs"
    summary = "Record the result count of public functions (outputs after bufferization)"

    def run(self, module: ir.Operation) -> None:
        for fn in functions(module):
            if not is_public(fn.operation):
                continue
            fn_type = ir.FunctionType(ir.TypeAttr(fn.attributes["function_type"]).value)
            fn.attributes[OUTPUTS_ATTR] = ir.IntegerAttr.get(ir.IntegerType.get_signless(64),
                                                             len(fn_type.results))
