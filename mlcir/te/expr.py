"""Tensor-expression values: the scalar expressions a ``te.compute`` body is made of.

An expression is a small tree (:class:`Expr`) built with Python operators, as in TVM:
``A[i, k] * B[k, j]``, ``te.exp(x - m)``, ``i >= pad``. Loop variables (:class:`IterVar`) are
``index`` values; tensor elements have the tensor's dtype; a Python number takes the dtype of
the expression it meets. Nothing is lowered here: :mod:`.lower` turns the trees into the body
of a ``linalg.generic``.
"""

from __future__ import annotations

from typing import Any, Sequence

from mlcir.errors import MlcirError

INDEX = "index"
BOOL = "bool"
FLOAT_DTYPES = ("float16", "float32", "float64")
INT_DTYPES = ("int8", "int16", "int32", "int64")
DTYPES = FLOAT_DTYPES + INT_DTYPES + (BOOL,)


class TEError(MlcirError):
    """A tensor expression that cannot be built or lowered (wrong types, a read outside a
    tensor, a reduction not at the top of a compute body)."""


def is_float(dtype: str) -> bool:
    return dtype in FLOAT_DTYPES


def check_dtype(dtype: str) -> str:
    if dtype not in DTYPES:
        raise TEError(f"dtype {dtype!r} is not supported (supported: {', '.join(DTYPES)})")
    return dtype


class Expr:
    """A scalar expression of a given ``dtype`` (``float32``, ``int32``, ``bool``, ``index``…).

    Comparisons build expressions too (``i >= pad``), so expressions hash by identity.
    """

    dtype: str

    # -- arithmetic -----------------------------------------------------------------------
    def __add__(self, other: Any) -> "Expr":
        return binary("add", self, other)

    def __radd__(self, other: Any) -> "Expr":
        return binary("add", other, self)

    def __sub__(self, other: Any) -> "Expr":
        return binary("sub", self, other)

    def __rsub__(self, other: Any) -> "Expr":
        return binary("sub", other, self)

    def __mul__(self, other: Any) -> "Expr":
        return binary("mul", self, other)

    def __rmul__(self, other: Any) -> "Expr":
        return binary("mul", other, self)

    def __truediv__(self, other: Any) -> "Expr":
        return binary("div", self, other)

    def __rtruediv__(self, other: Any) -> "Expr":
        return binary("div", other, self)

    def __floordiv__(self, other: Any) -> "Expr":
        return binary("floordiv", self, other)

    def __rfloordiv__(self, other: Any) -> "Expr":
        return binary("floordiv", other, self)

    def __mod__(self, other: Any) -> "Expr":
        return binary("floormod", self, other)

    def __rmod__(self, other: Any) -> "Expr":
        return binary("floormod", other, self)

    def __neg__(self) -> "Expr":
        return binary("sub", const(0, self.dtype), self)

    # -- comparisons ------------------------------------------------------------------------
    def __lt__(self, other: Any) -> "Expr":
        return compare("lt", self, other)

    def __le__(self, other: Any) -> "Expr":
        return compare("le", self, other)

    def __gt__(self, other: Any) -> "Expr":
        return compare("gt", self, other)

    def __ge__(self, other: Any) -> "Expr":
        return compare("ge", self, other)

    def __eq__(self, other: Any) -> "Expr":  # type: ignore[override]
        return compare("eq", self, other)

    def __ne__(self, other: Any) -> "Expr":  # type: ignore[override]
        return compare("ne", self, other)

    __hash__ = object.__hash__

    def __bool__(self) -> bool:
        raise TEError("a tensor expression has no truth value; use te.if_then_else / te.all / "
                      "te.any instead of Python's if / and / or")

    def astype(self, dtype: str) -> "Expr":
        """This value converted to ``dtype`` (TVM's ``astype``)."""
        check_dtype(dtype)
        return self if dtype == self.dtype else Cast(dtype, self)


class Const(Expr):
    def __init__(self, value: int | float | bool, dtype: str):
        self.value = value
        self.dtype = dtype

    def __repr__(self) -> str:
        return f"{self.value}"


class IterVar(Expr):
    """A loop variable of a compute: a spatial axis of its output or a reduction axis
    (``te.reduce_axis``), ranging over ``[0, extent)``."""

    def __init__(self, extent: int, name: str, kind: str):
        self.extent = extent
        self.name = name
        self.kind = kind  # "spatial" or "reduction"
        self.dtype = INDEX

    @property
    def var(self) -> "IterVar":
        """The variable itself (TVM's ``axis.var``)."""
        return self

    @property
    def dom(self) -> tuple[int, int]:
        return (0, self.extent)

    def __repr__(self) -> str:
        return self.name


class Binary(Expr):
    def __init__(self, op: str, lhs: Expr, rhs: Expr, dtype: str):
        self.op, self.lhs, self.rhs, self.dtype = op, lhs, rhs, dtype

    def __repr__(self) -> str:
        return f"{self.op}({self.lhs!r}, {self.rhs!r})"


