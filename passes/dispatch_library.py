"""``graph-dispatch-library``: send chosen patterns to registered Python library functions.

The MLC course's ``MyModuleMixture``: instead of compiling ``matmul + add`` into a kernel, call
the library function ``env.linear`` (registered with ``mlcir.register_func``) on its inputs.
A *dispatch rule* is a library name, a pattern (:mod:`mlcir.passes.patterns`) and which named
values of the match are the function's arguments; each match becomes
``graph.call_library(module, name, args, [result type])`` (a destination-passing call).

From Python: ``dispatch_library(module, {"env.linear": pattern, ...})`` (arguments: the
pattern's names in order of appearance), or with :class:`DispatchRule` objects. Rules
registered by name (:func:`register_dispatch_rule`) are reachable from pipelines:
``graph-dispatch-library{rules=env.linear,env.relu}``. Two are built in, for the course's
library functions: ``env.linear`` (``x @ w.T + b``, written ``add(matmul(x, permute_dims(w,
[1, 0])), b)``) and ``env.relu``.

Dispatch runs before ``graph-fold-constants`` (folding turns ``permute_dims`` of a bound weight
into a constant, which the ``env.linear`` pattern no longer sees) and before fusion.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Mapping

from mlir import ir

from mlcir.dialects import graph
from mlcir.errors import PassError

from .patterns import Match, Pattern, RewriteRule, apply_rules, is_op, wildcard
from .registry import ModulePass, register_pass


@dataclass(frozen=True)
class DispatchRule:
    """Matches of ``pattern`` become calls of library function ``library`` on the matched
    values named ``args`` (default: every name of the pattern, in order of appearance)."""

    library: str
    pattern: Pattern
    args: tuple[str, ...] | None = None

    def arguments(self) -> tuple[str, ...]:
        names = tuple(self.pattern.names())
        args = tuple(self.args) if self.args is not None else names
        missing = [a for a in args if a not in names]
        if missing:
            raise PassError(f"dispatch rule '{self.library}': argument(s) {', '.join(missing)} "
                            f"are not names of its pattern (names: {', '.join(names) or 'none'})")
        if not args:
            raise PassError(f"dispatch rule '{self.library}': the pattern names no value to pass "
                            "(name them: wildcard('x'))")
        return args


_RULES: dict[str, DispatchRule] = {}


def register_dispatch_rule(rule: DispatchRule, *, override: bool = False) -> DispatchRule:
    """Make ``rule`` reachable by its library name (``graph-dispatch-library{rules=...}``)."""
    if rule.library in _RULES and not override:
        raise ValueError(f"dispatch rule '{rule.library}' is already registered "
                         "(pass override=True to replace it)")
    rule.arguments()
    _RULES[rule.library] = rule
    return rule


def get_dispatch_rule(name: str) -> DispatchRule:
    rule = _RULES.get(name)
    if rule is None:
        known = ", ".join(sorted(_RULES)) or "none"
        raise PassError(f"graph-dispatch-library: no dispatch rule named '{name}' "
                        f"(registered: {known})")
    return rule


def dispatch_rule_names() -> list[str]:
    return sorted(_RULES)


register_dispatch_rule(DispatchRule(
    "env.linear",
    is_op("graph.add")(
        is_op("graph.matmul")(wildcard("x"), is_op("graph.permute_dims", axes=[1, 0])(wildcard("w"))),
        wildcard("b")),
    ("x", "w", "b")))
register_dispatch_rule(DispatchRule("env.relu", is_op("graph.relu")(wildcard("x")), ("x",)))


RuleSpec = Mapping[str, Pattern] | Iterable["str | DispatchRule"]


def _as_rules(rules: RuleSpec) -> list[DispatchRule]:
    if isinstance(rules, Mapping):
        return [DispatchRule(name, pattern) for name, pattern in rules.items()]
    out = []
    for rule in rules:
        out.append(get_dispatch_rule(rule) if isinstance(rule, str) else rule)
    return out


def _module_of(op: ir.Operation) -> ir.OpView:
    while op.name != "builtin.module":
        op = op.parent
    return op.opview


def dispatch_library(module: ir.Module | ir.Operation, rules: RuleSpec) -> int:
    """Replace the matches of each rule by a call of its library function (in place); returns
    how many calls were made. Rules are tried by pattern size, the largest first."""
    root = module.operation if hasattr(module, "operation") else module
    module_op = _module_of(root)
    rewrite_rules = []
    for rule in _as_rules(rules):
        rewrite_rules.append(RewriteRule(rule.pattern, _call_builder(module_op, rule),
                                         name=rule.library, with_match=True))
    return apply_rules(root, rewrite_rules)


def _call_builder(module_op: ir.OpView, rule: DispatchRule):
    args = rule.arguments()

    def build(match: Match, **values: ir.Value) -> list[ir.Value]:
        result_types = [r.type for r in match.root.results]
        return graph.call_library(module_op, rule.library, [values[a] for a in args],
                                  result_types)

    return build


@register_pass
@dataclass
class DispatchLibrary(ModulePass):
    name = "graph-dispatch-library"
    summary = "Replace patterns by calls of registered Python library functions (named rules)"
    rules: list[str] = field(default_factory=list)

    def run(self, module: ir.Operation) -> None:
        if not self.rules:
            known = ", ".join(dispatch_rule_names())
            raise PassError(f"graph-dispatch-library needs rules=<name,...> (registered: {known})")
        dispatch_library(module, self.rules)
