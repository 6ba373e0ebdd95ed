"""Traces: the instructions a schedule applied, replayable, printable as Python, and JSON.

Following TVM's MetaSchedule, every schedule primitive is one :class:`InstructionKind` (name,
whether it samples, how it replays and prints); a :class:`Schedule` appends an
:class:`Instruction` (kind, inputs, attributes, outputs, decision) for every call. Inputs and
outputs refer to random variables (blocks, loops, sampled integers) by identity, so a trace
replays on a fresh schedule of the same kernel, with any sampling decision replaced — the
mutation step of a search.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Callable, Iterable

if TYPE_CHECKING:  # pragma: no cover
    from .schedule import Schedule

SCHEMA_VERSION = 1


class _Resample:
    """Returned by a decision provider: draw this decision afresh (the mutation step)."""

    def __repr__(self) -> str:
        return "RESAMPLE"


RESAMPLE = _Resample()


class RV:
    """A random variable: a handle a schedule gives out (a block, a loop or a sampled value)."""

    prefix = "x"
    __slots__ = ("id",)

    def __init__(self, id: int):
        self.id = id

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.id})"


class BlockRV(RV):
    prefix = "b"


class LoopRV(RV):
    prefix = "l"


class ExprRV(RV):
    """A sampled integer; usable as a split factor. ``sch.get(v)`` gives its value."""

    prefix = "v"


_RV_TYPES = {"b": BlockRV, "l": LoopRV, "v": ExprRV}


@dataclass(frozen=True)
class InstructionKind:
    """One schedule primitive. ``inputs`` are positional arguments (random variables, numbers,
    strings, lists of them); ``attrs`` keyword arguments; a sampling kind also takes a
    ``decision``."""

    name: str
    input_names: tuple[str, ...]
    is_sampling: bool = False
    # Inputs passed as *args when printed (reorder(l1, l2, ...)), else by keyword.
    variadic: bool = False
    # Printed as `a, b = sch.x(...)` even with one output (get_loops, split, sampling).
    returns_list: bool = False

    def apply(self, sch: "Schedule", inputs: list[Any], attrs: dict[str, Any],
              decision: Any) -> Any:
        method = getattr(sch, self.name)
        if self.variadic:
            return method(*inputs, **attrs)
        kwargs = dict(zip(self.input_names, inputs))
        kwargs.update(attrs)
        if self.is_sampling:
            kwargs["decision"] = decision
        return method(**kwargs)


KINDS: dict[str, InstructionKind] = {}


def register_kind(kind: InstructionKind) -> InstructionKind:
    KINDS[kind.name] = kind
    return kind


@dataclass
class Instruction:
    kind: InstructionKind
    inputs: list[Any]
    attrs: dict[str, Any]
    outputs: list[RV]
    decision: Any = None

    def with_decision(self, decision: Any) -> "Instruction":
        return replace(self, decision=decision)


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
    # The schedule that recorded this trace (so as_transform() knows the kernel), if any.
    owner: Any = field(default=None, repr=False, compare=False)

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
        """The inverse of :meth:`as_json` (also accepts the JSON text)."""
        from .errors import ScheduleError

        if isinstance(data, str):
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
                rv = _RV_TYPES[name[0]](len(rvs))
                rvs[name] = rv
                outs.append(rv)
            trace.append(Instruction(kind, ins, at, outs,
                                     dec(decisions.get(index)) if kind.is_sampling else None))
        return trace

    # -- replay ----------------------------------------------------------------------------
    def apply_to_schedule(self, sch: "Schedule", remove_postproc: bool = False,
                          decision_provider: Callable[[int, Instruction], Any] | None = None
                          ) -> None:
        """Replay on ``sch`` (normally a fresh schedule of the same kernel).

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
            if remove_postproc and inst.kind.name in POSTPROC_KINDS:
                continue
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
                from .errors import ScheduleError

                raise ScheduleError(f"replay of instruction {index} ({inst.kind.name}) gave "
                                    f"{len(outputs)} outputs, the trace has {len(inst.outputs)}")
            for old, new in zip(inst.outputs, outputs):
                mapping[id(old)] = new

    def as_transform(self, mod: Any = None):
        """The trace as a transform-dialect module applying it to its kernel: a
        ``transform.named_sequence @__transform_main`` where each sampled tile size is a
        ``transform.tune.knob`` with its ``selected`` value. Needs the kernel: ``mod``, or the
        schedule that recorded this trace."""
        from .errors import ScheduleError
        from .schedule import Schedule

        if mod is None:
            if self.owner is None:
                raise ScheduleError("as_transform() needs the kernel module: pass mod=")
            return self.owner.as_transform()
        sch = Schedule(mod)
        self.apply_to_schedule(sch)
        return sch.as_transform()

    def with_decision(self, inst: Instruction | int, decision: Any,
                      remove_postproc: bool = False) -> "Trace":
        """A copy with the decision of ``inst`` (or its index) replaced."""
        index = inst if isinstance(inst, int) else self.insts.index(inst)
        if not self.insts[index].kind.is_sampling:
            from .errors import ScheduleError

            raise ScheduleError(f"instruction {index} ({self.insts[index].kind.name}) makes no decision")
        insts = [i for i in self.insts]
        insts[index] = insts[index].with_decision(decision)
        if remove_postproc:
            insts = [i for i in insts if i.kind.name not in POSTPROC_KINDS]
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


# Kinds that only look things up (dropped by simplified() when their outputs are unused).
PURE_KINDS = {"get_block", "get_loops", "get_child_blocks"}
# Kinds added by post-processing (none yet; kept for TVM's remove_postproc argument).
POSTPROC_KINDS: set[str] = set()
