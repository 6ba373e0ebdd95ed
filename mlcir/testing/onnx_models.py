"""Small ONNX models built in code, with onnxruntime as the reference.

Why this exists: the ONNX frontend's tests and the benchmarks need real ONNX graphs (an MLP,
the TVM tutorial's MNIST CNN, a ResNet basic block, a transformer encoder layer, single
operators, and layers at the sizes people deploy: a ResNet-50 stem and bottleneck block,
MobileNetV2 inverted-residual blocks, a BERT-like encoder layer), but checking binary
``.onnx`` files into the repository hides what they contain and goes stale. So every model here is generated with :mod:`onnx.helper` when a test asks for
it: float32, fixed numpy seeds, the weights stored as initializers, named inputs and outputs,
opset 17 unless told otherwise, and each one passes
``onnx.checker.check_model(model, full_check=True)``. The expected answer comes from
onnxruntime (:func:`reference`), never from mlcir itself.

Every builder ``foo(...)`` has a partner ``foo_inputs(...)`` returning a deterministic example
input dict (name -> array); :func:`example_inputs` does the same for any model, including the
one-node models of :func:`single_op`.

This module depends only on numpy, onnx and (for :func:`reference`) onnxruntime; it imports
nothing else from mlcir.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from typing import Any, Union

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper, shape_inference

__all__ = [
    "DEFAULT_OPSET", "bert_encoder_layer", "bert_encoder_layer_inputs", "example_inputs",
    "mlp", "mlp_inputs", "mnist_cnn", "mnist_cnn_inputs", "mobilenet_v2_blocks",
    "mobilenet_v2_blocks_inputs", "recurrent_layer", "recurrent_layer_inputs", "reference", "resnet50_bottleneck",
    "resnet50_bottleneck_inputs", "resnet50_stem", "resnet50_stem_inputs", "resnet_basic_block",
    "resnet_basic_block_inputs", "resnet_block", "resnet_block_inputs", "single_op",
    "single_op_inputs", "transformer_encoder", "transformer_encoder_inputs",
]

DEFAULT_OPSET = 17

#: A tensor dimension: a fixed size, a symbolic name (``"N"``) or ``None`` (unknown).
Dim = Union[int, str, None]

_F32 = TensorProto.FLOAT


# --------------------------------------------------------------------------------------------
# Small helpers
# --------------------------------------------------------------------------------------------

def _check_opset(opset: int, minimum: int, what: str) -> None:
    if opset < minimum:
        raise ValueError(f"{what} needs opset >= {minimum}, got {opset}")


class _Weights:
    """Deterministic initializers from one seeded generator, in creation order."""

    def __init__(self, seed: int) -> None:
        self.rng = np.random.default_rng(seed)
        self.tensors: list[TensorProto] = []

    def add(self, name: str, value: np.ndarray) -> str:
        self.tensors.append(numpy_helper.from_array(np.asarray(value), name))
        return name

    def normal(self, name: str, shape: Sequence[int], std: float) -> str:
        return self.add(name, (self.rng.standard_normal(shape) * std).astype(np.float32))

    def uniform(self, name: str, shape: Sequence[int], low: float, high: float) -> str:
        return self.add(name, self.rng.uniform(low, high, shape).astype(np.float32))

    def scalar(self, name: str, value: float) -> str:
        return self.add(name, np.array(value, dtype=np.float32))

    def ints(self, name: str, values: Sequence[int]) -> str:
        return self.add(name, np.array(values, dtype=np.int64))


def _finish(name: str, nodes: list[onnx.NodeProto], inputs: list[onnx.ValueInfoProto],
            outputs: list[onnx.ValueInfoProto], weights: _Weights, opset: int,
            doc: str = "") -> onnx.ModelProto:
    """Assemble, pick the smallest IR version the opset allows, and check (full_check)."""
    graph = helper.make_graph(nodes, name, inputs, outputs, initializer=weights.tensors,
                              doc_string=doc)
    opsets = [helper.make_opsetid("", opset)]
    model = helper.make_model(graph, opset_imports=opsets, producer_name="mlcir.testing",
                              ir_version=helper.find_min_ir_version_for(opsets))
    onnx.checker.check_model(model, full_check=True)
    return model


def _shape_of(value_info: onnx.ValueInfoProto) -> list[Dim]:
    dims: list[Dim] = []
    for d in value_info.type.tensor_type.shape.dim:
        if d.HasField("dim_value"):
            dims.append(int(d.dim_value))
        elif d.HasField("dim_param"):
            dims.append(d.dim_param)
        else:
            dims.append(None)
    return dims


def example_inputs(model: onnx.ModelProto, seed: int = 0, dims: Mapping[str, int] | None = None,
                   low: float | None = None, high: float | None = None) -> dict[str, np.ndarray]:
    """Deterministic random inputs for every graph input that is not an initializer.

    Symbolic dimensions are taken from ``dims`` (name -> size) and default to 1; unknown ones
    are 1. Floating-point inputs are standard normal, or uniform in ``[low, high)`` when both
    are given; integer inputs are uniform in ``[0, 10)`` (or ``[low, high)``); booleans are
    fair coin flips. The same ``seed`` always gives the same arrays.
    """
    dims = dict(dims or {})
    rng = np.random.default_rng(seed)
    initializers = {t.name for t in model.graph.initializer}
    out: dict[str, np.ndarray] = {}
    for vi in model.graph.input:
        if vi.name in initializers:
            continue
        shape = [d if isinstance(d, int) else dims.get(d, 1) if isinstance(d, str) else 1
                 for d in _shape_of(vi)]
        dtype = helper.tensor_dtype_to_np_dtype(vi.type.tensor_type.elem_type)
        if np.issubdtype(dtype, np.floating):
            if low is not None and high is not None:
                arr = rng.uniform(low, high, shape)
            else:
                arr = rng.standard_normal(shape)
        elif dtype == np.bool_:
            arr = rng.random(shape) < 0.5
        else:
            lo, hi = (int(low), int(high)) if low is not None and high is not None else (0, 10)
            arr = rng.integers(lo, hi, shape)
        out[vi.name] = np.asarray(arr).astype(dtype)
    return out


# --------------------------------------------------------------------------------------------
# MLP
# --------------------------------------------------------------------------------------------

def mlp(batch: int | str = 1, opset: int = DEFAULT_OPSET, seed: int = 0) -> onnx.ModelProto:
    """``x[batch,784] -> Gemm(128, transB=1) -> Relu -> Gemm(10, transB=1) -> logits[batch,10]``.

    Weights use the PyTorch/MLC-course layout ``w0[128,784]``, ``b0[128]``, ``w1[10,128]``,
    ``b1[10]`` (hence ``transB=1``). ``batch`` may be a symbolic name such as ``"N"``.
    """
    _check_opset(opset, 13, "mlp")
    w = _Weights(seed)
    w.normal("w0", (128, 784), 1.0 / math.sqrt(784))
    w.normal("b0", (128,), 0.05)
    w.normal("w1", (10, 128), 1.0 / math.sqrt(128))
    w.normal("b1", (10,), 0.05)
    nodes = [
        helper.make_node("Gemm", ["x", "w0", "b0"], ["fc0"], name="fc0", transB=1),
        helper.make_node("Relu", ["fc0"], ["relu0"], name="relu0"),
        helper.make_node("Gemm", ["relu0", "w1", "b1"], ["logits"], name="fc1", transB=1),
    ]
    return _finish("mlp", nodes, [helper.make_tensor_value_info("x", _F32, [batch, 784])],
                   [helper.make_tensor_value_info("logits", _F32, [batch, 10])], w, opset,
                   "Two-layer MLP 784-128-10.")


def mlp_inputs(batch: int = 1, seed: int = 0) -> dict[str, np.ndarray]:
    """``{"x": float32[batch,784]}``, standard normal."""
    return {"x": np.random.default_rng(seed).standard_normal((batch, 784)).astype(np.float32)}


# --------------------------------------------------------------------------------------------
# MNIST CNN (the TVM tutorial / PyTorch mnist example network)
# --------------------------------------------------------------------------------------------

def mnist_cnn(batch: int | str = 1, opset: int = DEFAULT_OPSET, seed: int = 0) -> onnx.ModelProto:
    """The TVM tutorial's MNIST CNN, ending in Softmax (``probabilities[batch,10]``).

    ``x[batch,1,28,28] -> Conv(32,3x3)+Relu -> Conv(64,3x3)+Relu -> MaxPool 2x2 -> Flatten
    -> Gemm(128, transB=1)+Relu -> Gemm(10, transB=1) -> Softmax(axis=-1)``. The convolutions
    are unpadded with stride 1 (28 -> 26 -> 24 -> pool 12), so Flatten gives 64*12*12 = 9216.
    """
    _check_opset(opset, 13, "mnist_cnn")
    w = _Weights(seed)
    w.normal("conv1.weight", (32, 1, 3, 3), 1.0 / math.sqrt(9))
    w.normal("conv1.bias", (32,), 0.05)
    w.normal("conv2.weight", (64, 32, 3, 3), 1.0 / math.sqrt(32 * 9))
    w.normal("conv2.bias", (64,), 0.05)
    w.normal("fc1.weight", (128, 9216), 1.0 / math.sqrt(9216))
    w.normal("fc1.bias", (128,), 0.05)
    w.normal("fc2.weight", (10, 128), 1.0 / math.sqrt(128))
    w.normal("fc2.bias", (10,), 0.05)
    nodes = [
        helper.make_node("Conv", ["x", "conv1.weight", "conv1.bias"], ["conv1"], name="conv1",
                         kernel_shape=[3, 3], strides=[1, 1], pads=[0, 0, 0, 0]),
        helper.make_node("Relu", ["conv1"], ["relu1"], name="relu1"),
        helper.make_node("Conv", ["relu1", "conv2.weight", "conv2.bias"], ["conv2"],
                         name="conv2", kernel_shape=[3, 3], strides=[1, 1], pads=[0, 0, 0, 0]),
        helper.make_node("Relu", ["conv2"], ["relu2"], name="relu2"),
        helper.make_node("MaxPool", ["relu2"], ["pool"], name="pool", kernel_shape=[2, 2],
                         strides=[2, 2]),
        helper.make_node("Flatten", ["pool"], ["flat"], name="flatten", axis=1),
        helper.make_node("Gemm", ["flat", "fc1.weight", "fc1.bias"], ["fc1"], name="fc1",
                         transB=1),
        helper.make_node("Relu", ["fc1"], ["relu3"], name="relu3"),
        helper.make_node("Gemm", ["relu3", "fc2.weight", "fc2.bias"], ["logits"], name="fc2",
                         transB=1),
        helper.make_node("Softmax", ["logits"], ["probabilities"], name="softmax", axis=-1),
    ]
    return _finish("mnist_cnn", nodes,
                   [helper.make_tensor_value_info("x", _F32, [batch, 1, 28, 28])],
                   [helper.make_tensor_value_info("probabilities", _F32, [batch, 10])], w, opset,
                   "TVM tutorial MNIST CNN.")


def mnist_cnn_inputs(batch: int = 1, seed: int = 0) -> dict[str, np.ndarray]:
    """``{"x": float32[batch,1,28,28]}``, uniform in [0, 1) like pixel intensities."""
    rng = np.random.default_rng(seed)
    return {"x": rng.random((batch, 1, 28, 28)).astype(np.float32)}


# --------------------------------------------------------------------------------------------
# ResNet basic block
# --------------------------------------------------------------------------------------------

def _batchnorm(w: _Weights, prefix: str, x: str, channels: int, out: str) -> onnx.NodeProto:
    """Inference-mode BatchNormalization with plausible (non-trivial) statistics."""
    names = [w.uniform(f"{prefix}.weight", (channels,), 0.5, 1.5),
             w.normal(f"{prefix}.bias", (channels,), 0.1),
             w.normal(f"{prefix}.running_mean", (channels,), 0.1),
             w.uniform(f"{prefix}.running_var", (channels,), 0.5, 1.5)]
    return helper.make_node("BatchNormalization", [x, *names], [out], name=prefix,
                            epsilon=1e-5)


def resnet_block(batch: int | str = 1, channels: int = 16, hw: int = 16,
                 downsample: bool = False, out_channels: int | None = None,
                 opset: int = DEFAULT_OPSET, seed: int = 0) -> onnx.ModelProto:
    """A ResNet basic block: ``x[batch,channels,hw,hw] -> y``.

    ``Conv3x3(pad 1) -> BatchNormalization -> Relu -> Conv3x3(pad 1) -> BatchNormalization
    -> Add(shortcut) -> Relu``; convolutions have no bias (as in torchvision).

    With ``downsample=False`` the shortcut is the identity and ``y`` has ``x``'s shape
    (``out_channels`` must be ``None`` or equal ``channels``). With ``downsample=True`` the
    first conv has stride 2 and the shortcut is a strided 1x1 projection ``Conv1x1(stride 2)
    -> BatchNormalization``; ``out_channels`` defaults to ``2 * channels`` and ``y`` is
    ``[batch, out_channels, ceil(hw/2), ceil(hw/2)]``.
    """
    _check_opset(opset, 15, "resnet_block")
    if out_channels is None:
        out_channels = 2 * channels if downsample else channels
    if not downsample and out_channels != channels:
        raise ValueError("an identity shortcut needs out_channels == channels; "
                         "use downsample=True for a projection")
    stride = 2 if downsample else 1
    out_hw = (hw + stride - 1) // stride
    w = _Weights(seed)
    w.normal("conv1.weight", (out_channels, channels, 3, 3), math.sqrt(2.0 / (channels * 9)))
    w.normal("conv2.weight", (out_channels, out_channels, 3, 3),
             math.sqrt(2.0 / (out_channels * 9)))
    nodes = [
        helper.make_node("Conv", ["x", "conv1.weight"], ["conv1"], name="conv1",
                         kernel_shape=[3, 3], strides=[stride, stride], pads=[1, 1, 1, 1]),
        _batchnorm(w, "bn1", "conv1", out_channels, "bn1"),
        helper.make_node("Relu", ["bn1"], ["relu1"], name="relu1"),
        helper.make_node("Conv", ["relu1", "conv2.weight"], ["conv2"], name="conv2",
                         kernel_shape=[3, 3], strides=[1, 1], pads=[1, 1, 1, 1]),
        _batchnorm(w, "bn2", "conv2", out_channels, "bn2"),
    ]
    shortcut = "x"
    if downsample:
        w.normal("downsample.0.weight", (out_channels, channels, 1, 1),
                 math.sqrt(2.0 / channels))
        nodes += [
            helper.make_node("Conv", ["x", "downsample.0.weight"], ["downsample.conv"],
                             name="downsample.0", kernel_shape=[1, 1], strides=[2, 2],
                             pads=[0, 0, 0, 0]),
            _batchnorm(w, "downsample.1", "downsample.conv", out_channels, "downsample.bn"),
        ]
        shortcut = "downsample.bn"
    nodes += [
        helper.make_node("Add", ["bn2", shortcut], ["sum"], name="add"),
        helper.make_node("Relu", ["sum"], ["y"], name="relu2"),
    ]
    return _finish("resnet_block_downsample" if downsample else "resnet_block", nodes,
                   [helper.make_tensor_value_info("x", _F32, [batch, channels, hw, hw])],
                   [helper.make_tensor_value_info("y", _F32,
                                                  [batch, out_channels, out_hw, out_hw])],
                   w, opset, "ResNet basic block.")


def resnet_block_inputs(batch: int = 1, channels: int = 16, hw: int = 16,
                        seed: int = 0) -> dict[str, np.ndarray]:
    """``{"x": float32[batch,channels,hw,hw]}``, standard normal."""
    rng = np.random.default_rng(seed)
    return {"x": rng.standard_normal((batch, channels, hw, hw)).astype(np.float32)}


# --------------------------------------------------------------------------------------------
# Transformer encoder layer
# --------------------------------------------------------------------------------------------

def transformer_encoder(batch: int | str = 1, seq: int = 16, d_model: int = 64, heads: int = 4,
                        ffn: int = 128, opset: int = DEFAULT_OPSET,
                        seed: int = 0) -> onnx.ModelProto:
    """A pre-LayerNorm transformer encoder layer: ``x[batch,seq,d_model] -> y`` (same shape).

    The graph is spelled the way exporters spell it, op by op::

        h   = LayerNormalization(x)
        q,k,v = MatMul(h, W) + b                       # W[d_model,d_model]
        q,v -> Reshape [b,s,heads,dh] -> Transpose(0,2,1,3)  -> [b,h,s,dh]
        k   -> Reshape [b,s,heads,dh] -> Transpose(0,2,3,1)  -> [b,h,dh,s]   (K^T)
        p   = Softmax(MatMul(q, k^T) / sqrt(dh), axis=-1)
        a   = MatMul(p, v) -> Transpose(0,2,1,3) -> Reshape [b,s,d_model]
        r   = x + (MatMul(a, Wo) + bo)
        y   = r + MatMul(Gelu(MatMul(LayerNormalization(r), W1) + b1), W2) + b2

    Gelu is the ``Gelu`` operator when ``opset >= 20`` and otherwise the exact Erf form
    ``x * (1 + Erf(x / sqrt(2))) * 0.5`` (as PyTorch exports it), so both forms can be
    tested. ``LayerNormalization`` needs ``opset >= 17``. A symbolic ``batch`` turns the
    batch entries of the Reshape shapes into 0 (copy the input's dimension).
    """
    _check_opset(opset, 17, "transformer_encoder (LayerNormalization)")
    if d_model % heads:
        raise ValueError(f"d_model ({d_model}) must be divisible by heads ({heads})")
    dh = d_model // heads
    b_shape = batch if isinstance(batch, int) else 0
    w = _Weights(seed)
    ln = dict(axis=-1, epsilon=1e-5)
    nodes: list[onnx.NodeProto] = []

    def node(op: str, inputs: list[str], output: str, **attrs: Any) -> str:
        nodes.append(helper.make_node(op, inputs, [output], name=output, **attrs))
        return output

    def linear(prefix: str, x: str, n_in: int, n_out: int) -> str:
        wt = w.normal(f"{prefix}.weight", (n_in, n_out), 1.0 / math.sqrt(n_in))
        bias = w.normal(f"{prefix}.bias", (n_out,), 0.02)
        return node("Add", [node("MatMul", [x, wt], f"{prefix}.matmul"), bias], prefix)

    def layernorm(prefix: str, x: str) -> str:
        gamma = w.uniform(f"{prefix}.weight", (d_model,), 0.8, 1.2)
        beta = w.normal(f"{prefix}.bias", (d_model,), 0.02)
        return node("LayerNormalization", [x, gamma, beta], prefix, **ln)

    heads_shape = w.ints("heads_shape", [b_shape, seq, heads, dh])
    model_shape = w.ints("model_shape", [b_shape, seq, d_model])
    h = layernorm("ln1", "x")
    q = linear("q_proj", h, d_model, d_model)
    k = linear("k_proj", h, d_model, d_model)
    v = linear("v_proj", h, d_model, d_model)
    q = node("Transpose", [node("Reshape", [q, heads_shape], "q_heads")], "q_t", perm=[0, 2, 1, 3])
    k = node("Transpose", [node("Reshape", [k, heads_shape], "k_heads")], "k_t", perm=[0, 2, 3, 1])
    v = node("Transpose", [node("Reshape", [v, heads_shape], "v_heads")], "v_t", perm=[0, 2, 1, 3])
    scores = node("MatMul", [q, k], "scores")
    scaled = node("Div", [scores, w.scalar("scale", math.sqrt(dh))], "scores_scaled")
    probs = node("Softmax", [scaled], "attn_probs", axis=-1)
    ctx = node("MatMul", [probs, v], "attn_ctx")
    ctx = node("Transpose", [ctx], "attn_ctx_t", perm=[0, 2, 1, 3])
    ctx = node("Reshape", [ctx, model_shape], "attn_merged")
    attn = linear("out_proj", ctx, d_model, d_model)
    res1 = node("Add", ["x", attn], "residual1")
    h2 = layernorm("ln2", res1)
    f1 = linear("ffn.fc1", h2, d_model, ffn)
    if opset >= 20:
        g = node("Gelu", [f1], "gelu", approximate="none")
    else:
        t = node("Div", [f1, w.scalar("sqrt2", math.sqrt(2.0))], "gelu.div")
        t = node("Erf", [t], "gelu.erf")
        t = node("Add", [t, w.scalar("one", 1.0)], "gelu.add")
        t = node("Mul", [f1, t], "gelu.mul")
        g = node("Mul", [t, w.scalar("half", 0.5)], "gelu")
    f2 = linear("ffn.fc2", g, ffn, d_model)
    node("Add", [res1, f2], "y")
    shape = [batch, seq, d_model]
    return _finish("transformer_encoder", nodes,
                   [helper.make_tensor_value_info("x", _F32, shape)],
                   [helper.make_tensor_value_info("y", _F32, shape)], w, opset,
                   "Pre-LN transformer encoder layer.")


def transformer_encoder_inputs(batch: int = 1, seq: int = 16, d_model: int = 64,
                               seed: int = 0) -> dict[str, np.ndarray]:
    """``{"x": float32[batch,seq,d_model]}``, standard normal."""
    rng = np.random.default_rng(seed)
    return {"x": rng.standard_normal((batch, seq, d_model)).astype(np.float32)}


# --------------------------------------------------------------------------------------------
# Realistic layer sizes: ResNet-50, MobileNetV2, BERT
# --------------------------------------------------------------------------------------------

def _conv_bn(w: _Weights, nodes: list[onnx.NodeProto], prefix: str, x: str, c_in: int,
             c_out: int, kernel: int, stride: int = 1, groups: int = 1,
             activation: str | None = "Relu") -> str:
    """``Conv(no bias, pad kernel//2) -> BatchNormalization [-> Relu | Clip(0, 6)]``."""
    w.normal(f"{prefix}.weight", (c_out, c_in // groups, kernel, kernel),
             math.sqrt(2.0 / (c_in // groups * kernel * kernel)))
    pad = kernel // 2
    nodes.append(helper.make_node("Conv", [x, f"{prefix}.weight"], [f"{prefix}.conv"],
                                  name=f"{prefix}.conv", kernel_shape=[kernel, kernel],
                                  strides=[stride, stride], pads=[pad] * 4, group=groups))
    nodes.append(_batchnorm(w, f"{prefix}.bn", f"{prefix}.conv", c_out, f"{prefix}.bn"))
    if activation == "Relu":
        nodes.append(helper.make_node("Relu", [f"{prefix}.bn"], [prefix], name=prefix))
    elif activation == "Relu6":
        nodes.append(helper.make_node("Clip", [f"{prefix}.bn", w.scalar(f"{prefix}.min", 0.0),
                                               w.scalar(f"{prefix}.max", 6.0)], [prefix],
                                      name=prefix))
    else:
        return f"{prefix}.bn"
    return prefix


def _image_inputs(batch: int, channels: int, hw: int, seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {"x": rng.standard_normal((batch, channels, hw, hw)).astype(np.float32)}


def resnet50_stem(batch: int | str = 1, hw: int = 224, opset: int = DEFAULT_OPSET,
                  seed: int = 0) -> onnx.ModelProto:
    """The ResNet-50 stem: ``x[batch,3,hw,hw] -> Conv7x7/2(3->64, pad 3) -> BatchNormalization
    -> Relu -> MaxPool3x3/2(pad 1) -> y[batch,64,hw/4,hw/4]`` (224 -> 56)."""
    _check_opset(opset, 15, "resnet50_stem")
    w = _Weights(seed)
    nodes: list[onnx.NodeProto] = []
    h = _conv_bn(w, nodes, "conv1", "x", 3, 64, 7, stride=2)
    nodes.append(helper.make_node("MaxPool", [h], ["y"], name="maxpool", kernel_shape=[3, 3],
                                  strides=[2, 2], pads=[1, 1, 1, 1]))
    out_hw = ((hw + 1) // 2 + 1) // 2
    return _finish("resnet50_stem", nodes,
                   [helper.make_tensor_value_info("x", _F32, [batch, 3, hw, hw])],
                   [helper.make_tensor_value_info("y", _F32, [batch, 64, out_hw, out_hw])],
                   w, opset, "ResNet-50 stem.")


def resnet50_stem_inputs(batch: int = 1, hw: int = 224, seed: int = 0) -> dict[str, np.ndarray]:
    """``{"x": float32[batch,3,hw,hw]}``, standard normal."""
    return _image_inputs(batch, 3, hw, seed)


def resnet50_bottleneck(batch: int | str = 1, channels: int = 256, hw: int = 56,
                        width: int = 64, opset: int = DEFAULT_OPSET,
                        seed: int = 0) -> onnx.ModelProto:
    """A ResNet-50 bottleneck block with an identity shortcut (stage 1: 256 channels, width
    64, 56x56): ``Conv1x1(channels->width) BN Relu, Conv3x3(width->width) BN Relu,
    Conv1x1(width->channels) BN, Add(x), Relu``; ``y`` has ``x``'s shape."""
    _check_opset(opset, 15, "resnet50_bottleneck")
    w = _Weights(seed)
    nodes: list[onnx.NodeProto] = []
    h = _conv_bn(w, nodes, "conv1", "x", channels, width, 1)
    h = _conv_bn(w, nodes, "conv2", h, width, width, 3)
    h = _conv_bn(w, nodes, "conv3", h, width, channels, 1, activation=None)
    nodes += [helper.make_node("Add", [h, "x"], ["sum"], name="add"),
              helper.make_node("Relu", ["sum"], ["y"], name="relu")]
    shape = [batch, channels, hw, hw]
    return _finish("resnet50_bottleneck", nodes,
                   [helper.make_tensor_value_info("x", _F32, shape)],
                   [helper.make_tensor_value_info("y", _F32, shape)], w, opset,
                   "ResNet-50 bottleneck block.")


def resnet50_bottleneck_inputs(batch: int = 1, channels: int = 256, hw: int = 56,
                               seed: int = 0) -> dict[str, np.ndarray]:
    """``{"x": float32[batch,channels,hw,hw]}``, standard normal."""
    return _image_inputs(batch, channels, hw, seed)


def resnet_basic_block(batch: int | str = 1, channels: int = 64, hw: int = 56,
                       opset: int = DEFAULT_OPSET, seed: int = 0) -> onnx.ModelProto:
    """:func:`resnet_block` (identity shortcut) at the size of ResNet-18/34's first stage."""
    return resnet_block(batch, channels, hw, opset=opset, seed=seed)


def resnet_basic_block_inputs(batch: int = 1, channels: int = 64, hw: int = 56,
                              seed: int = 0) -> dict[str, np.ndarray]:
    """``{"x": float32[batch,channels,hw,hw]}``, standard normal."""
    return _image_inputs(batch, channels, hw, seed)


def mobilenet_v2_blocks(batch: int | str = 1, channels: int = 24, hw: int = 56,
                        expansion: int = 6, out_channels: int = 32, opset: int = DEFAULT_OPSET,
                        seed: int = 0) -> onnx.ModelProto:
    """Two MobileNetV2 inverted-residual blocks (the 24-channel stage at 56x56, then the
    first block of the 32-channel stage): each ``Conv1x1 expand BN Relu6, depthwise Conv3x3
    BN Relu6, Conv1x1 project BN``; the first has stride 1 and a residual Add, the second
    stride 2 and ``out_channels``. ``y`` is ``[batch, out_channels, ceil(hw/2), ceil(hw/2)]``."""
    _check_opset(opset, 15, "mobilenet_v2_blocks")
    w = _Weights(seed)
    nodes: list[onnx.NodeProto] = []
    hidden = channels * expansion
    h = _conv_bn(w, nodes, "b1.expand", "x", channels, hidden, 1, activation="Relu6")
    h = _conv_bn(w, nodes, "b1.depthwise", h, hidden, hidden, 3, groups=hidden,
                 activation="Relu6")
    h = _conv_bn(w, nodes, "b1.project", h, hidden, channels, 1, activation=None)
    nodes.append(helper.make_node("Add", ["x", h], ["b1"], name="b1"))
    h = _conv_bn(w, nodes, "b2.expand", "b1", channels, hidden, 1, activation="Relu6")
    h = _conv_bn(w, nodes, "b2.depthwise", h, hidden, hidden, 3, stride=2, groups=hidden,
                 activation="Relu6")
    h = _conv_bn(w, nodes, "b2.project", h, hidden, out_channels, 1, activation=None)
    nodes.append(helper.make_node("Identity", [h], ["y"], name="y"))
    out_hw = (hw + 1) // 2
    return _finish("mobilenet_v2_blocks", nodes,
                   [helper.make_tensor_value_info("x", _F32, [batch, channels, hw, hw])],
                   [helper.make_tensor_value_info("y", _F32,
                                                  [batch, out_channels, out_hw, out_hw])],
                   w, opset, "Two MobileNetV2 inverted-residual blocks.")


def mobilenet_v2_blocks_inputs(batch: int = 1, channels: int = 24, hw: int = 56,
                               seed: int = 0) -> dict[str, np.ndarray]:
    """``{"x": float32[batch,channels,hw,hw]}``, standard normal."""
    return _image_inputs(batch, channels, hw, seed)


def bert_encoder_layer(batch: int | str = 1, seq: int = 128, width: int = 256, heads: int = 4,
                       ffn: int | None = None, opset: int = DEFAULT_OPSET,
                       seed: int = 0) -> onnx.ModelProto:
    """A BERT-like encoder layer: :func:`transformer_encoder` with ``seq`` tokens, ``width``
    (d_model), ``heads`` and an ``ffn`` of ``4 * width`` unless given (BERT-mini: 128 tokens,
    256, 4 heads; BERT-base: 768, 12 heads)."""
    return transformer_encoder(batch, seq, width, heads, ffn or 4 * width, opset=opset,
                               seed=seed)


def bert_encoder_layer_inputs(batch: int = 1, seq: int = 128, width: int = 256,
                              seed: int = 0) -> dict[str, np.ndarray]:
    """``{"x": float32[batch,seq,width]}``, standard normal."""
    return transformer_encoder_inputs(batch, seq, width, seed=seed)


# --------------------------------------------------------------------------------------------
# Single operators
# --------------------------------------------------------------------------------------------

def recurrent_layer(op: str = "LSTM", steps: int = 64, batch: int = 1, width: int = 256,
                    hidden: int = 256, direction: str = "forward", opset: int = 14,
                    seed: int = 0) -> onnx.ModelProto:
    """One LSTM, GRU or RNN node over ``x[steps, batch, width]`` with its weights and biases
    (std 1/sqrt(hidden), PyTorch's initial range) and all its outputs (Y, Y_h, and LSTM's
    Y_c), as speech and older NLP models have it."""
    gates = {"LSTM": 4, "GRU": 3, "RNN": 1}[op]
    directions = 2 if direction == "bidirectional" else 1
    w = _Weights(seed)
    std = 1.0 / math.sqrt(hidden)
    w.normal("W", (directions, gates * hidden, width), std)
    w.normal("R", (directions, gates * hidden, hidden), std)
    w.normal("B", (directions, 2 * gates * hidden), std)
    outputs = ["y", "y_h", "y_c"][:3 if op == "LSTM" else 2]
    node = helper.make_node(op, ["x", "W", "R", "B"], outputs, name=op.lower(),
                            hidden_size=hidden, direction=direction)
    state = [directions, batch, hidden]
    return _finish(op.lower(), [node],
                   [helper.make_tensor_value_info("x", _F32, [steps, batch, width])],
                   [helper.make_tensor_value_info("y", _F32, [steps, directions, batch, hidden])]
                   + [helper.make_tensor_value_info(o, _F32, state) for o in outputs[1:]],
                   w, opset, f"One {op} layer, {steps} steps, hidden size {hidden}.")


def recurrent_layer_inputs(steps: int = 64, batch: int = 1, width: int = 256,
                           seed: int = 0) -> dict[str, np.ndarray]:
    """``{"x": float32[steps, batch, width]}``, standard normal."""
    rng = np.random.default_rng(seed)
    return {"x": rng.standard_normal((steps, batch, width)).astype(np.float32)}


def zoo_resnet_v2(opset: int = 7, blocks: int = 2, channels: int = 16, hw: int = 32,
                  classes: int = 10, seed: int = 0) -> onnx.ModelProto:
    """A small model in the ONNX zoo's ``resnet50-v2-7.onnx`` style: input ``data``
    ``[1, 3, hw, hw]``; a 3x3/2 stem convolution without bias; pre-activation bottlenecks
    (BatchNormalization and Relu before each convolution, BatchNormalization nodes left in
    the graph, a 1x1 projection on the first), the residual adds; a last BatchNormalization
    and Relu, GlobalAveragePool, Flatten and Gemm. At ``opset`` < 9 BatchNormalization
    carries ``spatial=1``; at IR version 3 (opset < 9) every initializer is also listed as a
    graph input, as the zoo's files are. ``classes`` outputs ``resnetv24_dense0_fwd``."""
    w = _Weights(seed)
    nodes: list[onnx.NodeProto] = []

    def bn_relu(prefix: str, x: str, c: int) -> str:
        bn = _batchnorm(w, f"{prefix}_bn", x, c, f"{prefix}_bn_out")
        if opset < 9:
            bn.attribute.append(helper.make_attribute("spatial", 1))
        nodes.append(bn)
        nodes.append(helper.make_node("Relu", [f"{prefix}_bn_out"], [f"{prefix}_relu"],
                                      name=f"{prefix}_relu"))
        return f"{prefix}_relu"

    def conv(prefix: str, x: str, c_in: int, c_out: int, k: int, stride: int = 1) -> str:
        weight = w.normal(f"{prefix}_weight", (c_out, c_in, k, k), (2.0 / (c_in * k * k)) ** 0.5)
        nodes.append(helper.make_node("Conv", [x, weight], [f"{prefix}_out"], name=prefix,
                                      kernel_shape=[k, k], strides=[stride, stride],
                                      pads=[k // 2] * 4))
        return f"{prefix}_out"

    x = conv("stem", "data", 3, channels, 3, stride=2)
    c = channels
    for i in range(blocks):
        p = f"stage{i}"
        act = bn_relu(f"{p}_a", x, c)
        shortcut = conv(f"{p}_proj", act, c, 4 * channels, 1) if i == 0 else x
        y = conv(f"{p}_conv1", act, c, channels, 1)
        y = conv(f"{p}_conv2", bn_relu(f"{p}_b", y, channels), channels, channels, 3)
        y = conv(f"{p}_conv3", bn_relu(f"{p}_c", y, channels), channels, 4 * channels, 1)
        nodes.append(helper.make_node("Add", [y, shortcut], [f"{p}_add"], name=f"{p}_add"))
        x, c = f"{p}_add", 4 * channels
    x = bn_relu("final", x, c)
    nodes.append(helper.make_node("GlobalAveragePool", [x], ["pool"], name="pool"))
    nodes.append(helper.make_node("Flatten", ["pool"], ["flat"], name="flatten", axis=1))
    fc_w = w.normal("dense_weight", (classes, c), (1.0 / c) ** 0.5)
    fc_b = w.normal("dense_bias", (classes,), 0.1)
    nodes.append(helper.make_node("Gemm", ["flat", fc_w, fc_b], ["resnetv24_dense0_fwd"],
                                  name="dense", transB=1))
    inputs = [helper.make_tensor_value_info("data", _F32, [1, 3, hw, hw])]
    ir3 = opset < 9
    if ir3:
        inputs += [helper.make_tensor_value_info(t.name, t.data_type, t.dims)
                   for t in w.tensors]
    graph = helper.make_graph(nodes, "resnet_v2_zoo_style", inputs,
                              [helper.make_tensor_value_info("resnetv24_dense0_fwd", _F32,
                                                             [1, classes])],
                              initializer=w.tensors)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                              producer_name="mlcir.testing")
    model.ir_version = 3 if ir3 else helper.find_min_ir_version_for(model.opset_import)
    onnx.checker.check_model(model)
    return model


def single_op(op_type: str, input_shapes: Sequence[Sequence[Dim]] | Mapping[str, Sequence[Dim]],
              attrs: Mapping[str, Any] | None = None, opset: int = DEFAULT_OPSET,
              initializers: Mapping[str, np.ndarray | None] | None = None,
              num_outputs: int = 1) -> onnx.ModelProto:
    """A one-node model ``op_type(inputs..., initializers...)`` for converter unit tests.

    - ``input_shapes``: the float32 graph inputs, either a list of shapes (named ``x0``,
      ``x1``, ...) or a dict name -> shape (in order). A dimension is an int, a symbolic name
      such as ``"N"``, or ``None``.
    - ``attrs``: the node's attributes, passed to :func:`onnx.helper.make_node`.
    - ``initializers``: constant operands, name -> array, appended to the node's inputs after
      the graph inputs, in order. They keep their own dtype (e.g. an int64 ``shape`` for
      Reshape, ``axes`` for ReduceSum); a value ``None`` leaves that optional input empty
      (``""``), so a later optional input can still be given.
    - ``num_outputs``: the node's outputs: ``y`` when 1, else ``y0``, ``y1``, ...

    Output types and shapes (and dtypes: ArgMax gives int64) are found by
    ``onnx.shape_inference.infer_shapes(strict_mode=True)``; a shape inference cannot decide
    stays partly unknown. The model passes ``check_model(full_check=True)``.

    Examples::

        single_op("Relu", [[2, 3]])
        single_op("Conv", {"x": [1, 3, 8, 8]}, {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1]},
                  initializers={"w": np.ones((4, 3, 3, 3), np.float32)})
        single_op("Reshape", [[2, 6]], initializers={"shape": np.array([3, 4], np.int64)})
        single_op("Clip", [[4]], initializers={"min": None, "max": np.float32(1.0)})
        single_op("Split", [[6, 2]], {"axis": 0}, opset=18, num_outputs=2,
                  initializers={"split": np.array([2, 4], np.int64)})
    """
    if isinstance(input_shapes, Mapping):
        named = list(input_shapes.items())
    else:
        named = [(f"x{i}", shape) for i, shape in enumerate(input_shapes)]
    inputs = [helper.make_tensor_value_info(name, _F32, list(shape)) for name, shape in named]
    w = _Weights(0)
    node_inputs = [name for name, _ in named]
    for name, value in (initializers or {}).items():
        if value is None:
            node_inputs.append("")
        else:
            node_inputs.append(w.add(name, np.asarray(value)))
    outputs = ["y"] if num_outputs == 1 else [f"y{i}" for i in range(num_outputs)]
    node = helper.make_node(op_type, node_inputs, outputs, name=op_type.lower(),
                            **dict(attrs or {}))
    graph = helper.make_graph([node], f"single_{op_type.lower()}", inputs,
                              [helper.make_empty_tensor_value_info(o) for o in outputs],
                              initializer=w.tensors)
    opsets = [helper.make_opsetid("", opset)]
    model = helper.make_model(graph, opset_imports=opsets, producer_name="mlcir.testing",
                              ir_version=helper.find_min_ir_version_for(opsets))
    model = shape_inference.infer_shapes(model, check_type=True, strict_mode=True)
    del model.graph.value_info[:]  # only the outputs were inferred; they are in graph.output
    onnx.checker.check_model(model, full_check=True)
    return model


def chain(nodes: Sequence[onnx.NodeProto], x_shape: Sequence[int], outputs: Sequence[str],
          weights: Mapping[str, np.ndarray], opset: int = DEFAULT_OPSET) -> onnx.ModelProto:
    """A model of ``nodes`` reading the float32 graph input ``x`` (``x_shape``) and the
    constants ``weights`` (initializers by name), with graph outputs ``outputs``, their types
    found by strict shape inference (the inferred intermediate types are dropped)."""
    graph = helper.make_graph(
        list(nodes), "chain", [helper.make_tensor_value_info("x", TensorProto.FLOAT, x_shape)],
        [helper.make_empty_tensor_value_info(o) for o in outputs],
        initializer=[numpy_helper.from_array(v, k) for k, v in weights.items()])
    opsets = [helper.make_opsetid("", opset)]
    model = helper.make_model(graph, opset_imports=opsets,
                              ir_version=helper.find_min_ir_version_for(opsets))
    model = shape_inference.infer_shapes(model, strict_mode=True)
    del model.graph.value_info[:]
    return model


def depthwise_conv(channels: int, hw: int, stride: int = 1, seed: int = 0) -> onnx.ModelProto:
    """A one-node 3x3 depthwise convolution (padding 1) of ``[1, channels, hw, hw]`` with a
    constant standard-normal filter (``seed``)."""
    w = np.random.default_rng(seed).standard_normal((channels, 1, 3, 3)).astype(np.float32)
    return single_op("Conv", {"x": [1, channels, hw, hw]},
                     {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1], "strides": [stride, stride],
                      "group": channels}, initializers={"w": w})


def single_op_inputs(model: onnx.ModelProto, seed: int = 0,
                     dims: Mapping[str, int] | None = None) -> dict[str, np.ndarray]:
    """Standard-normal float32 inputs for a :func:`single_op` model (see :func:`example_inputs`)."""
    return example_inputs(model, seed=seed, dims=dims)


# --------------------------------------------------------------------------------------------
# The reference
# --------------------------------------------------------------------------------------------

def reference(model: onnx.ModelProto | bytes | str | os.PathLike[str],
              inputs: Mapping[str, np.ndarray], intra_op_num_threads: int = 1,
              optimize: bool = False) -> dict[str, np.ndarray]:
    """Run ``model`` in onnxruntime on the CPU and return ``{output name: array}``.

    ``model`` is a ModelProto, its serialized bytes, or a path. ``intra_op_num_threads``
    defaults to 1 (deterministic and fair on small machines; 0 lets onnxruntime choose).
    Graph optimizations are off unless ``optimize`` is true, so the answer is each
    operator's own kernel rather than a fused one (fusions can change the rounding).
    """
    import onnxruntime as ort  # a test dependency only; imported when a reference is asked for

    if isinstance(model, onnx.ModelProto):
        source: bytes | str = model.SerializeToString()
    elif isinstance(model, bytes):
        source = model
    else:
        source = os.fspath(model)
    options = ort.SessionOptions()
    options.intra_op_num_threads = intra_op_num_threads
    options.inter_op_num_threads = 1
    options.log_severity_level = 3
    options.graph_optimization_level = (ort.GraphOptimizationLevel.ORT_ENABLE_ALL if optimize
                                        else ort.GraphOptimizationLevel.ORT_DISABLE_ALL)
    session = ort.InferenceSession(source, options, providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    results = session.run(names, dict(inputs))
    return dict(zip(names, results))
