"""Builders of ``graph`` ops, made from the op table rather than written out one by one.

:func:`build` creates any op by name; :func:`make_builder` turns an :class:`OpDef` into the
function ``graph.<op>`` (operands positional, attributes by keyword, the op's summary as its
docstring). Also the destination-passing calls to kernels and library functions.
"""

from __future__ import annotations

import inspect
import math
from typing import Any, Callable, Sequence

from mlir import ir
from mlir.dialects import func, tensor

from .graph_ops import EXTERN_ATTR, LIBRARY_ATTR, OPS
from .opdef import OpDef, ShapeError, TensorSpec


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
    # Through the IR attributes and back: checks and shape rules see the values the verifier
    # will see (lists of ints, an ir.Type for a type given as "i64").
    try:
        ir_attrs = {a.name: a.make(attrs[a.name]) for a in opdef.attrs}
        attrs = {a.name: a.read(ir_attrs[a.name]) for a in opdef.attrs}
    except (TypeError, ValueError, ir.MLIRError) as e:
        raise ShapeError(f"'{opdef.full_name}': bad attribute value: {e}") from None
    specs = [TensorSpec.of(v.type) for v in operands]
    try:
        if opdef.check:
            opdef.check(specs, attrs)
        results = opdef.infer(specs, attrs)
    except ShapeError as e:
        raise ShapeError(f"'{opdef.full_name}': {e}") from None
    op = ir.Operation.create(opdef.full_name, results=[r.to_type() for r in results],
                             operands=list(operands), attributes=ir_attrs, loc=loc)
    return op.results[0] if len(op.results) == 1 else list(op.results)


class _Required:
    """The default of the builders' attribute parameters: an attribute left out is reported by
    :func:`build` (a ShapeError naming the op), as one given to ``build`` by name would be."""

    def __repr__(self) -> str:
        return "<required>"


_REQUIRED: Any = _Required()


def _build(name: str, *operands: ir.Value, loc: ir.Location | None, **attrs: Any) -> ir.Value:
    """:func:`build` for the ops of one result (all of them today)."""
    given = {key: value for key, value in attrs.items() if value is not _REQUIRED}
    result = build(name, operands, given, loc=loc)
    assert isinstance(result, ir.Value)
    return result


# The annotation of a builder's parameter for each attribute kind of :mod:`.opdef` (text, as
# ``from __future__ import annotations`` would write it).
_ANNOTATIONS = {"int": "int", "float": "float", "ints": "Sequence[int]",
                "floats": "Sequence[float]", "str": "str", "type": "ir.Type | str",
                "dense": "ir.Attribute"}


def builder_signature(opdef: OpDef) -> inspect.Signature:
    """``(operand, ..., *, attribute=<required>, ..., loc=None) -> ir.Value``."""
    P = inspect.Parameter
    params = [P(name, P.POSITIONAL_OR_KEYWORD, annotation="ir.Value") for name in opdef.operands]
    params += [P(a.name, P.KEYWORD_ONLY, default=_REQUIRED, annotation=_ANNOTATIONS[a.kind])
               for a in opdef.attrs]
    params.append(P("loc", P.KEYWORD_ONLY, default=None, annotation="ir.Location | None"))
    return inspect.Signature(params, return_annotation="ir.Value")


def builder_doc(opdef: OpDef) -> str:
    """The op's summary, then a line for each attribute (what ``help(graph.conv2d)`` shows)."""
    lines = [f"{a.name}: {a.doc}" for a in opdef.attrs]
    return opdef.summary + ("\n\n" + "\n".join(lines) if lines else "")


def make_builder(opdef: OpDef) -> Callable[..., ir.Value]:
    """The builder function of one op: ``graph.<name>(*operands, **attrs, loc=None)``, bound
    like a function of :func:`builder_signature` (a wrong argument is a TypeError)."""
    signature = builder_signature(opdef)
    name = opdef.name

    def builder(*args: Any, **kwargs: Any) -> ir.Value:
        arguments = signature.bind(*args, **kwargs).arguments
        operands = [arguments.pop(operand) for operand in opdef.operands]
        loc = arguments.pop("loc", None)
        return _build(name, *operands, loc=loc, **arguments)

    builder.__name__ = builder.__qualname__ = name
    builder.__module__ = "mlcir.dialects.graph"
    builder.__doc__ = builder_doc(opdef)
    builder.__signature__ = signature  # type: ignore[attr-defined]
    builder.__annotations__ = {p.name: p.annotation for p in signature.parameters.values()}
    builder.__annotations__["return"] = signature.return_annotation
    return builder


#: ``graph.<op>`` for every op of :data:`OPS`, by name (the facade :mod:`.graph` exports them).
BUILDERS: dict[str, Callable[..., ir.Value]] = {name: make_builder(opdef)
                                                 for name, opdef in OPS.items()}


# ----------------------------------------------------------------------------------------------
# Calls to kernels and library functions


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


def extern_attribute(function: str, backend: str, ints: Sequence[int], *, int_type: str = "int",
                     returns: str = "void", flops: float = 0.0) -> ir.Attribute:
    """The ``graph.extern`` attribute of a declaration that calls the C function ``function``
    of UMA backend ``backend`` with ``ints`` after its buffers (docs/uma.md); ``flops``, when
    known, the operations of one call (for the profiler's GFLOPS)."""
    entries = {
        "function": ir.StringAttr.get(function), "backend": ir.StringAttr.get(backend),
        "ints": ir.DenseI64ArrayAttr.get([int(i) for i in ints]),
        "int_type": ir.StringAttr.get(int_type), "returns": ir.StringAttr.get(returns)}
    if flops:
        entries["flops"] = ir.FloatAttr.get_f64(float(flops))
    return ir.DictAttr.get(entries)


def call_extern(module: ir.Module, function: str, backend: str, args: Sequence[ir.Value],
                result_types: Sequence[ir.Type], ints: Sequence[int] = (), *,
                int_type: str = "int", returns: str = "void", flops: float = 0.0,
                loc: ir.Location | None = None) -> list[ir.Value]:
    """Call the external C function ``function`` of UMA backend ``backend`` in
    destination-passing style: ``function(inputs..., outputs..., ints...)`` (docs/uma.md).

    Each distinct (function, types, integers) gets one private declaration
    ``uma_<backend>_<function>[_n]`` marked ``graph.extern``; the runtime compiles the adapter
    that unpacks the memrefs and calls the C function with the integers as constants.
    """
    attr = extern_attribute(function, backend, ints, int_type=int_type, returns=returns,
                            flops=flops)
    fn_type = ir.FunctionType.get([a.type for a in args] + list(result_types), list(result_types))
    symbols = set()
    for op in module.body.operations:
        if isinstance(op, func.FuncOp):
            symbols.add(op.sym_name.value)
            if (EXTERN_ATTR in op.attributes and str(op.attributes[EXTERN_ATTR]) == str(attr)
                    and op.attributes["function_type"].value == fn_type):
                return call_dps(op.sym_name.value, args, result_types, loc=loc)
    base = "".join(c if c.isalnum() else "_" for c in f"uma_{backend}_{function}")
    symbol, n = base, 0
    while symbol in symbols:
        n += 1
        symbol = f"{base}_{n}"
    with ir.InsertionPoint.at_block_begin(module.body):
        decl = func.FuncOp(symbol, fn_type, visibility="private")
        decl.attributes[EXTERN_ATTR] = attr
    return call_dps(symbol, args, result_types, loc=loc)


def element_count(shape: Sequence[int]) -> int:
    return math.prod(shape)
