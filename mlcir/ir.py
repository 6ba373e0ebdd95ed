"""Contexts, parsing and verification with mlcir's dialects loaded.

Every tool and test creates its MLIR context through :func:`make_context`, so the upstream
dialects and mlcir's IRDL dialects (``graph``, ``loop``) are always present, and parses through
:func:`parse`, so a module is verified twice: by MLIR (IRDL arity and attribute constraints) and
by mlcir's Python verifiers (shapes and element types, which IRDL cannot express).
"""

from __future__ import annotations

import contextlib
import functools
import re
from typing import Callable, Iterator

from mlir import ir
from mlir.dialects import irdl

from .errors import ParseError, VerificationError

# IRDL definitions are parsed once per context; MLIR keeps pointers into the definition module,
# so it must outlive the context (contexts are few; the modules are small).
_KEEP_ALIVE: list[ir.Module] = []


def make_context(*, allow_unregistered: bool = False) -> ir.Context:
    """A new context with every upstream dialect and mlcir's ``graph``/``loop`` dialects."""
    from mlcir.dialects import irdl_sources

    ctx = ir.Context()
    ctx.allow_unregistered_dialects = allow_unregistered
    with ctx, ir.Location.unknown():
        definitions = ir.Module.parse(irdl_sources())
        irdl.load_dialects(definitions)
    _KEEP_ALIVE.append(definitions)
    return ctx


@functools.lru_cache(maxsize=1)
def default_context() -> ir.Context:
    """mlcir's own context: what :func:`parse` uses when the caller has none active."""
    return make_context()


def format_location(loc: ir.Location) -> str:
    """``file:line:col`` for a file location (the form compilers print), else MLIR's text."""
    text = str(loc)
    match = re.search(r'loc\("([^"]*)":(\d+):(\d+)', text)
    if match:
        return f"{match.group(1)}:{match.group(2)}:{match.group(3)}"
    match = re.search(r'loc\(callsite\("[^"]*"\("([^"]*)":(\d+):(\d+)', text)
    if match:
        return f"{match.group(1)}:{match.group(2)}:{match.group(3)}"
    return text


def located(loc: ir.Location, message: str) -> str:
    """``file:line:col: error: message``: how mlcir's own errors name the op at fault."""
    return f"{format_location(loc)}: error: {message}"


def diagnostics_of(error: ir.MLIRError) -> list[tuple[str, str]]:
    """``(location, message)`` for each error of ``error`` and its notes; IRDL's messages get
    the name of the op at fault (for :func:`render_diagnostics`)."""
    out = []
    for diag in error.error_diagnostics:
        message = diag.message
        if message.startswith("op "):
            # IRDL's verifier says "op expects …" without naming the op; the note does.
            for note in diag.notes:
                found = re.search(r'see current operation:\s*(?:%\S+ = )?"([\w.]+)"', note.message)
                if found:
                    message = f"'{found.group(1)}' {message}"
                    break
        out.append((format_location(diag.location), message))
        for note in diag.notes:
            if "see current operation" not in note.message:
                out.append((format_location(note.location), "note: " + note.message))
    return out


def render_diagnostics(diagnostics: list[tuple[str, str]]) -> str:
    """One ``loc: error: message`` line per diagnostic, as mlir-opt prints them."""
    lines = []
    for loc, message in diagnostics:
        if message.startswith("note: "):
            lines.append(f"{loc}: {message}")
        else:
            lines.append(f"{loc}: error: {message}")
    return "\n".join(lines)


def parse(text: str, *, context: ir.Context | None = None, source_name: str = "<string>",
          verify: bool = True) -> ir.Module:
    """Parse ``text`` into a module and verify it; errors carry ``file:line:col`` locations.

    The context is ``context``, else the active one, else mlcir's own
    (:func:`default_context`). MLIR names the buffer of ``Module.parse`` "-"; the module is
    re-read from its debug-info print with that name replaced, so the ops carry
    ``source_name`` in their locations (``Operation.parse`` takes a name but cannot hold
    several top-level ops).
    """
    ctx = context or ir.Context.current or default_context()
    with ctx:
        return _parse(text, ctx, source_name, verify)


