"""If, Loop and Scan flattened into the enclosing graph at import, as plain ONNX nodes.

The graph dialect has no region ops yet, so a subgraph is spliced into the node list the
importer plans (:func:`expand`), its own values renamed under the node's label, the values it
reads from outer scopes left as they are:

- **If** with a condition known at import (a constant, or folded from static shapes): the
  taken branch only. With a run-time condition: both branches, each output a ``Where`` of the
  condition — both computed, one selected — when the two branches give outputs of one shape
  (sizes or the same symbols; otherwise no elementwise select can stand for the branch, and
  it is refused).
- **Loop** with a trip count known at import and a condition that stays true (a ``for``
  loop, what exporters write for ``range(n)``): the body unrolled that many times, the
  loop-carried values threaded through, each scan output stacked by ``Unsqueeze`` +
  ``Concat``. A condition computed in the body (a ``while`` loop) or a run-time trip count
  is refused: the number of iterations would be known only at run time.
- **Scan** (opset 9 on) over a scan axis of static length: the body unrolled once per
  element, each scan input read at it (``Gather``), forwards or backwards, each scan output
  stacked along its axis in its direction, the states threaded through.

docs/frontend.md#control-flow says what a compiled form would need.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import onnx
from onnx import helper, numpy_helper

from .converter import Node
from .loader import Shape, tensor_type

Types = dict[str, tuple[Shape, np.dtype]]

#: Nodes one Loop or Scan may unroll into (iterations x body nodes): beyond it, refused.
MAX_UNROLLED_NODES = 20_000


def expand(node: Node, constant: Callable[[str], np.ndarray | None], types: Types
           ) -> list[onnx.NodeProto]:
    """The nodes that replace the If, Loop or Scan ``node``; ``constant(name)`` is a value
    known at import (or None); the types of the renamed values are added to ``types``.
    ValueError says why the node cannot be flattened."""
    if node.op_type == "If":
        return _if(node, constant, types)
    if node.op_type == "Scan":
        return _scan(node, types)
    return _loop(node, constant, types)


def _splice(graph: onnx.GraphProto, inputs: dict[str, str], prefix: str, types: Types
            ) -> tuple[list[onnx.NodeProto], dict[str, str]]:
    """``graph``'s nodes with its inputs bound to ``inputs`` (body name -> outer name) and
    the values it defines renamed ``<prefix>/<name>``; returns them and the renaming."""
    names = dict(inputs)
    for proto in graph.node:
        for out in proto.output:
            if out:
                names[out] = f"{prefix}/{out}"
    nodes = [helper.make_node("Constant", [], [f"{prefix}/{t.name}"], name=f"{prefix}/{t.name}",
                              value=t) for t in graph.initializer]
    names.update((t.name, f"{prefix}/{t.name}") for t in graph.initializer)
    for vi in [*graph.value_info, *graph.output]:
        found = tensor_type(vi.type)
        if found is not None and vi.name in names:
            types[names[vi.name]] = found
    for i, proto in enumerate(graph.node):
        copy = onnx.NodeProto()
        copy.CopyFrom(proto)
        copy.name = f"{prefix}/{proto.name or f'{proto.op_type}#{i}'}"
        _rename(copy, names)
        nodes.append(copy)
    return nodes, names


def _rename(proto: onnx.NodeProto, names: dict[str, str]) -> None:
    """Inputs and outputs of ``proto`` and of the nodes of its subgraphs (which may read the
    renamed values from their outer scope) renamed by ``names``; ONNX forbids a subgraph to
    reuse an outer name, so nothing is shadowed."""
    for field in (proto.input, proto.output):
        for k, name in enumerate(field):
            field[k] = names.get(name, name)
    for attr in proto.attribute:
        for graph in [attr.g] if attr.HasField("g") else list(attr.graphs):
            for inner in graph.node:
                _rename(inner, names)
            for out in graph.output:
                out.name = names.get(out.name, out.name)


def _label(node: Node) -> str:
    return node.proto.name or node.label


def _if(node: Node, constant: Callable[[str], np.ndarray | None], types: Types
        ) -> list[onnx.NodeProto]:
    branches = {a.name: a.g for a in node.proto.attribute if a.name in ("then_branch",
                                                                          "else_branch")}
    cond_name = node.proto.input[0]
    cond = constant(cond_name)
    label = _label(node)
    if cond is not None:
        taken = "then_branch" if bool(np.asarray(cond).reshape(-1)[0]) else "else_branch"
        nodes, names = _splice(branches[taken], {}, f"{label}/{taken[:4]}", types)
        return nodes + [helper.make_node("Identity", [names.get(o.name, o.name)], [out],
                                         name=f"{label}/{out}")
                        for o, out in zip(branches[taken].output, node.outputs)]
    spliced, outputs = [], {}
    for which in ("then_branch", "else_branch"):
        nodes, names = _splice(branches[which], {}, f"{label}/{which[:4]}", types)
        spliced += nodes
        outputs[which] = [names.get(o.name, o.name) for o in branches[which].output]
    for k, out in enumerate(node.outputs):
        shapes = [_dims(branches[w].output[k]) for w in outputs]
        if any(s is None or None in s for s in shapes) or shapes[0] != shapes[1]:
            shown = " and ".join("unknown" if s is None else
                                 "[" + ", ".join("?" if d is None else str(d) for d in s) + "]"
                                 for s in shapes)
            raise ValueError(f"output {k} ('{out}') has the shapes {shown} in the two branches "
                             "and the condition is known only at run time: both branches "
                             "are computed and one selected, which needs one shape (sizes "
                             "or the same symbols)")
        spliced.append(helper.make_node("Where", [cond_name, outputs["then_branch"][k],
                                                  outputs["else_branch"][k]], [out],
                                        name=f"{label}/{out}"))
    return spliced


def _dims(value: onnx.ValueInfoProto) -> list[int | str | None] | None:
    """A value's dims as sizes or symbols (``dim_param``), None where unknown; None for an
    unknown rank."""
    tensor = value.type.tensor_type
    if not tensor.HasField("shape"):
        return None
    return [d.dim_value if d.HasField("dim_value") else d.dim_param or None
            for d in tensor.shape.dim]


def _passes_condition_through(body: onnx.GraphProto) -> bool:
    """The body's condition output stays true: its condition input passed on (directly or by
    an Identity) or a constant true."""
    cond_in, cond_out = body.input[1].name, body.output[0].name
    if cond_out == cond_in:
        return True
    for proto in body.node:
        if cond_out in proto.output:
            if proto.op_type == "Identity":
                return proto.input[0] == cond_in
            if proto.op_type == "Constant" and proto.attribute:
                value = numpy_helper.to_array(proto.attribute[0].t) \
                    if proto.attribute[0].HasField("t") else None
                return value is not None and bool(np.all(value))
            return False
    return False


def _loop(node: Node, constant: Callable[[str], np.ndarray | None], types: Types
          ) -> list[onnx.NodeProto]:
    body = next(a.g for a in node.proto.attribute if a.name == "body")
    inputs = list(node.proto.input) + [""] * (2 - len(node.proto.input))
    trip_name, cond_name, initial = inputs[0], inputs[1], inputs[2:]
    trips = constant(trip_name) if trip_name else None
    if trips is None:
        raise ValueError("the trip count M is " + ("absent" if not trip_name else
                         "known only at run time") + ": unrolling needs it at import")
    trips = int(np.asarray(trips).reshape(-1)[0])
    if cond_name:
        cond = constant(cond_name)
        if cond is None:
            raise ValueError("the initial condition is known only at run time")
        if not bool(np.asarray(cond).reshape(-1)[0]):
            trips = 0
    if not _passes_condition_through(body):
        raise ValueError("the body computes its condition (a while loop): the number of "
                         "iterations is known only at run time")
    carried = len(initial)
    scans = len(body.output) - 1 - carried
    if trips == 0 and scans:
        raise ValueError("zero iterations with scan outputs (empty tensors) are not supported")
    if trips * max(1, len(body.node)) > MAX_UNROLLED_NODES:
        raise ValueError(f"{trips} iterations of a {len(body.node)}-node body exceed the "
                         f"{MAX_UNROLLED_NODES} nodes mlcir unrolls")
    label = _label(node)
    nodes: list[onnx.NodeProto] = []
    true = _constant(nodes, f"{label}/true", np.array(True))
    values = list(initial)
    stacked: list[list[str]] = [[] for _ in range(scans)]
    for i in range(trips):
        prefix = f"{label}/{i}"
        count = _constant(nodes, f"{prefix}/{body.input[0].name}", np.array(i, np.int64))
        bound = {body.input[0].name: count, body.input[1].name: true}
        bound.update((vi.name, v) for vi, v in zip(body.input[2:], values))
        spliced, names = _splice(body, bound, prefix, types)
        nodes += spliced
        produced = [names.get(o.name, o.name) for o in body.output[1:]]
        values = produced[:carried]
        for j, name in enumerate(produced[carried:]):
            stacked[j].append(_unsqueezed(nodes, name, 0, node.opset, f"{prefix}/scan{j}"))
    outs = node.outputs
    for k, out in enumerate(outs[:carried]):
        if out:
            nodes.append(helper.make_node("Identity", [values[k]], [out], name=f"{label}/{out}"))
    for j, out in enumerate(outs[carried:carried + scans]):
        if out:
            nodes.append(helper.make_node("Concat", stacked[j], [out], name=f"{label}/{out}",
                                          axis=0))
    return nodes


def _constant(nodes: list[onnx.NodeProto], name: str, value: np.ndarray) -> str:
    nodes.append(helper.make_node("Constant", [], [name], name=name,
                                  value=numpy_helper.from_array(value, name)))
    return name


def _unsqueezed(nodes: list[onnx.NodeProto], name: str, axis: int, opset: int, prefix: str
                ) -> str:
    """``name`` with a new axis ``axis`` (Unsqueeze's axes an input since opset 13)."""
    out = f"{prefix}/stacked"
    if opset >= 13:
        axes = _constant(nodes, f"{prefix}/axes", np.array([axis], np.int64))
        nodes.append(helper.make_node("Unsqueeze", [name, axes], [out], name=out))
    else:
        nodes.append(helper.make_node("Unsqueeze", [name], [out], name=out, axes=[axis]))
    return out


def _scan(node: Node, types: Types) -> list[onnx.NodeProto]:
    """Scan (opset 9 on): the body once per element of the scan axis, each scan input read
    at that element (``Gather``), each scan output stacked along its axis, in either
    direction; the states threaded through."""
    if node.opset < 9:
        raise ValueError("Scan before opset 9 (a batch axis and sequence_lens) is not "
                         "supported")
    body = next(a.g for a in node.proto.attribute if a.name == "body")
    scanned = int(node.attr("num_scan_inputs"))
    states = len(node.proto.input) - scanned
    outputs = len(body.output) - states
    in_axes = list(node.attr("scan_input_axes", [0] * scanned))
    in_reverse = list(node.attr("scan_input_directions", [0] * scanned))
    out_axes = list(node.attr("scan_output_axes", [0] * outputs))
    out_reverse = list(node.attr("scan_output_directions", [0] * outputs))
    for j, vo in enumerate(body.output[states:]):
        if out_axes[j] < 0:  # counted on the stacked rank
            found = tensor_type(vo.type)
            if found is None:
                raise ValueError(f"scan output {j} has an unknown rank")
            out_axes[j] += len(found[0]) + 1
    lengths = set()
    for k, info in enumerate(node.inputs[states:]):
        if info.shape is None:
            raise ValueError(f"scan input '{info.name}' has an unknown shape")
        in_axes[k] %= len(info.shape)
        lengths.add(info.shape[in_axes[k]])
    if len(lengths) != 1 or None in lengths:
        raise ValueError("the scan inputs' lengths along their axes are "
                         f"{sorted(lengths, key=str)}: one static length is needed")
    (length,) = lengths
    if length * max(1, len(body.node)) > MAX_UNROLLED_NODES:
        raise ValueError(f"{length} iterations of a {len(body.node)}-node body exceed the "
                         f"{MAX_UNROLLED_NODES} nodes mlcir unrolls")
    label = _label(node)
    nodes: list[onnx.NodeProto] = []
    values = list(node.proto.input[:states])
    stacked: list[list[str]] = [[] for _ in range(outputs)]
    for i in range(length):
        prefix = f"{label}/{i}"
        bound = {vi.name: v for vi, v in zip(body.input, values)}
        for k, (vi, name) in enumerate(zip(body.input[states:], node.proto.input[states:])):
            at = _constant(nodes, f"{prefix}/at{k}",
                           np.array(length - 1 - i if in_reverse[k] else i, np.int64))
            element = f"{prefix}/element{k}"
            nodes.append(helper.make_node("Gather", [name, at], [element], name=element,
                                          axis=in_axes[k]))
            bound[vi.name] = element
        spliced, names = _splice(body, bound, prefix, types)
        nodes += spliced
        produced = [names.get(o.name, o.name) for o in body.output]
        values = produced[:states]
        for j, name in enumerate(produced[states:]):
            stacked[j].append(_unsqueezed(nodes, name, out_axes[j], node.opset,
                                          f"{prefix}/scan{j}"))
    for k, out in enumerate(node.outputs[:states]):
        if out:
            nodes.append(helper.make_node("Identity", [values[k]], [out], name=f"{label}/{out}"))
    for j, out in enumerate(node.outputs[states:]):
        if out:
            parts = stacked[j][::-1] if out_reverse[j] else stacked[j]
            nodes.append(helper.make_node("Concat", parts, [out], name=f"{label}/{out}",
                                          axis=out_axes[j]))
    return nodes
