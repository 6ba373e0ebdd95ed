"""Patterns over graph op DAGs and rewrites of what they match (TVM Relax's DPL, in spirit).

A pattern describes a value: ``wildcard()`` is any value, ``is_const()`` a constant,
``is_op("graph.add")(p, q)`` the result of a ``graph.add`` whose operands match ``p`` and
``q``. Patterns take constraints (``has_attr``, ``has_type``, ``has_shape``, ``has_dtype``,
``one_use``, ``where``), combine with ``|``, and are named to be read back::

    from mlcir.passes.patterns import is_op, wildcard, rewrite
    from mlcir.dialects import graph

    fma = is_op("graph.add")(is_op("graph.multiply")(wildcard("a"), wildcard("b")), wildcard("c"))
    rewrite(module, fma, lambda a, b, c: graph.ewise_fma(a, b, c) if a.type == b.type == c.type else None)

Matching rules:
- the same pattern object, or the same name, used twice must match the same value
  (``x = wildcard("x"); is_op("graph.add")(x, x)`` matches ``x + x`` only);
- commutative ops (``graph.add``, ``multiply``, ``maximum``, ``minimum``) match their operands
  in either order;
- a match never duplicates work: every op matched below the root must be used only by ops of
  the match (``rewrite(..., allow_duplication=True)`` lifts this).

``rewrite`` calls ``build(**values)`` for each match (named values as keyword arguments, at
the matched root); ``build`` returns the replacement value(s), or None to leave the match
alone. Upstream's greedy rewriter drives it, with folding and CSE off, until nothing changes
(docs/graph-passes.md, "Patterns").
"""

from __future__ import annotations

import dataclasses
import inspect
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Mapping, Sequence

from mlir import ir
from mlir.rewrite import (GreedyRewriteConfig, GreedySimplifyRegionLevel, RewritePatternSet,
                          apply_patterns_and_fold_greedily)

from mlcir.dialects import ALL_OPS
from mlcir.errors import PassError

COMMUTATIVE = frozenset({"graph.add", "graph.multiply", "graph.maximum", "graph.minimum"})


class PatternError(PassError):
    """A pattern that cannot be used as written, or a rewrite that built the wrong thing."""


# ----------------------------------------------------------------------------------------------
# Match state


@dataclass(frozen=True)
class _State:
    """Bindings so far: pattern identity -> value, name -> value, and the ops matched."""

    by_pattern: tuple[tuple[int, ir.Value], ...] = ()
    by_name: tuple[tuple[str, ir.Value], ...] = ()
    ops: tuple[ir.Operation, ...] = ()
    leaves: tuple[ir.Value, ...] = ()  # values matched by wildcards and constants

    def bound(self, pattern: "Pattern") -> ir.Value | None:
        return next((v for k, v in self.by_pattern if k == id(pattern)), None)

    def bind(self, pattern: "Pattern", value: ir.Value) -> "_State | None":
        if pattern.name is not None:
            other = next((v for k, v in self.by_name if k == pattern.name), None)
            if other is not None and other != value:
                return None
        by_name = self.by_name
        if pattern.name is not None and all(k != pattern.name for k, _ in by_name):
            by_name = by_name + ((pattern.name, value),)
        return dataclasses.replace(self, by_pattern=self.by_pattern + ((id(pattern), value),),
                                   by_name=by_name)

    def with_op(self, op: ir.Operation) -> "_State":
        return dataclasses.replace(self, ops=self.ops + (op,))

    def with_leaf(self, value: ir.Value) -> "_State":
        return dataclasses.replace(self, leaves=self.leaves + (value,))


@dataclass(frozen=True)
class Match:
    """A successful match: its root op, the named values, every op matched (root first)."""

    root: ir.Operation
    values: Mapping[str, ir.Value]
    ops: tuple[ir.Operation, ...]

    def __getitem__(self, name: str) -> ir.Value:
        return self.values[name]


def _defining_op(value: ir.Value) -> ir.Operation | None:
    owner = value.owner
    return owner.operation if isinstance(owner, (ir.Operation, ir.OpView)) else None


