"""``mlcir.build``: a module (graph level, loop level, or plain upstream MLIR) to an executable.

The driver records the public functions' signatures, applies schedules from tuning records
when given, runs the target's codegen pipeline on a copy of the module, and hands the LLVM
dialect to the runtime's JIT.
"""

from __future__ import annotations

from typing import Any

from mlir import ir
from mlir.dialects import func

from mlcir.dialects.graph import LIBRARY_ATTR, NAME_ATTR
from mlcir.errors import BuildError
from mlcir.ir import clone_module, make_context, parse, verify_module
from mlcir.passes import run_pipeline
from mlcir.runtime import Executable, Signature, TensorArg
from mlcir.runtime.jit import create_engine, memref_specs
from mlcir.runtime.library import CallbackErrors
from mlcir.runtime.memref import numpy_dtype
from mlcir.target import Target


def _names(fn: func.FuncOp, key: str, count: int, prefix: str) -> list[str]:
    names = [f"{prefix}{i}" for i in range(count)]
    if key in fn.attributes:
        for i, attrs in enumerate(ir.ArrayAttr(fn.attributes[key])):
            d = ir.DictAttr(attrs)
            if NAME_ATTR in d:
                names[i] = ir.StringAttr(d[NAME_ATTR]).value
    return names


# Ops that only read the memref operand they are given (anything else counts as a write).
_READS = {"memref.load", "vector.load", "vector.transfer_read", "memref.dim",
          "vector.maskedload", "memref.extract_strided_metadata", "bufferization.to_tensor"}
# Ops whose result aliases their memref operand: follow the result's uses.
_VIEWS = {"memref.subview", "memref.cast", "memref.reinterpret_cast", "memref.collapse_shape",
          "memref.expand_shape", "memref.transpose", "memref.view"}


def _is_written(value: ir.Value, depth: int = 0) -> bool:
    """Whether some use of the memref ``value`` may write it (conservative)."""
    for use in value.uses:
        owner = use.owner
        name = owner.name
        if name in _READS:
            continue
        if name in _VIEWS:
            if depth > 8 or _is_written(owner.results[0], depth + 1):
                return True
            continue
        if name == "memref.copy":
            if use.operand_number == 1:
                return True
            continue
        if name.startswith("linalg."):
            num_inputs = len(owner.opview.inputs) if hasattr(owner.opview, "inputs") else 0
            if use.operand_number >= num_inputs:
                return True
            continue
        return True  # stores, calls and anything unknown may write
    return False


def _tensor_arg(name: str, t: ir.Type, kind: str, fn_name: str) -> TensorArg:
    if not isinstance(t, ir.ShapedType) or not t.has_rank:
        raise BuildError(f"function '{fn_name}': {name} has type {t}; compiled functions take "
                         "ranked tensors or memrefs")
    try:
        dtype = numpy_dtype(t.element_type)
    except TypeError as e:
        raise BuildError(f"function '{fn_name}': {name}: {e}") from None
    shape = tuple(None if t.is_dynamic_dim(i) else t.shape[i] for i in range(t.rank))
    return TensorArg(name, shape, dtype, kind)


def public_functions(module: ir.Module) -> list[func.FuncOp]:
    out = []
    for op in module.body.operations:
        if isinstance(op, func.FuncOp) and op.regions[0].blocks:
            vis = op.attributes["sym_visibility"] if "sym_visibility" in op.attributes else None
            if vis is None or ir.StringAttr(vis).value == "public":
                out.append(op)
    return out


def signatures(module: ir.Module) -> dict[str, Signature]:
    """The numpy-level signature of each public function, read before lowering."""
    sigs = {}
    for fn in public_functions(module):
        name = fn.sym_name.value
        fn_type = ir.FunctionType(fn.attributes["function_type"].value)
        arg_names = _names(fn, "arg_attrs", len(fn_type.inputs), "arg")
        res_names = _names(fn, "res_attrs", len(fn_type.results), "output")
        args = tuple(
            _tensor_arg(n, t, "inout" if isinstance(t, ir.MemRefType) and _is_written(v)
                        else "input", name)
            for n, t, v in zip(arg_names, fn_type.inputs, fn.arguments))
        results = tuple(_tensor_arg(n, t, "output", name)
                        for n, t in zip(res_names, fn_type.results))
        sigs[name] = Signature(name, args, results)
    return sigs


def library_specs(module: ir.Module) -> dict[str, tuple[str, list]]:
    """``symbol -> (library name, [(rank, dtype)])`` of each library declaration's arguments
    (inputs, then one destination per result), read before lowering."""
    specs = {}
    for op in module.body.operations:
        if isinstance(op, func.FuncOp) and LIBRARY_ATTR in op.attributes:
            fn_type = ir.FunctionType(op.attributes["function_type"].value)
            types = list(fn_type.inputs)
            if fn_type.results and len(types) < len(fn_type.results):
                types += list(fn_type.results)
            specs[op.sym_name.value] = (ir.StringAttr(op.attributes[LIBRARY_ATTR]).value,
                                        memref_specs(types))
    return specs


def as_module(mod: Any) -> ir.Module:
    if isinstance(mod, ir.Module):
        return mod
    if isinstance(mod, str):
        ctx = make_context()
        with ctx:
            return parse(mod, source_name="<build>")
    raise TypeError(f"build() takes an ir.Module or MLIR text, got {type(mod).__name__}")


def build(mod: Any, target: "str | Target" = "llvm", *, records: Any = None,
          pipeline: str | None = None) -> Executable:
    """Compile ``mod`` for ``target`` and return an :class:`~mlcir.runtime.Executable`.

    ``mod`` may be a graph-level module, loop-level kernels, or plain upstream MLIR (functions
    on tensors returning results, or on memrefs in destination-passing style). ``records``
    (a tuning database) applies the best recorded schedule of each kernel. ``pipeline``
    replaces the target's default codegen pipeline.
    """
    target = Target.parse(target)
    module = as_module(mod)
    with module.context:
        work = clone_module(module)
        verify_module(work)
        sigs = signatures(work)
        if not sigs:
            raise BuildError("the module has no public function with a body to compile")
        libs = library_specs(work)
        if records is not None:
            from mlcir.tune.apply import apply_records

            apply_records(work, records, target)
        if target.kind != "llvm":
            raise BuildError(f"target '{target.kind}' is not supported by this build")
        run_pipeline(work, pipeline or f"mlcir-cpu{{threads={target.threads}}}")
        errors = CallbackErrors()
        engine, callbacks = create_engine(work, opt_level=target.opt_level, libraries=libs,
                                          errors=errors)
    return Executable(sigs, engine, target, errors, keep_alive=[callbacks, work, module])
