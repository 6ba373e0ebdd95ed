"""Pass and pipeline registry: mlcir passes and upstream passes by name, in one pipeline string.

An mlcir pass is a class with a ``name`` (its command-line name, as in xDSL) whose dataclass
fields are its options (``graph-fuse{max-depth=3}``); a named pipeline expands to a pipeline
string. :func:`build_pass_manager` turns text such as
``builtin.module(graph-to-loop, canonicalize, func.func(cse), mlcir-cpu)`` into one upstream
``PassManager`` where Python passes and parsed upstream passes run in order.
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
import importlib
import re
import subprocess
from dataclasses import dataclass, field
from typing import Any, Callable, ClassVar

from mlir import ir
from mlir.passmanager import PassManager

from mlcir.errors import PassError


class ModulePass:
    """Base of mlcir passes: they run on the top-level module (MLIR runs Python passes only
    at the top level, see docs/decisions.md, "Passes"); options are dataclass fields."""

    name: ClassVar[str] = ""
    summary: ClassVar[str] = ""

    def run(self, module: ir.Operation) -> None:  # pragma: no cover - interface
        raise NotImplementedError

    @classmethod
    def options(cls) -> list[dataclasses.Field]:
        return list(dataclasses.fields(cls)) if dataclasses.is_dataclass(cls) else []


@dataclass(frozen=True)
class Pipeline:
    """A named pipeline: ``expand(options)`` returns a pipeline string (no anchor)."""

    name: str
    summary: str
    expand: Callable[[dict[str, str]], str]
    option_doc: dict[str, str] = field(default_factory=dict)


# name -> module that defines it (imported on first use, so start-up stays fast)
_PASS_MODULES: dict[str, str] = {}
_PASSES: dict[str, type[ModulePass]] = {}
_PIPELINES: dict[str, Pipeline] = {}


def register_pass(cls: type[ModulePass]) -> type[ModulePass]:
    """Class decorator: make ``cls`` reachable by ``cls.name`` in pipelines and mlcir-opt."""
    if not cls.name:
        raise ValueError(f"{cls.__name__} has no pass name")
    _PASSES[cls.name] = cls
    return cls


def register_pipeline(pipeline: Pipeline) -> Pipeline:
    _PIPELINES[pipeline.name] = pipeline
    return pipeline


def declare_lazy(names: dict[str, str]) -> None:
    """Record which module defines which pass/pipeline, imported when first named."""
    _PASS_MODULES.update(names)


def lazy_modules() -> dict[str, str]:
    """Pass/pipeline name -> the module declared to define it (a copy)."""
    return dict(_PASS_MODULES)


def _load(name: str) -> None:
    if name not in _PASSES and name not in _PIPELINES and name in _PASS_MODULES:
        importlib.import_module(_PASS_MODULES[name])


def get_pass(name: str) -> type[ModulePass] | None:
    _load(name)
    return _PASSES.get(name)


def get_pipeline(name: str) -> Pipeline | None:
    _load(name)
    return _PIPELINES.get(name)


def mlcir_names() -> list[str]:
    return sorted(set(_PASS_MODULES) | set(_PASSES) | set(_PIPELINES))


def describe_all() -> list[tuple[str, str]]:
    """``(name, summary)`` of every mlcir pass and pipeline (for ``--help``/``--list-passes``)."""
    out = []
    for name in mlcir_names():
        cls = get_pass(name)
        item = cls or get_pipeline(name)
        out.append((name, item.summary if item else ""))
    return out


@functools.lru_cache(maxsize=1)
def upstream_pass_names() -> tuple[str, ...]:
    """Names of upstream passes and pipelines, read once from ``mlir-opt --help`` (its
    "Passes:" and "Pass Pipelines:" sections list them six spaces in; options sit deeper)."""
    from mlcir.paths import mlir_tool

    try:
        out = subprocess.run([mlir_tool("mlir-opt"), "--help"], capture_output=True,
                             text=True, timeout=60).stdout
    except (OSError, subprocess.SubprocessError):
        return ()
    return tuple(sorted(set(re.findall(r"^      --([a-z0-9][a-z0-9-]*)", out, re.MULTILINE))))


def close_matches(name: str) -> list[str]:
    return difflib.get_close_matches(name, list(mlcir_names()) + list(upstream_pass_names()),
                                     n=5, cutoff=0.6)


# ----------------------------------------------------------------------------------------------
# Pipeline text


@dataclass
class Element:
    """One element of a pipeline: ``name{options}`` or ``anchor(children)``."""

    name: str
    options: str = ""
    children: list["Element"] | None = None

    def text(self) -> str:
        if self.children is not None:
            return f"{self.name}({', '.join(c.text() for c in self.children)})"
        return f"{self.name}{{{self.options}}}" if self.options else self.name


def parse_pipeline(text: str) -> list[Element]:
    """Parse pipeline text; a missing ``builtin.module(...)`` anchor is implied."""
    elements, pos = _parse_list(text.strip(), 0)
    if pos != len(text.strip()):
        raise PassError(f"pipeline syntax error at column {pos + 1}: {text!r}")
    if len(elements) == 1 and elements[0].name == "builtin.module" and elements[0].children is not None:
        return elements[0].children
    return elements


def _parse_list(text: str, pos: int) -> tuple[list[Element], int]:
    elements = []
    while pos < len(text):
        while pos < len(text) and text[pos] in " \n\t,":
            pos += 1
        if pos >= len(text) or text[pos] == ")":
            break
        match = re.compile(r"[A-Za-z0-9_.\-]+").match(text, pos)
        if not match:
            raise PassError(f"pipeline syntax error at column {pos + 1}: {text!r}")
        name, pos = match.group(0), match.end()
        if pos < len(text) and text[pos] == "{":
            depth, start = 0, pos
            while pos < len(text):
                depth += {"{": 1, "}": -1}.get(text[pos], 0)
                pos += 1
                if depth == 0:
                    break
            if depth:
                raise PassError(f"unbalanced '{{' in pipeline: {text!r}")
            elements.append(Element(name, text[start + 1:pos - 1].strip()))
        elif pos < len(text) and text[pos] == "(":
            children, pos = _parse_list(text, pos + 1)
            if pos >= len(text) or text[pos] != ")":
                raise PassError(f"unbalanced '(' in pipeline: {text!r}")
            elements.append(Element(name, children=children))
            pos += 1
        else:
            elements.append(Element(name))
    return elements, pos


def parse_options(pass_name: str, text: str, fields: list[dataclasses.Field]) -> dict[str, Any]:
    """``key=value key2=value2`` (MLIR's syntax) into typed values for the dataclass fields."""
    by_cli = {f.name.replace("_", "-"): f for f in fields}
    values: dict[str, Any] = {}
    for token in _split_options(text):
        key, _, raw = token.partition("=")
        f = by_cli.get(key.strip())
        if f is None:
            known = ", ".join(sorted(by_cli)) or "none"
            raise PassError(f"pass '{pass_name}' has no option '{key}' (options: {known})")
        values[f.name] = _convert(pass_name, key, raw.strip(), f.type)
    return values


def _split_options(text: str) -> list[str]:
    tokens, depth, current, quote = [], 0, "", False
    for ch in text:
        if ch == '"':
            quote = not quote
        if ch in "{[" and not quote:
            depth += 1
        if ch in "}]" and not quote:
            depth -= 1
        if ch == " " and depth == 0 and not quote:
            if current:
                tokens.append(current)
            current = ""
        else:
            current += ch
    if current:
        tokens.append(current)
    return tokens


def _convert(pass_name: str, key: str, raw: str, typ: Any) -> Any:
    typ_name = typ if isinstance(typ, str) else getattr(typ, "__name__", str(typ))
    raw = raw.strip('"')
    try:
        if typ_name.startswith("bool"):
            if raw in ("", "true", "1"):
                return True
            if raw in ("false", "0"):
                return False
            raise ValueError(raw)
        if typ_name.startswith("int"):
            return int(raw)
        if typ_name.startswith("float"):
            return float(raw)
        if typ_name.startswith(("list[int]", "tuple[int")):
            return [int(x) for x in raw.split(",") if x.strip()]
        if typ_name.startswith(("list[str]", "tuple[str")):
            return [x.strip() for x in raw.split(",") if x.strip()]
        return raw
    except ValueError:
        raise PassError(f"pass '{pass_name}': option '{key}' expects {typ_name}, got {raw!r}") from None


def instantiate(name: str, options: str) -> ModulePass:
    cls = get_pass(name)
    assert cls is not None
    return cls(**parse_options(name, options, cls.options()))


# ----------------------------------------------------------------------------------------------
# Pass managers


def expand(elements: list[Element], *, depth: int = 0) -> list[Element]:
    """Replace named mlcir pipelines by their passes (recursively)."""
    if depth > 20:
        raise PassError("pipeline expansion is too deep (a pipeline that names itself?)")
    out: list[Element] = []
    for el in elements:
        pipeline = get_pipeline(el.name) if el.children is None else None
        if pipeline is not None:
            opts = {}
            for token in _split_options(el.options):
                key, _, value = token.partition("=")
                if key not in pipeline.option_doc:
                    known = ", ".join(sorted(pipeline.option_doc)) or "none"
                    raise PassError(f"pipeline '{el.name}' has no option '{key}' (options: {known})")
                opts[key] = value.strip('"')
            out.extend(expand(parse_pipeline(pipeline.expand(opts)), depth=depth + 1))
        else:
            out.append(el)
    return out


def _check_upstream(el: Element, ctx: ir.Context) -> None:
    try:
        PassManager.parse(f"builtin.module({el.text()})", context=ctx)
    except ValueError as e:
        names = _leaf_names(el)
        unknown = [n for n in names if n not in upstream_pass_names()]
        for n in unknown:
            if get_pass(n) is not None:
                raise PassError(f"mlcir pass '{n}' runs on the whole module: write it at the top "
                                f"level of the pipeline, not inside '{el.name}(...)'") from None
        if unknown:
            hint = close_matches(unknown[0])
            raise PassError(f"unknown pass or pipeline '{unknown[0]}'"
                            + (f"; did you mean: {', '.join(hint)}?" if hint else "")) from None
        raise PassError(f"invalid pipeline element '{el.text()}': {str(e).strip()}") from None


def _leaf_names(el: Element) -> list[str]:
    if el.children is None:
        return [el.name]
    return [n for c in el.children for n in _leaf_names(c)]


def build_pass_manager(pipeline: str, ctx: ir.Context | None = None, *,
                       print_ir_after_all: bool = False, print_ir_before_all: bool = False,
                       verify_each: bool = True, timing: bool = False) -> PassManager:
    """One ``PassManager`` running ``pipeline`` (mlcir and upstream passes mixed, in order)."""
    ctx = ctx or ir.Context.current
    pm = PassManager("builtin.module", context=ctx)
    pm.enable_verifier(verify_each)
    if print_ir_after_all or print_ir_before_all:
        ctx.enable_multithreading(False)  # MLIR refuses to print IR from parallel passes
        pm.enable_ir_printing(print_before_all=print_ir_before_all,
                              print_after_all=print_ir_after_all, print_module_scope=True)
    if timing:
        pm.enable_timing()
    for el in expand(parse_pipeline(pipeline)):
        if el.children is None and get_pass(el.name) is not None:
            instance = instantiate(el.name, el.options)
            pm.add(_runner(instance), name=el.name, argument=el.name,
                   description=type(instance).summary)
        else:
            if el.children is None and el.name not in upstream_pass_names() and upstream_pass_names():
                hint = close_matches(el.name)
                raise PassError(f"unknown pass or pipeline '{el.name}'"
                                + (f"; did you mean: {', '.join(hint)}?" if hint else ""))
            _check_upstream(el, ctx)
            pm.add(el.text())
    return pm


def _runner(instance: ModulePass) -> Callable[[ir.Operation, Any], None]:
    def run(op: ir.Operation, _pass: Any) -> None:  # MLIR calls it with the pass too
        with ir.Location.unknown(op.context):  # builders need a default location
            instance.run(op)

    return run


def run_pipeline(module: ir.Module | ir.Operation, pipeline: str, **kwargs: Any) -> None:
    """Run ``pipeline`` on ``module`` in place; errors become :class:`PassError`/MlcirError."""
    op = module.operation if hasattr(module, "operation") else module
    pm = build_pass_manager(pipeline, op.context, **kwargs)
    try:
        pm.run(op)
    except ir.MLIRError as error:
        from mlcir.ir import diagnostics_of, render_diagnostics

        diags = diagnostics_of(error)
        raise PassError(f"pipeline failed: {render_diagnostics(diags) or error}") from None