def _parse(text: str, ctx: ir.Context, source_name: str, verify: bool) -> ir.Module:
    try:
        module = ir.Module.parse(text, ctx)
    except ir.MLIRError as error:
        diags = [(_rename_buffer(loc, source_name), msg) for loc, msg in diagnostics_of(error)]
        raise ParseError(render_diagnostics(diags) or str(error), diags) from None
    if source_name != "-":
        with_locs = module.operation.get_asm(enable_debug_info=True, assume_verified=True)
        module = ir.Module.parse(_rename_buffer(with_locs, source_name), ctx)
    if verify:
        verify_module(module)
    return module


def _rename_buffer(text: str, source_name: str) -> str:
    quoted = source_name.replace("\\", "\\\\").replace('"', '\\"')
    text = re.sub(r'"-":(\d+):(\d+)', lambda m: f'"{quoted}":{m.group(1)}:{m.group(2)}', text)
    return re.sub(r'^-:(\d+):(\d+)$', lambda m: f"{source_name}:{m.group(1)}:{m.group(2)}", text)


def as_module(op: ir.OpView | ir.Operation) -> ir.Module:
    """Move the contents of a ``builtin.module`` operation into a new ``ir.Module``.

    The bindings cannot wrap an operation as an ``ir.Module`` (which the ExecutionEngine and the
    transform interpreter want); moving the ops keeps their locations.
    """
    op = op.operation
    module = ir.Module.create(loc=op.location)
    for name, attr in op.attributes.items():
        module.operation.attributes[name] = attr
    for child in list(op.regions[0].blocks[0].operations):
        module.body.append(child)
    return module


def verify_module(module: ir.Module | ir.Operation) -> None:
    """Run MLIR's verifier and mlcir's Python verifiers; raise :class:`VerificationError`."""
    op = module.operation if hasattr(module, "operation") else module
    try:
        op.verify()
    except ir.MLIRError as error:
        diags = diagnostics_of(error)
        raise VerificationError(render_diagnostics(diags), diags) from None
    from mlcir.dialects import verify_dialect_ops

    diags = [(format_location(loc), message) for loc, message in verify_dialect_ops(op)]
    if diags:
        raise VerificationError(render_diagnostics(diags), diags)


@contextlib.contextmanager
def captured_diagnostics(ctx: ir.Context) -> Iterator[list[tuple[str, str, str]]]:
    """Collect the diagnostics MLIR emits (``(severity, location, message)``) instead of printing."""
    collected: list[tuple[str, str, str]] = []

    def handler(diag: ir.Diagnostic) -> bool:
        severity = str(diag.severity).rsplit(".", 1)[-1].lower()
        collected.append((severity, format_location(diag.location), str(diag.message)))
        for note in diag.notes:
            collected.append(("note", format_location(note.location), str(note.message)))
        return True

    handle = ctx.attach_diagnostic_handler(handler)
    try:
        yield collected
    finally:
        handle.detach()


def find_first(root: ir.Operation, predicate: Callable[[ir.Operation], bool]) -> ir.Operation | None:
    """The first op under ``root`` (pre-order) for which ``predicate`` holds, or None."""
    found: list[ir.Operation] = []

    def visit(op: ir.Operation) -> ir.WalkResult:
        if predicate(op):
            found.append(op)
            return ir.WalkResult.INTERRUPT
        return ir.WalkResult.ADVANCE

    root.walk(visit, ir.WalkOrder.PRE_ORDER)
    return found[0] if found else None


def ops_named(root: ir.Operation, name: str) -> list[ir.Operation]:
    """Every op called ``name`` under ``root``, in walk order (collected before a caller
    rewrites them)."""
    found: list[ir.Operation] = []

    def visit(op: ir.Operation) -> ir.WalkResult:
        if op.name == name:
            found.append(op)
        return ir.WalkResult.ADVANCE

    root.walk(visit)
    return found


def clone_module(module: ir.Module) -> ir.Module:
    """A deep copy of ``module`` in the same context (passes mutate in place)."""
    return as_module(module.operation.clone())
