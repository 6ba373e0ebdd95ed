"""Einsum as the graph ops a compiler already schedules well: sums over the indices only one
operand has, then per pair of operands one batched ``matmul`` between ``permute_dims`` (and
``reshape`` where several indices merge into one matmul dimension).

An operand pair's indices fall into four groups: *batch* (in both and kept), *contracted* (in
both, summed), *left* (only the first, kept) and *right* (only the second, kept). The first
operand is permuted to ``[batch, left, contracted]``, the second to ``[batch, contracted,
right]``, the contracted and right groups of several indices are merged into one dimension
(the left indices but the last stay leading dims over which the second operand broadcasts),
and ``matmul`` does the rest; the result is split and permuted into the output's order. So
attention's ``bhqd,bhkd->bhqk`` is one transpose of the keys and one matmul, and
``bsh,hd->bsd`` one matmul, with their batch and sequence dims dynamic (nothing dynamic is
merged). More than two operands contract left to right.
"""

from __future__ import annotations

import math
import string

from ..builder import GraphBuilder
from ..converter import Converter, Node, Value, converter

_LETTERS = set(string.ascii_letters)


class _Term:
    """An operand (or intermediate result) and the index letter of each of its dims."""

    def __init__(self, value: Value, letters: str) -> None:
        self.value, self.letters = value, letters


def parse_equation(cx: GraphBuilder, equation: str, ranks: list[int]) -> tuple[list[str], str]:
    """The index letters of each operand and of the output, ``...`` expanded into letters the
    equation does not use, aligned from the right (numpy's broadcasting of ``...``)."""
    text = equation.replace(" ", "")
    lhs, arrow, rhs = text.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(ranks):
        raise cx.error(f"equation {equation!r} has {len(terms)} operands, the node "
                       f"{len(ranks)} inputs")
    used = set(text) & _LETTERS
    spare = [c for c in string.ascii_letters if c not in used]
    ellipsis_rank = 0
    for term, rank in zip(terms, ranks):
        if "..." in term:
            ellipsis_rank = max(ellipsis_rank, rank - (len(term) - 3))
    ellipsis = "".join(spare[:ellipsis_rank])
    operands = []
    for term, rank in zip(terms, ranks):
        bad = set(term.replace("...", "")) - _LETTERS
        if bad:
            raise cx.error(f"equation {equation!r}: {''.join(sorted(bad))!r} is not an index "
                           "letter")
        if "..." in term:
            own = rank - (len(term) - 3)
            term = term.replace("...", ellipsis[ellipsis_rank - own:])
        if len(term) != rank:
            raise cx.error(f"equation {equation!r}: the term {term!r} does not name the "
                           f"{rank} dims of its operand")
        if len(set(term)) != len(term):
            raise cx.error(f"equation {equation!r}: a repeated index in one operand (a "
                           "diagonal) is not supported")
        operands.append(term)
    if arrow:
        output = rhs.replace("...", ellipsis)
    else:  # implicit: the ellipsis, then the letters seen once, in alphabetical order
        counts = {c: "".join(operands).count(c) for c in set("".join(operands))}
        output = ellipsis + "".join(sorted(c for c, n in counts.items()
                                           if n == 1 and c not in ellipsis))
    if set(output) - set("".join(operands)) or len(set(output)) != len(output):
        raise cx.error(f"equation {equation!r}: the output {output!r} repeats an index or "
                       "names one no operand has")
    return operands, output


def _sum_out(cx: GraphBuilder, term: _Term, keep: set[str]) -> _Term:
    """``term`` summed over its indices not in ``keep``."""
    gone = [i for i, c in enumerate(term.letters) if c not in keep]
    if not gone:
        return term
    value = cx.op("sum", term.value, axes=gone, keepdims=0)
    return _Term(value, "".join(c for c in term.letters if c in keep))


def _permute(cx: GraphBuilder, term: _Term, order: str) -> Value:
    if term.letters == order:
        return term.value
    return cx.op("permute_dims", term.value, axes=[term.letters.index(c) for c in order])


def _merged(sizes: list[int | None]) -> int | None:
    """The size of dims merged into one (None when one of them is dynamic)."""
    return None if None in sizes else math.prod(sizes)  # type: ignore[arg-type]


def _reshape(cx: GraphBuilder, value: Value, shape: list[int | None]) -> Value:
    if list(cx.shape(value)) == shape:
        return value
    if sum(d is None for d in shape) > 1:
        raise cx.error(f"merging the einsum's dims would need a reshape to "
                       f"{['?' if d is None else d for d in shape]}, with more than one "
                       "dynamic dim; give the symbolic dims a size with "
                       "from_onnx(..., shape_dict={input: shape})")
    return cx.reshape(value, [-1 if d is None else d for d in shape])


def _contract(cx: GraphBuilder, a: _Term, b: _Term, keep: set[str]) -> _Term:
    """``a`` and ``b`` contracted into the indices of ``keep`` they have."""
    a = _sum_out(cx, a, keep | set(b.letters))
    b = _sum_out(cx, b, keep | set(a.letters))
    batch = "".join(c for c in a.letters if c in b.letters and c in keep)
    contracted = "".join(c for c in a.letters if c in b.letters and c not in keep)
    left = "".join(c for c in a.letters if c not in b.letters)
    right = "".join(c for c in b.letters if c not in a.letters)
    size = {c: d for t in (b, a) for c, d in zip(t.letters, cx.shape(t.value)) if d != 1}
    size.update({c: 1 for t in (a, b) for c, d in zip(t.letters, cx.shape(t.value))
                 if d == 1 and c not in size})
    # The left indices but the last stay batch-like dims of the matmul (the right operand
    # broadcasts over them), so "bij,jk->bik" with a dynamic b needs no merged dynamic dim.
    extra, last = left[:-1], left[-1:]
    a_shape = [cx.shape(a.value)[a.letters.index(c)] for c in batch + extra]
    b_shape = [cx.shape(b.value)[b.letters.index(c)] for c in batch] + [1] * len(extra)
    group = {g: _merged([size[c] for c in g]) for g in (last, contracted, right)}
    lhs = _reshape(cx, _permute(cx, a, batch + left + contracted),
                   a_shape + [group[last], group[contracted]])
    rhs = _reshape(cx, _permute(cx, b, batch + contracted + right),
                   b_shape + [group[contracted], group[right]])
    product = cx.op("matmul", lhs, rhs)
    leading = list(cx.shape(product)[:len(batch + extra)])
    product = _reshape(cx, product, leading + [size[c] for c in last + right])
    return _Term(product, batch + left + right)


@converter
class Einsum(Converter):
    """Einsum -> sum, permute_dims, reshape and matmul (see the module docstring); any number
    of operands, ``...`` broadcasting, implicit outputs; a repeated index within one operand
    (a diagonal) is refused."""

    graph_ops = ("matmul", "permute_dims", "sum", "reshape")

    @classmethod
    def check(cls, node: Node) -> list[str]:
        equation = node.attr("equation")
        if not equation:
            return ["the equation attribute is missing"]
        return []

    @classmethod
    def _impl_v13(cls, cx: GraphBuilder, node: Node, inputs: list[Value]) -> Value:
        ranks = [cx.rank(v) for v in inputs]
        letters, output = parse_equation(cx, node.attr("equation"), ranks)
        terms = [_Term(v, t) for v, t in zip(inputs, letters)]
        result = terms[0]
        for i, term in enumerate(terms[1:], start=1):
            later = set(output).union(*(t.letters for t in terms[i + 1:]))
            result = _contract(cx, result, term, later)
        result = _sum_out(cx, result, set(output))
        return _permute(cx, result, output)
