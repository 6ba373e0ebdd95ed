"""Tensors and the operators that make them: ``placeholder``, ``compute``, ``reduce_axis``, the
reductions (``sum``/``max``/``min``), ``if_then_else``, ``all``/``any`` and elementwise math.

Names and signatures follow TVM's ``tvm.te`` so the guide's examples read the same.
"""

from __future__ import annotations

import builtins
import inspect
from typing import Any, Callable, Sequence

from .expr import (BOOL, INDEX, INT_DTYPES, Call, Cast, Expr, children, IterVar, Logical, Reduce, Select, TEError,
                   TensorRead, as_expr, binary, check_dtype, const, is_float, unify)

REDUCE_COMBINERS = ("sum", "max", "min")


class Tensor:
    """A placeholder (a kernel input) or the result of a compute. ``T[i, j]`` reads one
    element; ``T.op`` is the tensor itself (TVM's ``C.op``) with ``T.op.axis`` (its spatial
    loop variables) and ``T.op.reduce_axis``."""

    def __init__(self, shape: Sequence[int], dtype: str, name: str, body: Expr | None = None,
                 axis: Sequence[IterVar] = ()):
        self.shape = tuple(int(s) for s in shape)
        self.dtype = dtype
        self.name = name
        self.body = body
        self.axis = list(axis)
        self.reduce_axis = list(body.axis) if isinstance(body, Reduce) else []

    @property
    def op(self) -> "Tensor":
        return self

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def is_placeholder(self) -> bool:
        return self.body is None

    def __getitem__(self, indices: Any) -> Expr:
        if not isinstance(indices, tuple):
            indices = (indices,)
        if len(indices) != len(self.shape):
            raise TEError(f"{self.name} has {len(self.shape)} dimensions, indexed with "
                          f"{len(indices)}")
        exprs = []
        for index in indices:
            if isinstance(index, int) and not isinstance(index, bool):
                exprs.append(const(index, INDEX))
                continue
            expr = as_expr(index)
            if expr.dtype not in INT_DTYPES + (INDEX,):
                raise TEError(f"{self.name} indexed with a {expr.dtype} value")
            exprs.append(expr if expr.dtype == INDEX else Cast(INDEX, expr))
        return TensorRead(self, exprs)

    def __repr__(self) -> str:
        return f"Tensor({self.name}, shape={list(self.shape)}, {self.dtype})"


def placeholder(shape: Sequence[int] | int, dtype: str = "float32",
                name: str = "placeholder") -> Tensor:
    """An input of the kernel."""
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    if builtins.any(not isinstance(s, int) or s <= 0 for s in shape):
        raise TEError(f"placeholder {name}: shape {list(shape)} must be positive integers "
                      "(static shapes)")
    return Tensor(shape, check_dtype(dtype), name)


def reduce_axis(dom: tuple[int, int] | int, name: str = "rv") -> IterVar:
    """A reduction variable over ``dom`` (``(0, n)`` as TVM, or just ``n``)."""
    if isinstance(dom, int):
        dom = (0, dom)
    lo, hi = dom
    if lo != 0:
        raise TEError(f"reduce_axis {name}: the domain must start at 0, got ({lo}, {hi}); "
                      f"shift the index instead ({name} + {lo})")
    if hi <= 0:
        raise TEError(f"reduce_axis {name}: empty domain ({lo}, {hi})")
    return IterVar(int(hi), name, "reduction")


