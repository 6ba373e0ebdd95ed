"""``graph-fuse-ewise-fma``: ``add(multiply(a, b), c)`` becomes ``ewise_fma(a, b, c)``.

The MLC course's example of a graph rewrite (Relax's ``EwiseFMARewriter``), written with the
pattern API (:mod:`mlcir.passes.patterns`): the whole rewrite is the pattern and a builder.
``ewise_fma`` takes three tensors of one shape, so operands that broadcast are left alone; a
product used elsewhere too is left alone as well (the pattern API never duplicates work).
"""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir

from mlcir.dialects import graph

from .patterns import is_op, rewrite, wildcard
from .registry import ModulePass, register_pass

EWISE_FMA = is_op("graph.add")(is_op("graph.multiply")(wildcard("a"), wildcard("b")), wildcard("c"))


def _fma(a: ir.Value, b: ir.Value, c: ir.Value) -> ir.Value | None:
    if a.type == b.type == c.type:
        return graph.ewise_fma(a, b, c)
    return None


def fuse_ewise_fma(module: ir.Module | ir.Operation) -> int:
    """Rewrite every multiply-add of same-shaped tensors into ``ewise_fma``; returns how many."""
    return rewrite(module, EWISE_FMA, _fma)


@register_pass
@dataclass
class FuseEwiseFMA(ModulePass):
    name = "graph-fuse-ewise-fma"
    summary = "Rewrite add(multiply(a, b), c) of same-shaped tensors into graph.ewise_fma"

    def run(self, module: ir.Operation) -> None:
        fuse_ewise_fma(module)
