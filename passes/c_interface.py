"""``mlcir-emit-c-interface``: public functions get ``llvm.emit_c_interface``.

The runtime calls compiled functions through their C interface (``_mlir_ciface_<name>``,
memref descriptors by pointer), which the LLVM lowering emits only for functions carrying the
attribute.
"""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir

from .graph_to_loop import functions
from .library_calls import C_INTERFACE
from .registry import ModulePass, register_pass


@register_pass
@dataclass
class EmitCInterface(ModulePass):
    name = "mlcir-emit-c-interface"
    summary = "Mark public functions with llvm.emit_c_interface for the runtime"

    def run(self, module: ir.Operation) -> None:
        for fn in functions(module):
            visibility = fn.attributes["sym_visibility"] if "sym_visibility" in fn.attributes else None
            if visibility is None or ir.StringAttr(visibility).value == "public":
                if fn.regions[0].blocks:
                    fn.attributes[C_INTERFACE] = ir.UnitAttr.get()
