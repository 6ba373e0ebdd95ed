"""``mlcir-private-symbols``: give every defined private function a symbol no C library has.

Kernels and fused groups are named after their ops (``exp``, ``tanh``, ``erf``, ``sum``…), and
those names become symbols of the object code. LLVM lowers ``math.exp`` on f64 to a call of the
C library's ``exp``, so a kernel named ``exp`` made that call resolve to the kernel itself
(a crash), and ``convert-math-to-libm`` declares ``erf`` with a signature that clashes with a
kernel ``erf``. Renaming every private function with a body to ``mlcir.<name>`` before LLVM
code generation settles this for every name: a symbol with a ``.`` is not a C identifier, so no
C library, runtime library or ``mlcir.h`` function can be defined under it. Names stay readable
above this pass (graph-to-loop's kernels, tuning tasks, schedules); public functions keep the
names the runtime calls, and library declarations the names they are bound by.
"""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir

from .graph_to_loop import functions
from .registry import ModulePass, register_pass

PREFIX = "mlcir."


def object_symbol(name: str) -> str:
    """The object-code symbol of the private function ``name``."""
    return name if name.startswith(PREFIX) else PREFIX + name


@register_pass
@dataclass
class PrivateSymbols(ModulePass):
    name = "mlcir-private-symbols"
    summary = "Rename defined private functions to mlcir.<name> (never a C library symbol)"

    def run(self, module: ir.Operation) -> None:
        fns = functions(module)
        taken = {fn.sym_name.value for fn in fns}
        for fn in fns:
            visibility = fn.attributes["sym_visibility"] if "sym_visibility" in fn.attributes \
                else None
            if visibility is None or ir.StringAttr(visibility).value != "private" \
                    or not fn.regions[0].blocks:
                continue
            old = fn.sym_name.value
            new = object_symbol(old)
            if new == old:
                continue
            if new in taken:
                raise ValueError(f"cannot rename private function '{old}': '{new}' exists")
            ir.SymbolTable.replace_all_symbol_uses(old, new, module)
            fn.attributes["sym_name"] = ir.StringAttr.get(new)
            taken.add(new)
