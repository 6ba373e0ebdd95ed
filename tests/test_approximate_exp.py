"""``mlcir-approximate-exp`` (passes/approximate_exp.py): the inline f32 exp of every CPU build
matches numpy to about an ulp over the float range, saturates outside it, keeps NaN."""

from __future__ import annotations

import numpy as np

import mlcir
from mlcir.frontend import from_onnx
from mlcir.testing import onnx_models as om


def test_inline_exp_matches_numpy_and_saturates():
    model = om.single_op("Exp", {"x": [1, 4096]}, {})
    x = np.linspace(-110, 95, 4096, dtype=np.float32).reshape(1, -1)
    x[0, 7] = np.nan
    got = mlcir.build(from_onnx(model), "llvm -threads=1").main(x=x)
    want = np.exp(x.astype(np.float64))
    inside = (x > -87) & (x < 88)
    np.testing.assert_allclose(got[inside], want[inside], rtol=3e-7)
    assert np.all(got[x < -88] < 2e-38) and np.all(got[x > 89] > 2e38)
    assert np.isnan(got[0, 7])
