"""Applying a transform-dialect schedule stored as MLIR text (``mlcir-opt --transform-script``).

A schedule file is a module with ``transform.with_named_sequence`` holding
``transform.named_sequence @__transform_main``; it is applied to the payload module with the
upstream transform interpreter, so a recorded schedule needs no Python schedule code.
"""

from __future__ import annotations

from pathlib import Path

from mlir import ir
from mlir.dialects.transform import interpreter

from mlcir.errors import MlcirError
from mlcir.ir import _diagnostics_of, parse, render_diagnostics

ENTRY = "__transform_main"


class TransformError(MlcirError):
    """A transform script that is malformed or fails on its payload."""


def find_entry(script: ir.Module, name: str = ENTRY) -> ir.Operation:
    for op in script.body.operations:
        if op.operation.name == "transform.named_sequence" and \
                ir.StringAttr(op.attributes["sym_name"]).value == name:
            return op
    raise TransformError(f"the transform script has no 'transform.named_sequence @{name}'")


def apply_transform(payload: ir.Module, script: ir.Module, name: str = ENTRY) -> None:
    """Apply ``@name`` of ``script`` to ``payload`` in place."""
    entry = find_entry(script, name)
    try:
        interpreter.apply_named_sequence(payload.operation, entry, script.operation)
    except ir.MLIRError as error:
        raise TransformError("transform script failed:\n" +
                             render_diagnostics(_diagnostics_of(error))) from None


def apply_transform_file(payload: ir.Module, path: str | Path, name: str = ENTRY) -> None:
    path = Path(path)
    try:
        text = path.read_text()
    except OSError as error:
        raise TransformError(f"cannot read transform script {path}: {error.strerror}") from None
    script = parse(text, context=payload.context, source_name=str(path), verify=False)
    apply_transform(payload, script, name)
