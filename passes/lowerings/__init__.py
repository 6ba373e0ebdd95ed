"""Lowering rules: how each ``graph`` op becomes linalg compute blocks inside a kernel.

A rule receives the kernel's input values, its destination tensors (destination-passing style)
and the op's attributes, builds linalg ops at the current insertion point (each one a named
compute block), and returns the result tensors. ``dest_dims`` says how to size a destination
whose type has dynamic dims, from the op's inputs at the call site.
"""

from __future__ import annotations

from .rule import RULES, LoweringContext, Rule, lowering

__all__ = ["LoweringContext", "Rule", "lowering", "load_all"]


def load_all() -> dict[str, Rule]:
    """Import the rule modules (they register themselves) and return the table."""
    from . import (elementwise, linear_algebra, nchwc, nn, packed, pad,  # noqa: F401
                   reduction, scatter, shape, winograd)

    return RULES
