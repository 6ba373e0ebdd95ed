"""The timing helpers of the benchmarks and examples (mlcir.testing.timing, blas.describe)."""

from __future__ import annotations

import itertools
import time

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


def test_multithreaded_turns_warm_up_each_callable_first(monkeypatch):
    """With threads > 1 each turn pauses, calls its callable for PARALLEL_WARMUP_S untimed,
    then times it: the turns come in blocks of one callable, each longer than the timed call."""
    monkeypatch.setattr(timing, "SETTLE_S", 0.0)
    monkeypatch.setattr(timing, "PARALLEL_WARMUP_S", 0.01)
    order = []

    def call(name):
        order.append(name)
        time.sleep(0.002)

    timing.interleaved({"a": lambda: call("a"), "b": lambda: call("b")}, rounds=2,
                       budget_s=0.0, threads=2)
    blocks = [(name, len(list(run))) for name, run in itertools.groupby(order)]
    assert [name for name, _ in blocks] == ["a", "b"] * 3  # first calls, then two rounds
    assert all(length >= 3 for _, length in blocks[2:])  # ~5 warm-up calls and the timed one


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
