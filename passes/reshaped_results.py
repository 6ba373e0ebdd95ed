"""``mlcir-reshaped-results``: a kernel whose result is a reshaped view of a temporary writes
its out-parameter directly.

A kernel that computes its result in a reshaped form (a layout change transposes
``[N, C/c, c, H*W]`` into ``[N, C/c, H*W, c]``; a pointwise convolution is a matmul over
``H*W``) returns ``expand_shape`` (or ``collapse_shape``) of what it wrote. Once bufferized,
that is a temporary of the reshaped type, and ``buffer-results-to-out-params`` copies its view
into the out-parameter: for ResNet-50's 1x1 convolution input, a second pass over 3.2 MB
after the transpose. Here the temporary becomes the inverse reshape of the out-parameter (a
view of it) and the copy goes: the kernel writes its result where the caller wants it.

Only where nothing else can tell the difference: the copy's target is a function argument
that nothing else in the function uses (so no other read or write sees it change earlier),
of static shape and the identity layout; its source is the only use of a reshape of a static
``memref.alloc`` with the identity layout, whose other uses then use the view. Runs after
``buffer-results-to-out-params``, before ``buffer-deallocation-pipeline`` (the temporary's
``dealloc``, if any, goes with it).
"""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir
from mlir.dialects import memref

from .registry import ModulePass, register_pass

_RESHAPES = ("memref.expand_shape", "memref.collapse_shape")


@register_pass
@dataclass
class ReshapedResults(ModulePass):
    name = "mlcir-reshaped-results"
    summary = ("Make a result computed in a reshaped temporary a view of the out-parameter "
               "(no copy; after buffer-results-to-out-params)")

    def run(self, module: ir.Operation) -> None:
        copies: list[ir.Operation] = []

        def collect(op: ir.Operation) -> ir.WalkResult:
            if op.name == "memref.copy":
                copies.append(op)
            return ir.WalkResult.ADVANCE

        with module.context:
            module.walk(collect)
            for copy in copies:
                write_in_place(copy)


def _identity_layout(t: ir.MemRefType) -> bool:
    layout = t.layout
    return isinstance(layout, ir.AffineMapAttr) and layout.value == ir.AffineMap.get_identity(t.rank)


def _users(value: ir.Value) -> list[ir.Operation]:
    return [use.owner for use in value.uses]


def _defining_op(value: ir.Value) -> ir.Operation | None:
    """The operation that defines ``value``; None for a block argument."""
    owner = value.owner
    if isinstance(owner, ir.Block):
        return None
    return owner.operation if hasattr(owner, "operation") else owner


def _function_argument(value: ir.Value) -> bool:
    owner = value.owner
    return isinstance(owner, ir.Block) and owner.owner.operation.name == "func.func"


def write_in_place(copy: ir.Operation) -> bool:
    """Remove ``copy`` (``memref.copy %view, %out``, ``%view`` one or more reshapes of a
    temporary) by making the temporary the inverse reshapes of ``%out``; False (nothing
    changed) unless the module docstring's conditions hold."""
    source, target = copy.operands
    if not _function_argument(target) or len(_users(target)) != 1:
        return False  # not an argument, or the function reads or writes it elsewhere
    target_type = ir.MemRefType(target.type)
    if not _identity_layout(target_type) or not target_type.has_static_shape:
        return False
    chain: list[ir.Operation] = []  # the reshapes from the temporary to the copied view
    value = source
    while (reshape := _defining_op(value)) is not None and reshape.name in _RESHAPES \
            and len(_users(value)) == 1:
        chain.insert(0, reshape)
        value = reshape.operands[0]
    alloc = _defining_op(value)
    if not chain or alloc is None or alloc.name != "memref.alloc" or len(alloc.operands) \
            or not _identity_layout(ir.MemRefType(value.type)):
        return False
    temporary = value
    deallocs = [u for u in _users(temporary) if u.name == "memref.dealloc"]
    with ir.InsertionPoint(alloc):
        view = target
        for reshape in reversed(chain):  # undo the last reshape first
            before = reshape.operands[0].type
            reassociation = reshape.attributes["reassociation"]
            if reshape.name == "memref.expand_shape":
                view = memref.CollapseShapeOp(before, view, reassociation).result
            else:
                view = memref.ExpandShapeOp(before, view, reassociation, [],
                                            ir.MemRefType(before).shape).result
    # the copy, the old reshapes and the deallocs go first: they use the temporary
    for op in (copy, *reversed(chain), *deallocs):
        op.erase()
    temporary.replace_all_uses_with(view)
    alloc.erase()
    return True
