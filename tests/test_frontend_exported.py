"""Models exported by PyTorch (tests/models/pytorch/, made by export.py there): what exporters
really write — Shape/Gather/Concat shape arithmetic, Constant nodes, external weight files,
LogSoftmax, TransformerEncoderLayer's attention — imported, built and compared with
onnxruntime."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import mlcir
from mlcir.frontend import from_onnx

MODELS = Path(__file__).parent / "models" / "pytorch"
ort = pytest.importorskip("onnxruntime")


@pytest.mark.parametrize("name", ["lenet_ts", "block_ts", "block_dynamo", "attn_ts", "attn_dynamo"])
def test_exported_model_matches_onnxruntime(name):
    path = MODELS / f"{name}.onnx"
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(0)
    feeds = {i.name: rng.standard_normal(i.shape).astype(np.float32) for i in session.get_inputs()}
    expected = session.run(None, feeds)
    ex = mlcir.build(from_onnx(path))  # the dynamo files read their weights from .onnx.data
    got = ex.main.run(feeds)
    assert list(got) == [o.name for o in session.get_outputs()]
    for value, want in zip(got.values(), expected):
        np.testing.assert_allclose(value, want, rtol=1e-4, atol=1e-5 * np.abs(want).max())
