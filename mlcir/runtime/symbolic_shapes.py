"""The symbolic dims of a function's results as expressions over its arguments' symbols,
derived at compile time from the graph-level body (what :mod:`mlcir.runtime.shapes`
evaluates on the host at every call).

Dims are polynomials over the argument symbols (:class:`mlcir.dialects.dims.Dim`). Each
graph op's dims come from :func:`mlcir.dialects.dims.result_dims`: its own shape rule (the op
table's ``infer``) evaluated with *probe* sizes of the symbols, a dynamic result dim matched
to an operand dim that it follows exactly (``N`` through matmul, add, relu…) or affinely
(``N - 1`` for a slice); a reshape's dims worked out exactly (``N*S`` for a flatten, ``N``
again when it is split back). ``tensor.concat`` adds its operands' dims along its axis; an
``scf.for`` whose carried tensors are written in place keeps their dims, and a
``tensor.empty`` sized by ``tensor.dim`` of a value has that value's dims; a linalg op's or
an ``insert_slice``'s results have their destinations' dims (a loop-level kernel's results
follow its destination arguments, so tuning can call a dynamic kernel alone).
Anything else (an op whose dim cannot be matched) leaves the dim unknown: a result with one
then needs an output array from the caller, as before.
"""

from __future__ import annotations

import re
from typing import Callable, Sequence

from mlir import ir

from mlcir.dialects import ALL_OPS
from mlcir.dialects.dims import Dim, result_dims
from mlcir.passes.graph_to_loop import linalg_outputs

# A value's dims: an int (static), a Dim (symbolic) or None (unknown).
Dims = tuple["int | Dim | None", ...]


def symbol_name(text: str) -> str:
    """``text`` as a symbol the expression parser reads (letters, digits, ``_`` and ``.``,
    not starting with a digit)."""
    name = re.sub(r"[^\w.]", "_", text)
    return name if name and (name[0].isalpha() or name[0] == "_") else "_" + name


def _shape_of(t: ir.Type) -> list[int | None] | None:
    if not isinstance(t, ir.RankedTensorType):
        return None
    rt = ir.RankedTensorType(t)
    return [None if rt.is_dynamic_dim(i) else rt.shape[i] for i in range(rt.rank)]


def _static_dims(t: ir.Type) -> Dims:
    shape = _shape_of(t)
    return tuple(shape) if shape is not None else ()


def _graph_op_dims(op: ir.Operation, operands: list[Dims]) -> list[Dims]:
    """Result dims of a graph op from its operands' dims."""
    results = [_static_dims(r.type) for r in op.results]
    if all(None not in r for r in results):
        return results
    opdef = ALL_OPS[op.name]
    found = result_dims(opdef, opdef.read_attrs(op), operands,
                        [v.type for v in op.operands], results)
    return [tuple(dims) for dims in found]


def _concat_dims(op: ir.Operation, operands: list[Dims]) -> list[Dims]:
    dims = list(_static_dims(op.results[0].type))
    axis = ir.IntegerAttr(op.attributes["dim"]).value
    for i, d in enumerate(dims):
        if d is not None:
            continue
        parts = [o[i] for o in operands]
        if i != axis:
            dims[i] = next((p for p in parts if isinstance(p, Dim)), None)
        elif all(p is not None for p in parts):
            total = 0
            for p in parts:
                total = total + p
            dims[i] = total
    return [tuple(dims)]


def _callee(call: ir.Operation) -> ir.Operation | None:
    """The ``func.func`` with a body that ``call`` calls, in the same module."""
    name = ir.FlatSymbolRefAttr(call.attributes["callee"]).value
    module = call.parent
    while module is not None and module.name != "builtin.module":
        module = module.parent
    if module is None:
        return None
    for op in module.regions[0].blocks[0].operations:
        if op.operation.name == "func.func" and op.attributes["sym_name"] == \
                ir.StringAttr.get(name) and op.regions[0].blocks:
            return op.operation
    return None


def _defining(value: ir.Value) -> ir.Operation | None:
    """The op that defines ``value`` (None for a block argument)."""
    owner = value.owner
    if isinstance(owner, ir.Block):
        return None
    return owner.operation if isinstance(owner, ir.OpView) else owner


