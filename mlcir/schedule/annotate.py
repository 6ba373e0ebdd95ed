"""Loop annotations: ``parallel``, ``unroll``, ``bind``, ``annotate`` (TVM's for_kind and
annotate; ``vectorize``, whose emission is most of the vectorizer, is in :mod:`.vector_tile`).
They mark loops; what a mark emits is here too, called by the materializer."""

from __future__ import annotations

from mlir import ir
from mlir.dialects.transform import loop as tloop

import random

from typing import Any

from .emit import Emitted, loops_named
from .errors import PrimitiveError
from .loops import own_loop
from .state import SPATIAL, Block, KernelState, Loop
from .fuzz_support import LIKELY, mostly, on_loops, some_block_loops, some_block_or_loop
from .instruction import ANNOTATE, BIND, PARALLEL, UNANNOTATE, UNROLL

# Unrolling makes copies of the loop body; more than this many copies per block makes code
# that LLVM takes minutes to compile (measured: a 1536-trip full unroll, ~1 MB of IR).
MAX_UNROLLED_COPIES = 512
GPU_AXES = ("blockIdx.x", "blockIdx.y", "blockIdx.z", "threadIdx.x", "threadIdx.y", "threadIdx.z")


# A loop's kind, as TVM's for_kind: one of these, the last primitive setting one wins.
LOOP_KINDS = ("parallel", "vectorize", "unroll", "bind")


def mark_loop_kind(state: KernelState, loop: Loop, prim: str, key: str, value: Any = True) -> None:
    own_loop(state, loop, prim)
    for kind in LOOP_KINDS:
        loop.annotations.pop(kind, None)
    loop.annotations[key] = value


def parallel(state: KernelState, loop: Loop) -> None:
    """Run ``loop``'s iterations on several threads (OpenMP; a spatial loop)."""
    if state.loop_kind(loop) != SPATIAL:
        raise PrimitiveError("parallel", f"loop {state.loop_name(loop)} is a reduction loop")
    mark_loop_kind(state, loop, "parallel", "parallel")


def unroll(state: KernelState, loop: Loop, factor: Any = None) -> None:
    """Unroll ``loop`` completely, or by ``factor``."""
    if factor is not None and (not isinstance(factor, int) or factor < 1):
        raise PrimitiveError("unroll", f"factor must be a positive int, got {factor!r}")
    name = state.loop_name(loop)
    if loop.extent < 0 and factor is None:
        raise PrimitiveError("unroll", f"loop {name} has a dynamic extent: unroll it by a factor")
    copies = factor if loop.extent < 0 else min(factor or loop.extent, loop.extent)
    block = state.owner(loop)
    for lid in state.enclosing(block):
        other = state.loops[lid]
        if lid != loop.id and other.annotations.get("unroll"):
            copies *= int(other.annotations["unroll"]) if other.extent < 0 else \
                min(int(other.annotations["unroll"]), other.extent)
    if copies > MAX_UNROLLED_COPIES:
        raise PrimitiveError("unroll", f"unrolling loop {name} would make {copies} copies of the "
                             f"loop body in block '{block.name}' (at most "
                             f"{MAX_UNROLLED_COPIES}); unroll by a factor instead")
    mark_loop_kind(state, loop, "unroll", "unroll", factor or loop.extent)


def bind(state: KernelState, loop: Loop, thread_axis: str) -> None:
    """Map ``loop`` to a GPU grid axis (``blockIdx.x``, ``threadIdx.y``, …)."""
    if thread_axis not in GPU_AXES:
        raise PrimitiveError("bind", f"unknown thread axis {thread_axis!r}; one of "
                             f"{', '.join(GPU_AXES)}")
    if state.loop_kind(loop) != SPATIAL:
        raise PrimitiveError("bind", f"loop {state.loop_name(loop)} is a reduction loop")
    mark_loop_kind(state, loop, "bind", "bind", thread_axis)


def annotate(target: Block | Loop, ann_key: str, ann_val: Any) -> None:
    """Attach ``ann_key = ann_val`` to a block or loop: an int, float, str or bool, or (as
    TVM's annotation values) a list of them or a dict with str keys, nested alike."""
    wrong = _not_annotation_value(ann_val)
    if wrong is not None:
        raise PrimitiveError("annotate", "annotation values must be int, float, str or bool, "
                             f"or lists or str-keyed dicts of them; got {wrong}")
    if ann_key.startswith("_"):
        raise PrimitiveError("annotate", "keys starting with '_' are reserved")
    target.annotations[ann_key] = ann_val


def _not_annotation_value(value: Any) -> str | None:
    """What in ``value`` is no annotation value (None when it all is)."""
    if isinstance(value, (int, float, str, bool)):
        return None
    if isinstance(value, (list, tuple)):
        return next((w for w in map(_not_annotation_value, value) if w is not None), None)
    if isinstance(value, dict):
        if not all(isinstance(k, str) for k in value):
            return "a dict with a key that is not a str"
        return next((w for w in map(_not_annotation_value, value.values()) if w is not None),
                    None)
    return type(value).__name__


def unannotate(target: Block | Loop, ann_key: str) -> None:
    if ann_key not in target.annotations:
        raise PrimitiveError("unannotate", f"no annotation '{ann_key}'")
    del target.annotations[ann_key]


