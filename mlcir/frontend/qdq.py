"""QDQ fusion at import: ``DequantizeLinear -> op -> QuantizeLinear`` becomes one integer op.

``onnxruntime.quantization.quantize_static`` writes QDQ models: a float Conv, MatMul, Gemm
or Add between DequantizeLinear nodes (of the quantized activations and the int8 weights) and
a QuantizeLinear of its result. Imported as they stand, the weights' DequantizeLinear folds
into a float weight and the op runs in float32 between a quantize and a dequantize. This
rewrite (onnxruntime's own QDQ transformer does the same at session creation) replaces each
such group by the integer op of the same meaning before the nodes are converted:

- Conv   -> QLinearConv  (per-channel weights, the int32 bias whose scale is x_scale*w_scale),
- MatMul -> QLinearMatMul (a constant weight, per-tensor or per-column),
- Gemm   -> com.microsoft QGemm (alpha = beta = 1, transA = 0, the int32 bias),
- Add    -> com.microsoft QLinearAdd (a residual add of two quantized tensors),

so the convolution accumulates int8 x int8 products in int32, the weights' zero points fold
into the constant weight at import, and the requantize (scale, round half to even, zero point,
saturation: which also performs a ReLU that quantize_static removed) is the op's epilogue,
fused with the bias add. A group is left alone when anything does not fit (a value used
twice, a per-tensor scale that is not a scalar, a bias quantized with another scale).

It works on the ONNX graph, not on the graph dialect: once imported, a DequantizeLinear of a
constant weight is a float constant and the pattern is gone (docs/decisions.md, "QDQ fusion
at import").
"""

from __future__ import annotations

import numpy as np
import onnx
from onnx import helper

from .loader import LoadedModel

#: The ops whose DQ -> op -> Q groups become integer ops.
FUSED = ("Conv", "MatMul", "Gemm", "Add")


def fuse_qdq(loaded: LoadedModel) -> int:
    """Rewrite ``loaded``'s graph in place; the number of groups fused."""
    graph = loaded.model.graph
    inits = loaded.initializers
    producers = {o: n for n in graph.node for o in n.output}
    uses: dict[str, int] = {}
    for n in graph.node:
        for i in n.input:
            uses[i] = uses.get(i, 0) + 1
    for o in graph.output:
        uses[o.name] = uses.get(o.name, 0) + 1
    consumers = {i: n for n in graph.node for i in n.input}
    replaced: dict[int, onnx.NodeProto] = {}
    dropped: set[int] = set()
    for node in graph.node:
        if node.domain not in ("", "ai.onnx") or node.op_type not in FUSED or \
                len(node.output) != 1 or uses.get(node.output[0], 0) != 1:
            continue
        q = consumers.get(node.output[0])
        if q is None or q.op_type != "QuantizeLinear" or q.domain not in ("", "ai.onnx") or \
                not _scalar_q(q, inits):
            continue
        dqs = [producers.get(i) for i in node.input]
        if any(d is None or d.op_type != "DequantizeLinear" or d.domain not in ("", "ai.onnx")
               for d in dqs):
            continue
        fused = _FUSERS[node.op_type](node, dqs, q, loaded)
        if fused is None:
            continue
        fused.name = node.name or q.name
        replaced[id(node)] = fused
        dropped.add(id(q))
    if not replaced:
        return 0
    nodes = [replaced.get(id(n), n) for n in graph.node if id(n) not in dropped]
    # DequantizeLinear nodes nothing reads any more (a fused op's inputs): gone.
    read = {i for n in nodes for i in n.input} | {o.name for o in graph.output}
    nodes = [n for n in nodes if n.op_type != "DequantizeLinear" or n.output[0] in read]
    del graph.node[:]
    graph.node.extend(nodes)
    return len(replaced)


def _const(name: str, inits: dict[str, np.ndarray]) -> np.ndarray | None:
    return inits.get(name) if name else None


def _scalar_q(q: onnx.NodeProto, inits: dict[str, np.ndarray]) -> bool:
    """A per-tensor QuantizeLinear of int8/uint8 with constant scale and zero point."""
    scale = _const(q.input[1], inits)
    zp = _const(q.input[2], inits) if len(q.input) > 2 else None
    return scale is not None and scale.size == 1 and zp is not None and zp.size == 1 and \
        zp.dtype in (np.int8, np.uint8) and not any(a.name == "block_size" and a.i
                                                    for a in q.attribute)


def _dq(d: onnx.NodeProto, inits: dict[str, np.ndarray], per_tensor: bool, weight: bool
        ) -> tuple[str, np.ndarray, np.ndarray, int] | None:
    """A DequantizeLinear's (data, scale, zero point, axis) when its scale and zero point are
    constants (``per_tensor``: scalars; ``weight``: its data a constant int8/uint8 too)."""
    scale = _const(d.input[1], inits)
    zp = _const(d.input[2], inits) if len(d.input) > 2 else None
    if scale is None or (len(d.input) > 2 and d.input[2] and zp is None):
        return None
    data = _const(d.input[0], inits)
    if weight and (data is None or data.dtype not in (np.int8, np.uint8)):
        return None
    if zp is None:
        dtype = data.dtype if data is not None else None
        if dtype is None:
            return None
        zp = np.zeros((), dtype)
    if zp.dtype not in (np.int8, np.uint8):
        return None
    if per_tensor and (scale.size != 1 or zp.size != 1):
        return None
    if scale.ndim > 1 or any(a.name == "block_size" and a.i for a in d.attribute):
        return None
    axis = next((a.i for a in d.attribute if a.name == "axis"), 1)
    return d.input[0], scale, zp, axis


