"""Static specialisations of a graph function with dynamic dims: copies of it for given input
sizes, their types inferred again, beside the dynamic function.

A specialisation ``main__64x784`` of ``main`` is public and marked ``graph.specializes =
"main"``; after lowering it has its own static kernels (which tuning can schedule), and the
runtime dispatches a call of ``main`` to it when the input shapes are its sizes (the
signature lists the specialisations). Every op of the body must have a shape rule: graph ops
(the op table's ``infer``), ``arith.constant`` and ``tensor.concat``.
"""

from __future__ import annotations

from typing import Mapping, Sequence

from mlir import ir
from mlir.dialects import func

from mlcir.dialects import ALL_OPS
from mlcir.dialects.graph import DIMS_ATTR, SPECIALIZES_ATTR
from mlcir.dialects.opdef import ShapeError, TensorSpec
from mlcir.errors import BuildError

from .bind_params import argument_names

Shapes = Mapping[str, Sequence[int]]


def specialization_name(function: str, shapes: Sequence[Sequence[int]]) -> str:
    """``main__1x784`` (one ``x``-joined shape per argument, ``_``-separated)."""
    return function + "__" + "_".join("x".join(map(str, s)) or "scalar" for s in shapes)


def _with_shape(t: ir.Type, shape: Sequence[int]) -> ir.Type:
    return ir.RankedTensorType.get(list(shape), ir.RankedTensorType(t).element_type)


def _retype(fn: func.FuncOp, arg_shapes: list[list[int]]) -> None:
    """Give ``fn``'s arguments ``arg_shapes`` and infer every op's result types again."""
    entry = fn.regions[0].blocks[0]
    for arg, shape in zip(entry.arguments, arg_shapes):
        arg.set_type(_with_shape(arg.type, shape))
    for op in entry.operations:
        name = op.operation.name
        if name == "func.return":
            fn.attributes["function_type"] = ir.TypeAttr.get(ir.FunctionType.get(
                [a.type for a in entry.arguments], [v.type for v in op.operands]))
            return
        if name in ALL_OPS:
            opdef = ALL_OPS[name]
            try:
                specs = opdef.infer([TensorSpec.of(v.type) for v in op.operands],
                                    opdef.read_attrs(op.operation))
            except ShapeError as error:
                raise BuildError(f"cannot specialise '{fn.sym_name.value}' to "
                                 f"{arg_shapes}: '{name}': {error}") from None
            for result, spec in zip(op.results, specs):
                result.set_type(spec.to_type())
        elif name == "tensor.concat":
            axis = ir.IntegerAttr(op.attributes["dim"]).value
            shapes = [list(ir.RankedTensorType(v.type).shape) for v in op.operands]
            shape = list(shapes[0])
            shape[axis] = sum(s[axis] for s in shapes)
            op.results[0].set_type(_with_shape(op.results[0].type, shape))
        elif name != "arith.constant" and any(
                not ir.RankedTensorType(r.type).has_static_shape for r in op.results
                if isinstance(r.type, ir.RankedTensorType)):
            raise BuildError(f"cannot specialise '{fn.sym_name.value}': '{name}' has no "
                             "shape rule")


def add_specializations(module: ir.Module, sizes: Sequence[Shapes], function: str = "main"
                        ) -> list[str]:
    """Add to ``module`` a static copy of ``function`` for each ``{input name: shape}`` of
    ``sizes`` (every dynamic input named; static inputs may be left out); returns their
    names. A size equal to one already added is skipped."""
    fn = next((op for op in module.body.operations if isinstance(op, func.FuncOp)
               and op.sym_name.value == function), None)
    if fn is None:
        raise BuildError(f"cannot specialise '{function}': no such function")
    names = argument_names(fn)
    arg_types = [ir.RankedTensorType(a.type) for a in fn.regions[0].blocks[0].arguments]
    existing = {op.sym_name.value for op in module.body.operations if isinstance(op, func.FuncOp)}
    added = []
    for shapes in sizes:
        unknown = sorted(set(shapes) - set(names))
        if unknown:
            raise BuildError(f"cannot specialise '{function}': no input {', '.join(unknown)} "
                             f"(inputs: {', '.join(names)})")
        arg_shapes = []
        for name, t in zip(names, arg_types):
            static = [None if t.is_dynamic_dim(i) else t.shape[i] for i in range(t.rank)]
            shape = list(shapes.get(name, static))
            if len(shape) != t.rank or any(d is None for d in shape) or any(
                    s is not None and s != d for s, d in zip(static, shape)):
                raise BuildError(f"cannot specialise '{function}': input '{name}' "
                                 f"{static} cannot have the shape {shape}")
            arg_shapes.append([int(d) for d in shape])
        new_name = specialization_name(function, arg_shapes)
        if new_name in existing:
            continue
        with ir.InsertionPoint(module.body):
            copy = fn.operation.clone()
        copy.attributes["sym_name"] = ir.StringAttr.get(new_name)
        copy.attributes[SPECIALIZES_ATTR] = ir.StringAttr.get(function)
        if "arg_attrs" in copy.attributes:
            copy.attributes["arg_attrs"] = ir.ArrayAttr.get(
                [_without_dims(a) for a in ir.ArrayAttr(copy.attributes["arg_attrs"])])
        with fn.location:
            _retype(copy.opview, arg_shapes)
        existing.add(new_name)
        added.append(new_name)
    return added


def _without_dims(attrs: ir.Attribute) -> ir.DictAttr:
    """An argument's attributes without its symbols (a specialisation has none)."""
    d = ir.DictAttr(attrs)
    named = [d[i] for i in range(len(d))]
    return ir.DictAttr.get({n.name: n.attr for n in named if n.name != DIMS_ATTR})
