"""A recorded rewrite of a schedule (:class:`Rewrite`, one entry of ``KernelState.rewrites``)
and the registry of rewrite kinds (``@rewrite_kind``), each applied by its family module."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

from mlir import ir


@dataclass(frozen=True)
class Rewrite:
    """One rewrite of the loop-level IR, applied before the transform script since no
    transform op does it: its ``kind``, the function it rewrites, its ``target`` (a block's
    name, or the specification of a layout, scope or stride change) and extra arguments."""

    kind: str
    func: str
    target: str
    args: tuple[str, ...] = ()

    def strings(self) -> tuple[str, ...]:
        """Its persisted form: the strings listed in a transform module's ``mlcir.inline``."""
        return (self.kind, self.func, self.target, *self.args)

    @classmethod
    def from_strings(cls, values: Sequence[str]) -> "Rewrite":
        kind, func, target, *args = values
        return cls(kind, func, target, tuple(args))

    def of_block(self, func: str, name: str) -> bool:
        """Whether it rewrites block ``name`` of ``func`` (for kinds that target a block)."""
        return (self.func, self.target) == (func, name)


ApplyRewrite = Callable[[ir.Module, Rewrite], None]

# kind -> the function that applies such a rewrite to a module (registered by the module that
# holds its logic; rewrites.py imports them all).
REWRITE_KINDS: dict[str, ApplyRewrite] = {}


def rewrite_kind(*kinds: str) -> Callable[[ApplyRewrite], ApplyRewrite]:
    """Register the decorated function as the way to apply rewrites of ``kinds``."""
    def register(apply: ApplyRewrite) -> ApplyRewrite:
        for kind in kinds:
            if kind in REWRITE_KINDS:
                raise ValueError(f"rewrite kind '{kind}' is registered twice")
            REWRITE_KINDS[kind] = apply
        return apply
    return register
