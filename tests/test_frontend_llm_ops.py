"""Opset 23's Attention and RotaryEmbedding, composed of graph ops, against onnxruntime:
masks (boolean, float), causal with and without a past cache,
grouped-query heads, 3-D inputs, softcap and scale; rotary halves and interleaved pairs,
partial rotation, position ids, 3-D and 4-D inputs."""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper

import mlcir
from mlcir.frontend import from_onnx

F32 = TensorProto.FLOAT


def _check(nodes, feeds: dict[str, np.ndarray], outputs: list[str], rtol=1e-4, atol=1e-5):
    infos = [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(a.dtype), a.shape)
             for n, a in feeds.items()]
    model = helper.make_model(helper.make_graph(
        nodes, "g", infos, [helper.make_tensor_value_info(o, F32, None) for o in outputs]),
        opset_imports=[helper.make_opsetid("", 23)])
    expected = ort.InferenceSession(model.SerializeToString(),
                                    providers=["CPUExecutionProvider"]).run(None, feeds)
    for out, shape in zip(model.graph.output, (e.shape for e in expected)):
        out.type.tensor_type.shape.Clear()
        for d in shape:
            out.type.tensor_type.shape.dim.add().dim_value = d
    got = mlcir.build(from_onnx(model)).main.run(feeds)
    for name, theirs in zip(outputs, expected):
        np.testing.assert_allclose(got[name], theirs, rtol=rtol, atol=atol, err_msg=name)


def _rand(*shape, seed=0):
    return np.random.default_rng(seed + sum(shape)).standard_normal(shape).astype(np.float32)


@pytest.mark.parametrize("attrs, mask", [
    ({}, None),
    ({"is_causal": 1}, None),
    ({"scale": 0.3, "softcap": 2.0}, None),
    ({}, "bool"),
    ({}, "float"),
    ({"is_causal": 1}, "bool-batched"),
])
def test_attention_4d(attrs, mask):
    feeds = {"q": _rand(2, 4, 5, 8), "k": _rand(2, 4, 6, 8, seed=1),
             "v": _rand(2, 4, 6, 8, seed=2)}
    inputs = ["q", "k", "v"]
    if mask == "bool":
        feeds["m"] = np.random.default_rng(3).random((5, 6)) > 0.3
        feeds["m"][1] = False  # a fully masked row: zeros
    elif mask == "float":
        feeds["m"] = _rand(2, 1, 5, 6, seed=4)
    elif mask == "bool-batched":
        feeds["m"] = np.random.default_rng(5).random((2, 1, 5, 6)) > 0.2
    if mask:
        inputs.append("m")
    _check([helper.make_node("Attention", inputs, ["y"], **attrs)], feeds, ["y"])


def test_attention_grouped_query_heads_with_a_past_cache_causal():
    feeds = {"q": _rand(1, 6, 3, 4), "k": _rand(1, 2, 3, 4, seed=1), "v": _rand(1, 2, 3, 4, seed=2),
             "pk": _rand(1, 2, 5, 4, seed=3), "pv": _rand(1, 2, 5, 4, seed=4)}
    _check([helper.make_node("Attention", ["q", "k", "v", "", "pk", "pv"],
                             ["y", "present_k", "present_v"], is_causal=1)],
           feeds, ["y", "present_k", "present_v"])


def test_attention_3d_inputs_split_into_heads():
    feeds = {"q": _rand(2, 5, 12), "k": _rand(2, 7, 6, seed=1), "v": _rand(2, 7, 6, seed=2)}
    _check([helper.make_node("Attention", ["q", "k", "v"], ["y"], q_num_heads=4,
                             kv_num_heads=2)], feeds, ["y"])


@pytest.mark.parametrize("attrs", [{}, {"interleaved": 1}, {"rotary_embedding_dim": 4},
                                   {"interleaved": 1, "rotary_embedding_dim": 4}])
def test_rotary_embedding_4d_with_positions(attrs):
    feeds = {"x": _rand(2, 3, 5, 8), "cos": _rand(10, 4, seed=1), "sin": _rand(10, 4, seed=2),
             "pos": np.array([[0, 2, 4, 6, 8], [1, 1, 2, 3, 5]], np.int64)}
    if attrs.get("rotary_embedding_dim") == 4:
        feeds["cos"], feeds["sin"] = feeds["cos"][:, :2], feeds["sin"][:, :2]
    _check([helper.make_node("RotaryEmbedding", ["x", "cos", "sin", "pos"], ["y"], **attrs)],
           feeds, ["y"])


def test_rotary_embedding_3d_without_positions():
    feeds = {"x": _rand(2, 5, 12), "cos": _rand(2, 5, 3, seed=1), "sin": _rand(2, 5, 3, seed=2)}
    _check([helper.make_node("RotaryEmbedding", ["x", "cos", "sin"], ["y"], num_heads=2)],
           feeds, ["y"])