def op_attributes(op: ir.Operation | ir.OpView) -> dict[str, Any]:
    """The attributes of ``op``; those a graph op declares as Python values (``axes`` a list
    of ints), the others as ``ir.Attribute``."""
    op = op.operation
    values: dict[str, Any] = dict(op.attributes.items())
    opdef = ALL_OPS.get(op.name)
    if opdef is not None:
        values.update(opdef.read_attrs(op))
    return values


def _attr_matches(actual: Any, expected: Any) -> bool:
    if callable(expected) and not isinstance(expected, ir.Attribute):
        return bool(expected(actual))
    if isinstance(expected, ir.Attribute) or isinstance(actual, ir.Attribute):
        return str(actual) == str(expected)
    if isinstance(expected, (list, tuple)):
        return isinstance(actual, (list, tuple)) and list(actual) == list(expected)
    return actual == expected


# ----------------------------------------------------------------------------------------------
# Patterns


@dataclass(frozen=True, eq=False)
class Pattern:
    """Base of all patterns: a name (to read the matched value back) and value constraints.

    Every method returns a new pattern; the original is unchanged and can be reused.
    """

    name: str | None = None
    constraints: tuple[Callable[[ir.Value], bool], ...] = field(default=(), repr=False)

    # -- building ----------------------------------------------------------------------------
    def named(self, name: str) -> "Pattern":
        """This pattern, its matched value available as ``name``."""
        return dataclasses.replace(self, name=name)

    def where(self, predicate: Callable[[ir.Value], bool]) -> "Pattern":
        """Match only values for which ``predicate(value)`` is true."""
        return dataclasses.replace(self, constraints=self.constraints + (predicate,))

    def has_type(self, t: ir.Type | str) -> "Pattern":
        return self.where(lambda v: str(v.type) == str(t))

    def has_shape(self, shape: Sequence[int]) -> "Pattern":
        want = [int(d) for d in shape]
        return self.where(lambda v: isinstance(v.type, ir.ShapedType)
                          and ir.ShapedType(v.type).has_static_shape
                          and list(ir.ShapedType(v.type).shape) == want)

    def has_dtype(self, element_type: ir.Type | str) -> "Pattern":
        return self.where(lambda v: isinstance(v.type, ir.ShapedType)
                          and str(ir.ShapedType(v.type).element_type) == str(element_type))

    def one_use(self) -> "Pattern":
        """Match only a value used exactly once."""
        return self.where(lambda v: len(list(v.uses)) == 1)

    def __or__(self, other: "Pattern") -> "Pattern":
        return Alternatives(alternatives=(self, other))

    # -- matching ----------------------------------------------------------------------------
    def match(self, target: ir.Value | ir.Operation | ir.OpView, *,
              allow_duplication: bool = False) -> Match | None:
        """The first match of this pattern at ``target`` (a value, or an op: its result)."""
        if isinstance(target, (ir.Operation, ir.OpView)):
            root = target.operation
            if len(root.results) != 1:
                return None
            value = root.results[0]
        else:
            value, root = target, _defining_op(target)
        for state in self._match(value, _State()):
            if allow_duplication or _no_duplication(state, root):
                return Match(root, dict(state.by_name), state.ops)
        return None

    def _match(self, value: ir.Value, state: _State) -> Iterator[_State]:
        bound = state.bound(self)
        if bound is not None:
            if bound == value:
                yield state
            return
        if not all(check(value) for check in self.constraints):
            return
        bound_state = state.bind(self, value)
        if bound_state is None:
            return
        yield from self._match_structure(value, bound_state)

    def _match_structure(self, value: ir.Value,  # noqa: ARG002 - subclasses read it
                         state: _State) -> Iterator[_State]:
        yield state

    def root_names(self) -> list[str]:
        """The op names a match can be rooted at (what the rewriter dispatches on)."""
        raise PatternError(f"{self!r} cannot be the root of a rewrite: the root must be an op "
                           "pattern (is_op(...)) or alternatives of op patterns")

    def names(self) -> list[str]:
        """The names used in this pattern, in the order they first appear (depth first)."""
        seen: list[str] = []
        self._collect_names(seen, set())
        return seen

    def _collect_names(self, seen: list[str], visited: set[int]) -> None:
        if id(self) in visited:
            return
        visited.add(id(self))
        if self.name is not None and self.name not in seen:
            seen.append(self.name)
        for child in self._children():
            child._collect_names(seen, visited)

    def _children(self) -> Sequence["Pattern"]:
        return ()

    def size(self) -> int:
        """How many op patterns this pattern holds (its default rewrite benefit)."""
        return sum(child.size() for child in self._children())


