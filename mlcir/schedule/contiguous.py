"""Gathers read contiguous tensors: a copy where a rewrite left them a strided view.

A block that reads a tensor with ``tensor.extract`` in its body (a packed layout, a split
across fused dims) is vectorized into a ``vector.gather`` whose offsets the vectorizer
linearizes as if the tensor were contiguous. Some rewrites make a block's result a strided
view after bufferization: the slice that drops the padded rows of a reordered, padded split
(expand.py), the slice of a wider allocation (storage_align). A gather from such a view read
the wrong elements (fuzz_schedules --seed 44 --case 7760: a packed tensor, split with padding
and reordered, read by a vectorized consumer). So, after the rewrites, each tensor read by
``tensor.extract`` inside a linalg body that may be a strided view is copied into a fresh
tensor first (one copy per tensor), as a gather needs.
"""

from __future__ import annotations

from mlir import ir
from mlir.dialects import linalg, tensor

from mlcir.dialects.loop import dps_inits, is_linalg


def gathers_read_contiguous(module: ir.Module) -> None:
    """Copy every tensor that a linalg body reads by ``tensor.extract`` and that may be a
    strided view (see the module docstring)."""
    reads: list[tuple[ir.Operation, ir.Operation]] = []  # (the extract, its linalg op)

    def visit(op: ir.Operation) -> ir.WalkResult:
        if is_linalg(op) and op.regions and op.regions[0].blocks:
            for inner in op.regions[0].blocks[0].operations:
                if inner.operation.name == "tensor.extract":
                    reads.append((inner.operation, op))
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)
    copies: dict[ir.Value, ir.Value] = {}
    for extract, owner in reads:
        source = extract.operands[0]
        if not _may_be_strided(source):
            continue
        if source not in copies:
            shaped = ir.RankedTensorType(source.type)
            with ir.InsertionPoint(owner), owner.location:
                empty = tensor.EmptyOp(shaped.shape, shaped.element_type).result
                copies[source] = linalg.copy(source, outs=[empty])
        extract.operands[0] = copies[source]


def _may_be_strided(value: ir.Value) -> bool:
    """Whether ``value`` may bufferize to a view with gaps between its rows."""
    for _ in range(16):
        owner = value.owner
        if isinstance(owner, ir.Block):
            return False
        op = owner.operation if hasattr(owner, "operation") else owner
        if op.name == "tensor.extract_slice":
            return True
        if op.name in ("tensor.collapse_shape", "tensor.expand_shape"):
            value = op.operands[0]
        elif is_linalg(op) and dps_inits(op):
            value = dps_inits(op)[list(op.results).index(value) if value in list(op.results)
                                  else 0]
        else:
            return False
    return True
