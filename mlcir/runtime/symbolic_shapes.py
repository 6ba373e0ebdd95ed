"""The symbolic dims of a function's results as expressions over its arguments' symbols,
derived at compile time from the graph-level body (what :mod:`mlcir.runtime.shapes`
evaluates on the host at every call).

Each graph op's own shape rule (the op table's ``infer``) is evaluated with *probe* sizes in
place of its operands' dynamic dims; a dynamic result dim that follows one operand dim
exactly (``N`` through matmul, add, relu, reshape with -1…) or affinely (``N - 1`` for a
slice) gets that operand dim's expression. Probes are large and highly composite so that
divisions in the rules (a reshape's -1, a window) stay exact, and no two operand dims' probes
are affine in each other. ``tensor.concat`` adds its
operands' dims along its axis. Anything else (a call, an op whose dim cannot be matched)
leaves the dim unknown: that result then needs an output array from the caller, as before.
"""

from __future__ import annotations

import re
from typing import Sequence

from mlir import ir

from mlcir.dialects import ALL_OPS
from mlcir.dialects.opdef import ShapeError, TensorSpec

# Expressions of a value's dims: an int (static), a string (symbolic) or None (unknown).
Dims = tuple["int | str | None", ...]
PROBES = 3


def _probe(expr_index: int, probe: int) -> int:
    """The size given to the ``expr_index``-th operand expression in probe ``probe``: no two
    expressions' probe sizes are affine in each other (a different curvature each), so a
    result dim matches the one expression it follows; multiples of 2520 keep divisions by
    small factors exact."""
    return 5040 * (1 + probe) + 2520 * expr_index * probe * probe


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


def _wrap(expr: str) -> str:
    return expr if re.fullmatch(r"[\w.]+", expr) else f"({expr})"


def _affine(expr: str, a: int, b: int) -> str:
    text = expr if a == 1 else f"{a}*{_wrap(expr)}"
    return text if b == 0 else f"{text} + {b}" if b > 0 else f"{text} - {-b}"


def _graph_op_dims(op: ir.Operation, operands: list[Dims]) -> list[Dims]:
    """Result dims of a graph op from its operands' dims, by probing its shape rule."""
    opdef = ALL_OPS[op.name]
    results = [_static_dims(r.type) for r in op.results]
    if all(None not in r for r in results):
        return results
    exprs = sorted({d for dims in operands for d in dims if isinstance(d, str)})
    if any(d is None for dims in operands for d in dims) or not exprs:
        return results
    attrs = opdef.read_attrs(op)
    probed: list[list[TensorSpec]] = []
    for k in range(PROBES):
        values = {e: _probe(i, k) for i, e in enumerate(exprs)}
        specs = [TensorSpec(tuple(values[d] if isinstance(d, str) else d for d in dims),
                            ir.RankedTensorType(v.type).element_type)
                 for dims, v in zip(operands, op.operands)]
        try:
            probed.append(opdef.infer(specs, attrs))
        except (ShapeError, ValueError, ZeroDivisionError, TypeError):
            return results
    out = []
    for index, dims in enumerate(results):
        found: list[int | str | None] = []
        for axis, dim in enumerate(dims):
            if dim is not None:
                found.append(dim)
                continue
            sizes = [p[index].shape[axis] for p in probed]
            found.append(None if None in sizes else _match(sizes, exprs))
        out.append(tuple(found))
    return out


def _match(sizes: Sequence[int], exprs: Sequence[str]) -> str | None:
    """The operand expression that ``sizes`` (one per probe) follow, exactly or affinely."""
    for i, expr in enumerate(exprs):
        xs = [_probe(i, k) for k in range(PROBES)]
        if (sizes[1] - sizes[0]) % (xs[1] - xs[0]):
            continue
        a = (sizes[1] - sizes[0]) // (xs[1] - xs[0])
        b = sizes[0] - a * xs[0]
        if a != 0 and all(a * x + b == s for x, s in zip(xs, sizes)):
            return _affine(expr, a, b)
    return None


def _concat_dims(op: ir.Operation, operands: list[Dims]) -> list[Dims]:
    dims = list(_static_dims(op.results[0].type))
    axis = ir.IntegerAttr(op.attributes["dim"]).value
    for i, d in enumerate(dims):
        if d is not None:
            continue
        parts = [o[i] for o in operands]
        if i != axis:
            dims[i] = next((p for p in parts if isinstance(p, str)), None)
        elif all(p is not None for p in parts):
            dims[i] = " + ".join(_wrap(str(p)) for p in parts)
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
        arg_dims.append(tuple(s if d is None else d for d, s in zip(static, symbols))
                        if symbols else static)
    return [tuple(d if isinstance(d, str) else None for d in dims)
            for dims in _body_dims(fn, arg_dims)]
