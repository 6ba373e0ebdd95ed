"""``mlcir-entry-points``: prepare the public functions that the runtime calls.

They get ``llvm.emit_c_interface`` (the runtime calls ``_mlir_ciface_<name>`` with memref
descriptors by pointer), and their tensor arguments are marked
``bufferization.writable = false``: those buffers are the caller's numpy arrays, which
compiled code must read and never overwrite (one-shot bufferization copies instead).
"""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir

from .graph_to_loop import functions
from .library_calls import C_INTERFACE
from .registry import ModulePass, register_pass


WRITABLE = "bufferization.writable"


@register_pass
@dataclass
class EntryPoints(ModulePass):
    name = "mlcir-entry-points"
    summary = "Give public functions a C interface and read-only tensor arguments"

    def run(self, module: ir.Operation) -> None:
        for fn in functions(module):
            visibility = fn.attributes["sym_visibility"] if "sym_visibility" in fn.attributes else None
            if visibility is not None and ir.StringAttr(visibility).value != "public":
                continue
            if not fn.regions[0].blocks:
                continue
            fn.attributes[C_INTERFACE] = ir.UnitAttr.get()
            self._read_only_tensor_args(fn)

    @staticmethod
    def _read_only_tensor_args(fn) -> None:
        n = len(fn.arguments)
        old = list(ir.ArrayAttr(fn.attributes["arg_attrs"])) if "arg_attrs" in fn.attributes \
            else [ir.DictAttr.get({})] * n
        new = []
        for arg, attrs in zip(fn.arguments, old):
            entries = {a.name: a.attr for a in ir.DictAttr(attrs)}
            if isinstance(arg.type, ir.RankedTensorType):
                entries[WRITABLE] = ir.BoolAttr.get(False)
            new.append(ir.DictAttr.get(entries))
        fn.attributes["arg_attrs"] = ir.ArrayAttr.get(new)
