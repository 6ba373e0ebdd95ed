"""``graph-pack-weights``: constant right operands of matmuls packed at compile time.

A register tile of ``rows x n`` columns streams ``K x n`` of the right operand per tile; read
from a row-major ``[K, N]`` weight that is ``K`` rows ``N`` elements apart (a new page every
few rows for ``N = 3072``). Packed once into panels ``[N/n, K, n]`` (MLAS's packed B, IREE's
``mmt4d`` right operand) each tile streams one contiguous panel. The pass rewrites
``matmul(x, W)`` with a constant 2-D ``W`` into ``matmul_packed(x, pack(W))``, the packed
weight folded here into a constant, so nothing packs per call.

The result of ``matmul_packed`` is blocked, ``[.., M, N/n, n]``. Its elementwise consumers
(bias add, activation, residual add) follow it into the blocked shape
(:func:`.layout_chains.follow_chain`), so the fused kernel keeps its epilogue; one reshape
back to ``[.., M, N]`` ends the chain (a view, no copy). The original weights, now unused,
are left to ``graph-dce`` (next in ``mlcir-kernels``).

A module carrying ``mlcir.layout = "none"`` is left alone (``mlcir.build(..., layout="none")``).
"""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir

from mlcir.dialects import graph
from mlcir.ir import ops_named

from .constants import constant_array, is_constant, make_constant
from .layout_chains import (LAYOUT_ATTR, follow_chain, ranked_dims, relaid_functions,
                            static_shape)
from .pipelines import STANDALONE_LANES
from .registry import ModulePass, register_pass

# Columns of a panel: the widest register tile the CPU defaults choose, two vectors (a build
# passes its target's, docs/decisions.md#weight-panels; a narrower tile reads part of each
# panel row, still contiguous).
DEFAULT_PANEL = 2 * STANDALONE_LANES
__all__ = ["DEFAULT_PANEL", "LAYOUT_ATTR", "PackWeights", "pack_weights"]


def pack_weights(module: ir.Module | ir.Operation, *, panel: int = DEFAULT_PANEL) -> int:
    """Pack the constant right operands of the matmuls of every graph function of ``module``
    (in place, module docstring); returns how many matmuls now read packed weights."""
    packed: list[tuple[ir.Value, ir.Value]] = []
    count = 0
    for fn in relaid_functions(module):
        for op in ops_named(fn, "graph.matmul"):
            if _pack(op, panel, packed):
                count += 1
    return count


def _pack(op: ir.Operation, panel: int, packed: list[tuple[ir.Value, ir.Value]]) -> bool:
    lhs, rhs = op.operands
    lhs_shape, rhs_shape = ranked_dims(lhs), static_shape(rhs)
    if lhs_shape is None or rhs_shape is None or len(lhs_shape) < 2 or len(rhs_shape) != 2 \
            or lhs_shape[-1] is None or not is_constant(rhs):
        return False
    k, n = rhs_shape
    if n % panel or n // panel < 2:
        return False
    weight = _packed_weight(rhs, k, n, panel, packed)
    if weight is None:
        return False
    with ir.InsertionPoint(op), op.location:
        blocked = graph.matmul_packed(lhs, weight)
    follow_chain(op, blocked, lambda own, shape: _panel_shape(own, shape, panel))
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


def _panel_shape(own: list[int], shape: list[int], panel: int) -> list[int] | None:
    """The shape of an operand of ``own`` shape (broadcast against ``shape``) in the blocked
    chain: its last dim ``N`` split into ``[N/n, n]``, a size-1 last dim into ``[1, 1]``."""
    if not own:
        return own
    if own[-1] == shape[-1]:
        return own[:-1] + [shape[-1] // panel, panel]
    if own[-1] == 1:
        return own[:-1] + [1, 1]
    return None


@register_pass
@dataclass
class PackWeights(ModulePass):
    name = "graph-pack-weights"
    summary = ("Pack constant matmul right operands into [N/n, K, n] panels at compile time; "
               "their elementwise epilogues follow in the blocked shape")
    panel: int = DEFAULT_PANEL

    def run(self, module: ir.Operation) -> None:
        pack_weights(module, panel=self.panel)