@dataclass(frozen=True, eq=False)
class Wildcard(Pattern):
    """Any value."""

    def _match_structure(self, value: ir.Value, state: _State) -> Iterator[_State]:
        yield state.with_leaf(value)


@dataclass(frozen=True, eq=False)
class ConstantPattern(Pattern):
    """A value defined by ``arith.constant`` (dense or ``dense_resource`` elements)."""

    def _match_structure(self, value: ir.Value, state: _State) -> Iterator[_State]:
        op = _defining_op(value)
        if op is not None and op.name == "arith.constant":
            yield state.with_leaf(value)


@dataclass(frozen=True, eq=False)
class OpPattern(Pattern):
    """The result of an op named one of ``op_names`` whose operands match ``operands``
    (any operands when ``operands`` is None) and whose attributes match ``attrs``."""

    op_names: tuple[str, ...] = ()
    operands: tuple[Pattern, ...] | None = None
    attrs: tuple[tuple[str, Any], ...] = ()

    def __call__(self, *operands: Pattern) -> "OpPattern":
        for i, p in enumerate(operands):
            if not isinstance(p, Pattern):
                raise PatternError(f"operand {i} of is_op({', '.join(self.op_names)}) is "
                                   f"{type(p).__name__}, not a pattern")
        return dataclasses.replace(self, operands=tuple(operands))

    def has_attr(self, attrs: Mapping[str, Any] | None = None, **kwargs: Any) -> "OpPattern":
        """Match only ops whose attributes equal these values (Python values for a graph op's
        declared attributes, ``ir.Attribute`` otherwise) or satisfy these predicates."""
        items = dict(attrs or {}, **kwargs)
        return dataclasses.replace(self, attrs=self.attrs + tuple(items.items()))

    def _match_structure(self, value: ir.Value, state: _State) -> Iterator[_State]:
        op = _defining_op(value)
        if op is None or op.name not in self.op_names:
            return
        if self.attrs:
            actual = op_attributes(op)
            if not all(k in actual and _attr_matches(actual[k], want) for k, want in self.attrs):
                return
        state = state.with_op(op)
        if self.operands is None:
            yield state
            return
        operands = list(op.operands)
        if len(operands) != len(self.operands):
            return
        orders = [operands]
        if op.name in COMMUTATIVE and len(operands) == 2 and operands[0] != operands[1]:
            orders.append(operands[::-1])
        for order in orders:
            yield from _match_all(list(self.operands), order, state)

    def root_names(self) -> list[str]:
        return list(self.op_names)

    def _children(self) -> Sequence[Pattern]:
        return self.operands or ()

    def size(self) -> int:
        return 1 + super().size()


@dataclass(frozen=True, eq=False)
class Alternatives(Pattern):
    """The first of ``alternatives`` that matches (tried in order, with backtracking)."""

    alternatives: tuple[Pattern, ...] = ()

    def __or__(self, other: Pattern) -> Pattern:
        return Alternatives(alternatives=self.alternatives + (other,))

    def _match_structure(self, value: ir.Value, state: _State) -> Iterator[_State]:
        for alternative in self.alternatives:
            yield from alternative._match(value, state)

    def root_names(self) -> list[str]:
        names: list[str] = []
        for alternative in self.alternatives:
            names += [n for n in alternative.root_names() if n not in names]
        return names

    def _children(self) -> Sequence[Pattern]:
        return self.alternatives

    def size(self) -> int:
        return max(a.size() for a in self.alternatives)


