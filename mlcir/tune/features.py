"""Cost-model features of a scheduled kernel.

:class:`FeatureExtractor` is the role's interface; :class:`LoopNestFeatures` (shorthand
``"loop-nest"``) is :func:`extract`, computed from the schedule's logical loop nests — the
loops the transform script materializes, one for one, so these are the scheduled IR's loops
(extents, kinds, annotations) without re-analysing the lowered code. For the block with the most work (its "main" block):

- for each of its 8 innermost enclosing loops (innermost first; missing loops are zeros):
  ``log2(extent)``, reduction?, parallel?, inside the vector tile?, ``log2(unroll factor)``,
  and for each of its first 4 operands (inputs, then the output): ``log2(1 + stride)`` of the
  loop's step through the operand (elements) and ``log2(footprint)`` — the bytes of the
  operand that one iteration of the loop touches;
- and kernel-wide: ``log2(work)`` (multiply-adds or element ops), ``log2(vector tile
  elements)``, ``log2(parallel extent)``, number of loops, number of blocks, the share of work
  in vectorized blocks, ``log2(total unroll)``.

Documented in docs/tuning.md.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Protocol

from mlcir.errors import TuningError

if TYPE_CHECKING:  # pragma: no cover
    from mlcir.schedule import Schedule
    from mlcir.schedule.state import Block, KernelState

MAX_LOOPS = 8
MAX_OPERANDS = 4
PER_LOOP = 5 + 2 * MAX_OPERANDS
GLOBAL = 7
LENGTH = MAX_LOOPS * PER_LOOP + GLOBAL
ELEMENT_BYTES = 4


def _log2(x: float) -> float:
    return math.log2(x) if x > 0 else 0.0


def _work(block: "Block") -> float:
    extents = [e or 1 for e in block.extents]
    return float(math.prod(extents))


def _operand_shape(block: "Block", map_results: list[int | None]) -> list[int]:
    return [(block.extents[d] or 1) if d is not None else 1 for d in map_results]


def _stride(shape: list[int], map_results: list[int | None], dim: int) -> int:
    """Elements between consecutive values of ``dim`` in a row-major operand (0: not indexed)."""
    for r, d in enumerate(map_results):
        if d == dim:
            return math.prod(shape[r + 1:])
    return 0


def block_features(state: "KernelState", block: "Block") -> list[float]:
    chain = state.enclosing(block)
    own = [lid for lid in chain if state.loops[lid].block == block.name]
    vec_start = next((i for i, lid in enumerate(own)
                      if state.loops[lid].annotations.get("vectorize")), len(own))
    vector_loops = set(own[vec_start:])
    operands = [op for op in block.operands if op.map_results][:MAX_OPERANDS]
    out: list[float] = []
    for position in range(MAX_LOOPS):
        if position >= len(own):
            out += [0.0] * PER_LOOP
            continue
        lid = own[len(own) - 1 - position]
        loop = state.loops[lid]
        kinds = {block.kinds[d] for d, _ in loop.parts}
        ann = loop.annotations
        out += [_log2(loop.extent), float("reduction" in kinds), float(bool(ann.get("parallel"))),
                float(lid in vector_loops), _log2(float(ann.get("unroll") or 1))]
        inner = own[own.index(lid):]
        for op in operands:
            shape = _operand_shape(block, op.map_results)
            stride = min((_stride(shape, op.map_results, d) for d, _ in loop.parts), default=0)
            # the operand's tile under this loop: each indexed dim covers its inner extent
            tile = []
            for d in op.map_results:
                if d is None:
                    tile.append(1)
                    continue
                tile.append(math.prod(e for l2 in inner for dd, e in state.loops[l2].parts if dd == d))
            out += [_log2(1 + stride), _log2(math.prod(tile) * ELEMENT_BYTES)]
        out += [0.0] * (2 * (MAX_OPERANDS - len(operands)))
    return out


def extract(sch: "Schedule") -> list[float]:
    """The feature vector (length :data:`LENGTH`) of a schedule's kernel."""
    state = sch.state
    blocks = [b for b in state.blocks.values() if not b.inlined]
    if not blocks:
        return [0.0] * LENGTH
    main = max(blocks, key=_work)
    total = sum(_work(b) for b in blocks)
    vec_work = 0.0
    vector_elems = 1
    parallel = 1
    unroll = 1.0
    n_loops = 0
    for b in blocks:
        own = [lid for lid in state.enclosing(b) if state.loops[lid].block == b.name]
        n_loops += len(own)
        for i, lid in enumerate(own):
            ann = state.loops[lid].annotations
            if ann.get("vectorize"):
                vec_work += _work(b)
                if b is main:
                    vector_elems = math.prod(state.loops[x].extent for x in own[i:])
            if ann.get("parallel"):
                parallel *= state.loops[lid].extent
            if ann.get("unroll"):
                unroll *= float(ann["unroll"])
    features = block_features(state, main)
    features += [_log2(total), _log2(vector_elems), _log2(parallel), float(n_loops),
                 float(len(blocks)), vec_work / total if total else 0.0, _log2(unroll)]
    assert len(features) == LENGTH
    return features


class FeatureExtractor(Protocol):
    """Turns a scheduled kernel into the fixed-length vector a cost model learns from."""

    def extract(self, sch: "Schedule") -> list[float]: ...


class LoopNestFeatures:
    """The features of the main block's loop nest (:func:`extract`)."""

    def extract(self, sch: "Schedule") -> list[float]:
        return extract(sch)


def make_feature_extractor(extractor: str | FeatureExtractor) -> FeatureExtractor:
    """The extractor named by a shorthand (``"loop-nest"``), or ``extractor``."""
    if not isinstance(extractor, str):
        return extractor
    if extractor == "loop-nest":
        return LoopNestFeatures()
    raise TuningError(f"unknown feature extractor {extractor!r} (loop-nest)")
