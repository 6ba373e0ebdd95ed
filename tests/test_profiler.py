"""The per-kernel profiler: ``ex.profile(...)``, ``mlcir.build(profile=True)``, ``mlcir compile
--profile`` + ``mlcir run --profile [trace.json]``. The profiling build times every call
of ``main`` with the cycle counter (mlcir-profile-hooks); the normal build has no hook."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

import mlcir
from mlcir.frontend import from_onnx
from mlcir.testing import onnx_models as om
from mlcir.testing.kernels import library_module

from test_cli import error_of, run_cli


@pytest.fixture(scope="module")
def cnn():
    model = om.zoo_resnet_v2(13)
    x = np.random.default_rng(0).standard_normal((1, 3, 32, 32)).astype(np.float32)
    return model, x, mlcir.build(from_onnx(model))


def _called_kernels(lowered) -> set[str]:
    """The kernels ``main`` calls in a lowered (LLVM dialect) module."""
    text = str(lowered)
    body = text[text.index("llvm.func @main("):]
    body = body[:body.index("\n  }\n")]
    return set(re.findall(r'llvm.call @"?mlcir\.([\w.]+?)"?\(', body))


def test_profile_rows_cover_every_kernel_and_add_up(cnn):
    _, x, ex = cnn
    profile = ex.profile(x, repeat=20)
    names = {k.name for k in profile.kernels}
    assert names == _called_kernels(ex.lowered)
    assert profile.calls >= 20
    parts = sum(k.seconds for k in profile.kernels) + profile.other_seconds
    assert abs(parts - profile.total_seconds) <= 0.1 * profile.total_seconds
    assert profile.other_seconds < 0.5 * profile.total_seconds
    assert abs(sum(k.share for k in profile.kernels) +
               profile.other_seconds / profile.total_seconds - 1) < 0.1
    convs = [k for k in profile.kernels if "conv2d" in k.name]
    assert convs and all(k.flops > 0 and k.gflops > 0 and k.peak_gflops > 0 for k in convs)
    assert all(k.schedule in ("default", "pipeline") for k in profile.kernels)
    assert any("stage0_add" in k.nodes for k in profile.kernels)  # traceable to ONNX nodes
    table = profile.table()
    assert table.splitlines()[2].split()[0] == profile.rows()[0].name[:40]  # slowest first
    assert "(host code between kernels)" in table


def test_the_profile_accounts_for_the_whole_call(cnn):
    """In every profiled call the kernels run one after another, each inside the call, and
    the kernel times and the host time between them add up to the call's time (what the
    hooks cost against an uninstrumented call is a benchmark's business, not a test's)."""
    _, x, ex = cnn
    profile = ex.profile(x, repeat=12)
    assert profile.calls >= 12 and len(profile.starts) == profile.calls
    assert all(len(k.samples) == profile.calls and k.seconds > 0 for k in profile.kernels)
    tick = 1e-9
    for call, starts in enumerate(profile.starts):
        ends = [start + k.samples[call] for start, k in zip(starts, profile.kernels)]
        assert starts[0] >= -tick
        assert all(end <= after + tick for end, after in zip(ends, starts[1:])), call
    kernel_seconds = sum(k.seconds for k in profile.kernels)
    assert profile.other_seconds == max(profile.total_seconds - kernel_seconds, 0.0)
    assert kernel_seconds <= 1.1 * profile.total_seconds


def test_the_profiling_build_computes_the_same_and_the_normal_one_has_no_hooks(cnn):
    model, x, ex = cnn
    profiled = mlcir.build(from_onnx(model), profile=True)
    np.testing.assert_array_equal(profiled.main(x), ex.main(x))
    assert "__mlcir_profile" in str(profiled.lowered)
    assert "__mlcir_profile" not in str(ex.lowered)
    assert "readcyclecounter" not in str(ex.lowered)
    assert ex.profile_sites is None and profiled.profile_sites


def test_chrome_trace_has_one_event_per_kernel_call(cnn, tmp_path):
    _, x, ex = cnn
    profile = ex.profile(x, repeat=5)
    path = tmp_path / "trace.json"
    profile.write_chrome_trace(path)
    events = json.loads(path.read_text())["traceEvents"]
    assert len(events) == len(profile.kernels) * profile.calls
    assert all(e["ph"] == "X" and e["dur"] >= 0 for e in events)
    first_call = sorted((e for e in events if e["args"]["call"] == 0), key=lambda e: e["ts"])
    assert [e["name"] for e in first_call] == [k.name for k in profile.kernels]  # in order


@pytest.mark.usefixtures("ctx")
def test_library_calls_are_profiled():
    calls = []

    def double(x, out):
        calls.append(1)
        np.multiply(x, 2, out=out)

    mlcir.register_func("test_profiler.double", double, override=True)
    ex = mlcir.build(library_module("test_profiler.double"))
    x = np.arange(4, dtype=np.float32) - 2
    profile = ex.profile(x, repeat=3)
    assert [k.schedule for k in profile.kernels] == ["library"] and calls
    assert profile.kernels[0].seconds > 0
    np.testing.assert_array_equal(ex.main(x), 2 * x)


def test_profiling_refuses_other_targets_and_pipelines():
    with pytest.raises(mlcir.errors.BuildError, match="host CPU"):
        mlcir.build(from_onnx(om.mlp()), target="llvm -mtriple=aarch64-linux-gnu", profile=True)
    with pytest.raises(mlcir.errors.BuildError, match="cannot take pipeline"):
        mlcir.build(from_onnx(om.mlp()), pipeline="mlcir-cpu", profile=True)


def test_cli_run_profile_prints_the_table_and_writes_the_trace(tmp_path):
    import onnx

    onnx.save(om.mnist_cnn(), tmp_path / "cnn.onnx")
    run_cli("compile", tmp_path / "cnn.onnx", "-o", tmp_path / "p.mlcir", "--profile")
    result = run_cli("run", tmp_path / "p.mlcir", "--fill-mode", "random", "--profile",
                     tmp_path / "trace.json", "--repeat", "5")
    lines = result.stdout.splitlines()
    assert lines[0].startswith("profile of main:") and "GFLOP/s" in lines[1]
    assert any("conv2d" in line for line in lines[2:])
    events = json.loads((tmp_path / "trace.json").read_text())["traceEvents"]
    assert events and all(e["ph"] == "X" for e in events)
    run_cli("compile", tmp_path / "cnn.onnx", "-o", tmp_path / "plain.mlcir")
    refused = run_cli("run", tmp_path / "plain.mlcir", "--fill-mode", "random", "--profile",
                      check=False)
    assert "compile it with `mlcir compile ... --profile`" in error_of(refused)
