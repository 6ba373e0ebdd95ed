"""``mlcir-profile-hooks``: time every call of a public function, for the profiler.

Only in a profiling build (``mlcir.build(..., profile=True)``, ``mlcir compile --profile``):
the normal build never runs this pass and has no hook. Each public function with a body gets
a buffer ``__mlcir_profile_<fn>`` of ``2 * (calls + 1)`` counters: the processor's cycle
counter (``llvm.readcyclecounter``: a few nanoseconds, no call into anything) read on entry
and on return, and before and after every ``func.call`` in it (kernels and library
functions), in program order; the runtime reads the buffer through the public accessor
``__mlcir_profile_buffer_<fn>`` (its address) after a call. The module records each call's
callee and source location in ``mlcir.profile`` (docs/cli.md#profiling). Runs on memrefs,
before the lowering to LLVM.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from mlir import ir
from mlir.dialects import arith, func, memref

from .graph_to_loop import functions
from .registry import ModulePass, register_pass

PROFILE_ATTR = "mlcir.profile"
BUFFER = "__mlcir_profile_{}"
ACCESSOR = "__mlcir_profile_buffer_{}"


@register_pass
@dataclass
class ProfileHooks(ModulePass):
    name = "mlcir-profile-hooks"
    summary = "Read the cycle counter around every call of a public function (profiling)"

    def run(self, module: ir.Operation) -> None:
        table: dict[str, list[dict[str, str]]] = {}
        with module.context, ir.Location.unknown():
            for fn in functions(module):
                visibility = ir.StringAttr(fn.attributes["sym_visibility"]).value \
                    if "sym_visibility" in fn.attributes else "public"
                if visibility != "public" or not fn.regions[0].blocks:
                    continue
                table[fn.sym_name.value] = _instrument(module, fn)
            module.attributes[PROFILE_ATTR] = ir.StringAttr.get(json.dumps(table))


def _calls(fn: func.FuncOp) -> list[ir.Operation]:
    found: list[ir.Operation] = []

    def visit(op: ir.Operation) -> ir.WalkResult:
        if op.name == "func.call":
            found.append(op)
        return ir.WalkResult.ADVANCE

    fn.operation.walk(visit)
    return found


def _instrument(module: ir.Operation, fn: func.FuncOp) -> list[dict[str, str]]:
    name = fn.sym_name.value
    calls = _calls(fn)
    slots = 2 * (len(calls) + 1)
    i64 = ir.IntegerType.get_signless(64)
    buffer_type = ir.MemRefType.get([slots], i64)
    with ir.InsertionPoint.at_block_begin(module.regions[0].blocks[0]):
        memref.GlobalOp(BUFFER.format(name), buffer_type, sym_visibility="public",
                        initial_value=ir.DenseElementsAttr.get_splat(
                            ir.RankedTensorType.get([slots], i64), ir.IntegerAttr.get(i64, 0)))
        accessor = func.FuncOp(ACCESSOR.format(name), ir.FunctionType.get([], [ir.IndexType.get()]))
    with ir.InsertionPoint(accessor.add_entry_block()):
        buffer = memref.GetGlobalOp(buffer_type, BUFFER.format(name)).result
        func.ReturnOp([memref.ExtractAlignedPointerAsIndexOp(buffer).result])

    entry = fn.regions[0].blocks[0]
    with ir.InsertionPoint.at_block_begin(entry):
        buffer = memref.GetGlobalOp(buffer_type, BUFFER.format(name)).result
    first = buffer.owner
    with ir.InsertionPoint.after(first):
        _tick(buffer, 0)
    for i, call in enumerate(calls):
        with ir.InsertionPoint(call):
            _tick(buffer, 2 + 2 * i)
        with ir.InsertionPoint.after(call):
            _tick(buffer, 3 + 2 * i)
    for block in fn.regions[0].blocks:
        ret = block.operations[len(block.operations) - 1]
        if ret.name == "func.return":
            with ir.InsertionPoint(ret):
                _tick(buffer, 1)
    by_name = {f.sym_name.value: f for f in functions(module)}
    return [_site(c, by_name) for c in calls]


def _site(call: ir.Operation, by_name: dict[str, func.FuncOp]) -> dict[str, str]:
    """What the profile shows of a call: callee, the locations of the call and of the
    callee's ops (its ONNX nodes), its destination's shape, and whether it calls a library
    function (a declaration)."""
    callee = ir.FlatSymbolRefAttr(call.attributes["callee"]).value
    shapes = [ir.MemRefType(v.type).shape for v in call.operands
              if isinstance(v.type, ir.MemRefType)]
    shape = "x".join("?" if d < 0 else str(d) for d in shapes[-1]) if shapes else ""
    fn = by_name.get(callee)
    locations = [str(call.location)]
    if fn is not None and fn.regions[0].blocks:
        fn.operation.walk(lambda op: locations.append(str(op.location)) or ir.WalkResult.ADVANCE)
    return {"callee": callee, "location": " ".join(dict.fromkeys(locations)), "shape": shape,
            "library": fn is None or not fn.regions[0].blocks}


def _tick(buffer: ir.Value, slot: int) -> None:
    """Store the cycle counter in ``buffer[slot]``."""
    i64 = ir.IntegerType.get_signless(64)
    ticks = ir.Operation.create("llvm.call_intrinsic", results=[i64], operands=[], attributes={
        "intrin": ir.StringAttr.get("llvm.readcyclecounter"),
        "op_bundle_sizes": ir.DenseI32ArrayAttr.get([]),
        "operandSegmentSizes": ir.DenseI32ArrayAttr.get([0, 0])}).result
    memref.StoreOp(ticks, buffer, [arith.ConstantOp(ir.IndexType.get(), slot).result])
