"""A config space seen in the transform IR: its ``transform.tune.knob``s.

A template's splits (``cfg[...].apply``) go through ``sample_perfect_tile``, so the schedule's
transform script (``sch.as_transform()``, what ``mlcir-opt --transform-script`` applies) holds
each tile size as ``transform.tune.knob<"main.C.i_0"> = 64 from options = [...]``.
:func:`knobs` reads them, :func:`config_space_from_script` turns them into a config space (one
option knob per tune.knob, named as in the IR), and :func:`with_selected` writes chosen
values back, so a config can be applied by ``mlcir-opt`` with no Python schedule code.
Knobs that only choose a value used as a plain number (``cfg["tile_x"].val`` in
``sch.split``) are constants in the script, not tune.knobs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from mlir import ir

from mlcir.ir import make_context, parse

from .space import ConfigError, ConfigSpace, OtherOptionSpace

KNOB_OP = "transform.tune.knob"


@dataclass(frozen=True)
class IRKnob:
    """One ``transform.tune.knob``: its name, options and selected value."""

    name: str
    options: tuple[int, ...]
    selected: int | None


def _as_module(script: ir.Module | str) -> ir.Module:
    if isinstance(script, ir.Module):
        return script
    with make_context():
        return parse(script, source_name="<transform script>")


def _knob_ops(module: ir.Module) -> list[ir.Operation]:
    found: list[ir.Operation] = []

    def walk(op: ir.Operation) -> None:
        if op.name == KNOB_OP:
            found.append(op)
        for region in op.regions:
            for block in region:
                for child in block:
                    walk(child.operation)

    walk(module.operation)
    return found


def _int(attr: ir.Attribute) -> int:
    return ir.IntegerAttr(attr).value


def knobs(script: ir.Module | str) -> list[IRKnob]:
    """The tune.knobs of a transform script (a module or its text), in order."""
    out = []
    for op in _knob_ops(_as_module(script)):
        attrs = op.attributes
        options = tuple(_int(a) for a in ir.ArrayAttr(attrs["options"]))
        selected = _int(attrs["selected"]) if "selected" in attrs else None
        out.append(IRKnob(ir.StringAttr(attrs["name"]).value, options, selected))
    return out


def config_space_from_script(script: ir.Module | str) -> ConfigSpace:
    """A config space with one option knob per tune.knob of ``script``, named as in the IR."""
    space = ConfigSpace()
    for knob in knobs(script):
        space._add(knob.name, OtherOptionSpace(list(knob.options)))
    return space


def with_selected(script: ir.Module | str, values: Mapping[str, int] | Any) -> str:
    """The script's text with each named knob's ``selected`` set to ``values[name]`` (a dict, or
    a config of :func:`config_space_from_script`); an unknown name or a value outside the
    knob's options is a :class:`ConfigError`."""
    module = _as_module(script)
    if not isinstance(values, Mapping):
        values = {name: values[name].val for name in values._entity_map}
    with module.context:
        module = ir.Module.parse(str(module))
        ops = {ir.StringAttr(op.attributes["name"]).value: op for op in _knob_ops(module)}
        for name, value in values.items():
            if name not in ops:
                raise ConfigError(f"the transform script has no knob {name!r} (knobs: "
                                  f"{', '.join(ops) or 'none'})")
            op = ops[name]
            options = [_int(a) for a in ir.ArrayAttr(op.attributes["options"])]
            if int(value) not in options:
                raise ConfigError(f"knob {name!r}: {value} is not one of its options {options}")
            op.attributes["selected"] = ir.IntegerAttr.get(ir.IntegerType.get_signless(64),
                                                           int(value))
        return str(module)
