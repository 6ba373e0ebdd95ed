"""The recorded rewrites of a schedule (``KernelState.rewrites``: inlines, layout, scope and
stride changes), applied to the loop-level IR before its transform script, since no
transform op does them."""

from __future__ import annotations

from mlir import ir

from mlcir.ir import clone_module

from .align import KIND as ALIGN, apply_align
from .collapse import KIND as COLLAPSE, apply_collapse
from .expand import KIND as EXPAND, apply_expand
from .inline import RENAME, apply_inline, apply_rename
from .move import KIND as MOVE, apply_move
from .relayout import KIND as LAYOUT, apply_layout
from .rewrite import Rewrite
from .scope import KIND as SCOPE, apply_scope


def apply_rewrite(module: ir.Module, rewrite: Rewrite) -> None:
    """Apply one recorded rewrite: an inline of block ``target``, a layout, scope or stride
    change (``target`` is its specification), reordered split levels of block ``target``
    (``args``: the dimension and the levels' extents) or its fused dims split across (``args``:
    the dims)."""
    kind, func_name, arg, extra = rewrite.kind, rewrite.func, rewrite.target, rewrite.args
    if kind == EXPAND:
        dim, extents = extra
        apply_expand(module, func_name, arg, int(dim), [int(e) for e in extents.split(",")])
    elif kind == COLLAPSE:
        apply_collapse(module, func_name, arg, [int(d) for d in extra[0].split(",")])
    elif kind == RENAME:
        apply_rename(module, func_name, arg, extra[0])
    elif kind == LAYOUT:
        apply_layout(module, func_name, arg)
    elif kind == SCOPE:
        apply_scope(module, func_name, arg)
    elif kind == ALIGN:
        apply_align(module, func_name, arg)
    elif kind == MOVE:
        apply_move(module, func_name, arg, *extra)
    else:
        apply_inline(module, kind, func_name, arg)


def rewritten(original: ir.Module, rewrites: list[Rewrite]) -> ir.Module:
    """A copy of ``original`` with ``rewrites`` applied: the IR a schedule's transform script
    will see (primitives read new blocks and check legality on it)."""
    with original.context, ir.Location.unknown():
        module = clone_module(original)
        for rewrite in rewrites:
            apply_rewrite(module, rewrite)
    return module
