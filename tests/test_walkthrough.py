"""The tvmc walkthrough (docs/walkthrough.md, examples/walkthrough/) runs end to end on a
small zoo-style model (opset 7, IR version 3): its predictions are onnxruntime's, the top-5
is printed, the records file is written and the tuned build predicts the same."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest

ROOT = Path(__file__).resolve().parent.parent
WALK = ROOT / "examples" / "walkthrough"


@pytest.mark.slow
def test_walkthrough_end_to_end(tmp_path):
    result = subprocess.run([sys.executable, str(WALK / "run_walkthrough.py"), "--size", "32",
                             "--trials", "4", "--work-dir", str(tmp_path), "--profile"],
                            capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    out = result.stdout
    for step in ("preprocess", "compile", "run", "postprocess", "tune",
                 "compile with the tuning records", "where the time goes"):
        assert f"== {step}" in out
    assert out.count("probability") == 10  # top-5, before and after tuning
    assert "converted to opset 13" in out
    assert (tmp_path / "records.json").stat().st_size > 0
    assert "latency (median): untuned" in out
    session = ort.InferenceSession(str(tmp_path / "resnet_v2_zoo_style-7.onnx"),
                                   providers=["CPUExecutionProvider"])
    with np.load(tmp_path / "imagenet_cat.npz") as inputs:
        expected = session.run(None, {"data": inputs["data"]})[0]
    for name in ("predictions.npz", "predictions_tuned.npz"):
        with np.load(tmp_path / name) as outputs:
            np.testing.assert_allclose(outputs["resnetv24_dense0_fwd"], expected,
                                       rtol=1e-4, atol=1e-4)


def test_preprocess_and_postprocess():
    sys.path.insert(0, str(WALK))
    try:
        import postprocess
        import preprocess
    finally:
        sys.path.remove(str(WALK))
    image = preprocess.load_image(None, 16)
    data = preprocess.preprocess(image)
    assert data.shape == (1, 3, 16, 16) and data.dtype == np.float32
    np.testing.assert_allclose(data[0, :, 3, 5], (image[3, 5] - preprocess.MEAN) / preprocess.STD,
                               rtol=1e-5, atol=1e-6)
    top = postprocess.top_classes(np.array([[1.0, 3.0, 2.0]]), ["a", "b", "c"], top=2)
    assert [name for name, _ in top] == ["b", "c"]
    assert abs(top[0][1] - np.exp(3) / np.exp([1, 2, 3]).sum()) < 1e-9
