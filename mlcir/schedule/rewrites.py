"""The recorded rewrites of a schedule (``KernelState.rewrites``: inlines, layout, scope and
stride changes, …), applied to the loop-level IR before its transform script, since no
transform op does them; each kind is applied by the function its module registered."""

from __future__ import annotations

from mlir import ir

from mlcir.ir import clone_module

# The modules that register the rewrite kinds (rewrite.REWRITE_KINDS).
from . import align, collapse, expand, inline, move, relayout, scope  # noqa: F401
from .errors import ScheduleError
from .rewrite import REWRITE_KINDS, Rewrite


def apply_rewrite(module: ir.Module, rewrite: Rewrite) -> None:
    """Apply one recorded rewrite with the function registered for its kind."""
    apply = REWRITE_KINDS.get(rewrite.kind)
    if apply is None:
        raise ScheduleError(f"unknown rewrite kind '{rewrite.kind}' (known: "
                            f"{', '.join(sorted(REWRITE_KINDS))})")
    apply(module, rewrite)


def rewritten(original: ir.Module, rewrites: list[Rewrite]) -> ir.Module:
    """A copy of ``original`` with ``rewrites`` applied: the IR a schedule's transform script
    will see (primitives read new blocks and check legality on it)."""
    with original.context, ir.Location.unknown():
        module = clone_module(original)
        for rewrite in rewrites:
            apply_rewrite(module, rewrite)
    return module
