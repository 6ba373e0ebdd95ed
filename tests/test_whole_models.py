"""The whole-model builders (mlcir/testing/whole_models.py) at small sizes: valid ONNX that
onnxruntime runs, with the real models' structure, and mlcir computes the same numbers (the
zoo-layout ResNet through the opset 7 conversion)."""

from __future__ import annotations

import collections
import warnings

import numpy as np
import onnxruntime as ort
import pytest

import mlcir
from mlcir.frontend import from_onnx
from mlcir.testing import whole_models as wm

SMALL = {
    "resnet50_v1": lambda: wm.resnet50_v1(hw=32, width=16, classes=10),
    "resnet50_v2": lambda: wm.resnet50_v2(hw=32, width=16, classes=10),
    "mobilenet_v2": lambda: wm.mobilenet_v2(hw=32, classes=10),
    "bert_base": lambda: wm.bert_base(layers=2, seq=16, hidden=64, heads=4, intermediate=128),
}


@pytest.mark.parametrize("name", list(SMALL))
def test_small_whole_models_match_onnxruntime(name):
    model = SMALL[name]()
    inputs = wm.model_inputs(model)
    expected = ort.InferenceSession(model.SerializeToString()).run(None, inputs)[0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the opset 7 model's conversion note
        got = mlcir.build(from_onnx(model)).main(**inputs)
    scale = float(np.abs(expected).max())
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-5 * scale)


def test_the_full_size_graphs_have_the_real_models_structure():
    ops = {name: collections.Counter(n.op_type for n in build().graph.node)
           for name, build in (("v1", wm.resnet50_v1), ("v2", wm.resnet50_v2),
                               ("mobilenet", wm.mobilenet_v2))}
    assert ops["v1"]["Conv"] == 53 and ops["v1"]["Add"] == 16  # 49 + 4 projections
    assert ops["v2"]["Conv"] == 53 and ops["v2"]["BatchNormalization"] == 51
    assert ops["mobilenet"]["Conv"] == 52 and ops["mobilenet"]["Add"] == 10
    v2 = wm.resnet50_v2()
    assert v2.opset_import[0].version == 7 and v2.ir_version == 3
    bert = wm.bert_base(hidden=64, heads=4, intermediate=128)  # 12 layers, 128 tokens
    assert sum(n.op_type == "LayerNormalization" for n in bert.graph.node) == 24
    assert [i.name for i in bert.graph.input] == ["x", "attention_mask"]
    mask = wm.model_inputs(bert)["attention_mask"]
    assert mask.shape == (1, 128) and mask.sum() == 112
