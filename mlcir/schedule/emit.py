"""What the transform-IR emission of every primitive shares: the handles made while one
function's script is built, and how loops are found again by name."""

from __future__ import annotations

from dataclasses import dataclass, field

from mlir import ir
from mlir.dialects import transform

from mlcir.transform import match_attr

LOOP_NAME = "loop.name"


def any_op() -> ir.Type:
    return transform.AnyOpType.get()


def param_i64() -> ir.Type:
    return transform.ParamType.get(ir.IntegerType.get_signless(64))


@dataclass
class Emitted:
    """Transform handles made while emitting one function."""

    func: ir.Value
    # scf.for loops in emit order: (loop id, the loop.name they carry). Named, not handled:
    # the pattern sets after vectorization (canonicalization) drop the handles of the loops
    # they touch, which left unroll and hoisting silently applied to nothing.
    for_loops: list[tuple[int, str]] = field(default_factory=list)
    vectorized: list[str] = field(default_factory=list)
    masked: bool = False  # a tile was vectorized with masks


def loops_named(em: Emitted, loop_name: str) -> ir.Value:
    """The scf.for loops of ``em``'s function that carry ``loop_name`` (found again where
    they are needed: see :attr:`Emitted.for_loops`)."""
    return match_attr(em.func, LOOP_NAME, ir.StringAttr.get(loop_name), ["scf.for"])
