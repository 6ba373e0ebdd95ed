"""``graph-pack-weights``: constant right operands of matmuls packed at compile time.

A register tile of ``rows x n`` columns streams ``K x n`` of the right operand per tile; read
from a row-major ``[K, N]`` weight that is ``K`` rows ``N`` elements apart (a new page every
few rows for ``N = 3072``). Packed once into panels ``[N/n, K, n]`` (MLAS's packed B, IREE's
``mmt4d`` right operand) each tile streams one contiguous panel. The pass rewrites
``matmul(x, W)`` with a constant 2-D ``W`` into ``matmul_packed(x, pack(W))``, the packed
weight folded here into a constant, so nothing packs per call.

The result of ``matmul_packed`` is blocked, ``[.., M, N/n, n]``. Its elementwise consumers
(bias add, activation, residual add) follow it into the blocked shape, their other operands
reshaped (constants folded, activations through a view), so the fused kernel keeps its
epilogue; one reshape back to ``[.., M, N]`` ends the chain (a view, no copy). The original
weights, now unused, are left to ``graph-dce`` (next in ``mlcir-kernels``).

A module carrying ``mlcir.layout = "none"`` is left alone (``mlcir.build(..., layout="none")``).
"""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir

from mlcir.dialects import graph
from mlcir.dialects.loop import KERNEL_ATTR

from .constants import constant_array, is_constant, make_constant
from .graph_to_loop import functions
from .registry import ModulePass, register_pass

# Columns of a panel: the widest register tile the CPU defaults choose (AVX-512: 8 x 32; an
# AVX2 tile of 16 or 8 columns reads half or a quarter of each panel row, still contiguous).
DEFAULT_PANEL = 32
LAYOUT_ATTR = "mlcir.layout"
_CHAIN_PATTERNS = ("elementwise", "broadcast")


def layout_disabled(module: ir.Operation) -> bool:
    """Whether ``module`` asks to keep its original layouts (``mlcir.layout = "none"``)."""
    attrs = module.attributes
    return LAYOUT_ATTR in attrs and ir.StringAttr(attrs[LAYOUT_ATTR]).value == "none"


def pack_weights(module: ir.Module | ir.Operation, *, panel: int = DEFAULT_PANEL) -> int:
    """Pack the constant right operands of the matmuls of every graph function of ``module``
    (in place, module docstring); returns how many matmuls now read packed weights."""
    root = module.operation if hasattr(module, "operation") else module
    if layout_disabled(root):
        return 0
    packed: list[tuple[ir.Value, ir.Value]] = []
    count = 0
    for fn in functions(root):
        if KERNEL_ATTR in fn.attributes or not fn.regions[0].blocks:
            continue
        for op in _matmuls(fn.operation):
            if _pack(op, panel, packed):
                count += 1
    return count


def _matmuls(fn: ir.Operation) -> list[ir.Operation]:
    found: list[ir.Operation] = []

    def visit(op: ir.Operation) -> ir.WalkResult:
        if op.name == "graph.matmul":
            found.append(op)
        return ir.WalkResult.ADVANCE

    fn.walk(visit)
    return found


def _static_shape(value: ir.Value) -> list[int] | None:
    t = value.type
    if not isinstance(t, ir.RankedTensorType) or not ir.RankedTensorType(t).has_static_shape:
        return None
    return list(ir.RankedTensorType(t).shape)


def _pack(op: ir.Operation, panel: int, packed: list[tuple[ir.Value, ir.Value]]) -> bool:
    lhs, rhs = op.operands
    lhs_shape, rhs_shape = _static_shape(lhs), _static_shape(rhs)
    if lhs_shape is None or rhs_shape is None or len(lhs_shape) < 2 or len(rhs_shape) != 2 \
            or not is_constant(rhs):
        return False
    k, n = rhs_shape
    if n % panel or n // panel < 2:
        return False
    weight = _packed_weight(rhs, k, n, panel, packed)
    if weight is None:
        return False
    with ir.InsertionPoint(op), op.location:
        blocked = graph.matmul_packed(lhs, weight)
    _follow_chain(op, blocked, panel)
    return True


