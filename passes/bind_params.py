"""``graph-bind-params``: bind function parameters to constant arrays (Relax's BindParams).

A graph function's weights are ordinary arguments (named by ``graph.name`` argument
attributes, else ``arg<i>``); binding replaces each named argument by an ``arith.constant``
holding the array and drops it from the signature, so later passes can fold and fuse around
it. Large arrays become ``dense_resource`` blobs (the IR text stays small; the bytes are kept
by the context).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

import numpy as np
from mlir import ir
from mlir.dialects import arith, func

from mlcir.dialects.dtypes import constant_attr, mlir_element_type
from mlcir.dialects.graph import NAME_ATTR
from mlcir.errors import PassError

from .registry import ModulePass, register_pass

def argument_names(fn: func.FuncOp) -> list[str]:
    n = len(fn.arguments)
    names = [f"arg{i}" for i in range(n)]
    if "arg_attrs" in fn.attributes:
        for i, attrs in enumerate(ir.ArrayAttr(fn.attributes["arg_attrs"])):
            d = ir.DictAttr(attrs)
            if NAME_ATTR in d:
                names[i] = ir.StringAttr(d[NAME_ATTR]).value
    return names


def bind_params(module: ir.Module | ir.Operation, params: Mapping[str, np.ndarray],
                func_name: str = "main", *, strict: bool = True) -> None:
    """Replace the arguments of ``func_name`` named in ``params`` by constants, in place."""
    op = module.operation if hasattr(module, "operation") else module
    fn = next((f for f in op.regions[0].blocks[0].operations
               if isinstance(f, func.FuncOp) and f.sym_name.value == func_name), None)
    if fn is None:
        raise PassError(f"graph-bind-params: no function '{func_name}'")
    names = argument_names(fn)
    unknown = sorted(set(params) - set(names))
    if unknown and strict:
        raise PassError(f"graph-bind-params: '{func_name}' has no parameter named "
                        f"{', '.join(unknown)} (parameters: {', '.join(names)})")
    entry = fn.regions[0].blocks[0]
    fn_type = ir.FunctionType(fn.attributes["function_type"].value)
    arg_attrs = list(ir.ArrayAttr(fn.attributes["arg_attrs"])) if "arg_attrs" in fn.attributes else None
    keep = []
    with ir.InsertionPoint.at_block_begin(entry), fn.location:
        for i, name in enumerate(names):
            if name not in params:
                keep.append(i)
                continue
            arg = entry.arguments[i]
            array = np.asarray(params[name])
            want = ir.RankedTensorType(arg.type)
            got_shape = list(array.shape)
            if got_shape != list(want.shape) or mlir_element_type(array.dtype) != want.element_type:
                raise PassError(f"graph-bind-params: parameter '{name}' of '{func_name}' is "
                                f"{want}, the array is {array.dtype}{got_shape}")
            value = arith.ConstantOp(arg.type, constant_attr(array)).result
            arg.replace_all_uses_with(value)
    for i in reversed(range(len(names))):
        if i not in keep:
            entry.erase_argument(i)
    fn.attributes["function_type"] = ir.TypeAttr.get(
        ir.FunctionType.get([fn_type.inputs[i] for i in keep], list(fn_type.results)))
    if arg_attrs is not None:
        fn.attributes["arg_attrs"] = ir.ArrayAttr.get([arg_attrs[i] for i in keep])


@register_pass
@dataclass
class BindParams(ModulePass):
    name = "graph-bind-params"
    summary = "Bind parameters of a graph function to the arrays of an .npz file"
    file: str = ""
    func: str = "main"

    def run(self, module: ir.Operation) -> None:
        if not self.file:
            raise PassError("graph-bind-params needs file=<params.npz>")
        path = Path(self.file)
        if not path.exists():
            raise PassError(f"graph-bind-params: no such file {path}")
        with np.load(path) as data:
            bind_params(module, {k: data[k] for k in data.files}, self.func)
