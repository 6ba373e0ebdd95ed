"""The timing helpers of the benchmarks and examples (mlcir.testing.timing, blas.describe)."""

from __future__ import annotations

import numpy as np

import mlcir
from mlcir.frontend import from_onnx
from mlcir.testing import blas, onnx_models, timing


def test_interleaved_times_every_call_in_turns():
    order = []
    seconds = timing.interleaved({"a": lambda: order.append("a"), "b": lambda: order.append("b")},
                                 rounds=3, budget_s=0.0)
    assert set(seconds) == {"a", "b"} and all(s > 0 for s in seconds.values())
    assert order == ["a", "b"] * 4  # one warm-up call each, then three rounds of one call


def test_onnxruntime_and_mlcir_calls_compute_the_same_outputs():
    model = onnx_models.mlp(batch=2)
    feeds = onnx_models.mlp_inputs(batch=2)
    session = timing.onnxruntime_session(model)
    run, bound = timing.onnxruntime_calls(session, feeds)
    bound()
    want = run()[0]
    ex = mlcir.build(from_onnx(model))
    as_called, prepared = timing.mlcir_calls(ex["main"], *feeds.values())
    np.testing.assert_allclose(as_called(), want, rtol=1e-4, atol=1e-5)
    prepared()


def test_blas_description_names_the_kernel_and_flags_a_forced_one(monkeypatch):
    for name in blas.OVERRIDES:
        monkeypatch.delenv(name, raising=False)
    text = blas.describe()
    assert "kernel" in text and "NOT" not in text
    monkeypatch.setenv("OPENBLAS_CORETYPE", "Haswell")
    assert "NOT numpy's best kernel: OPENBLAS_CORETYPE=Haswell" in blas.describe()
