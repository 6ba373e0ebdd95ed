"""Traces: the instructions a schedule applied, replayable, printable as Python, and JSON.

A trace is a list of :class:`~.instruction.Instruction`; its random variables are matched by
identity, so it replays on a fresh schedule of the same kernel (``Schedule(mod, trace=t)``),
with any sampling decision replaced — the mutation step of a search. A trace does not know the
kernel: the transform-dialect form of a schedule is ``Schedule.as_transform()``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

from .errors import ScheduleError
from .instruction import KINDS, PURE_KINDS, RV, RV_TYPES, Instruction

SCHEMA_VERSION = 1


class _Resample:
    """Returned by a decision provider: draw this decision afresh (the mutation step)."""

    def __repr__(self) -> str:
        return "RESAMPLE"


RESAMPLE = _Resample()


def _py(value: Any, names: dict[int, str]) -> str:
    if isinstance(value, RV):
        return names[id(value)]
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_py(v, names) for v in value) + "]"
    if isinstance(value, str):
        return json.dumps(value)  # double quotes, as TVM prints them
    return repr(value)


def _collect_rvs(value: Any) -> Iterable[RV]:
    if isinstance(value, RV):
        yield value
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from _collect_rvs(v)


@dataclass
class Trace:
    """The instructions of a schedule and their decisions."""

    insts: list[Instruction] = field(default_factory=list)

    def append(self, inst: Instruction) -> None:
        self.insts.append(inst)

    @property
    def decisions(self) -> dict[int, Any]:
        """Index of each sampling instruction → its decision."""
        return {i: inst.decision for i, inst in enumerate(self.insts) if inst.kind.is_sampling}

    def _names(self) -> dict[int, str]:
        names: dict[int, str] = {}
        counter = 0
        for inst in self.insts:
            for rv in list(_collect_rvs(inst.inputs)) + inst.outputs:
                if id(rv) not in names:
                    names[id(rv)] = f"{rv.prefix}{counter}"
                    counter += 1
        return names

    # -- Python ----------------------------------------------------------------------------
    def as_python(self, func_name: str = "apply_trace") -> str:
        """Python that replays this trace on a schedule (``print(sch.trace)``)."""
        names = self._names()
        lines = [f"def {func_name}(sch: mlcir.Schedule) -> None:"]
        for inst in self.insts:
            kind = inst.kind
            if kind.variadic:
                args = [_py(v, names) for v in inst.inputs]
            else:
                args = [f"{n}={_py(v, names)}" for n, v in zip(kind.input_names, inst.inputs)]
            args += [f"{k}={_py(v, names)}" for k, v in inst.attrs.items()]
            if kind.is_sampling:
                args.append(f"decision={_py(inst.decision, names)}")
            call = f"sch.{kind.name}({', '.join(args)})"
            outs = [names[id(o)] for o in inst.outputs]
            if outs:
                lhs = ", ".join(outs) + ("," if len(outs) == 1 and kind.returns_list else "")
                lines.append(f"  {lhs} = {call}")
            else:
                lines.append(f"  {call}")
        if len(lines) == 1:
            lines.append("  pass")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.as_python()

    # -- JSON ------------------------------------------------------------------------------
    def as_json(self) -> dict[str, Any]:
        """A JSON-serialisable form: ``{"version", "insts": [[kind, inputs, attrs, outputs]],
        "decisions": [[index, decision]]}``; random variables are written as their names."""
        names = self._names()

        def enc(v: Any) -> Any:
            if isinstance(v, RV):
                return "$" + names[id(v)]
            if isinstance(v, (list, tuple)):
                return [enc(x) for x in v]
            return v

        insts = [[i.kind.name, enc(i.inputs), {k: enc(v) for k, v in i.attrs.items()},
                  [names[id(o)] for o in i.outputs]] for i in self.insts]
        decisions = [[idx, enc(d)] for idx, d in self.decisions.items()]
        return {"version": SCHEMA_VERSION, "insts": insts, "decisions": decisions}

    def to_json_string(self) -> str:
        return json.dumps(self.as_json(), sort_keys=True, separators=(",", ":"))

    @staticmethod
    def from_json(data: dict[str, Any] | str) -> "Trace":
        """The inverse of :meth:`as_json` (also accepts the JSON text); anything else is a
        :class:`ScheduleError` saying what is wrong."""
        try:
            return Trace._from_json(data)
        except ScheduleError:
            raise
        except (ValueError, TypeError, KeyError, IndexError, AttributeError) as error:
            raise ScheduleError(f"not a trace ({type(error).__name__}: {error}); expected the "
                                "JSON of Trace.as_json()") from None

    @staticmethod
    def _from_json(data: dict[str, Any] | str) -> "Trace":
        if isinstance(data, (str, bytes)):
            data = json.loads(data)
        if not isinstance(data, dict) or "insts" not in data:
            raise ScheduleError("not a trace: expected a JSON object with 'insts'")
        if data.get("version", SCHEMA_VERSION) != SCHEMA_VERSION:
            raise ScheduleError(f"trace schema version {data.get('version')} is not supported "
                                f"(this mlcir reads version {SCHEMA_VERSION})")
        rvs: dict[str, RV] = {}

        def dec(v: Any) -> Any:
            if isinstance(v, str) and v.startswith("$"):
                name = v[1:]
                if name not in rvs:
                    raise ScheduleError(f"trace uses {name} before it is defined")
                return rvs[name]
            if isinstance(v, list):
                return [dec(x) for x in v]
            return v

        decisions = {int(i): d for i, d in data.get("decisions", [])}
        trace = Trace()
        for index, entry in enumerate(data["insts"]):
            kind_name, inputs, attrs, outputs = entry
            if kind_name not in KINDS:
                raise ScheduleError(f"trace instruction {index}: unknown primitive '{kind_name}'")
            kind = KINDS[kind_name]
            ins = dec(inputs)
            at = {k: dec(v) for k, v in attrs.items()}
            outs = []
            for name in outputs:
                rv = RV_TYPES[name[0]](len(rvs))
                rvs[name] = rv
                outs.append(rv)
            trace.append(Instruction(kind, ins, at, outs,
                                     dec(decisions.get(index)) if kind.is_sampling else None))
        return trace

    # -- replay ----------------------------------------------------------------------------
    def apply_to_schedule(self, sch: Any,
                          decision_provider: Callable[[int, Instruction], Any] | None = None
                          ) -> None:
        """Replay on ``sch``, a fresh :class:`~mlcir.schedule.Schedule` of the same kernel
        (``Schedule(mod, trace=self)`` does this).

        ``decision_provider(index, inst)`` may return a replacement decision for a sampling
        instruction (``None`` keeps the recorded one, :data:`RESAMPLE` draws a new one from
        ``sch``'s random state).
        """
        mapping: dict[int, Any] = {}

        def sub(v: Any) -> Any:
            if isinstance(v, RV):
                return mapping[id(v)]
            if isinstance(v, (list, tuple)):
                return [sub(x) for x in v]
            return v

        for index, inst in enumerate(self.insts):
            decision = inst.decision
            if inst.kind.is_sampling and decision_provider is not None:
                new = decision_provider(index, inst)
                if new is RESAMPLE:
                    decision = None
                elif new is not None:
                    decision = new
            result = inst.kind.apply(sch, sub(inst.inputs), {k: sub(v) for k, v in inst.attrs.items()},
                                     decision)
            outputs = result if isinstance(result, (list, tuple)) else ([] if result is None else [result])
            if len(outputs) != len(inst.outputs):
                raise ScheduleError(f"replay of instruction {index} ({inst.kind.name}) gave "
                                    f"{len(outputs)} outputs, the trace has {len(inst.outputs)}")
            for old, new in zip(inst.outputs, outputs):
                mapping[id(old)] = new

    def with_decision(self, inst: Instruction | int, decision: Any) -> "Trace":
        """A copy with the decision of ``inst`` (or its index) replaced."""
        index = inst if isinstance(inst, int) else self.insts.index(inst)
        if not self.insts[index].kind.is_sampling:
            raise ScheduleError(f"instruction {index} ({self.insts[index].kind.name}) makes no decision")
        insts = list(self.insts)
        insts[index] = insts[index].with_decision(decision)
        return Trace(insts)

    def simplified(self) -> "Trace":
        """Drop instructions whose outputs are never used and that change nothing (lookups)."""
        used: set[int] = set()
        keep: list[Instruction] = []
        for inst in reversed(self.insts):
            pure = inst.kind.name in PURE_KINDS
            if pure and not any(id(o) in used for o in inst.outputs):
                continue
            keep.append(inst)
            for rv in _collect_rvs([inst.inputs, list(inst.attrs.values())]):
                used.add(id(rv))
        return Trace(list(reversed(keep)))
