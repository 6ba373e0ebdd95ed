"""``mlcir-approximate-math`` (passes/approximate_math.py): the inline f32 exp and erf of every
CPU build match numpy/math to about an ulp (exp) or 5e-7 (erf), saturate outside the float
range, keep NaN."""

from __future__ import annotations

import math

import numpy as np

import mlcir
from mlcir.frontend import from_onnx
from mlcir.testing import onnx_models as om


def _run(op: str, x: np.ndarray) -> np.ndarray:
    model = om.single_op(op, {"x": list(x.shape)}, {})
    return mlcir.build(from_onnx(model), "llvm -threads=1").main(x=x)


def test_inline_exp_matches_numpy_and_saturates():
    x = np.linspace(-110, 95, 4096, dtype=np.float32).reshape(1, -1)
    x[0, 7] = np.nan
    got = _run("Exp", x)
    want = np.exp(x.astype(np.float64))
    inside = (x > -87) & (x < 88)
    np.testing.assert_allclose(got[inside], want[inside], rtol=3e-7)
    assert np.all(got[x < -88] < 2e-38) and np.all(got[x > 89] > 2e38)
    assert np.isnan(got[0, 7])


def test_inline_erf_matches_math():
    x = np.linspace(-7, 7, 4096, dtype=np.float32).reshape(1, -1)
    want = np.array([math.erf(v) for v in x[0].astype(np.float64)])
    np.testing.assert_allclose(_run("Erf", x)[0], want, atol=5e-7)
