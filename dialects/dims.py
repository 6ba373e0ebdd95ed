"""Symbolic dims: a dynamic dim as a polynomial over named sizes (``N``, ``S``, ``N*S``,
``S - 1``), and a graph op's result dims derived from its operands' by its own shape rule.

The frontend folds exporters' shape arithmetic on them (:mod:`mlcir.frontend.symbolic`) and
the runtime derives each result's shape expression from them
(:mod:`mlcir.runtime.symbolic_shapes`); both use :func:`result_dims`, so the two agree.
Printed, a Dim is an expression :mod:`mlcir.runtime.shapes` parses.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Union

import numpy as np
from mlir import ir

from .graph import reshape_source_axis
from .opdef import OpDef, ShapeError, TensorSpec

Monomial = tuple[str, ...]   # sorted symbol names (repeats for powers); () is the constant


class NotExpressible(ValueError):
    """Shape arithmetic whose result cannot be written over the symbols."""


class Dim:
    """A polynomial over symbolic dims (every symbol a size >= 1), immutable and hashable."""

    __slots__ = ("terms",)

    def __init__(self, terms: Mapping[Monomial, int]) -> None:
        self.terms = {m: c for m, c in terms.items() if c}

    @staticmethod
    def symbol(name: str) -> "Dim":
        return Dim({(name,): 1})

    @staticmethod
    def of(value: "int | Dim") -> "Dim":
        return value if isinstance(value, Dim) else Dim({(): int(value)})

    def simplify(self) -> "int | Dim":
        """An int when no symbol is left."""
        if all(m == () for m in self.terms):
            return self.terms.get((), 0)
        return self

    @property
    def symbols(self) -> set[str]:
        return {s for m in self.terms for s in m}

    def evaluate(self, sizes: Mapping[str, int]) -> int:
        total = 0
        for monomial, coefficient in self.terms.items():
            term = coefficient
            for s in monomial:
                term *= sizes[s]
            total += term
        return total

    # -- arithmetic (numpy object arrays call these) ---------------------------------------

    def __add__(self, other: "int | Dim") -> "int | Dim":
        terms = dict(self.terms)
        for m, c in Dim.of(integer(other)).terms.items():
            terms[m] = terms.get(m, 0) + c
        return Dim(terms).simplify()

    __radd__ = __add__

    def __neg__(self) -> "Dim":
        return Dim({m: -c for m, c in self.terms.items()})

    def __sub__(self, other: "int | Dim") -> "int | Dim":
        return self + (-Dim.of(integer(other)))

    def __rsub__(self, other: "int | Dim") -> "int | Dim":
        return Dim.of(integer(other)) + (-self)

    def __mul__(self, other: "int | Dim") -> "int | Dim":
        terms: dict[Monomial, int] = {}
        for m1, c1 in self.terms.items():
            for m2, c2 in Dim.of(integer(other)).terms.items():
                m = tuple(sorted(m1 + m2))
                terms[m] = terms.get(m, 0) + c1 * c2
        return Dim(terms).simplify()

    __rmul__ = __mul__

    def __floordiv__(self, other: "int | Dim") -> "int | Dim":
        return divide_exactly(self, other)

    def __rfloordiv__(self, other: "int | Dim") -> "int | Dim":
        return divide_exactly(other, self)

    __truediv__ = __floordiv__
    __rtruediv__ = __rfloordiv__

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (int, np.integer)):
            other = Dim.of(int(other))
        return isinstance(other, Dim) and self.terms == other.terms

    def __hash__(self) -> int:
        return hash(frozenset(self.terms.items()))

    def __str__(self) -> str:
        parts = []
        for m, c in sorted(self.terms.items(), key=lambda t: (-len(t[0]), t[0])):
            text = "*".join(m)
            if not text:
                parts.append(str(c))
            else:
                parts.append(text if c == 1 else f"-{text}" if c == -1 else f"{c}*{text}")
        return " + ".join(parts).replace("+ -", "- ")

    __repr__ = __str__


def integer(v: Any) -> "int | Dim":
    if isinstance(v, Dim):
        return v
    if isinstance(v, (bool, np.bool_)) or not float(v).is_integer():
        raise NotExpressible(f"{v!r} is not an integer")
    return int(v)


SymbolicDim = Union[int, Dim]


def divide_exactly(a: SymbolicDim, b: SymbolicDim) -> SymbolicDim:
    """``a / b`` when it divides exactly as polynomials (``N*S / S``, ``4*N / 2``)."""
    a, b = Dim.of(integer(a)), Dim.of(integer(b))
    if len(b.terms) != 1:
        raise NotExpressible(f"cannot divide {a} by {b}")
    ((bm, bc),) = b.terms.items()
    out: dict[Monomial, int] = {}
    for m, c in a.terms.items():
        rest = list(m)
        for s in bm:
            if s not in rest:
                raise NotExpressible(f"{a} is not divisible by {b}")
            rest.remove(s)
        if c % bc:
            raise NotExpressible(f"{a} is not divisible by {b}")
        out[tuple(rest)] = c // bc
    return Dim(out).simplify()


def compare(a: SymbolicDim, b: SymbolicDim) -> int:
    """The sign of ``a - b`` when it is decided for every size >= 1 of the symbols."""
    diff = Dim.of(integer(a)) - integer(b)
    if isinstance(diff, int):
        return (diff > 0) - (diff < 0)
    # A polynomial whose coefficients all have one sign is, for sizes >= 1, at least (at
    # most) the sum of its coefficients.
    coefficients = list(diff.terms.values())
    if all(c >= 0 for c in coefficients) and sum(coefficients) > 0:
        return 1
    if all(c <= 0 for c in coefficients) and sum(coefficients) < 0:
        return -1
    raise NotExpressible(f"{a} and {b} compare differently for different sizes")




#: Probe rounds when matching a result dim to an operand dim.
PROBES = 3


def probe_size(index: int, probe: int) -> int:
    """The size of the ``index``-th symbol in probe ``probe``: no two symbols' sizes are
    affine in each other (a different curvature each; with shifted probes a matmul's ``S``
    once matched ``N + 55440``), multiples of 2520 keep the shape rules' divisions exact."""
    return 5040 * (1 + probe) + 2520 * index * probe * probe