# -- emission ------------------------------------------------------------------------------------

def group_kind(annotations: dict[str, Any]) -> str | None:
    """What loops a tiling op may group: parallel loops, or loops bound to one kind of GPU
    axis (``bind:blockIdx`` / ``bind:threadIdx``)."""
    if annotations.get("parallel"):
        return "parallel"
    if annotations.get("bind"):
        return "bind:" + str(annotations["bind"]).split(".")[0]
    return None


def gpu_mapping(axis: str) -> ir.Attribute:
    """The ``#gpu`` mapping attribute of a ``bind`` axis."""
    kind, dim = axis.split(".")
    prefix = "block" if kind == "blockIdx" else "thread"
    return ir.Attribute.parse(f"#gpu.{prefix}<{dim}>")


def loop_attributes(loop: Loop) -> dict[str, ir.Attribute]:
    """The ``loop.<key>`` attributes a loop's own annotations put on its emitted loop (the loop
    kinds are emitted as what they mean; keys starting with ``_`` are internal)."""
    return {f"loop.{key}": _attr(value) for key, value in loop.annotations.items()
            if key not in LOOP_KINDS and not key.startswith("_")}


def block_attributes(block: Block) -> dict[str, ir.Attribute]:
    """The ``loop.<key>`` attributes a block's annotations put on its op (while it is an op:
    a vectorized tile's vector operations do not carry them)."""
    return {f"loop.{key}": _attr(value) for key, value in block.annotations.items()
            if not key.startswith("_")}


def _attr(value: Any) -> ir.Attribute:
    if isinstance(value, bool):
        return ir.BoolAttr.get(value)
    if isinstance(value, int):
        return ir.IntegerAttr.get(ir.IntegerType.get_signless(64), value)
    if isinstance(value, float):
        return ir.FloatAttr.get(ir.F64Type.get(), value)
    if isinstance(value, (list, tuple)):
        return ir.ArrayAttr.get([_attr(v) for v in value])
    if isinstance(value, dict):
        return ir.DictAttr.get({k: _attr(v) for k, v in value.items()})
    return ir.StringAttr.get(str(value))


def emit_unrolls(state: KernelState, em: Emitted) -> None:
    """Unroll the scf.for loops marked ``unroll``, innermost first: unrolling a loop copies the
    loops inside it."""
    for lid, loop_name in reversed(em.for_loops):
        if lid not in state.loops:
            continue
        factor = state.loops[lid].annotations.get("unroll")
        if factor:
            tloop.LoopUnrollOp(loops_named(em, loop_name), factor=int(factor))


# -- fuzzing ----------------------------------------------------------------------------------

@PARALLEL.fuzzed_by(1)
def fuzz_parallel(sch, rng: random.Random) -> bool:
    loops = some_block_loops(sch, rng)
    spatial = [rv for rv in loops if sch.get(rv).kind == "spatial"]
    if not spatial:
        return False
    sch.parallel(spatial[0] if rng.random() < 0.7 else rng.choice(spatial))
    return True


@UNROLL.fuzzed_by(1)
def fuzz_unroll(sch, rng: random.Random) -> bool:
    return on_loops(sch, rng, lambda loops: sch.unroll(rng.choice(loops),
                                                        factor=rng.choice([None, 2, 4])))


@BIND.fuzzed_by(0.5)
def fuzz_bind(sch, rng: random.Random) -> bool:
    # Likely legal: a spatial loop and a known axis (on a CPU a bound loop runs as a serial
    # scf.forall); else any loop (a reduction loop is refused) or an unknown axis (refused).
    loops = some_block_loops(sch, rng)
    if not loops:
        return False
    spatial = [rv for rv in loops if sch.get(rv).kind == "spatial"]
    axis = rng.choice(GPU_AXES) if rng.random() < LIKELY else "warpIdx.x"
    sch.bind(mostly(rng, spatial, loops), axis)
    return True


# Keys codegen does not read (annotate's documented use: a note for later passes).
ANNOTATION_KEYS = ("fuzz_note", "pragma_hint")


@ANNOTATE.fuzzed_by(0.5)
def fuzz_annotate(sch, rng: random.Random) -> bool:
    target = some_block_or_loop(sch, rng)
    if target is None:
        return False
    value = rng.choice([1, 2.5, "x", True, [1, "x"], {"n": [2, 2.5]}])
    if rng.random() < LIKELY:
        sch.annotate(target, rng.choice(ANNOTATION_KEYS), value)
    else:  # refused: a reserved key or a value of another type
        sch.annotate(target, *rng.choice([("_reserved", value), ("fuzz_note", [None])]))
    return True


@UNANNOTATE.fuzzed_by(0.25)
def fuzz_unannotate(sch, rng: random.Random) -> bool:
    target = some_block_or_loop(sch, rng)
    if target is None:
        return False
    if rng.random() >= LIKELY:  # refused unless present
        sch.unannotate(target, rng.choice(ANNOTATION_KEYS))
        return True
    # Likely legal: annotate, then take the note off again.
    key = rng.choice(ANNOTATION_KEYS)
    sch.annotate(target, key, rng.choice([1, "x"]))
    sch.unannotate(target, key)
    return True
