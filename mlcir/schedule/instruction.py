"""The table of schedule primitives, and the random variables they take and give.

Following TVM's MetaSchedule, every primitive is one :class:`InstructionKind` (its name, its
inputs, whether it samples, how it prints: what its trace entries (de)serialise by), declared
once in :data:`KINDS`; a schedule appends an :class:`Instruction` (kind, inputs, attributes,
outputs, decision) to its trace for every call. Inputs and outputs refer to random variables
(blocks, loops, sampled integers) by identity.

The rest of a primitive lives in its *home* module (named in its entry): the legality check
and state update that ``Schedule``'s method calls, the transform-IR emission of what it leaves
in the state (called by :mod:`.materialize`), and its fuzz sampler, registered on its entry
with ``@KIND.fuzzed_by(weight)``; the schedule fuzzer draws from this table.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field, replace
from typing import Any, Callable


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


# A fuzz sampler: ``(sch, rng) -> bool`` (see :mod:`.fuzz_support`).
Sampler = Callable[[Any, random.Random], bool]


@dataclass(eq=False)
class InstructionKind:
    """One schedule primitive. ``inputs`` are positional arguments (random variables, numbers,
    strings, lists of them); ``attrs`` keyword arguments; a sampling kind also takes a
    ``decision``. ``home`` is the module holding its logic, emission and sampler; ``sample``
    and ``weight`` (how often the fuzzer draws it) are registered from there."""

    name: str
    input_names: tuple[str, ...]
    home: str
    is_sampling: bool = False
    # Inputs passed as *args when printed (reorder(l1, l2, ...)), else by keyword.
    variadic: bool = False
    # Printed as `a, b = sch.x(...)` even with one output (get_loops, split, sampling).
    returns_list: bool = False
    sample: Sampler | None = field(default=None, repr=False)
    weight: float = 0.0

    def fuzzed_by(self, weight: float) -> Callable[[Sampler], Sampler]:
        """Register the decorated function as this primitive's fuzz sampler."""
        def register(sample: Sampler) -> Sampler:
            if self.sample is not None:
                raise ValueError(f"primitive '{self.name}' has two samplers")
            self.sample, self.weight = sample, weight
            return sample
        return register

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


# In the order the fuzzer draws them by (a fixed order keeps a seed's cases the same).
KINDS: dict[str, InstructionKind] = {}


def _kind(name: str, input_names: tuple[str, ...], home: str, **flags: bool) -> InstructionKind:
    kind = KINDS[name] = InstructionKind(name, input_names, home, **flags)
    return kind


SPLIT = _kind("split", ("loop", "factors"), "loops", returns_list=True)
SAMPLE_PERFECT_TILE = _kind("sample_perfect_tile", ("loop", "n", "max_innermost_factor"),
                            "sampling", is_sampling=True, returns_list=True)
SAMPLE_PARTITIONED_TILE = _kind("sample_partitioned_tile",
                                ("loop", "n", "partition_pos", "innerpart_factor",
                                 "max_innermost_factor"), "sampling", is_sampling=True,
                                returns_list=True)
REORDER = _kind("reorder", ("loops",), "loops", variadic=True)
FUSE = _kind("fuse", ("loops",), "loops", variadic=True)
PARALLEL = _kind("parallel", ("loop",), "annotate")
VECTORIZE = _kind("vectorize", ("loop",), "vector_tile")
UNROLL = _kind("unroll", ("loop",), "annotate")
COMPUTE_AT = _kind("compute_at", ("block", "loop"), "compute_location")
REVERSE_COMPUTE_AT = _kind("reverse_compute_at", ("block", "loop"), "compute_location")
COMPUTE_INLINE = _kind("compute_inline", ("block",), "compute_location")
REVERSE_COMPUTE_INLINE = _kind("reverse_compute_inline", ("block",), "compute_location")
DECOMPOSE_REDUCTION = _kind("decompose_reduction", ("block", "loop"), "compute_location")
CACHE_READ = _kind("cache_read", ("block", "read_buffer_index", "storage_scope"), "cache")
CACHE_WRITE = _kind("cache_write", ("block", "write_buffer_index", "storage_scope"), "cache")
RFACTOR = _kind("rfactor", ("loop", "factor_axis"), "reduction")
ADD_UNIT_LOOP = _kind("add_unit_loop", ("block_or_loop",), "unit_loop")
BLOCKIZE = _kind("blockize", ("target",), "blockize")
SET_SCOPE = _kind("set_scope", ("block", "buffer_index", "storage_scope"), "scope")
STORAGE_ALIGN = _kind("storage_align", ("block", "buffer_index", "axis", "factor", "offset"),
                      "align")
TRANSFORM_LAYOUT = _kind("transform_layout", ("block", "buffer", "index_map"), "layout")
GET_BLOCK = _kind("get_block", ("name", "func_name"), "dataflow")
GET_CHILD_BLOCKS = _kind("get_child_blocks", ("block_or_loop",), "dataflow", returns_list=True)
GET_LOOPS = _kind("get_loops", ("block",), "dataflow", returns_list=True)
GET_PRODUCERS = _kind("get_producers", ("block",), "dataflow", returns_list=True)
GET_CONSUMERS = _kind("get_consumers", ("block",), "dataflow", returns_list=True)
BIND = _kind("bind", ("loop", "thread_axis"), "annotate")
ANNOTATE = _kind("annotate", ("block_or_loop", "ann_key", "ann_val"), "annotate")
UNANNOTATE = _kind("unannotate", ("block_or_loop", "ann_key"), "annotate")
SAMPLE_CATEGORICAL = _kind("sample_categorical", ("candidates", "probs"), "sampling",
                           is_sampling=True)
SAMPLE_COMPUTE_LOCATION = _kind("sample_compute_location", ("block",), "sample_location",
                                is_sampling=True)
TENSORIZE = _kind("tensorize", ("block_or_loop", "tensor_intrin"), "tensorize")

# Kinds that only look things up (Trace.simplified drops them when their outputs are unused).
PURE_KINDS = {"get_block", "get_loops", "get_child_blocks", "get_producers", "get_consumers"}
