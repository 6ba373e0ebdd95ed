"""Elementwise chains carried into a new layout, with one layout change where they end.

A pass that gives an anchor op (a matmul, a convolution) a result in another shape of the
same elements, ``[.., M, N/n, n]`` for ``[.., M, N]`` say, calls :func:`follow_chain`: the
anchor's single-user chain of elementwise and broadcast ops (bias, activation, scaling, a
residual add) is rebuilt on the relaid value, each other operand reshaped to broadcast the same
way (constants at compile time, activations through a ``graph.reshape`` view); one reshape back
to the original shape ends the chain. So ``graph-fuse-ops`` still fuses the epilogue into the
anchor's kernel, and back-to-back layout changes never appear inside a chain.

``mlcir.layout = "none"`` on a module turns the layout passes off (:func:`layout_disabled`;
:func:`relaid_functions` are the functions they change); ``"direct"`` turns off
``graph-winograd`` only. :func:`module_layout` reads the attribute, :func:`set_module_layout`
sets it.
"""

from __future__ import annotations

from typing import Callable

from mlir import ir

from mlcir.dialects import graph
from mlcir.dialects.loop import KERNEL_ATTR

from .constants import constant_array, make_constant
from .graph_to_loop import functions

LAYOUT_ATTR = "mlcir.layout"
CHAIN_PATTERNS = ("elementwise", "broadcast")

# (an operand's static shape, the chain's original shape) -> the operand's shape in the new
# layout, or None when it has none (the chain stops before that op).
OperandShape = Callable[[list[int], list[int]], "list[int] | None"]


def module_layout(module: ir.Module | ir.Operation) -> str:
    """The layout ``module`` asks for (``mlcir.layout``): ``"packed"`` unless set, else
    ``"direct"`` or ``"none"`` (``mlcir.build``'s ``layout``)."""
    attrs = (module.operation if hasattr(module, "operation") else module).attributes
    return ir.StringAttr(attrs[LAYOUT_ATTR]).value if LAYOUT_ATTR in attrs else "packed"


def set_module_layout(module: ir.Module | ir.Operation, layout: str) -> None:
    """Ask the graph passes for ``layout`` on ``module`` (in place)."""
    root = module.operation if hasattr(module, "operation") else module
    with root.context:
        root.attributes[LAYOUT_ATTR] = ir.StringAttr.get(layout)


def layout_disabled(module: ir.Operation) -> bool:
    """Whether ``module`` asks to keep its original layouts (``mlcir.layout = "none"``)."""
    return module_layout(module) == "none"


def relaid_functions(module: ir.Module | ir.Operation) -> list[ir.Operation]:
    """The graph functions of ``module`` (with a body; not loop-level kernels) that a layout
    pass changes: none where the module keeps its layouts."""
    root = module.operation if hasattr(module, "operation") else module
    if layout_disabled(root):
        return []
    return [fn.operation for fn in functions(root)
            if KERNEL_ATTR not in fn.attributes and fn.regions[0].blocks]


def static_shape(value: ir.Value) -> list[int] | None:
    t = value.type
    if not isinstance(t, ir.RankedTensorType) or not ir.RankedTensorType(t).has_static_shape:
        return None
    return list(ir.RankedTensorType(t).shape)


def ranked_dims(value: ir.Value) -> list[int | None] | None:
    """The dims of a ranked tensor value, None for a dynamic one (None: not ranked)."""
    t = value.type
    if not isinstance(t, ir.RankedTensorType):
        return None
    t = ir.RankedTensorType(t)
    return [None if t.is_dynamic_dim(i) else t.shape[i] for i in range(t.rank)]


def batch_shape(value: ir.Value) -> list[int | None] | None:
    """The shape of ``value`` when only its first dim (a batch) may be dynamic, else None: a
    dynamic batch keeps the layout (each image is blocked on its own), other dynamic dims
    stay plain."""
    dims = ranked_dims(value)
    return dims if dims is not None and None not in dims[1:] else None


def _kept(shape: list[int | None]) -> list[int]:
    """graph.reshape's ``shape`` for ``shape``: a dynamic dim keeps the input's dim at the same
    position (0), which the chains' reshapes leave in place."""
    return [0 if d is None else d for d in shape]


def follow_chain(anchor: ir.Operation, relaid: ir.Value, operand_shape: OperandShape) -> None:
    """Replace ``anchor`` by ``relaid`` (its result in another layout): rewrite the
    single-user elementwise chain after it in that layout, reshape back once where it ends,
    and erase the originals. Dynamic dims may lead the shape (a batch, a sequence): the
    layout changes only static trailing dims, so they keep their positions."""
    original = anchor.results[0]
    shape = ranked_dims(original)
    assert shape is not None
    old_ops = [anchor]
    while True:
        uses = list(original.uses)
        if len(uses) != 1:
            break
        user = uses[0].owner
        new = _relaid_op(user, original, relaid, shape, operand_shape)
        if new is None:
            break
        old_ops.append(user)
        original, relaid = user.results[0], new
    with ir.InsertionPoint(old_ops[-1]), old_ops[-1].location:
        back = graph.reshape(relaid, shape=_kept(shape))
    original.replace_all_uses_with(back)
    for old in reversed(old_ops):
        old.erase()


def _relaid_op(user: ir.Operation, original: ir.Value, relaid: ir.Value, shape: list[int],
               operand_shape: OperandShape) -> ir.Value | None:
    """``user`` rebuilt on the relaid value (its other operands reshaped to match), or None
    when it is no elementwise op keeping ``shape``."""
    short = user.name.split(".", 1)[1] if user.name.startswith("graph.") else ""
    opdef = graph.OPS.get(short)
    if opdef is None or opdef.pattern not in CHAIN_PATTERNS or len(user.results) != 1 or \
            any(a.kind in ("ints", "dense") for a in opdef.attrs) or \
            ranked_dims(user.results[0]) != shape:
        return None
    return rebuilt(user, short, lambda value: relaid if value == original
                   else _relaid_operand(value, shape, operand_shape))


def rebuilt(op: ir.Operation, short: str,
            operand_for: Callable[[ir.Value], ir.Value | None]) -> ir.Value | None:
    """``op`` (``graph.<short>``, one result) built again at its place on the operands
    ``operand_for`` gives for its own (at the insertion point before ``op``); None when an
    operand has none or the op does not take the new shapes."""
    attrs = graph.OPS[short].read_attrs(op)
    with ir.InsertionPoint(op), op.location:
        operands = []
        for value in op.operands:
            new = operand_for(value)
            if new is None:
                return None
            operands.append(new)
        try:
            result = graph.build(short, operands, attrs)
        except graph.ShapeError:
            return None
    assert isinstance(result, ir.Value)
    return result


def _relaid_operand(value: ir.Value, shape: list[int],
                    operand_shape: OperandShape) -> ir.Value | None:
    own = ranked_dims(value)
    if own is None or len(own) > len(shape):
        return None
    target = operand_shape(own, shape)
    if target is None:
        return None
    if target == own:
        return value
    array = constant_array(value)
    if array is not None:
        return make_constant(array.reshape(target), ir.RankedTensorType.get(
            target, ir.RankedTensorType(value.type).element_type))
    return graph.reshape(value, shape=_kept(target))
