"""``graph-lower-library-calls``: calls to library functions become memref calls.

A graph module calls a registered library function (``env.linear``) as
``func.call @"env.linear"(inputs..., destinations...)`` on tensors, the callee being a
declaration marked ``graph.library`` (an external C function of a UMA backend: ``graph.extern``,
lowered the same way). A declaration has no body to bufferize, so this pass gives
it its memref signature (inputs and outputs as arguments, no results, C interface) and rewrites
each call: inputs via ``bufferization.to_buffer``, fresh ``memref.alloc`` outputs, and
``bufferization.to_tensor`` of the outputs for the rest of the program. The runtime binds the
declaration to the Python function (``ExecutionEngine.register_runtime``).
"""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir
from mlir.dialects import bufferization, func, memref

from mlcir.dialects.graph import EXTERN_ATTR, LIBRARY_ATTR

from .graph_to_loop import functions
from .registry import ModulePass, register_pass

C_INTERFACE = "llvm.emit_c_interface"


def memref_of(t: ir.Type) -> ir.Type:
    rt = ir.RankedTensorType(t)
    return ir.MemRefType.get(rt.shape, rt.element_type)


def library_declarations(module: ir.Operation) -> dict[str, func.FuncOp]:
    """Declarations of Python library functions and of external C functions (UMA): both are
    called through their C interface with memrefs."""
    return {fn.sym_name.value: fn for fn in functions(module)
            if LIBRARY_ATTR in fn.attributes or EXTERN_ATTR in fn.attributes}


@register_pass
@dataclass
class LowerLibraryCalls(ModulePass):
    name = "graph-lower-library-calls"
    summary = "Turn calls of Python library functions into memref calls with a C interface"

    def run(self, module: ir.Operation) -> None:
        decls = library_declarations(module)
        if not decls:
            return
        calls: list[func.CallOp] = []

        def visit(op: ir.Operation) -> ir.WalkResult:
            if op.name == "func.call":
                callee = ir.FlatSymbolRefAttr(op.attributes["callee"]).value
                if callee in decls:
                    calls.append(op)
            return ir.WalkResult.ADVANCE

        module.walk(visit)
        for call in calls:
            self._rewrite_call(call)
        for decl in decls.values():
            fn_type = ir.FunctionType(decl.attributes["function_type"].value)
            if not fn_type.results:
                continue  # already lowered
            decl.attributes["function_type"] = ir.TypeAttr.get(
                ir.FunctionType.get([memref_of(t) for t in fn_type.inputs], []))
            decl.attributes[C_INTERFACE] = ir.UnitAttr.get()

    @staticmethod
    def _rewrite_call(call: ir.Operation) -> None:
        results = list(call.results)
        operands = list(call.operands)
        inputs = operands[:len(operands) - len(results)]
        with ir.InsertionPoint(call), call.location:
            buffers = [bufferization.to_buffer(memref_of(v.type), v, read_only=True)
                       for v in inputs]
            outs = [memref.alloc(memref_of(r.type), [], []) for r in results]
            func.CallOp([], call.attributes["callee"], buffers + outs)
            tensors = [bufferization.to_tensor(r.type, o, restrict=True, writable=True)
                       for r, o in zip(results, outs)]
        for old, new in zip(results, tensors):
            old.replace_all_uses_with(new)
        call.erase()
