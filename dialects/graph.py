"""The ``graph`` dialect: pure tensor operators of a computational graph (Relax's analogue).

Each op is declared once, as an :class:`~mlcir.dialects.opdef.OpDef`: its operands, its
attributes and the function that infers its result type. The IRDL text, the Python verifier and
the builder helpers (``graph.matmul(a, b)``) all come from that declaration, so adding an op is
one entry in :data:`OPS` plus its lowering in ``passes/lowerings``.

What is not an op here is upstream: graph functions are ``func.func``, constants are
``arith.constant``, and the destination-passing call to a kernel or a library function is
``func.call`` (see :func:`call_dps` and docs/decisions.md).
"""

from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np
from mlir import ir
from mlir.dialects import func, tensor

from .opdef import AttrDef, OpDef, ShapeError, TensorSpec, irdl_dialect

DIALECT = "graph"

# Attribute names mlcir sets on upstream ops of a graph module.
LIBRARY_ATTR = "graph.library"      # on a func.func declaration: the registered library name
NAME_ATTR = "graph.name"            # on a function argument/result: its user-facing name
PRIMITIVE_ATTR = "graph.primitive"  # on a private func.func: a fused group, one future kernel


# ----------------------------------------------------------------------------------------------
# Shape rules


def broadcast_shapes(*shapes: tuple[int | None, ...]) -> tuple[int | None, ...]:
    """numpy broadcasting of static/dynamic (``None``) shapes."""
    rank = max(len(s) for s in shapes)
    out: list[int | None] = []
    for axis in range(rank):
        dims = [s[axis - rank + len(s)] for s in shapes if axis - rank + len(s) >= 0]
        static = {d for d in dims if d is not None and d != 1}
        if len(static) > 1:
            raise ShapeError(f"shapes {' and '.join(_fmt(s) for s in shapes)} do not broadcast "
                             f"(dimension {axis} of the result: {sorted(static)})")
        if static:
            out.append(static.pop())
        elif any(d is None for d in dims):
            out.append(None)
        else:
            out.append(1)
    return tuple(out)


def _fmt(shape: Sequence[int | None]) -> str:
    return "[" + ", ".join("?" if d is None else str(d) for d in shape) + "]"


def _same_element_type(specs: list[TensorSpec]) -> ir.Type:
    types = {str(s.element_type) for s in specs}
    if len(types) > 1:
        raise ShapeError(f"operands have different element types: {', '.join(sorted(types))}")
    return specs[0].element_type


def _unary(specs: list[TensorSpec], attrs: dict[str, Any]) -> list[TensorSpec]:
    return [specs[0]]


def _broadcasting(specs: list[TensorSpec], attrs: dict[str, Any]) -> list[TensorSpec]:
    return [TensorSpec(broadcast_shapes(*(s.shape for s in specs)), _same_element_type(specs))]


def _same_shape(specs: list[TensorSpec], attrs: dict[str, Any]) -> list[TensorSpec]:
    elem = _same_element_type(specs)
    first = specs[0].shape
    for s in specs[1:]:
        if len(s.shape) != len(first) or any(
                a is not None and b is not None and a != b for a, b in zip(first, s.shape)):
            raise ShapeError(f"operands must have the same shape, got "
                             f"{' and '.join(_fmt(x.shape) for x in specs)}")
    return [TensorSpec(first, elem)]


def _matmul(specs: list[TensorSpec], attrs: dict[str, Any]) -> list[TensorSpec]:
    """numpy.matmul: 1-D operands are promoted, leading (batch) dims broadcast."""
    lhs, rhs = specs
    elem = _same_element_type(specs)
    if lhs.rank == 0 or rhs.rank == 0:
        raise ShapeError("matmul operands must have rank >= 1")
    a = (1,) + lhs.shape if lhs.rank == 1 else lhs.shape
    b = rhs.shape + (1,) if rhs.rank == 1 else rhs.shape
    k_a, k_b = a[-1], b[-2]
    if k_a is not None and k_b is not None and k_a != k_b:
        raise ShapeError(f"contracting dimensions differ: lhs {_fmt(lhs.shape)} has K={k_a}, "
                         f"rhs {_fmt(rhs.shape)} has K={k_b}")
    batch = broadcast_shapes(a[:-2], b[:-2])
    out = batch + ((a[-2],) if lhs.rank > 1 else ()) + ((b[-1],) if rhs.rank > 1 else ())
    return [TensorSpec(out, elem)]


