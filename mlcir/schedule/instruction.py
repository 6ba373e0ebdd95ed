"""Instruction kinds: one per schedule primitive, and the random variables they take and give.

Following TVM's MetaSchedule, every primitive is one :class:`InstructionKind` (its name, its
inputs, whether it samples, how it prints); a schedule appends an :class:`Instruction` (kind,
inputs, attributes, outputs, decision) to its trace for every call. Inputs and outputs refer to
random variables (blocks, loops, sampled integers) by identity.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any


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


RV_TYPES = {"b": BlockRV, "l": LoopRV, "v": ExprRV}


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

    def apply(self, sch: Any, inputs: list[Any], attrs: dict[str, Any], decision: Any) -> Any:
        """Call this primitive on ``sch`` (any object with the primitives as methods, a
        :class:`~mlcir.schedule.Schedule` in practice)."""
        method = getattr(sch, self.name)
        if self.variadic:
            return method(*inputs, **attrs)
        kwargs = dict(zip(self.input_names, inputs))
        kwargs.update(attrs)
        if self.is_sampling:
            kwargs["decision"] = decision
        return method(**kwargs)


@dataclass
class Instruction:
    kind: InstructionKind
    inputs: list[Any]
    attrs: dict[str, Any]
    outputs: list[RV]
    decision: Any = None

    def with_decision(self, decision: Any) -> "Instruction":
        return replace(self, decision=decision)


KINDS: dict[str, InstructionKind] = {}


def _kind(name: str, input_names: tuple[str, ...], **flags: bool) -> InstructionKind:
    kind = KINDS[name] = InstructionKind(name, input_names, **flags)
    return kind


GET_BLOCK = _kind("get_block", ("name", "func_name"))
GET_LOOPS = _kind("get_loops", ("block",), returns_list=True)
GET_CHILD_BLOCKS = _kind("get_child_blocks", ("block_or_loop",), returns_list=True)
SPLIT = _kind("split", ("loop", "factors"), returns_list=True)
REORDER = _kind("reorder", ("loops",), variadic=True)
FUSE = _kind("fuse", ("loops",), variadic=True)
PARALLEL = _kind("parallel", ("loop",))
VECTORIZE = _kind("vectorize", ("loop",))
UNROLL = _kind("unroll", ("loop",))
BIND = _kind("bind", ("loop", "thread_axis"))
ANNOTATE = _kind("annotate", ("block_or_loop", "ann_key", "ann_val"))
UNANNOTATE = _kind("unannotate", ("block_or_loop", "ann_key"))
CACHE_READ = _kind("cache_read", ("block", "read_buffer_index", "storage_scope"))
CACHE_WRITE = _kind("cache_write", ("block", "write_buffer_index", "storage_scope"))
COMPUTE_AT = _kind("compute_at", ("block", "loop"))
REVERSE_COMPUTE_AT = _kind("reverse_compute_at", ("block", "loop"))
COMPUTE_INLINE = _kind("compute_inline", ("block",))
REVERSE_COMPUTE_INLINE = _kind("reverse_compute_inline", ("block",))
DECOMPOSE_REDUCTION = _kind("decompose_reduction", ("block", "loop"))
SAMPLE_PERFECT_TILE = _kind("sample_perfect_tile", ("loop", "n", "max_innermost_factor"),
                            is_sampling=True, returns_list=True)
SAMPLE_PARTITIONED_TILE = _kind("sample_partitioned_tile",
                                ("loop", "n", "partition_pos", "innerpart_factor",
                                 "max_innermost_factor"), is_sampling=True, returns_list=True)
SAMPLE_CATEGORICAL = _kind("sample_categorical", ("candidates", "probs"), is_sampling=True)

# Kinds that only look things up (Trace.simplified drops them when their outputs are unused).
PURE_KINDS = {"get_block", "get_loops", "get_child_blocks"}

# TensorIR primitives beyond the basics (docs/schedules.md, "More TensorIR primitives").
GET_PRODUCERS = _kind("get_producers", ("block",), returns_list=True)
GET_CONSUMERS = _kind("get_consumers", ("block",), returns_list=True)
RFACTOR = _kind("rfactor", ("loop", "factor_axis"))
ADD_UNIT_LOOP = _kind("add_unit_loop", ("block_or_loop",))
SAMPLE_COMPUTE_LOCATION = _kind("sample_compute_location", ("block",), is_sampling=True)
TRANSFORM_LAYOUT = _kind("transform_layout", ("block", "buffer", "index_map"))
TENSORIZE = _kind("tensorize", ("block_or_loop", "tensor_intrin"))
SET_SCOPE = _kind("set_scope", ("block", "buffer_index", "storage_scope"))
STORAGE_ALIGN = _kind("storage_align", ("block", "buffer_index", "axis", "factor", "offset"))
BLOCKIZE = _kind("blockize", ("target",))
PURE_KINDS |= {"get_producers", "get_consumers"}