def _add_init(loaded: LoadedModel, base: str, value: np.ndarray) -> str:
    name = base
    while name in loaded.initializers:
        name += "_"
    loaded.initializers[name] = value
    return name


def _bias(d: onnx.NodeProto, inits: dict[str, np.ndarray], scale: np.ndarray) -> str | None:
    """The int32 bias of a DequantizeLinear whose scale is ``scale`` (x_scale * w_scale) and
    zero point 0, as a name (None: it does not fit)."""
    data = _const(d.input[0], inits)
    s = _const(d.input[1], inits)
    zp = _const(d.input[2], inits) if len(d.input) > 2 and d.input[2] else None
    if data is None or data.dtype != np.int32 or s is None or (zp is not None and zp.any()):
        return None
    if not np.allclose(np.broadcast_to(s, scale.shape), scale, rtol=1e-6, atol=0):
        return None
    return d.input[0]


def _operands(loaded: LoadedModel, x, w, tag: str) -> list[str]:
    """x, x_scale, x_zero_point, w, w_scale, w_zero_point as input names (new initializers
    for the scales and zero points)."""
    out = []
    for (data, scale, zp, _axis), role in ((x, "x"), (w, "w")):
        out += [data, _add_init(loaded, f"{tag}.{role}_scale", scale.astype(np.float32)),
                _add_init(loaded, f"{tag}.{role}_zero_point", zp)]
    return out


def _q_inputs(q: onnx.NodeProto) -> list[str]:
    return [q.input[1], q.input[2]]


def _fuse_conv(node, dqs, q, loaded) -> onnx.NodeProto | None:
    inits = loaded.initializers
    x = _dq(dqs[0], inits, per_tensor=True, weight=False)
    w = _dq(dqs[1], inits, per_tensor=False, weight=True)
    if x is None or w is None or (w[1].size > 1 and w[3] != 0):
        return None
    bias = []
    if len(node.input) > 2 and node.input[2]:
        b = _bias(dqs[2], inits, (x[1].astype(np.float32) * w[1].astype(np.float32)).reshape(-1))
        if b is None:
            return None
        bias = [b]
    inputs = _operands(loaded, x, w, node.name or node.output[0])
    return helper.make_node("QLinearConv", inputs[:6] + _q_inputs(q) + bias, [q.output[0]],
                            **{a.name: helper.get_attribute_value(a) for a in node.attribute})


def _fuse_matmul(node, dqs, q, loaded) -> onnx.NodeProto | None:
    inits = loaded.initializers
    a = _dq(dqs[0], inits, per_tensor=True, weight=False)
    b = _dq(dqs[1], inits, per_tensor=False, weight=True)
    if a is None or b is None or inits[b[0]].ndim != 2 or \
            (b[1].size > 1 and (b[3] not in (1, -1) or b[2].any())):
        return None
    return helper.make_node("QLinearMatMul", _operands(loaded, a, b, node.name or node.output[0])
                            + _q_inputs(q), [q.output[0]])


def _fuse_gemm(node, dqs, q, loaded) -> onnx.NodeProto | None:
    inits = loaded.initializers
    attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
    if attrs.get("alpha", 1.0) != 1.0 or attrs.get("beta", 1.0) != 1.0 or attrs.get("transA", 0):
        return None
    a = _dq(dqs[0], inits, per_tensor=True, weight=False)
    b = _dq(dqs[1], inits, per_tensor=False, weight=True)
    trans_b = attrs.get("transB", 0)
    if a is None or b is None or inits[b[0]].ndim != 2 or \
            (b[1].size > 1 and (b[3] != (0 if trans_b else 1) or b[2].any())):
        return None
    inputs = _operands(loaded, a, b, node.name or node.output[0])
    if len(node.input) > 2 and node.input[2]:
        c = _bias(dqs[2], inits, (a[1].astype(np.float32) * b[1].astype(np.float32)).reshape(-1))
        if c is None:
            return None
        inputs.append(c)
    else:
        inputs.append("")
    return helper.make_node("QGemm", inputs + _q_inputs(q), [q.output[0]], domain="com.microsoft",
                            transB=trans_b, alpha=1.0)


def _fuse_add(node, dqs, q, loaded) -> onnx.NodeProto | None:
    inits = loaded.initializers
    a = _dq(dqs[0], inits, per_tensor=True, weight=False)
    b = _dq(dqs[1], inits, per_tensor=True, weight=False)
    if a is None or b is None:
        return None
    tag = node.name or node.output[0]
    return helper.make_node("QLinearAdd", _operands(loaded, a, b, tag) + _q_inputs(q),
                            [q.output[0]], domain="com.microsoft")


_FUSERS = {"Conv": _fuse_conv, "MatMul": _fuse_matmul, "Gemm": _fuse_gemm, "Add": _fuse_add}
