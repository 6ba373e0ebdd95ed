"""Result shapes computed on the host from the input shapes, before any compiled code runs.

A compiled function with dynamic dims records, per argument dim, its symbol (``N``) and, per
result dim, an expression over those symbols (``N``, ``2*N+1``): see
:mod:`mlcir.runtime.signature`. Here the symbols are bound from the arrays' shapes (inputs
that share a symbol must agree: :class:`~mlcir.errors.DimMismatchError` otherwise) and the
result shapes evaluated, so that a caller never passes output arrays. The expressions are
parsed once per signature; a call costs a dict of sizes and a few integer operations.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any, Callable, Mapping, Sequence

from mlcir.errors import DimMismatchError, RuntimeInputError

from .signature import Signature

Sizes = Mapping[str, int]
_TOKEN = re.compile(r"\s*(?:(\d+)|([A-Za-z_][\w.]*)|(//|[-+*()]))")


def _tokens(text: str) -> list[str]:
    out, pos, text = [], 0, text.rstrip()
    while pos < len(text):
        match = _TOKEN.match(text, pos)
        if match is None:
            raise ValueError(f"bad dim expression {text!r} at {pos}")
        out.append(match.group(match.lastindex or 0))
        pos = match.end()
    return out


@lru_cache(maxsize=1024)
def compile_expression(text: str) -> Callable[[Sizes], int]:
    """``text`` (integers, symbols, ``+ - * //`` and parentheses) as a function of the sizes
    of its symbols."""
    tokens = _tokens(text)
    pos = 0

    def peek() -> str | None:
        return tokens[pos] if pos < len(tokens) else None

    def take() -> str:
        nonlocal pos
        if pos >= len(tokens):
            raise ValueError(f"bad dim expression {text!r}: it ends too early")
        pos += 1
        return tokens[pos - 1]

    def factor() -> Callable[[Sizes], int]:
        token = take()
        if token == "(":
            inner = expr()
            if take() != ")":
                raise ValueError(f"bad dim expression {text!r}: unbalanced parentheses")
            return inner
        if token == "-":
            operand = factor()
            return lambda s: -operand(s)
        if token.isdigit():
            value = int(token)
            return lambda _sizes: value
        if token[0].isalpha() or token[0] == "_":
            return lambda s: s[token]
        raise ValueError(f"bad dim expression {text!r}: unexpected {token!r}")

    def binary(operand: Callable[[], Callable[[Sizes], int]], ops: dict[str, Callable[[int, int], int]]
               ) -> Callable[[Sizes], int]:
        left = operand()
        while peek() in ops:
            op, right = ops[take()], operand()
            left = (lambda a, b, f: lambda s: f(a(s), b(s)))(left, right, op)
        return left

    def term() -> Callable[[Sizes], int]:
        return binary(factor, {"*": int.__mul__, "//": int.__floordiv__})

    def expr() -> Callable[[Sizes], int]:
        return binary(term, {"+": int.__add__, "-": int.__sub__})

    result = expr()
    if pos != len(tokens):
        raise ValueError(f"bad dim expression {text!r}: unexpected {tokens[pos]!r}")
    return result


def bind_symbols(signature: Signature, arg_shapes: Sequence[Sequence[int]]) -> dict[str, int]:
    """The size of each argument symbol; two arguments (or two dims) that give one symbol
    different sizes raise :class:`DimMismatchError` naming both and the symbol."""
    sizes: dict[str, int] = {}
    seen: dict[str, tuple[str, int]] = {}
    for spec, shape in zip(signature.args, arg_shapes):
        for axis, symbol in enumerate(spec.symbols):
            if symbol is None or axis >= len(shape):
                continue
            size = int(shape[axis])
            if symbol not in sizes:
                sizes[symbol], seen[symbol] = size, (spec.name, axis)
            elif sizes[symbol] != size:
                other, other_axis = seen[symbol]
                raise DimMismatchError(
                    f"{signature.name}(): inputs '{other}' and '{spec.name}' share the symbolic "
                    f"dim '{symbol}' but give it different sizes: '{other}' dim {other_axis} is "
                    f"{sizes[symbol]}, '{spec.name}' dim {axis} is {size}")
    return sizes


def result_shapes(signature: Signature, arg_shapes: Sequence[Sequence[int]]
                  ) -> list[tuple[int, ...]]:
    """The shape of each result of ``signature`` for arguments of ``arg_shapes`` (checked
    against the signature's static dims beforehand); raises :class:`RuntimeInputError` for a
    result whose dynamic dims have no known expression (pass an output array for it)."""
    plan = _plan(signature)
    if plan is None:
        return [spec.shape for spec in signature.results]  # type: ignore[misc]
    sizes = bind_symbols(signature, arg_shapes)
    shapes = []
    for spec, dims in zip(signature.results, plan):
        if dims is None:
            raise RuntimeInputError(
                f"result '{spec.name}' of {signature.name}() has a dynamic shape "
                f"{spec.describe()} that cannot be computed from the inputs: pass an output "
                "array of the right shape after the inputs")
        shapes.append(tuple(d if isinstance(d, int) else d(sizes) for d in dims))
    return shapes


def shape_function(signature: Signature
                   ) -> Callable[[Sequence[Sequence[int]]], tuple[tuple[int, ...], ...] | None]:
    """:func:`result_shapes` made once per function for the fast call path: the result shapes
    for arguments of the given shapes (their ranks checked beforehand), or None wherever
    :func:`result_shapes` would raise (the checked path then explains). A result dim that is a
    plain symbol is read from the argument dim that binds it; only other expressions build the
    sizes of the symbols."""
    plan = _plan(signature)
    if plan is None:
        static = tuple(tuple(spec.shape) for spec in signature.results)  # type: ignore[arg-type]
        return lambda _shapes: static
    if any(dims is None for dims in plan):
        return lambda _shapes: None
    first: dict[str, tuple[int, int]] = {}
    checks: list[tuple[int, int, int, int]] = []  # two argument dims of one symbol
    for i, spec in enumerate(signature.args):
        for axis, symbol in enumerate(spec.symbols):
            if symbol is None:
                continue
            if symbol in first:
                checks.append((i, axis, *first[symbol]))
            else:
                first[symbol] = (i, axis)
    # Per result dim: a static size, the (argument, axis) of a plain symbol, or an expression.
    dims_of: list[list[Any]] = []
    for spec, dims in zip(signature.results, plan):
        symbols = spec.symbols or (None,) * len(spec.shape)
        dims_of.append([d if isinstance(d, int) else first[sym] if sym in first else d
                        for d, sym in zip(dims, symbols)])  # type: ignore[union-attr]
    needs_sizes = any(callable(d) for dims in dims_of for d in dims)

    def shapes(arg_shapes: Sequence[Sequence[int]]) -> tuple[tuple[int, ...], ...] | None:
        for i, axis, j, other in checks:
            if arg_shapes[i][axis] != arg_shapes[j][other]:
                return None
        sizes = ({symbol: arg_shapes[i][axis] for symbol, (i, axis) in first.items()}
                 if needs_sizes else {})
        out = []
        for dims in dims_of:
            shape = []
            for d in dims:
                shape.append(d if type(d) is int else
                             arg_shapes[d[0]][d[1]] if type(d) is tuple else d(sizes))
            out.append(tuple(shape))
        return tuple(out)

    return shapes


@lru_cache(maxsize=256)
def _plan(signature: Signature) -> list[list | None] | None:
    """Per result, per dim: the static size or the compiled expression (None for a result
    with an unknown dim); None when nothing is symbolic (the static shapes are the answer)."""
    if not any(a.symbols for a in signature.args) and all(
            None not in r.shape for r in signature.results):
        return None
    plan: list[list | None] = []
    for spec in signature.results:
        symbols = spec.symbols or (None,) * len(spec.shape)
        if any(d is None and s is None for d, s in zip(spec.shape, symbols)):
            plan.append(None)
            continue
        plan.append([d if d is not None else compile_expression(s)  # type: ignore[arg-type]
                     for d, s in zip(spec.shape, symbols)])
    return plan
