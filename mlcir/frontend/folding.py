"""Constant folding at import: a node whose inputs are all known is evaluated, not built.

The evaluator is onnx's own ``onnx.reference.ReferenceEvaluator`` run on that one node, so
every ``ai.onnx`` op folds with ONNX's semantics, including ops mlcir has no converter for
(``Shape``→``Gather``→``Concat`` chains, ``ConstantOfShape``, ``Range``, ``Where``…). Nodes
with subgraphs and random generators are never folded.
"""

from __future__ import annotations

import numpy as np
import onnx

from .converter import Node

# Ops whose result is not a function of their inputs.
NONDETERMINISTIC = {"RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike",
                    "Multinomial", "Bernoulli"}


def can_fold(node: Node, inputs: list[np.ndarray | None]) -> bool:
    """Whether ``node`` can be evaluated now: an ai.onnx op, no subgraphs, not random, every
    given input known (``inputs`` holds the known values, ``None`` for unknown or omitted)."""
    if node.domain != "ai.onnx" or node.op_type in NONDETERMINISTIC:
        return False
    if any(a.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS)
           for a in node.proto.attribute):
        return False
    return all(value is not None or not name
               for name, value in zip(node.proto.input, inputs))


def fold(node: Node, inputs: list[np.ndarray | None]) -> list[np.ndarray]:
    """The node's outputs, evaluated by onnx's reference evaluator (ValueError on failure)."""
    from onnx.reference import ReferenceEvaluator  # imported on first use (≈0.1 s)

    proto = onnx.NodeProto()
    proto.CopyFrom(node.proto)
    # The evaluator names its feeds after the inputs; give them fixed names so that an input
    # used twice or named like an output cannot confuse it.
    feeds = {}
    del proto.input[:]
    for i, (name, value) in enumerate(zip(node.proto.input, inputs)):
        if not name:
            proto.input.append("")
            continue
        key = f"in{i}"
        proto.input.append(key)
        feeds[key] = value
    del proto.output[:]
    wanted = [i for i, name in enumerate(node.proto.output) if name]
    proto.output.extend(f"out{i}" if name else "" for i, name in enumerate(node.proto.output))
    try:
        evaluator = ReferenceEvaluator(proto, opsets={"": node.opset})
        results = evaluator.run([f"out{i}" for i in wanted], feeds)
    except Exception as e:  # noqa: BLE001 - the evaluator raises whatever the op's numpy raises
        message = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise ValueError(f"constant folding failed: {message}") from None
    out: list[np.ndarray] = [np.empty(0)] * len(node.proto.output)
    for i, value in zip(wanted, results):
        out[i] = np.asarray(value)
    return out