def result_dims(opdef: OpDef, attrs: dict[str, Any], operand_dims: Sequence[Sequence[Any]],
                operand_types: Sequence[ir.Type], results: Sequence[Sequence[int | None]]
                ) -> list[list[SymbolicDim | None]]:
    """The dims of a graph op's results (``results``: their static dims, None where dynamic)
    from its operands' dims (ints, Dims, or None when unknown): a reshape's worked out
    exactly, any other op's by evaluating its shape rule on probe sizes of the symbols and
    matching each dynamic result dim to an operand dim, exactly or affinely; None where
    nothing matches."""
    if opdef.name == "reshape" and None not in operand_dims[0]:
        return [reshape_dims(operand_dims[0], attrs["shape"])]
    candidates = sorted({d for dims in operand_dims for d in dims if isinstance(d, Dim)},
                        key=str)
    symbols = sorted({s for d in candidates for s in d.symbols})
    unknown = [f"?{i}.{a}" for i, dims in enumerate(operand_dims)
               for a, d in enumerate(dims) if d is None]
    names = symbols + unknown
    probes = []
    try:
        for k in range(PROBES):
            sizes = {s: probe_size(j, k) for j, s in enumerate(names)}
            specs = [TensorSpec(tuple(sizes[f"?{i}.{a}"] if d is None else
                                      d.evaluate(sizes) if isinstance(d, Dim) else d
                                      for a, d in enumerate(dims)),
                                ir.RankedTensorType(t).element_type)
                     for i, (dims, t) in enumerate(zip(operand_dims, operand_types))]
            probes.append(([r.shape for r in opdef.infer(specs, attrs)], sizes))
    except (ShapeError, ValueError, ZeroDivisionError, TypeError):
        probes = []
    out = []
    for index, static in enumerate(results):
        dims: list[SymbolicDim | None] = []
        for axis, d in enumerate(static):
            if d is None and probes:
                d = _match([p[0][index][axis] for p in probes], candidates,
                           [p[1] for p in probes])
            dims.append(d)
        out.append(dims)
    return out


def _match(sizes: Sequence[int | None], candidates: Sequence[Dim],
           probes: Sequence[Mapping[str, int]]) -> SymbolicDim | None:
    """The operand dim that a result dim's probe sizes follow, exactly or affinely."""
    if None in sizes:
        return None
    for d in candidates:
        xs = [d.evaluate(p) for p in probes]
        if xs[1] == xs[0] or (sizes[1] - sizes[0]) % (xs[1] - xs[0]):
            continue
        a = (sizes[1] - sizes[0]) // (xs[1] - xs[0])
        b = sizes[0] - a * xs[0]
        if a and all(a * x + b == s for x, s in zip(xs, sizes)):
            return a * d + b
    return None


def reshape_dims(own: Sequence[SymbolicDim], shape: Sequence[int]) -> list[SymbolicDim | None]:
    """graph.reshape's result dims: 0 and -2 - j keep a dim of x, -1 is the rest (None when
    not exact)."""
    sources = [reshape_source_axis(d, i) for i, d in enumerate(shape)]
    out: list[SymbolicDim | None] = [own[j] if j is not None else d
                                     for j, d in zip(sources, shape)]
    if -1 in shape:
        total: SymbolicDim = 1
        rest: SymbolicDim = 1
        for d in own:
            total = total * d
        for j, d in zip(sources, out):
            if not (j is None and d == -1):
                rest = rest * d  # type: ignore[operator]
        try:
            out[list(shape).index(-1)] = divide_exactly(total, rest)
        except NotExpressible:
            out[list(shape).index(-1)] = None
    return out
