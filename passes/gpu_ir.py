"""IR helpers shared by the GPU passes: mapped foralls, launches, static sizes, locations.

A forall's ``mapping`` says what it runs on: ``#gpu.block<x>`` entries make it a grid loop,
``#gpu.thread<x>`` (or warp/lane) entries a loop over a block's threads. These helpers read that
and the static trip counts the mapping needs; they build nothing.
"""

from __future__ import annotations

from typing import Iterator

from mlir import ir

from mlcir.ir import format_location

BLOCK = "block"
THREAD = "thread"
AXES = ("x", "y", "z")
# MLIR's marker for a dynamic entry of a static-sizes array (ShapedType::kDynamic).
DYNAMIC = -(2 ** 63)


def forall_kind(op: ir.Operation) -> str | None:
    """``"block"``, ``"thread"``, or None for a forall with no GPU mapping."""
    if op.name != "scf.forall" or "mapping" not in op.attributes:
        return None
    text = str(op.attributes["mapping"])
    if "#gpu.block" in text:
        return BLOCK
    if any(kind in text for kind in ("#gpu.thread", "#gpu.warp", "#gpu.lane")):
        return THREAD
    return None


def mapping_axes(op: ir.Operation) -> list[str]:
    """The axis (``x``/``y``/``z``) of each induction variable of a mapped forall."""
    axes = []
    for attr in ir.ArrayAttr(op.attributes["mapping"]):
        text = str(attr)
        axis = text[text.index("<") + 1:text.index(">")] if "<" in text else ""
        if axis not in AXES:
            raise ValueError(f"GPU mapping {text} is not supported (only x, y and z axes)")
        axes.append(axis)
    return axes


def trip_counts(op: ir.Operation) -> list[int | None]:
    """The static trip count of each dimension of an ``scf.forall`` (None when dynamic)."""
    lower = _static(op, "staticLowerBound")
    upper = _static(op, "staticUpperBound")
    step = _static(op, "staticStep")
    out: list[int | None] = []
    for lo, hi, st in zip(lower, upper, step):
        if DYNAMIC in (lo, hi, st) or st <= 0:
            out.append(None)
        else:
            out.append(max(0, -(-(hi - lo) // st)))
    return out


def _static(op: ir.Operation, name: str) -> list[int]:
    return list(ir.DenseI64ArrayAttr(op.attributes[name]))


def ancestors(op: ir.Operation) -> Iterator[ir.Operation]:
    """The ops enclosing ``op``, innermost first, up to (not including) the function."""
    parent = op.operation.parent
    while parent is not None and parent.name not in ("func.func", "builtin.module"):
        yield parent
        parent = parent.parent


def enclosing_forall(op: ir.Operation, kind: str) -> ir.Operation | None:
    for parent in ancestors(op):
        if forall_kind(parent) == kind:
            return parent
    return None


def in_launch(op: ir.Operation) -> bool:
    return any(p.name == "gpu.launch" for p in ancestors(op))


def walk(root: ir.Operation, names: tuple[str, ...] | None = None) -> list[ir.Operation]:
    """Ops under ``root`` (pre-order), only those named ``names`` when given."""
    found: list[ir.Operation] = []

    def visit(op: ir.Operation) -> ir.WalkResult:
        if names is None or op.name in names:
            found.append(op)
        return ir.WalkResult.ADVANCE

    root.walk(visit, ir.WalkOrder.PRE_ORDER)
    return found


def describe(op: ir.Operation) -> str:
    """How errors name an op: ``'linalg.matmul' (block C) at file:line:col``."""
    text = f"'{op.name}'"
    if "loop.block" in op.attributes:
        text += f" (block {ir.StringAttr(op.attributes['loop.block']).value})"
    return f"{text} at {format_location(op.location)}"


def defining_op(value: ir.Value) -> ir.Operation | None:
    """The op defining ``value`` (None for a block argument). Always an ``ir.Operation``: on an
    OpView, ``.name`` may be an attribute of the op (``memref.get_global``'s symbol)."""
    owner = value.owner
    return None if isinstance(owner, ir.Block) else owner.operation


def op_name(value: ir.Value) -> str | None:
    """The name of the op defining ``value`` (None for a block argument)."""
    op = defining_op(value)
    return None if op is None else op.name


def constant_index(value: ir.Value) -> int | None:
    """The value of an ``arith.constant`` of index/integer type, else None."""
    owner = defining_op(value)
    if owner is None or owner.name != "arith.constant":
        return None
    attr = owner.attributes["value"]
    return ir.IntegerAttr(attr).value if isinstance(attr, ir.IntegerAttr) else None


def element_bytes(t: ir.Type) -> int:
    if isinstance(t, ir.IndexType):
        return 8
    width = getattr(t, "width", None)
    if width is None:
        raise ValueError(f"unknown element size of {t}")
    return max(1, width // 8)


def memref_bytes(t: ir.MemRefType) -> int:
    size = element_bytes(t.element_type)
    for d in t.shape:
        size *= d
    return size


def memory_space(t: ir.MemRefType) -> str:
    """``workgroup``, ``private``, ``global`` or ``default`` (no memory space)."""
    space = t.memory_space
    if space is None:
        return "default"
    text = str(space)
    for name in ("workgroup", "private", "global"):
        if name in text:
            return name
    return text
