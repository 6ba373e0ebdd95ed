"""What a lowering rule is and the table the rules register into (``@lowering``).

The rule modules import only this module (and ``builders``);
:func:`mlcir.passes.lowerings.load_all` imports them, so registration has no import circle.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Sequence

from mlir import ir

from ..pipelines import STANDALONE_LANES

LowerFn = Callable[["LoweringContext"], list[ir.Value]]


@dataclass
class LoweringContext:
    """What a rule sees: inputs, destinations, attributes, and a fresh-block-name helper."""

    op_name: str
    inputs: list[ir.Value]
    dests: list[ir.Value]
    attrs: dict[str, Any]
    loc: ir.Location
    used_block_names: set[str]
    # The graph ops of the same kernel (a fused group) that read the result, by name
    # ("graph.pad_window"): a lowering may pick the form its readers take best.
    readers: tuple[str, ...] = ()
    # f32 lanes of the target's vectors (graph-to-loop's option; a window lowering covers
    # its rows with whole vectors).
    lanes: int = STANDALONE_LANES

    def block_name(self, base: str) -> ir.StringAttr:
        """A block name unique in the kernel being built: ``base``, ``base_1``, …"""
        name, n = base, 0
        while name in self.used_block_names:
            n += 1
            name = f"{base}_{n}"
        self.used_block_names.add(name)
        return ir.StringAttr.get(name)


@dataclass(frozen=True)
class Rule:
    lower: LowerFn
    # (inputs at the call site, attributes, result index) -> for each dim of the result, an
    # index Value where it is dynamic (None where static). Unset: the elementwise rule (a
    # dynamic result dim is read from the first input with a dynamic dim at that position).
    dest_dims: Callable[[Sequence[ir.Value], dict[str, Any], int], list[ir.Value | None]] | None = None
    # A view of its input (reshape): lowered where the op stands, in the graph function or
    # fused kernel, with no destination and no kernel of its own.
    view: bool = False


RULES: dict[str, Rule] = {}


def lowering(*op_names: str, dest_dims=None, view: bool = False):
    """Decorator registering a rule for ``graph.<name>`` ops."""

    def register(fn: LowerFn) -> LowerFn:
        for name in op_names:
            RULES[name] = Rule(fn, dest_dims, view)
        return fn

    return register