def _empty_dims(op: ir.Operation, of: Callable[[ir.Value], Dims]) -> Dims:
    """A ``tensor.empty``'s dims: a dynamic size read by ``tensor.dim`` of a value at a
    constant axis is that value's dim (unknown otherwise)."""
    sizes = iter(op.operands)
    dims: list[int | Dim | None] = []
    for d in _static_dims(op.results[0].type):
        if d is None:
            size = _defining(next(sizes))
            d = None
            if size is not None and size.name == "tensor.dim":
                source, axis = size.operands
                index = _defining(axis)
                if index is not None and index.name == "arith.constant":
                    source_dims = of(source)
                    at = ir.IntegerAttr(index.attributes["value"]).value
                    d = source_dims[at] if at < len(source_dims) else None
        dims.append(d)
    return tuple(dims)


def _carried_in_place(loop: ir.Operation) -> bool:
    """Whether an ``scf.for`` yields each carried tensor written into itself
    (``materialize_in_destination`` or ``insert_slice`` into its iteration argument): its
    results then have their initial values' sizes (a recurrent network's time loop)."""
    body = loop.regions[0].blocks[0]
    carried = list(body.arguments)[1:]
    yielded = list(list(body.operations)[-1].operands)
    for value, arg in zip(yielded, carried):
        owner = _defining(value)
        if owner is None or owner.name not in ("bufferization.materialize_in_destination",
                                               "tensor.insert_slice") \
                or owner.operands[1] != arg:
            return False
    return True


# Ops whose result is written into one operand, by the operand's position.
_WRITES_INTO = {"tensor.insert_slice": 1, "bufferization.materialize_in_destination": 1}


def _destinations(op: ir.Operation) -> list[int] | None:
    """The operand positions whose sizes a destination-passing op's results have (a linalg
    op's ``outs``, the tensor an ``insert_slice`` writes into): a loop-level kernel's results
    follow its destination arguments. None for any other op."""
    if op.name in _WRITES_INTO:
        return [_WRITES_INTO[op.name]]
    outputs = linalg_outputs(op)
    if outputs is None or len(outputs) != len(op.results):
        return None
    return list(range(len(op.operands) - len(outputs), len(op.operands)))


def _body_dims(fn: ir.Operation, arg_dims: Sequence[Dims], depth: int = 0) -> list[Dims]:
    """The dims of ``fn``'s results from its arguments' dims."""
    entry = fn.regions[0].blocks[0]
    dims: dict[ir.Value, Dims] = dict(zip(entry.arguments, arg_dims))

    def of(value: ir.Value) -> Dims:
        return dims.get(value, _static_dims(value.type))

    for op in entry.operations:
        name = op.operation.name
        operands = [of(v) for v in op.operands]
        if name == "func.return":
            return operands
        new = [_static_dims(r.type) for r in op.results]
        if name in ALL_OPS:
            new = _graph_op_dims(op.operation, operands)
        elif name == "tensor.concat":
            new = _concat_dims(op.operation, operands)
        elif name == "func.call" and depth < 8 and (callee := _callee(op.operation)) is not None:
            new = _body_dims(callee, operands, depth + 1) or new
        elif name == "tensor.empty":
            new = [_empty_dims(op.operation, of)]
        elif name == "scf.for" and _carried_in_place(op.operation):
            new = operands[3:]  # the initial values' dims (lower, upper, step come first)
        elif (written := _destinations(op.operation)) is not None:
            new = [operands[i] for i in written]
        for result, value_dims in zip(op.results, new):
            dims[result] = value_dims
    return []


def result_symbols(fn: ir.Operation, arg_symbols: Sequence[Sequence[str | None]]
                   ) -> list[tuple[str | None, ...]]:
    """Per result of ``fn`` (a ``func.func`` with a body), per dim: its expression over the
    argument symbols; None where the dim is static or unknown."""
    arg_dims = []
    for arg, symbols in zip(fn.regions[0].blocks[0].arguments, arg_symbols):
        static = _static_dims(arg.type)
        arg_dims.append(tuple(Dim.symbol(s) if d is None and s else d
                              for d, s in zip(static, symbols)) if symbols else static)
    return [tuple(str(d) if isinstance(d, Dim) else None for d in dims)
            for dims in _body_dims(fn, arg_dims)]
