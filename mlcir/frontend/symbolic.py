"""Shape arithmetic on symbolic dims at import: exporters compute reshape targets, expand
shapes and slice bounds from ``Shape(x)`` at run time; when ``x`` has symbolic dims (a batch
``N``, a sequence ``S``) those computations are folded here into *symbolic shape values*.

A symbolic dim is a :class:`Dim`, a polynomial with integer coefficients over symbol names
(``N``, ``S``, ``N*S``, ``S - 1``); a symbolic shape value is a numpy ``object`` array of ints
and Dims. :func:`evaluate` folds the shape-arithmetic ops on them (Shape, Size, Gather,
Concat, Unsqueeze, Squeeze, Slice, Reshape, Cast, Add/Sub/Mul/Div, Equal, Where, Max/Min,
Identity); the converters of Reshape, Expand, Slice, ConstantOfShape and Range turn the
result into graph ops when it is expressible. What cannot be decided on symbols (``N == 4``?
``N // 3``) raises :class:`NotExpressible`, which the importer reports naming the node.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from mlcir.dialects.dims import Dim, NotExpressible, SymbolicDim, compare, divide_exactly, integer

__all__ = ["Dim", "NotExpressible", "SymbolicDim", "compare", "divide_exactly", "evaluate",
           "format_dims", "is_symbolic", "simplify", "symbolic_array"]

def is_symbolic(value: object) -> bool:
    """Whether ``value`` is a symbolic shape value (an object array)."""
    return isinstance(value, np.ndarray) and value.dtype == object


def simplify(value: np.ndarray) -> np.ndarray:
    """An int64 array when no element is symbolic any more, else the object array."""
    flat = [v.simplify() if isinstance(v, Dim) else v for v in value.reshape(-1)]
    if not any(isinstance(v, Dim) for v in flat):
        return np.array([int(v) for v in flat], dtype=np.int64).reshape(value.shape)
    out = np.empty(len(flat), dtype=object)
    out[:] = flat
    return out.reshape(value.shape)


def symbolic_array(dims: Sequence[SymbolicDim]) -> np.ndarray:
    out = np.empty(len(dims), dtype=object)
    out[:] = list(dims)
    return out


def format_dims(dims: Sequence[SymbolicDim | None]) -> str:
    return "[" + ", ".join("?" if d is None else str(d) for d in dims) + "]"


# ----------------------------------------------------------------------------------------------
# Folding the shape-arithmetic ops on symbolic values

Inputs = list[Any]   # per node input: an array (int or object), or None when omitted
Folder = Callable[[Any, Inputs], list[np.ndarray]]
FOLDERS: dict[str, Folder] = {}


def _folds(*op_types: str) -> Callable[[Folder], Folder]:
    def register(fn: Folder) -> Folder:
        for op in op_types:
            FOLDERS[op] = fn
        return fn
    return register


def evaluate(node: Any, inputs: Inputs) -> list[np.ndarray]:
    """The outputs of ``node`` (a :class:`~mlcir.frontend.converter.Node` of an op in
    :data:`FOLDERS`) on symbolic and constant inputs; NotExpressible when not decidable."""
    return [simplify(np.asarray(v, dtype=object)) if np.asarray(v).dtype == object
            else np.asarray(v) for v in FOLDERS[node.op_type](node, inputs)]


def _axes(node: Any, inputs: Inputs, rank: int) -> list[int]:
    raw = inputs[1] if len(inputs) > 1 and inputs[1] is not None else node.attr("axes")
    return sorted(int(a) + rank if int(a) < 0 else int(a) for a in np.asarray(raw).reshape(-1))


@_folds("Identity")
def _identity(_node: Any, inputs: Inputs) -> list[np.ndarray]:
    return [inputs[0]]


@_folds("Cast")
def _cast(_node: Any, inputs: Inputs) -> list[np.ndarray]:
    # Shape values are int64; a cast to another integer or float type keeps the sizes.
    return [inputs[0]]


@_folds("Gather")
def _gather(node: Any, inputs: Inputs) -> list[np.ndarray]:
    x, indices = inputs
    return [np.take(x, np.asarray(indices, dtype=np.int64), axis=int(node.attr("axis", 0)))]


@_folds("Concat")
def _concat(node: Any, inputs: Inputs) -> list[np.ndarray]:
    parts = [np.asarray(v, dtype=object) for v in inputs if v is not None]
    return [np.concatenate(parts, axis=int(node.attr("axis")))]


@_folds("Unsqueeze")
def _unsqueeze(node: Any, inputs: Inputs) -> list[np.ndarray]:
    x = inputs[0]
    count = np.asarray(inputs[1] if len(inputs) > 1 and inputs[1] is not None
                       else node.attr("axes")).size
    out = x
    for a in _axes(node, inputs, x.ndim + count):
        out = np.expand_dims(out, a)
    return [out]


@_folds("Squeeze")
def _squeeze(node: Any, inputs: Inputs) -> list[np.ndarray]:
    x = inputs[0]
    if len(inputs) > 1 and inputs[1] is not None:
        return [np.squeeze(x, axis=tuple(_axes(node, inputs, x.ndim)))]
    return [np.squeeze(x)]


@_folds("Reshape")
def _reshape(node: Any, inputs: Inputs) -> list[np.ndarray]:
    x, shape = inputs
    target = [int(d) for d in np.asarray(shape).reshape(-1)]
    if not node.attr("allowzero", 0):
        target = [x.shape[i] if d == 0 else d for i, d in enumerate(target)]
    return [np.reshape(x, target)]


@_folds("Slice")
def _slice(_node: Any, inputs: Inputs) -> list[np.ndarray]:
    x = inputs[0]
    starts, ends = inputs[1], inputs[2]
    for v in (starts, ends):
        if is_symbolic(v):
            raise NotExpressible("the slice bounds of a shape value are symbolic")
    axes = inputs[3] if len(inputs) > 3 and inputs[3] is not None else range(len(starts))
    steps = inputs[4] if len(inputs) > 4 and inputs[4] is not None else [1] * len(starts)
    index = [slice(None)] * x.ndim
    for s, e, a, st in zip(starts, ends, axes, steps):
        index[int(a)] = slice(int(s), int(min(max(e, -2**62), 2**62)), int(st))
    return [x[tuple(index)]]


def _elementwise(fn: Callable[[Any, Any], Any]) -> Folder:
    def fold(_node: Any, inputs: Inputs) -> list[np.ndarray]:
        a, b = (np.asarray(v, dtype=object) for v in inputs)
        return [np.frompyfunc(fn, 2, 1)(a, b)]
    return fold


def _div(a: SymbolicDim, b: SymbolicDim) -> SymbolicDim:
    if isinstance(a, Dim) or isinstance(b, Dim):
        return divide_exactly(a, b)
    q = abs(int(a)) // abs(int(b))  # integer Div rounds toward zero
    return q if (a >= 0) == (b > 0) else -q


def _equal(a: SymbolicDim, b: SymbolicDim) -> bool:
    return compare(a, b) == 0


def _pick(sign: int) -> Callable[[SymbolicDim, SymbolicDim], SymbolicDim]:
    return lambda a, b: a if compare(a, b) * sign >= 0 else b


FOLDERS["Add"] = _elementwise(lambda a, b: integer(a) + integer(b))
FOLDERS["Sub"] = _elementwise(lambda a, b: integer(a) - integer(b))
FOLDERS["Mul"] = _elementwise(lambda a, b: integer(a) * integer(b))
FOLDERS["Div"] = _elementwise(_div)
FOLDERS["Max"] = _elementwise(_pick(1))
FOLDERS["Min"] = _elementwise(_pick(-1))


@_folds("Equal")
def _equal_op(_node: Any, inputs: Inputs) -> list[np.ndarray]:
    a, b = (np.asarray(v, dtype=object) for v in inputs)
    return [np.frompyfunc(_equal, 2, 1)(a, b).astype(bool)]


@_folds("Where")
def _where(_node: Any, inputs: Inputs) -> list[np.ndarray]:
    condition, a, b = inputs
    if is_symbolic(condition):
        raise NotExpressible("the condition is symbolic")
    return [np.where(np.asarray(condition, dtype=bool), np.asarray(a, dtype=object),
                     np.asarray(b, dtype=object))]