def _match_all(patterns: list[Pattern], values: list[ir.Value], state: _State) -> Iterator[_State]:
    if not patterns:
        yield state
        return
    for next_state in patterns[0]._match(values[0], state):
        yield from _match_all(patterns[1:], values[1:], next_state)


def _no_duplication(state: _State, root: ir.Operation | None) -> bool:
    """Every matched op below the root is used only by matched ops, as their matched operand:
    once the root is replaced, nothing else keeps it alive."""
    matched = list(state.ops)
    for op in matched:
        if root is not None and op == root:
            continue
        for result in op.results:
            if any(result == leaf for leaf in state.leaves):
                return False  # also bound by a wildcard: the replacement would read it
            for use in result.uses:
                if not any(use.owner.operation == m for m in matched):
                    return False
    return True


def wildcard(name: str | None = None) -> Wildcard:
    """Any value (a function argument, a constant, an op result)."""
    return Wildcard(name=name)


def is_const(name: str | None = None) -> ConstantPattern:
    """A constant tensor (``arith.constant``)."""
    return ConstantPattern(name=name)


def is_op(*op_names: str, name: str | None = None, **attrs: Any) -> OpPattern:
    """The result of an op named one of ``op_names`` (``"graph.add"``); call the pattern with
    operand patterns to constrain operands; keyword arguments constrain attributes."""
    if not op_names:
        raise PatternError("is_op() needs at least one op name")
    for op_name in op_names:
        if "." not in op_name:
            raise PatternError(f"is_op({op_name!r}): write the full op name, e.g. "
                               f"'graph.{op_name}'")
    return OpPattern(name=name, op_names=tuple(op_names), attrs=tuple(attrs.items()))


# ----------------------------------------------------------------------------------------------
# Rewriting

Builder = Callable[..., "ir.Value | Sequence[ir.Value] | None"]


@dataclass(frozen=True)
class RewriteRule:
    """Replace each match of ``pattern`` by what ``build(**named values)`` returns."""

    pattern: Pattern
    build: Builder
    name: str = ""
    benefit: int | None = None  # default: the number of op patterns (bigger patterns first)
    # True: ``build(match, **values)``, the Match (root op, every matched op) comes first.
    with_match: bool = False

    def __post_init__(self) -> None:
        self.pattern.root_names()  # refuses a root that is not an op pattern
        if not callable(self.build):
            raise PatternError(f"rewrite rule {self.name or self.pattern!r}: build is not callable")


def _call_builder(rule: RewriteRule, match: Match) -> Any:
    """``build(**values)``, passing only the names ``build`` accepts (a builder may ignore
    some values of the pattern)."""
    leading = (match,) if rule.with_match else ()
    try:
        params = list(inspect.signature(rule.build).parameters.values())[len(leading):]
    except (TypeError, ValueError):
        return rule.build(*leading, **match.values)
    if any(p.kind == p.VAR_KEYWORD for p in params):
        return rule.build(*leading, **match.values)
    accepted = {p.name for p in params}
    return rule.build(*leading, **{k: v for k, v in match.values.items() if k in accepted})


def _replacement(rule: RewriteRule, root: ir.Operation, built: Any) -> list[ir.Value]:
    values = [built] if isinstance(built, ir.Value) else list(built)
    label = rule.name or " | ".join(rule.pattern.root_names())
    if len(values) != len(root.results) or not all(isinstance(v, ir.Value) for v in values):
        raise PatternError(f"rewrite {label}: build returned {built!r}; expected "
                           f"{len(root.results)} value(s) to replace '{root.name}'")
    for i, (old, new) in enumerate(zip(root.results, values)):
        if str(old.type) != str(new.type):
            raise PatternError(f"rewrite {label}: replacement #{i} has type {new.type}, the "
                               f"matched '{root.name}' has {old.type}")
    return values