def _permute_dims(specs: list[TensorSpec], attrs: dict[str, Any]) -> list[TensorSpec]:
    (x,) = specs
    axes = attrs["axes"]
    if sorted(axes) != list(range(x.rank)):
        raise ShapeError(f"axes {axes} are not a permutation of the {x.rank} dimensions of "
                         f"{_fmt(x.shape)}")
    return [TensorSpec(tuple(x.shape[a] for a in axes), x.element_type)]


# ----------------------------------------------------------------------------------------------
# The ops

def _erf(x: np.ndarray) -> np.ndarray:
    return np.vectorize(math.erf, otypes=[x.dtype])(x)


def _divide(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """arith.divf for floats; arith.divsi (rounds toward zero, like C and ONNX) for integers."""
    if np.issubdtype(np.result_type(a, b), np.integer):
        return (np.sign(a) * np.sign(b) * (np.abs(a) // np.abs(b))).astype(np.result_type(a, b))
    return np.divide(a, b)


# name -> (what it computes, numpy)
_UNARY: dict[str, tuple[str, Any]] = {
    "relu": ("max(x, 0)", lambda x: np.maximum(x, x.dtype.type(0))),
    "negative": ("-x", np.negative),
    "exp": ("e^x", np.exp),
    "log": ("natural logarithm", np.log),
    "sqrt": ("square root", np.sqrt),
    "rsqrt": ("1 / sqrt(x)", lambda x: (1 / np.sqrt(x)).astype(x.dtype)),
    "tanh": ("hyperbolic tangent", np.tanh),
    "sigmoid": ("1 / (1 + e^-x)", lambda x: (1 / (1 + np.exp(-x))).astype(x.dtype)),
    "erf": ("error function", _erf),
    "abs": ("absolute value", np.abs),
}
_BINARY: dict[str, tuple[str, Any]] = {
    "add": ("a + b", np.add),
    "subtract": ("a - b", np.subtract),
    "multiply": ("a * b", np.multiply),
    "divide": ("a / b", _divide),
    "power": ("a ** b", np.power),
    "maximum": ("max(a, b)", np.maximum),
    "minimum": ("min(a, b)", np.minimum),
}

OPS: dict[str, OpDef] = {}


def _declare(op: OpDef) -> OpDef:
    OPS[op.name] = op
    return op


for _name, (_doc, _fn) in _UNARY.items():
    _declare(OpDef(DIALECT, _name, ("x",), _unary, summary=f"Elementwise {_doc}.",
                   pattern="elementwise", evaluate=_fn))
for _name, (_doc, _fn) in _BINARY.items():
    _declare(OpDef(DIALECT, _name, ("lhs", "rhs"), _broadcasting,
                   summary=f"Elementwise {_doc}, numpy broadcasting.",
                   pattern="broadcast", evaluate=_fn))

_declare(OpDef(DIALECT, "ewise_fma", ("a", "b", "c"), _same_shape,
               summary="a * b + c on tensors of one shape (Relax's ewise_fma).",
               pattern="elementwise", evaluate=lambda a, b, c: a * b + c))
_declare(OpDef(DIALECT, "matmul", ("lhs", "rhs"), _matmul,
               summary="numpy.matmul: batched, broadcast leading dims, 1-D operands promoted.",
               pattern="anchor", evaluate=np.matmul))
_declare(OpDef(DIALECT, "permute_dims", ("x",), _permute_dims,
               attrs=(AttrDef("axes", "ints", "result dim i is input dim axes[i]"),),
               summary="Transpose: the dimensions of x reordered by `axes`.",
               pattern="injective", evaluate=lambda x, axes: np.transpose(x, axes)))


def irdl_text() -> str:
    return irdl_dialect(DIALECT, list(OPS.values()))


# ----------------------------------------------------------------------------------------------
# Builders


def build(name: str, operands: Sequence[ir.Value], attrs: dict[str, Any] | None = None, *,
          loc: ir.Location | None = None) -> ir.Value | list[ir.Value]:
    """Create ``graph.<name>`` at the current insertion point with its inferred result types.

    Raises :class:`ShapeError` (naming the op) when the operands do not fit, before any IR is
    created.
    """
    opdef = OPS[name]
    attrs = dict(attrs or {})
    if len(operands) != len(opdef.operands):
        raise ShapeError(f"'{opdef.full_name}' takes {len(opdef.operands)} operands "
                         f"({', '.join(opdef.operands)}), got {len(operands)}")
    missing = [a.name for a in opdef.attrs if a.name not in attrs]
    unknown = sorted(set(attrs) - {a.name for a in opdef.attrs})
    if missing or unknown:
        raise ShapeError(f"'{opdef.full_name}': missing attributes {missing}, unknown {unknown}")
    specs = [TensorSpec.of(v.type) for v in operands]
    try:
        if opdef.check:
            opdef.check(specs, attrs)
        results = opdef.infer(specs, attrs)
    except ShapeError as e:
        raise ShapeError(f"'{opdef.full_name}': {e}") from None
    ir_attrs = {a.name: a.make(attrs[a.name]) for a in opdef.attrs}
    op = ir.Operation.create(opdef.full_name, results=[r.to_type() for r in results],
                             operands=list(operands), attributes=ir_attrs, loc=loc)
    return op.results[0] if len(op.results) == 1 else list(op.results)


def _make_builder(opdef: OpDef):
    def builder(*operands: ir.Value, loc: ir.Location | None = None, **attrs: Any):
        return build(opdef.name, operands, attrs, loc=loc)

    builder.__name__ = opdef.name
    builder.__qualname__ = opdef.name
    attr_doc = "".join(f"\n    {a.name}: {a.doc or a.kind}" for a in opdef.attrs)
    builder.__doc__ = (f"Build ``{opdef.full_name}({', '.join(opdef.operands)})``: "
                       f"{opdef.summary}{attr_doc}")
    return builder


for _opdef in OPS.values():
    globals()[_opdef.name] = _make_builder(_opdef)


def call_dps(callee: str, args: Sequence[ir.Value], result_types: Sequence[ir.Type], *,
             loc: ir.Location | None = None) -> list[ir.Value]:
    """Destination-passing call (``call_tir``/``call_dps_packed``): allocate each destination
    with ``tensor.empty`` and call ``callee(args..., destinations...)``, which returns them
    filled."""
    dests = []
    for t in result_types:
        rt = ir.RankedTensorType(t)
        if not rt.has_static_shape:
            raise ShapeError(f"call_dps to '{callee}': destination type {t} must be static")
        dests.append(tensor.EmptyOp(rt.shape, rt.element_type, loc=loc).result)
    call = func.CallOp(list(result_types), ir.FlatSymbolRefAttr.get(callee),
                       list(args) + dests, loc=loc)
    return list(call.results)


def declare_library_function(module: ir.Module, name: str, arg_types: Sequence[ir.Type],
                             result_types: Sequence[ir.Type]) -> str:
    """Declare the external function that the library function ``name`` implements for these
    types, once; return its symbol.

    Arguments are the inputs followed by one destination per result (destination-passing
    style). A Python function serves any types, a declaration only one, so each signature gets
    its own symbol (``env.linear``, ``env.linear_1``…), all marked ``graph.library = name``; the
    runtime binds each to the registered function.
    """
    fn_type = ir.FunctionType.get(list(arg_types) + list(result_types), list(result_types))
    symbols = set()
    for op in module.body.operations:
        if isinstance(op, func.FuncOp):
            symbols.add(op.sym_name.value)
            if (LIBRARY_ATTR in op.attributes
                    and ir.StringAttr(op.attributes[LIBRARY_ATTR]).value == name
                    and op.attributes["function_type"].value == fn_type):
                return op.sym_name.value
    symbol, n = name, 0
    while symbol in symbols:
        n += 1
        symbol = f"{name}_{n}"
    with ir.InsertionPoint.at_block_begin(module.body):
        decl = func.FuncOp(symbol, fn_type, visibility="private")
        decl.attributes[LIBRARY_ATTR] = ir.StringAttr.get(name)
    return symbol


def call_library(module: ir.Module, name: str, args: Sequence[ir.Value],
                 result_types: Sequence[ir.Type], *, loc: ir.Location | None = None
                 ) -> list[ir.Value]:
    """Call the library function ``name`` (registered from Python) in destination-passing
    style, declaring it in ``module`` if needed."""
    symbol = declare_library_function(module, name, [a.type for a in args], result_types)
    return call_dps(symbol, args, result_types, loc=loc)


def element_count(shape: Sequence[int]) -> int:
    return math.prod(shape)
