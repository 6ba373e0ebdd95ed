"""The UMA backend API: bring an accelerator's or a library's C functions to mlcir.

A backend subclasses :class:`UMABackend`, names its ``target_name``, lists the C/C++ sources it
ships (compiled with the target's toolchain) or the shared libraries that define its functions,
and registers patterns: each match of a pattern (mlcir's pattern API on the graph dialect) is
computed by one external C function, called in destination-passing style::

    function(input pointers..., output pointers..., integers...)

the integers being the match's static sizes and attributes (by default every dim of the
inputs, then of the outputs). A pattern's ``check(match)`` may refuse a match with a reason;
refused matches stay with mlcir and are listed in the :class:`PartitionReport`. docs/uma.md
documents the convention and the decisions.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

from mlir import ir

from mlcir.dialects import graph
from mlcir.errors import PassError
from mlcir.passes.patterns import Match, Pattern, RewriteRule, apply_rules
from mlcir.runtime.externs import INT_TYPES, RETURNS, ExternCode, set_code

log = logging.getLogger("mlcir.uma")

IntsFn = Callable[[Match], Sequence[int]]
CheckFn = Callable[[Match], "str | None"]
FlopsFn = Callable[[Match], float]


def shape(value: ir.Value) -> list[int]:
    """The static shape of a matched value (helper for a pattern's ``ints``)."""
    return list(ir.ShapedType(value.type).shape)


@dataclass(frozen=True)
class OffloadPattern:
    """Matches of ``pattern`` are computed by the C function ``function`` on the matched values
    named ``inputs`` (default: the pattern's names in order), with ``ints(match)`` after the
    buffers; ``check(match)`` returns why a match cannot be offloaded, or None."""

    name: str
    pattern: Pattern
    function: str
    inputs: tuple[str, ...] | None = None
    ints: IntsFn | None = None
    check: CheckFn | None = None
    int_type: str = "int"
    returns: str = "void"
    flops: FlopsFn | None = None


@dataclass(frozen=True)
class Decision:
    """One match the partition saw: ``reason`` is None when it was offloaded."""

    pattern: str
    function: str
    location: str
    reason: str | None = None


@dataclass
class PartitionReport:
    """What :meth:`UMABackend.partition` did: the matches offloaded and those refused (why)."""

    backend: str
    offloaded: list[Decision] = field(default_factory=list)
    refused: list[Decision] = field(default_factory=list)

    def __str__(self) -> str:
        lines = [f"UMA backend '{self.backend}': {len(self.offloaded)} offloaded, "
                 f"{len(self.refused)} refused"]
        lines += [f"  offloaded {d.pattern} -> {d.function} at {d.location}"
                  for d in self.offloaded]
        lines += [f"  refused {d.pattern} at {d.location}: {d.reason}" for d in self.refused]
        return "\n".join(lines)


class UMABackend:
    """Base class of a backend (module docstring). Subclasses set ``target_name`` and the code
    that defines their functions, and call :meth:`register_pattern` in ``__init__``."""

    target_name: str = ""
    sources: Sequence[str | Path] = ()       # C/C++ files compiled with the target's toolchain
    include_dirs: Sequence[str | Path] = ()
    cflags: Sequence[str] = ()
    libraries: Sequence[str | Path] = ()     # shared libraries linked by path

    def __init__(self) -> None:
        if not self.target_name or not self.target_name.replace("_", "").isalnum():
            raise PassError(f"{type(self).__name__}.target_name must be a name of letters, "
                            f"digits and '_', got {self.target_name!r}")
        self._patterns: list[OffloadPattern] = []

    # -- declaring ---------------------------------------------------------------------------
    def register_pattern(self, name: str, pattern: Pattern, function: str, *,
                         inputs: Sequence[str] | None = None, ints: IntsFn | None = None,
                         check: CheckFn | None = None, int_type: str = "int",
                         returns: str = "void", flops: FlopsFn | None = None) -> OffloadPattern:
        """Offload matches of ``pattern`` to the C function ``function`` (see
        :class:`OffloadPattern`); ``int_type`` is the C type of the integers, ``returns``
        ``"int"`` for a function returning a status (nonzero stops the process, naming it);
        ``flops(match)``, the operations of one call (the profiler's GFLOPS and % of peak)."""
        if not function.isidentifier():
            raise PassError(f"UMA backend '{self.target_name}': pattern '{name}': "
                            f"{function!r} is not a C function name")
        if int_type not in INT_TYPES or returns not in RETURNS:
            raise PassError(f"UMA backend '{self.target_name}': pattern '{name}': int_type "
                            f"must be one of {', '.join(INT_TYPES)} and returns one of "
                            f"{', '.join(RETURNS)}")
        names = pattern.names()
        missing = [n for n in (inputs or ()) if n not in names]
        if missing or not (inputs or names):
            raise PassError(f"UMA backend '{self.target_name}': pattern '{name}': inputs "
                            f"{list(inputs or ())} must be names of the pattern ({names})")
        entry = OffloadPattern(name, pattern, function, tuple(inputs) if inputs else None,
                               ints, check, int_type, returns, flops)
        self._patterns.append(entry)
        return entry

    @property
    def patterns(self) -> list[OffloadPattern]:
        return list(self._patterns)

    def code(self) -> ExternCode:
        """The code that defines this backend's functions (paths made absolute)."""
        def paths(values: Sequence[str | Path]) -> tuple[str, ...]:
            return tuple(str(Path(v).resolve()) for v in values)

        return ExternCode(self.target_name, paths(self.sources), paths(self.include_dirs),
                          tuple(self.cflags), paths(self.libraries))

    # -- using -------------------------------------------------------------------------------
    def register(self, *, override: bool = False) -> "UMABackend":
        """Make this backend available by name (``mlcir.build(..., backend=NAME)``, ``mlcir
        compile --backend NAME``)."""
        from .registry import register_backend

        register_backend(self, override=override)
        return self

    def partition(self, module: ir.Module | ir.Operation) -> PartitionReport:
        """Rewrite, in place, every match of this backend's patterns that its checks accept
        into a call of its C function; returns what was offloaded and what was refused."""
        op = module.operation if hasattr(module, "operation") else module
        report = PartitionReport(self.target_name)
        seen: list[tuple[str, ir.Operation]] = []  # refusals already reported
        with op.context, ir.Location.unknown():
            module_op = _module_of(op)
            # One sweep per pattern, the largest first: a Gemm is taken whole before its
            # matmul alone could be (a greedy sweep visits the matmul first).
            for p in sorted(self._patterns, key=lambda p: -p.pattern.size()):
                apply_rules(op, [RewriteRule(p.pattern, self._builder(module_op, p, report, seen),
                                             name=f"{self.target_name}.{p.name}",
                                             with_match=True)])
            if report.offloaded:
                set_code(module_op, self.code())
        for d in report.refused:
            log.info("UMA backend '%s' refused %s at %s: %s", self.target_name, d.pattern,
                     d.location, d.reason)
        return report

    def _builder(self, module_op: Any, entry: OffloadPattern, report: PartitionReport,
                 seen: list[tuple[str, ir.Operation]]):
        def build(match: Match, **values: ir.Value) -> list[ir.Value] | None:
            inputs = [values[n] for n in (entry.inputs or entry.pattern.names())]
            results = [r.type for r in match.root.results]
            reason = _static_reason(inputs, results)
            if reason is None and entry.check is not None:
                reason = entry.check(match)
            location = str(match.root.location)
            if reason is not None:
                if not any(n == entry.name and op == match.root for n, op in seen):
                    seen.append((entry.name, match.root))
                    report.refused.append(Decision(entry.name, entry.function, location,
                                                   str(reason)))
                return None
            if entry.ints is not None:
                ints = [int(i) for i in entry.ints(match)]
            else:
                ints = [d for v in inputs for d in shape(v)] + \
                    [d for t in results for d in ir.ShapedType(t).shape]
            report.offloaded.append(Decision(entry.name, entry.function, location))
            return graph.call_extern(module_op, entry.function, self.target_name, inputs,
                                     results, ints, int_type=entry.int_type,
                                     returns=entry.returns,
                                     flops=entry.flops(match) if entry.flops else 0.0)

        return build


def _static_reason(inputs: Sequence[ir.Value], results: Sequence[ir.Type]) -> str | None:
    """Why the C convention cannot take these buffers (dynamic dims), or None."""
    for t in [v.type for v in inputs] + list(results):
        if not isinstance(t, ir.RankedTensorType) or not ir.ShapedType(t).has_static_shape:
            return f"{t} is not a static tensor (the C functions take static sizes)"
    return None


def _module_of(op: ir.Operation) -> Any:
    while op.name != "builtin.module":
        op = op.parent
    return op.opview
