"""Constant folding at import: a node whose inputs are all known is evaluated, not built.

mlcir folds with its own numpy semantics first: the node's converter run on the constant
inputs, where every graph op it asks for is evaluated by that op's ``evaluate`` (the same
numpy the lowerings are tested against), so a folded node means what the compiled one would.
Only ops without a converter go to onnx's ``onnx.reference.ReferenceEvaluator`` run on that
one node (``NonZero``, ``Tile``, ``OneHot``…): it is wrong in places —
its GatherElements reads only the first element when the gathered axis is longer than 32
(``np.choose``'s limit).
Nodes with subgraphs and random generators are never folded.
"""

from __future__ import annotations

import numpy as np
import onnx

from .builder import GraphBuilder
from .converter import Node
from .registry import converter_table

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
    """The node's outputs, evaluated with mlcir's numpy semantics where it has them, else by
    onnx's reference evaluator (ValueError on failure)."""
    try:
        own = _fold_with_mlcir(node, inputs)
    except (ValueError, IndexError, ArithmeticError, TypeError) as e:
        raise ValueError(f"constant folding failed: {e}") from None
    if own is not None:
        return own
    return _fold_with_onnx_reference(node, inputs)


def _fold_with_mlcir(node: Node, inputs: list[np.ndarray | None]) -> list[np.ndarray] | None:
    """The outputs by the node's converter on constants (every graph op it builds
    evaluated); None when it has none or it needs IR to be built."""
    cls = converter_table().get(node.op_type)
    impl = cls.impl(node.opset) if cls is not None else None
    if impl is None or cls.check(node):
        return None
    builder = GraphBuilder()
    builder.node = node
    try:
        outputs = impl(builder, node, list(inputs))
    except (IndexError, ArithmeticError):
        raise  # an op's numpy refused these constants (an index out of range): the model's
    except Exception:  # noqa: BLE001 - a converter that needs IR (no context here): not foldable by it
        return None
    if not isinstance(outputs, (list, tuple)):
        outputs = [outputs]
    if not all(isinstance(v, np.ndarray) for v in outputs):
        return None
    return list(outputs)


def _fold_with_onnx_reference(node: Node, inputs: list[np.ndarray | None]) -> list[np.ndarray]:
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