class Compare(Expr):
    def __init__(self, op: str, lhs: Expr, rhs: Expr):
        self.op, self.lhs, self.rhs, self.dtype = op, lhs, rhs, BOOL


class Logical(Expr):
    """``te.all`` / ``te.any`` of conditions."""

    def __init__(self, op: str, args: Sequence[Expr]):
        self.op, self.args, self.dtype = op, list(args), BOOL


class Call(Expr):
    """An elementwise math function (``exp``, ``sqrt``, ``tanh``…) of float arguments."""

    def __init__(self, func: str, args: Sequence[Expr]):
        self.func, self.args, self.dtype = func, list(args), args[0].dtype


class Select(Expr):
    """``te.if_then_else(cond, then, else)``: both sides are computed, one is kept, so a
    tensor read in either may be given an index outside the tensor where it is not kept
    (:mod:`.lower` clamps such reads)."""

    def __init__(self, cond: Expr, then: Expr, otherwise: Expr):
        self.cond, self.then, self.otherwise, self.dtype = cond, then, otherwise, then.dtype


class Cast(Expr):
    def __init__(self, dtype: str, value: Expr):
        self.dtype, self.value = dtype, value


class TensorRead(Expr):
    """``A[i, k]``: one element of a tensor."""

    def __init__(self, tensor: Any, indices: Sequence[Expr]):
        self.tensor, self.indices, self.dtype = tensor, list(indices), tensor.dtype


class Reduce(Expr):
    """``te.sum(x, axis=[k])`` (also max/min): only at the top of a compute body, as in TVM."""

    def __init__(self, combiner: str, source: Expr, axis: Sequence[IterVar], where: Expr | None):
        self.combiner, self.source, self.axis, self.where = combiner, source, list(axis), where
        self.dtype = source.dtype


def children(e: Expr) -> list[Expr]:
    """The sub-expressions of ``e``."""
    out: list[Expr] = []
    for attr in ("lhs", "rhs", "value", "cond", "then", "otherwise", "source", "where"):
        child = getattr(e, attr, None)
        if isinstance(child, Expr):
            out.append(child)
    out.extend(getattr(e, "args", ()))
    out.extend(getattr(e, "indices", ()))
    return out


# -- construction helpers --------------------------------------------------------------------
def const(value: int | float | bool, dtype: str | None = None) -> Const:
    """A constant; its dtype defaults to ``float32`` for floats, ``int32`` for ints (TVM's
    ``tvm.tir.const``)."""
    if dtype is None:
        dtype = BOOL if isinstance(value, bool) else "float32" if isinstance(value, float) else "int32"
    if dtype != INDEX:
        check_dtype(dtype)
    return Const(value, dtype)


def as_expr(value: Any, like: Expr | None = None) -> Expr:
    """``value`` as an expression; a Python number takes the dtype of ``like``."""
    if isinstance(value, Expr):
        return value
    if isinstance(value, (bool, int, float)):
        if like is not None and like.dtype != BOOL:
            if isinstance(value, float) and not is_float(like.dtype):
                return const(value, "float32")
            return const(value, like.dtype)
        return const(value)
    raise TEError(f"{value!r} ({type(value).__name__}) is not a tensor expression")


def unify(a: Any, b: Any, what: str) -> tuple[Expr, Expr, str]:
    """Both operands as expressions of one dtype: numbers adapt, an index value meeting a
    float or an integer is converted to it; two different tensor dtypes are an error."""
    if not isinstance(a, Expr):
        a = as_expr(a, b if isinstance(b, Expr) else None)
    if not isinstance(b, Expr):
        b = as_expr(b, a)
    if a.dtype == b.dtype:
        return a, b, a.dtype
    if a.dtype == INDEX:
        return Cast(b.dtype, a), b, b.dtype
    if b.dtype == INDEX:
        return a, Cast(a.dtype, b), a.dtype
    if isinstance(a, Const):
        return const(a.value, b.dtype), b, b.dtype
    if isinstance(b, Const):
        return a, const(b.value, a.dtype), a.dtype
    raise TEError(f"{what} of {a.dtype} and {b.dtype}: convert one with .astype()")


def binary(op: str, a: Any, b: Any) -> Expr:
    a, b, dtype = unify(a, b, op)
    if dtype == BOOL:
        raise TEError(f"{op} of booleans: use te.all / te.any")
    if op in ("floordiv", "floormod") and is_float(dtype):
        raise TEError(f"{op} of {dtype} values: '//' and '%' are for integers and indices")
    if isinstance(a, Const) and isinstance(b, Const) and dtype == INDEX:
        return Const(_fold(op, a.value, b.value), INDEX)
    return Binary(op, a, b, dtype)


def _fold(op: str, x: int, y: int) -> int:
    return {"add": x + y, "sub": x - y, "mul": x * y, "div": x // y, "floordiv": x // y,
            "floormod": x % y, "max": max(x, y), "min": min(x, y)}[op]


def compare(op: str, a: Any, b: Any) -> Expr:
    a, b, _ = unify(a, b, op)
    return Compare(op, a, b)
