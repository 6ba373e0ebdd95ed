"""Building and applying transform-dialect scripts from Python.

A script is a module with ``transform.with_named_sequence`` holding
``transform.named_sequence @__transform_main``; the upstream interpreter applies it to a
payload. Scripts are always built with the bindings' builders, never from text.
"""

from __future__ import annotations

from typing import Callable

from mlir import ir
from mlir.dialects import transform
from mlir.dialects.transform import interpreter, structured

from mlcir.errors import MlcirError

ENTRY = "__transform_main"


class TransformError(MlcirError):
    """A transform script that is malformed or fails on its payload."""


def new_script(build: Callable[[ir.Value], None], *, consumed: bool = False) -> ir.Module:
    """A script module whose entry sequence is filled by ``build(root_handle)``.

    ``consumed`` declares that the sequence consumes the root handle (needed when it
    bufferizes the whole payload); otherwise it only reads it.
    """
    module = ir.Module.create()
    module.operation.attributes["transform.with_named_sequence"] = ir.UnitAttr.get()
    flag = "transform.consumed" if consumed else "transform.readonly"
    with ir.InsertionPoint(module.body):
        seq = transform.NamedSequenceOp(ENTRY, [transform.AnyOpType.get()], [],
                                        arg_attrs=[{flag: ir.UnitAttr.get()}])
    with ir.InsertionPoint(seq.body):
        build(seq.bodyTarget)
        transform.YieldOp([])
    return module


def find_entry(script: ir.Module, name: str = ENTRY) -> ir.Operation:
    for op in script.body.operations:
        if op.operation.name == "transform.named_sequence" and \
                ir.StringAttr(op.attributes["sym_name"]).value == name:
            return op
    raise TransformError(f"the transform script has no 'transform.named_sequence @{name}'")


# Static size lists of the structured transform ops; a negative entry (other than the marker
# of a dynamic size) passes upstream's verifier and makes loops that compute nothing.
_SIZE_ATTRS = ("static_sizes", "static_tile_sizes", "static_num_threads", "static_vector_sizes",
               "static_chunk_sizes", "vector_sizes")
_DYNAMIC = -(2 ** 63)


def check_static_sizes(script: ir.Module) -> None:
    """Refuse a script whose tile, thread or vector sizes are negative (an obviously invalid
    static attribute), naming the op, its location, the attribute and its value."""
    problems: list[str] = []

    def visit(op: ir.Operation) -> ir.WalkResult:
        op = op.operation if hasattr(op, "operation") else op
        for index in range(len(op.attributes)):
            named = op.attributes[index]
            if named.name not in _SIZE_ATTRS or not isinstance(named.attr, ir.DenseI64ArrayAttr):
                continue
            values = list(named.attr)
            if any(v < 0 and v != _DYNAMIC for v in values):
                shown = ["?" if v == _DYNAMIC else v for v in values]
                problems.append(f"{op.location}: {op.name} has {named.name} {shown}: sizes must "
                                "be >= 0 (0: not tiled)")
        return ir.WalkResult.ADVANCE

    script.operation.walk(visit)
    if problems:
        raise TransformError("invalid transform script:\n" + "\n".join(problems))


def apply(payload: ir.Operation | ir.Module, script: ir.Module, name: str = ENTRY) -> None:
    """Apply ``@name`` of ``script`` to ``payload`` in place (its static sizes checked first)."""
    from mlcir.ir import diagnostics_of, render_diagnostics

    op = payload.operation if hasattr(payload, "operation") else payload
    entry = find_entry(script, name)
    check_static_sizes(script)
    try:
        interpreter.apply_named_sequence(op, entry, script.operation)
    except ir.MLIRError as error:
        raise TransformError("transform script failed:\n" +
                             render_diagnostics(diagnostics_of(error))) from None
    except ValueError as error:  # the interpreter's binding reports failures this way
        text = str(error).replace("Failed to apply named transform sequence.", "").strip()
        text = text.replace("Diagnostic message at ", "").replace("Diagnostic message", "").strip()
        raise TransformError(f"transform script failed: {text or 'MLIR gave no message'}") from None


def match_ops(root: ir.Value, names: list[str]) -> ir.Value:
    return structured.MatchOp.match_op_names(root, names).result


def match_attr(root: ir.Value, key: str, value: ir.Attribute | None = None,
               op_names: list[str] | None = None) -> ir.Value:
    """Ops under ``root`` carrying attribute ``key`` (equal to ``value`` when given)."""
    attrs = ir.DictAttr.get({key: value if value is not None else ir.UnitAttr.get()})
    return structured.MatchOp(transform.AnyOpType.get(), root, ops=op_names,
                              op_attrs=attrs).result


def annotate(handle: ir.Value, key: str, value: ir.Attribute | None = None) -> None:
    """``transform.annotate``: set ``key`` (unit, or ``value``) on the payload ops."""
    if value is None:
        transform.AnnotateOp(handle, key)
    else:
        param = transform.ParamConstantOp(transform.AnyParamType.get(), value).result
        transform.AnnotateOp(handle, key, param=param)