class _Rewriter:
    """The callback the greedy driver calls for each candidate root of one rule."""

    def __init__(self, rule: RewriteRule, allow_duplication: bool):
        self.rule = rule
        self.allow_duplication = allow_duplication
        self.count = 0

    def __call__(self, op: ir.OpView, rewriter: Any) -> bool | None:
        root = op.operation
        match = self.rule.pattern.match(root, allow_duplication=self.allow_duplication)
        if match is None:
            return True  # no match: the driver tries the next pattern
        # Build in a scratch block, so that a declined match leaves no trace behind.
        scratch = ir.Module.create(loc=root.location)
        with ir.InsertionPoint(scratch.body), root.location:
            built = _call_builder(self.rule, match)
        if built is None:
            for new_op in reversed(list(scratch.body.operations)):
                new_op.operation.erase()
            return True
        values = _replacement(self.rule, root, built)
        for new_op in list(scratch.body.operations):
            new_op.operation.move_before(root)
        rewriter.replace_op(root, values)
        _erase_unused(match.ops[1:], rewriter)
        self.count += 1
        return None


def _erase_unused(ops: Sequence[ir.Operation], rewriter: Any) -> None:
    alive = list(ops)
    changed = True
    while changed:
        changed = False
        for op in list(alive):
            if all(not list(r.uses) for r in op.results):
                alive.remove(op)
                rewriter.erase_op(op)
                changed = True


def apply_rules(target: ir.Module | ir.Operation, rules: Sequence[RewriteRule], *,
                allow_duplication: bool = False, max_iterations: int = 10) -> int:
    """Apply ``rules`` everywhere under ``target`` until none matches; returns how many
    rewrites happened."""
    op = target.operation if hasattr(target, "operation") else target
    callbacks = []
    patterns = RewritePatternSet()
    for rule in rules:
        callback = _Rewriter(rule, allow_duplication)
        callbacks.append(callback)
        benefit = rule.benefit if rule.benefit is not None else max(rule.pattern.size(), 1)
        for root_name in rule.pattern.root_names():
            patterns.add(root_name, callback, benefit=benefit)
    config = GreedyRewriteConfig()
    config.enable_folding = False
    config.enable_constant_cse = False
    config.region_simplification_level = GreedySimplifyRegionLevel.DISABLED
    config.max_iterations = max_iterations
    config.use_top_down_traversal = True  # program order: rewrites and new symbols read in order
    frozen = patterns.freeze()
    try:
        apply_patterns_and_fold_greedily(op, frozen, config)
    except RuntimeError as error:
        if "failed to converge" not in str(error):
            raise
        names = ", ".join(r.name or " | ".join(r.pattern.root_names()) for r in rules)
        raise PatternError(f"rewrite ({names}) did not converge in {max_iterations} sweeps: "
                           "does a rule's result match it again?") from None
    return sum(c.count for c in callbacks)


def rewrite(target: ir.Module | ir.Operation, pattern: Pattern, build: Builder, *,
            allow_duplication: bool = False) -> int:
    """Replace every match of ``pattern`` under ``target`` by ``build(**named values)``
    (see the module docstring); returns how many matches were replaced."""
    return apply_rules(target, [RewriteRule(pattern, build)], allow_duplication=allow_duplication)


def matches(target: ir.Module | ir.Operation, pattern: Pattern, *,
            allow_duplication: bool = False) -> list[Match]:
    """Every match of ``pattern`` rooted at an op under ``target``, in program order."""
    op = target.operation if hasattr(target, "operation") else target
    roots = set(pattern.root_names())
    found: list[Match] = []

    def visit(candidate: ir.Operation) -> ir.WalkResult:
        if candidate.name in roots:
            m = pattern.match(candidate, allow_duplication=allow_duplication)
            if m is not None:
                found.append(m)
        return ir.WalkResult.ADVANCE

    op.walk(visit, ir.WalkOrder.PRE_ORDER)
    return found


__all__ = [
    "Alternatives", "ConstantPattern", "Match", "OpPattern", "Pattern", "PatternError",
    "RewriteRule", "Wildcard", "apply_rules", "is_const", "is_op", "matches", "op_attributes",
    "rewrite", "wildcard",
]
