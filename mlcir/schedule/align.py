"""``storage_align`` (TVM's): pad the stride of one axis of the buffer a block writes, so that
``stride % factor == offset`` (rows that do not all start on the same cache set or GPU
shared-memory bank).

A tensor has no strides, so the destination is allocated wider and the block writes a slice of
it: ``alloc_tensor`` of ``[..., M, s]`` with ``s`` the padded stride, and the
``tensor.extract_slice`` ``[..., M, N]`` of it as the destination, which bufferization makes a
strided view (row stride ``s``). Only the stride of the second-to-last axis can be set this
way (it is the last dimension's size); that is the axis TVM's examples align. No transform op
does it: a recorded rewrite of the loop-level IR, like ``set_scope``'s.
"""

from __future__ import annotations

import random

import json

from mlir import ir
from mlir.dialects import bufferization, tensor

from .errors import PrimitiveError, ScheduleError
from .payload import find_block_op
from .rewrite import Rewrite, rewrite_kind
from .scope import aligned_view, fresh_destination, result_problem
from .fuzz_support import intermediate, pick_block
from .instruction import STORAGE_ALIGN

KIND = "storage_align"


def padded_stride(stride: int, factor: int, offset: int) -> int:
    """The smallest stride >= ``stride`` that is ``offset`` modulo ``factor``."""
    return stride + (offset - stride) % factor


def check(module: ir.Module, func_name: str, block: str, buffer_index: int, axis: int,
          factor: int, offset: int) -> str:
    """The rewrite's specification; raises why the stride cannot be aligned."""
    if buffer_index != 0:
        raise PrimitiveError(KIND, f"block '{block}' writes one buffer, no #{buffer_index}")
    if factor < 1 or not 0 <= offset < factor:
        raise PrimitiveError(KIND, f"need factor >= 1 and 0 <= offset < factor, got factor "
                             f"{factor}, offset {offset}")
    op = find_block_op(module, func_name, block)
    problem = result_problem(op, func_name, block)
    if problem:
        raise PrimitiveError(KIND, problem)
    rank = ir.RankedTensorType(op.results[0].type).rank
    if axis != rank - 2:
        raise PrimitiveError(KIND, f"only the stride of axis {rank - 2} (the second-to-last of "
                             f"the {rank}-d result) can be padded, got axis {axis}")
    return json.dumps({"block": block, "factor": factor, "offset": offset})


def apply_align(module: ir.Module, func_name: str, spec_text: str) -> None:
    """Apply one recorded ``storage_align`` (see the module docstring)."""
    data = json.loads(spec_text)
    with module.context, ir.Location.unknown():
        op = find_block_op(module, func_name, data["block"])
        empty = fresh_destination(op) if op is not None else None
        if empty is None:
            raise ScheduleError(f"{KIND}: no block '{data['block']}' with a fresh destination")
        t = ir.RankedTensorType(empty.results[0].type)
        shape = list(t.shape)
        wide = shape[:-1] + [padded_stride(shape[-1], data["factor"], data["offset"])]
        earlier = aligned_view(empty)  # aligned before: this padding replaces that one
        allocation = earlier if earlier is not None else empty
        space = allocation.attributes["memory_space"] \
            if "memory_space" in allocation.attributes else None
        with ir.InsertionPoint(empty):
            alloc = bufferization.AllocTensorOp(
                ir.RankedTensorType.get(wide, t.element_type), [], memory_space=space)
            view = tensor.extract_slice(t, alloc.result, [], [], [], [0] * len(shape), shape,
                                        [1] * len(shape))
        empty.results[0].replace_all_uses_with(view)
        empty.erase()
        if earlier is not None and not any(True for _ in earlier.results[0].uses):
            earlier.erase()


@rewrite_kind(KIND)
def _apply_recorded(module: ir.Module, rewrite: Rewrite) -> None:
    apply_align(module, rewrite.func, rewrite.target)


# -- fuzzing ----------------------------------------------------------------------------------

@STORAGE_ALIGN.fuzzed_by(0.5)
def fuzz_storage_align(sch, rng: random.Random) -> bool:
    inner = intermediate(sch, rng)
    block, rv = pick_block(sch, rng, lambda b: not b.origin and b.op_name != "linalg.fill"
                            and len([d for d in b.output_map if d is not None]) >= 2
                            and inner(b))
    if rv is None:
        return False
    rank = len([d for d in block.output_map if d is not None])
    factor = rng.choice([4, 8, 16])
    sch.storage_align(rv, 0, rank - 2, factor, rng.randrange(factor))
    return True