def _packed_weight(rhs: ir.Value, k: int, n: int, panel: int,
                   packed: list[tuple[ir.Value, ir.Value]]) -> ir.Value | None:
    """The constant ``[N/n, K, n]`` of ``rhs``, made once per weight (tied weights share it)."""
    for weight, panels in packed:
        if weight == rhs:
            return panels
    array = constant_array(rhs)
    if array is None:
        return None
    elem = ir.RankedTensorType(rhs.type).element_type
    with ir.InsertionPoint(rhs.owner), rhs.owner.location:
        panels = make_constant(array.reshape(k, n // panel, panel).transpose(1, 0, 2),
                               ir.RankedTensorType.get([n // panel, k, panel], elem))
    packed.append((rhs, panels))
    return panels


def _follow_chain(matmul: ir.Operation, blocked: ir.Value, panel: int) -> None:
    """Rewrite the single-user elementwise chain after ``matmul`` in the blocked shape, then
    reshape back once where it ends, and erase the originals."""
    original = matmul.results[0]
    shape = _static_shape(original)
    assert shape is not None
    old_ops = [matmul]
    while True:
        uses = list(original.uses)
        if len(uses) != 1:
            break
        user = uses[0].owner
        new = _blocked_op(user, original, blocked, shape, panel)
        if new is None:
            break
        old_ops.append(user)
        original, blocked = user.results[0], new
    with ir.InsertionPoint(old_ops[-1]), old_ops[-1].location:
        back = graph.reshape(blocked, shape=shape)
    original.replace_all_uses_with(back)
    for old in reversed(old_ops):
        old.erase()


def _blocked_op(user: ir.Operation, original: ir.Value, blocked: ir.Value, shape: list[int],
                panel: int) -> ir.Value | None:
    """``user`` rebuilt on the blocked value (its other operands reshaped to match), or None
    when it is no elementwise op keeping ``shape``."""
    short = user.name.split(".", 1)[1] if user.name.startswith("graph.") else ""
    opdef = graph.OPS.get(short)
    if opdef is None or opdef.pattern not in _CHAIN_PATTERNS or len(user.results) != 1 or \
            any(a.kind in ("ints", "dense") for a in opdef.attrs) or \
            _static_shape(user.results[0]) != shape:
        return None
    attrs = {a.name: a.read(user.attributes[a.name]) for a in opdef.attrs}
    with ir.InsertionPoint(user), user.location:
        operands = []
        for value in user.operands:
            if value == original:
                operands.append(blocked)
                continue
            other = _blocked_operand(value, shape, panel)
            if other is None:
                return None
            operands.append(other)
        try:
            result = graph.build(short, operands, attrs)
        except graph.ShapeError:
            return None
    assert isinstance(result, ir.Value)
    return result


def _blocked_operand(value: ir.Value, shape: list[int], panel: int) -> ir.Value | None:
    """``value`` (broadcast against ``shape``) reshaped to broadcast against the blocked
    shape: its last dim ``N`` split into ``[N/n, n]`` (a size-1 last dim into ``[1, 1]``)."""
    own = _static_shape(value)
    if own is None or len(own) > len(shape):
        return None
    if not own:
        return value
    if own[-1] == shape[-1]:
        target = own[:-1] + [shape[-1] // panel, panel]
    elif own[-1] == 1:
        target = own[:-1] + [1, 1]
    else:
        return None
    array = constant_array(value)
    if array is not None:
        return make_constant(array.reshape(target), ir.RankedTensorType.get(
            target, ir.RankedTensorType(value.type).element_type))
    return graph.reshape(value, shape=target)


@register_pass
@dataclass
class PackWeights(ModulePass):
    name = "graph-pack-weights"
    summary = ("Pack constant matmul right operands into [N/n, K, n] panels at compile time; "
               "their elementwise epilogues follow in the blocked shape")
    panel: int = DEFAULT_PANEL

    def run(self, module: ir.Operation) -> None:
        pack_weights(module, panel=self.panel)
