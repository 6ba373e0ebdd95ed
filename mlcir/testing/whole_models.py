"""Whole models at the sizes people deploy, built with :mod:`onnx.helper` (no torch needed):
ResNet-50 v1 (torchvision's export, batch norm folded), ResNet-50 v2 (the ONNX zoo's
``resnet50-v2-7`` layout: batch norm nodes in the graph, pre-activation, opset 7), MobileNetV2
width 1.0 (torchvision's export) and a BERT-base encoder (12 post-LayerNorm layers with an
attention mask).

Whole models, because a block win that does not show in the whole model is not a win
(bench/whole_models.py times them against onnxruntime). Random weights, fixed seeds; each
builder takes size knobs so that tests check the same graph small. Like
:mod:`.onnx_models`, this depends only on numpy and onnx.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

__all__ = ["bert_base", "mobilenet_v2", "model_inputs", "resnet50_v1", "resnet50_v2"]

_F32 = TensorProto.FLOAT
RESNET50_STAGES = ((64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2))  # width, blocks, stride
# torchvision's MobileNetV2: (expansion t, channels c, repeats n, first stride s).
MOBILENET_V2_BLOCKS = ((1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2),
                       (6, 96, 3, 1), (6, 160, 3, 2), (6, 320, 1, 1))


class _Graph:
    """Nodes and seeded initializers of one model, in creation order."""

    def __init__(self, seed: int) -> None:
        self.rng = np.random.default_rng(seed)
        self.nodes: list[onnx.NodeProto] = []
        self.weights: list[onnx.TensorProto] = []

    def weight(self, name: str, shape: tuple[int, ...], std: float) -> str:
        return self.constant(name, self.rng.standard_normal(shape) * std)

    def constant(self, name: str, value: Any, dtype: Any = np.float32) -> str:
        self.weights.append(numpy_helper.from_array(np.asarray(value, dtype=dtype), name))
        return name

    def node(self, op: str, inputs: list[str], output: str, **attrs: Any) -> str:
        self.nodes.append(helper.make_node(op, inputs, [output], name=output, **attrs))
        return output

    def batchnorm(self, x: str, channels: int, name: str) -> str:
        """Inference-mode BatchNormalization with plausible statistics."""
        scale = self.constant(f"{name}.gamma", self.rng.uniform(0.5, 1.5, channels))
        bias = self.weight(f"{name}.beta", (channels,), 0.1)
        mean = self.weight(f"{name}.mean", (channels,), 0.1)
        var = self.constant(f"{name}.var", self.rng.uniform(0.5, 1.5, channels))
        return self.node("BatchNormalization", [x, scale, bias, mean, var], name, epsilon=1e-5)

    def conv(self, x: str, c_in: int, c_out: int, k: int, name: str, stride: int = 1,
             groups: int = 1, bias: bool = True) -> str:
        fan_in = c_in // groups * k * k
        inputs = [x, self.weight(f"{name}.weight", (c_out, c_in // groups, k, k),
                                 math.sqrt(2.0 / fan_in))]
        if bias:
            inputs.append(self.weight(f"{name}.bias", (c_out,), 0.05))
        return self.node("Conv", inputs, name, kernel_shape=[k, k], strides=[stride, stride],
                         pads=[k // 2] * 4, group=groups)

    def classifier(self, x: str, features: int, classes: int) -> str:
        x = self.node("Flatten", [self.node("GlobalAveragePool", [x], "avgpool")], "flatten",
                      axis=1)
        w = self.weight("fc.weight", (classes, features), 1.0 / math.sqrt(features))
        b = self.weight("fc.bias", (classes,), 0.01)
        return self.node("Gemm", [x, w, b], "output", transB=1)

    def model(self, name: str, inputs: list[onnx.ValueInfoProto],
              outputs: list[onnx.ValueInfoProto], opset: int = 17) -> onnx.ModelProto:
        graph = helper.make_graph(self.nodes, name, inputs, outputs, initializer=self.weights)
        opsets = [helper.make_opsetid("", opset)]
        model = helper.make_model(graph, opset_imports=opsets, producer_name="mlcir.testing")
        model.ir_version = max(helper.find_min_ir_version_for(opsets), 4)
        onnx.checker.check_model(model)
        return model


def _image(name: str, hw: int) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(name, _F32, [1, 3, hw, hw])


def _logits(name: str, classes: int) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(name, _F32, [1, classes])


def resnet50_v1(hw: int = 224, classes: int = 1000, width: int = 64,
                seed: int = 0) -> onnx.ModelProto:
    """torchvision's ResNet-50 (v1.5: the stride on the 3x3 convolution) as exported in eval
    mode: every Conv carries its folded batch norm as a bias. ``width`` scales the stages
    (64: the real model)."""
    g = _Graph(seed)
    n = iter(range(1, 1000))

    def conv(x: str, c_in: int, c_out: int, k: int, stride: int = 1, relu: bool = True) -> str:
        name = f"conv{next(n)}"
        y = g.conv(x, c_in, c_out, k, name, stride)
        return g.node("Relu", [y], f"{name}.relu") if relu else y

    h = conv("input", 3, width, 7, stride=2)
    h = g.node("MaxPool", [h], "maxpool", kernel_shape=[3, 3], strides=[2, 2], pads=[1] * 4)
    c_in = width
    for stage, (stage_width, blocks, stride) in enumerate(RESNET50_STAGES):
        w = stage_width * width // 64
        for block in range(blocks):
            s = stride if block == 0 else 1
            y = conv(conv(conv(h, c_in, w, 1), w, w, 3, stride=s), w, 4 * w, 1, relu=False)
            shortcut = conv(h, c_in, 4 * w, 1, stride=s, relu=False) if block == 0 else h
            h = g.node("Relu", [g.node("Add", [y, shortcut], f"add{stage}.{block}")],
                       f"out{stage}.{block}")
            c_in = 4 * w
    g.classifier(h, c_in, classes)
    return g.model("resnet50_v1", [_image("input", hw)], [_logits("output", classes)])


def resnet50_v2(hw: int = 224, classes: int = 1000, width: int = 64, opset: int = 7,
                seed: int = 0) -> onnx.ModelProto:
    """The ONNX zoo's ResNet-50 v2 layout (gluon-cv's ``resnetv24``): batch norm of the input
    image, a 7x7/2 convolution without bias, batch norm, ReLU and max pool; pre-activation
    bottlenecks (batch norm and ReLU before each convolution, the stride on the 3x3, a 1x1
    projection of the activated input on the first block), the residual adds with the next
    block's batch norm after them; a last batch norm and ReLU, pooling and the classifier.
    Batch norm nodes stay in the graph. At ``opset`` < 9 (the zoo's 7) BatchNormalization
    carries ``spatial=1`` and the model is IR version 3, initializers listed as inputs."""
    g = _Graph(seed)
    old = opset < 9

    def bn(x: str, c: int, name: str) -> str:
        out = g.batchnorm(x, c, name)
        if old:
            g.nodes[-1].attribute.append(helper.make_attribute("spatial", 1))
        return out

    def bn_relu(x: str, c: int, name: str) -> str:
        return g.node("Relu", [bn(x, c, f"{name}.bn")], f"{name}.relu")

    h = bn("data", 3, "data.bn")
    h = g.conv(h, 3, width, 7, "stem.conv", stride=2, bias=False)
    h = g.node("MaxPool", [bn_relu(h, width, "stem")], "stem.pool", kernel_shape=[3, 3],
               strides=[2, 2], pads=[1] * 4)
    c_in = width
    for stage, (stage_width, blocks, stride) in enumerate(RESNET50_STAGES):
        w = stage_width * width // 64
        for block in range(blocks):
            p, s = f"stage{stage}.{block}", (stride if block == 0 else 1)
            act = bn_relu(h, c_in, f"{p}.a")
            y = g.conv(act, c_in, w, 1, f"{p}.conv1", bias=False)
            y = g.conv(bn_relu(y, w, f"{p}.b"), w, w, 3, f"{p}.conv2", stride=s, bias=False)
            y = g.conv(bn_relu(y, w, f"{p}.c"), w, 4 * w, 1, f"{p}.conv3", bias=False)
            shortcut = (g.conv(act, c_in, 4 * w, 1, f"{p}.proj", stride=s, bias=False)
                        if block == 0 else h)
            h, c_in = g.node("Add", [y, shortcut], f"{p}.add"), 4 * w
    g.classifier(bn_relu(h, c_in, "final"), c_in, classes)
    inputs = [_image("data", hw)]
    if old:
        inputs += [helper.make_tensor_value_info(t.name, t.data_type, t.dims)
                   for t in g.weights]
    model = g.model("resnet50_v2", inputs, [_logits("output", classes)], opset=opset)
    if old:
        model.ir_version = 3
    return model


def mobilenet_v2(hw: int = 224, classes: int = 1000, seed: int = 0) -> onnx.ModelProto:
    """torchvision's MobileNetV2 (width 1.0) as exported in eval mode: batch norm folded into
    the convolutions, ReLU6 as Clip(0, 6), inverted residual blocks (:data:`MOBILENET_V2_BLOCKS`),
    a 1x1 convolution to 1280 channels, pooling and the classifier (dropout gone)."""
    g = _Graph(seed)
    low, high = g.constant("relu6.min", 0.0), g.constant("relu6.max", 6.0)
    n = iter(range(1000))

    def conv(x: str, c_in: int, c_out: int, k: int, stride: int = 1, groups: int = 1,
             relu6: bool = True) -> str:
        name = f"features.{next(n)}"
        y = g.conv(x, c_in, c_out, k, name, stride, groups)
        return g.node("Clip", [y, low, high], f"{name}.relu6") if relu6 else y

    h, c_in = conv("input", 3, 32, 3, stride=2), 32
    for t, c, repeats, stride in MOBILENET_V2_BLOCKS:
        for i in range(repeats):
            s, hidden = (stride if i == 0 else 1), c_in * t
            y = conv(h, c_in, hidden, 1) if t != 1 else h
            y = conv(y, hidden, hidden, 3, stride=s, groups=hidden)
            y = conv(y, hidden, c, 1, relu6=False)
            h = g.node("Add", [h, y], f"{y}.residual") if s == 1 and c_in == c else y
            c_in = c
    h = conv(h, c_in, 1280, 1)
    g.classifier(h, 1280, classes)
    return g.model("mobilenet_v2", [_image("input", hw)], [_logits("output", classes)])


def bert_base(layers: int = 12, seq: int = 128, hidden: int = 768, heads: int = 12,
              intermediate: int = 3072, seed: int = 0, dynamic: bool = False) -> onnx.ModelProto:
    """A BERT-base encoder (transformers' ``BertEncoder``, post-LayerNorm, exact-Erf GELU) on
    the embeddings' output ``x [1, seq, hidden]`` with ``attention_mask [1, seq]`` (1: attend,
    0: padding), the mask added to the scores as ``(1 - mask) * -10000``, the ops as the
    TorchScript exporter writes them. ``dynamic``: ``x [batch, sequence, hidden]`` and
    ``attention_mask [batch, sequence]``, the reshape targets computed from ``Shape(x)``
    by ``Gather``/``Unsqueeze``/``Concat`` as exporters write dynamic axes."""
    g = _Graph(seed)
    dh = hidden // heads
    if dynamic:
        shape_x = g.node("Shape", ["x"], "x.shape")
        b, s = (g.node("Unsqueeze", [g.node("Gather", [shape_x, g.constant(f"{n}.i", i, np.int64)],
                                           f"x.{n}"), g.constant(f"{n}.axes", [0], np.int64)],
                       f"x.{n}.1d") for i, n in ((0, "batch"), (1, "sequence")))

        def dims(name: str, *parts: Any) -> str:
            named = [p if isinstance(p, str) else g.constant(f"{name}.{i}", [p], np.int64)
                     for i, p in enumerate(parts)]
            return g.node("Concat", named, name, axis=0)

        heads_shape = dims("heads_shape", b, s, heads, dh)
        merged_shape = dims("merged_shape", b, s, hidden)
        mask_shape = dims("mask_shape", b, 1, 1, s)
    else:
        heads_shape = g.constant("heads_shape", [1, seq, heads, dh], np.int64)
        merged_shape = g.constant("merged_shape", [1, seq, hidden], np.int64)
        mask_shape = g.constant("mask_shape", [1, 1, 1, seq], np.int64)
    scale = g.constant("scale", math.sqrt(dh))
    one, half, sqrt2 = g.constant("one", 1.0), g.constant("half", 0.5), \
        g.constant("sqrt2", math.sqrt(2.0))
    mask = g.node("Reshape", [g.node("Mul", [g.node("Sub", [one, "attention_mask"], "mask.inv"),
                                             g.constant("mask.big", -10000.0)], "mask.add"),
                              mask_shape], "mask")

    def linear(name: str, x: str, n_in: int, n_out: int) -> str:
        w = g.weight(f"{name}.weight", (n_in, n_out), 1.0 / math.sqrt(n_in))
        b = g.weight(f"{name}.bias", (n_out,), 0.02)
        return g.node("Add", [g.node("MatMul", [x, w], f"{name}.matmul"), b], name)

    def layernorm(name: str, x: str) -> str:
        gamma = g.constant(f"{name}.weight", 1.0 + 0.1 * g.rng.standard_normal(hidden))
        beta = g.weight(f"{name}.bias", (hidden,), 0.02)
        return g.node("LayerNormalization", [x, gamma, beta], name, axis=-1, epsilon=1e-12)

    def split_heads(name: str, x: str, perm: list[int]) -> str:
        return g.node("Transpose", [g.node("Reshape", [x, heads_shape], f"{name}.heads")],
                      f"{name}.t", perm=perm)

    x = "x"
    for i in range(layers):
        p = f"layer{i}"
        q = split_heads(f"{p}.q", linear(f"{p}.query", x, hidden, hidden), [0, 2, 1, 3])
        k = split_heads(f"{p}.k", linear(f"{p}.key", x, hidden, hidden), [0, 2, 3, 1])
        v = split_heads(f"{p}.v", linear(f"{p}.value", x, hidden, hidden), [0, 2, 1, 3])
        scores = g.node("Div", [g.node("MatMul", [q, k], f"{p}.scores"), scale], f"{p}.scaled")
        probs = g.node("Softmax", [g.node("Add", [scores, mask], f"{p}.masked")],
                       f"{p}.probs", axis=-1)
        ctx = g.node("Transpose", [g.node("MatMul", [probs, v], f"{p}.ctx")], f"{p}.ctx.t",
                     perm=[0, 2, 1, 3])
        attn = linear(f"{p}.output", g.node("Reshape", [ctx, merged_shape], f"{p}.merged"),
                      hidden, hidden)
        h = layernorm(f"{p}.ln1", g.node("Add", [attn, x], f"{p}.res1"))
        f = linear(f"{p}.intermediate", h, hidden, intermediate)
        t = g.node("Erf", [g.node("Div", [f, sqrt2], f"{p}.gelu.div")], f"{p}.gelu.erf")
        t = g.node("Mul", [g.node("Mul", [f, g.node("Add", [t, one], f"{p}.gelu.add")],
                                  f"{p}.gelu.mul"), half], f"{p}.gelu")
        x = layernorm(f"{p}.ln2", g.node("Add", [linear(f"{p}.ffn_out", t, intermediate,
                                                        hidden), h], f"{p}.res2"))
    g.node("Identity", [x], "y")
    rows: list[Any] = ["batch", "sequence"] if dynamic else [1, seq]
    shape = rows + [hidden]
    return g.model("bert_base", [helper.make_tensor_value_info("x", _F32, shape),
                                 helper.make_tensor_value_info("attention_mask", _F32, rows)],
                   [helper.make_tensor_value_info("y", _F32, shape)])


def model_inputs(model: onnx.ModelProto, seed: int = 0,
                 dims: dict[str, int] | None = None) -> dict[str, np.ndarray]:
    """Deterministic inputs of a model of this module: images and hidden states from a normal
    distribution; an attention mask attending to all but the last eighth of the tokens.
    ``dims`` sizes the symbolic dims (``{"batch": 4, "sequence": 37}``)."""
    rng = np.random.default_rng(seed)
    weights = {t.name for t in model.graph.initializer}
    out = {}
    for value in model.graph.input:
        if value.name in weights:
            continue
        shape = [(dims or {})[d.dim_param] if d.dim_param else d.dim_value
                 for d in value.type.tensor_type.shape.dim]
        if value.name == "attention_mask":
            mask = np.ones(shape, np.float32)
            mask[..., shape[-1] - shape[-1] // 8:] = 0.0
            out[value.name] = mask
        else:
            out[value.name] = rng.standard_normal(shape).astype(np.float32)
    return out
