"""What every target compiles: a verified copy of a module, its public functions' numpy-level
signatures and its library declarations, all read before lowering (:func:`prepare`).

The target's backend (:mod:`mlcir.targets`) then runs its codegen pipeline on the copy and
JITs it or writes it to a file.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, NamedTuple

from mlir import ir
from mlir.dialects import func

import numpy as np

from mlcir.dialects.graph import (DIMS_ATTR, DTYPE_ATTR, LIBRARY_ATTR, NAME_ATTR,
                                  SPECIALIZES_ATTR)
from mlcir.dialects.dtypes import numpy_dtype
from mlcir.errors import BuildError
from mlcir.ir import clone_module, find_first, located, make_context, parse, verify_module

from .externs import Externs, read_externs
from .jit import memref_specs
from .signature import Signature, TensorArg
from .symbolic_shapes import result_symbols, symbol_name


def _names(fn: func.FuncOp, key: str, count: int, prefix: str
           ) -> list[tuple[str, np.dtype | None]]:
    """Each argument's (or result's) name, and its numpy dtype where ``graph.dtype`` gives it
    (an unsigned integer stored as signless)."""
    names: list[tuple[str, np.dtype | None]] = [(f"{prefix}{i}", None) for i in range(count)]
    if key in fn.attributes:
        for i, attrs in enumerate(ir.ArrayAttr(fn.attributes[key])):
            d = ir.DictAttr(attrs)
            name, dtype = names[i]
            if NAME_ATTR in d:
                name = ir.StringAttr(d[NAME_ATTR]).value
            if DTYPE_ATTR in d:
                dtype = np.dtype(ir.StringAttr(d[DTYPE_ATTR]).value)
            names[i] = (name, dtype)
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


def _tensor_arg(named: tuple[str, np.dtype | None], t: ir.Type, kind: str,
                fn_name: str) -> TensorArg:
    name, stored_as = named
    if not isinstance(t, ir.ShapedType) or not t.has_rank:
        raise BuildError(f"function '{fn_name}': {name} has type {t}; compiled functions take "
                         "ranked tensors or memrefs")
    try:
        dtype = numpy_dtype(t.element_type)
    except TypeError as e:
        raise BuildError(f"function '{fn_name}': {name}: {e}") from None
    if stored_as is not None:
        if stored_as.itemsize != dtype.itemsize or dtype.kind not in "iu":
            raise BuildError(f"function '{fn_name}': {name}: {DTYPE_ATTR} = {stored_as} cannot "
                             f"be stored as {t}")
        dtype = stored_as
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


def _arg_symbols(fn: func.FuncOp, args: list[TensorArg]) -> list[tuple[str | None, ...]]:
    """Each argument's symbol per dynamic dim: its ``graph.dims`` name (an ONNX
    ``dim_param``), else ``<argument>.<axis>`` (a size no other argument shares)."""
    named: list[list[str]] = [[] for _ in args]
    if "arg_attrs" in fn.attributes:
        for i, attrs in enumerate(ir.ArrayAttr(fn.attributes["arg_attrs"])):
            d = ir.DictAttr(attrs)
            if DIMS_ATTR in d:
                named[i] = [ir.StringAttr(s).value for s in ir.ArrayAttr(d[DIMS_ATTR])]
    out = []
    for arg, names in zip(args, named):
        if None not in arg.shape:
            out.append(())
            continue
        out.append(tuple(None if size is not None else symbol_name(
            names[axis] if axis < len(names) and names[axis] else f"{arg.name}.{axis}")
            for axis, size in enumerate(arg.shape)))
    return out


def signatures(module: ir.Module) -> dict[str, Signature]:
    """The numpy-level signature of each public function, read before lowering, with the
    symbols of its dynamic dims (:mod:`mlcir.runtime.symbolic_shapes`)."""
    sigs = {}
    for fn in public_functions(module):
        name = fn.sym_name.value
        fn_type = ir.FunctionType(fn.attributes["function_type"].value)
        arg_names = _names(fn, "arg_attrs", len(fn_type.inputs), "arg")
        res_names = _names(fn, "res_attrs", len(fn_type.results), "output")
        args = [_tensor_arg(n, t, "inout" if isinstance(t, ir.MemRefType) and _is_written(v)
                            else "input", name)
                for n, t, v in zip(arg_names, fn_type.inputs, fn.arguments)]
        results = [_tensor_arg(n, t, "output", name)
                   for n, t in zip(res_names, fn_type.results)]
        arg_symbols = _arg_symbols(fn, args)
        if any(arg_symbols):
            args = [replace(a, symbols=s) for a, s in zip(args, arg_symbols)]
            res_symbols = result_symbols(fn.operation, arg_symbols)
            results = [replace(r, symbols=s) if s and any(s) else r
                       for r, s in zip(results, res_symbols or [()] * len(results))]
        sigs[name] = Signature(name, tuple(args), tuple(results))
    for fn in public_functions(module):
        if SPECIALIZES_ATTR in fn.attributes:
            base = ir.StringAttr(fn.attributes[SPECIALIZES_ATTR]).value
            spec = sigs[fn.sym_name.value]
            if base in sigs:
                sigs[base] = replace(sigs[base], specializations=sigs[base].specializations + (
                    (tuple(a.shape for a in spec.args), spec.name),))
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
    """An ``ir.Module`` from a module or MLIR text (parsed in a new mlcir context)."""
    if isinstance(mod, ir.Module):
        return mod
    if isinstance(mod, str):
        ctx = make_context()
        with ctx:
            return parse(mod, source_name="<build>")
    raise TypeError(f"expected an ir.Module or MLIR text, got {type(mod).__name__}")


def _has_boolean_memref(op: ir.Operation) -> bool:
    types = [r.type for r in op.results]
    for region in op.regions:
        for block in region.blocks:
            types += [a.type for a in block.arguments]
    return any(isinstance(t, ir.MemRefType)
               and isinstance(ir.MemRefType(t).element_type, ir.IntegerType)
               and ir.IntegerType(ir.MemRefType(t).element_type).width == 1 for t in types)


def check_supported_types(module: ir.Module) -> None:
    """Refuse what the codegen pipeline would abort the process on: MLIR 22.1's memref-to-LLVM
    lowering asserts on loads and stores of ``i1`` elements. Boolean *tensors* are stored as
    bytes by ``mlcir-bool-storage``; boolean memrefs written by hand cannot be."""
    op = find_first(module.operation, _has_boolean_memref)
    if op is not None:
        raise BuildError(located(op.location, f"'{op.name}' op uses a boolean (i1) memref, "
                                 "which MLIR 22.1 cannot compile to LLVM (its memref lowering "
                                 "aborts on i1 elements); use i8 memrefs, or i1 tensors "
                                 "(stored as bytes)"))


class PreparedModule(NamedTuple):
    """A verified copy of a module (lowered in place by a backend), with what was read from it
    before lowering."""

    work: ir.Module
    signatures: dict[str, Signature]
    libraries: dict[str, tuple[str, list]]
    externs: Externs = Externs()  # the external C functions it calls (UMA, docs/uma.md)


def prepare(module: ir.Module) -> PreparedModule:
    """A verified copy of ``module`` with its signatures and library declarations."""
    with module.context:
        work = clone_module(module)
        verify_module(work)
        check_supported_types(work)
        sigs = signatures(work)
        if not sigs:
            raise BuildError("the module has no public function with a body to compile")
        return PreparedModule(work, sigs, library_specs(work), read_externs(work))