def compute(shape: Sequence[int] | int, fcompute: Callable[..., Any], name: str = "compute",
            dtype: str | None = None) -> Tensor:
    """The tensor whose element at ``(i, j, …)`` is ``fcompute(i, j, …)``; the body may be a
    reduction (``te.sum(…, axis=k)``) at its top only. ``name`` names the block a schedule
    finds (``sch.get_block(name)``)."""
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    params = list(inspect.signature(fcompute).parameters.values())
    if builtins.any(p.kind is inspect.Parameter.VAR_POSITIONAL for p in params):
        names = [f"i{d}" for d in range(len(shape))]
    else:  # the indices: positional parameters without a default
        names = [p.name for p in params if p.default is p.empty and p.kind in (
            inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    if len(names) != len(shape):
        raise TEError(f"compute {name}: fcompute takes {len(names)} indices, the shape has "
                      f"{len(shape)} dimensions")
    axis = [IterVar(int(extent), n, "spatial") for extent, n in zip(shape, names)]
    body = as_expr(fcompute(*axis))
    _check_body(name, body)
    if dtype is not None and check_dtype(dtype) != body.dtype:
        body = body.astype(dtype) if not isinstance(body, Reduce) else Reduce(
            body.combiner, body.source.astype(dtype), body.axis, body.where)
    if body.dtype == INDEX:
        body = body.astype("int32")
    return Tensor(shape, body.dtype, name, body, axis)


def _check_body(name: str, body: Expr) -> None:
    """A reduction only at the top (TVM's rule: its init and update are the block's)."""
    def visit(e: Any, top: bool) -> None:
        if isinstance(e, Reduce):
            if not top:
                raise TEError(f"compute {name}: a reduction (te.{e.combiner}) must be the whole "
                              "body of a compute; compute it in its own te.compute")
            visit(e.source, False)
            if e.where is not None:
                visit(e.where, False)
            return
        for child in children(e):
            visit(child, False)
    visit(body, True)


# -- reductions ------------------------------------------------------------------------------
def _reducer(combiner: str) -> Callable[..., Expr]:
    def reduce(expr: Any, axis: IterVar | Sequence[IterVar] | Any = None,
               where: Any = None) -> Expr:
        if axis is None or isinstance(axis, (Expr, int, float)) and not isinstance(axis, IterVar):
            if axis is None or combiner == "sum":
                raise TEError(f"te.{combiner}: pass axis=[...] (reduction variables)"
                              + ("" if combiner == "sum" else ", or two values for the "
                                 "elementwise form"))
            return binary(combiner, expr, axis)
        axes = [axis] if isinstance(axis, IterVar) else list(axis)
        for a in axes:
            if not isinstance(a, IterVar) or a.kind != "reduction":
                raise TEError(f"te.{combiner}: axis must be te.reduce_axis variables, got {a!r}")
        source = as_expr(expr)
        if source.dtype in (BOOL, INDEX):
            source = source.astype("int32")
        return Reduce(combiner, source, axes, None if where is None else as_expr(where))
    reduce.__name__ = combiner
    reduce.__doc__ = (f"``te.{combiner}(expr, axis=[k, …], where=None)``: the {combiner} over "
                      "the reduction variables (at the top of a compute body); "
                      + ("" if combiner == "sum" else f"``te.{combiner}(a, b)``: elementwise."))
    return reduce


sum = _reducer("sum")  # noqa: A001 - TVM's name
max = _reducer("max")  # noqa: A001
min = _reducer("min")  # noqa: A001


def maximum(a: Any, b: Any) -> Expr:
    return binary("max", a, b)


def minimum(a: Any, b: Any) -> Expr:
    return binary("min", a, b)


def if_then_else(cond: Any, then: Any, otherwise: Any) -> Expr:
    """``then`` where ``cond`` holds, else ``otherwise``."""
    cond = as_expr(cond)
    if cond.dtype != BOOL:
        raise TEError(f"if_then_else: the condition is {cond.dtype}, not a comparison")
    then, otherwise, _ = unify(then, otherwise, "if_then_else")
    return Select(cond, then, otherwise)


def all(*conds: Any) -> Expr:  # noqa: A001 - TVM's name (tvm.tir.all)
    return _logical("and", conds)


def any(*conds: Any) -> Expr:  # noqa: A001
    return _logical("or", conds)


def _logical(op: str, conds: Sequence[Any]) -> Expr:
    exprs = [as_expr(c) for c in conds]
    if not exprs or builtins.any(e.dtype != BOOL for e in exprs):
        raise TEError(f"te.{'all' if op == 'and' else 'any'} takes one or more conditions")
    return exprs[0] if len(exprs) == 1 else Logical(op, exprs)


# -- elementwise math ------------------------------------------------------------------------
# te name -> math dialect op (float arguments); sigmoid is built from exp.
MATH_FUNCS = {"exp": "exp", "exp2": "exp2", "log": "log", "log2": "log2", "sqrt": "sqrt",
              "rsqrt": "rsqrt", "tanh": "tanh", "sin": "sin", "cos": "cos", "erf": "erf",
              "floor": "floor", "ceil": "ceil", "round": "roundeven", "abs": "absf",
              "power": "powf", "sigmoid": "sigmoid"}


def _math(func: str, arity: int = 1) -> Callable[..., Expr]:
    def call(*args: Any) -> Expr:
        if len(args) != arity:
            raise TEError(f"te.{func} takes {arity} argument(s), got {len(args)}")
        exprs = [as_expr(a) for a in args]
        if arity == 2:
            a, b, _ = unify(exprs[0], exprs[1], func)
            exprs = [a, b]
        if func == "abs" and not is_float(exprs[0].dtype):
            return binary("max", exprs[0], binary("sub", 0, exprs[0]))
        if not is_float(exprs[0].dtype):
            raise TEError(f"te.{func} of a {exprs[0].dtype} value: convert it with "
                          ".astype('float32')")
        return Call(func, exprs)
    call.__name__ = func
    call.__doc__ = f"Elementwise ``{func}``."
    return call


exp = _math("exp")
exp2 = _math("exp2")
log = _math("log")
log2 = _math("log2")
sqrt = _math("sqrt")
rsqrt = _math("rsqrt")
tanh = _math("tanh")
sin = _math("sin")
cos = _math("cos")
erf = _math("erf")
floor = _math("floor")
ceil = _math("ceil")
round = _math("round")  # noqa: A001
abs = _math("abs")  # noqa: A001
sigmoid = _math("sigmoid")
power = _math("power", 2)
