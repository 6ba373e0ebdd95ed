"""Real exporter output end to end (tests/models/real/, made by tests/models/export_real.py with
random weights): a transformers BERT with an attention mask (static, and with a dynamic batch
and sequence whose reshape targets are computed at run time), torchvision's MobileNetV2, and
the PyTorch models of tests/models/pytorch with a dynamic batch. Each is imported, compiled
by ``mlcir.build`` and by ``mlcir compile`` / ``mlcir run``, and compared with onnxruntime
(relative error <= 1e-4); a dynamic model is compiled once and run at several sizes."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import mlcir
from mlcir.frontend import from_onnx

ort = pytest.importorskip("onnxruntime")

MODELS = Path(__file__).parent / "models" / "real"
MLCIR = Path(sys.executable).with_name("mlcir")
RTOL = 1e-4

# The sizes each dynamic model runs at: its symbols -> sizes.
BERT_SIZES = [{"batch": b, "sequence": s} for b in (1, 3) for s in (5, 16)]
BATCHES = [{"batch": b} for b in (1, 3, 17, 64)]


def session(name: str) -> "ort.InferenceSession":
    return ort.InferenceSession(str(MODELS / f"{name}.onnx"), providers=["CPUExecutionProvider"])


def feeds(sess: "ort.InferenceSession", sizes: dict[str, int], seed: int = 0
          ) -> dict[str, np.ndarray]:
    """Inputs for ``sess`` with its symbolic dims set by ``sizes``: token ids, an attention
    mask whose last sequence is padded (half of it zeros), or normal floats."""
    rng = np.random.default_rng(seed)
    out = {}
    for i in sess.get_inputs():
        shape = [sizes[d] if isinstance(d, str) else d for d in i.shape]
        if i.name == "attention_mask":
            value = np.ones(shape, np.int64)
            value[-1, shape[1] // 2:] = 0
        elif i.type == "tensor(int64)":
            value = rng.integers(0, 1000, shape).astype(np.int64)
        else:
            value = rng.standard_normal(shape).astype(np.float32)
        out[i.name] = value
    return out


def assert_matches(got: dict[str, np.ndarray], sess: "ort.InferenceSession",
                   inputs: dict[str, np.ndarray]) -> None:
    want = sess.run(None, inputs)
    assert list(got) == [o.name for o in sess.get_outputs()]
    for (name, value), expected in zip(got.items(), want):
        assert value.shape == expected.shape, name
        error = np.abs(value - expected).max() / np.abs(expected).max()
        assert error <= RTOL, f"{name}: relative error {error:.2e}"


def run_cli(*args: object) -> None:
    result = subprocess.run([str(MLCIR), *map(str, args)], capture_output=True, text=True,
                            timeout=600)
    assert result.returncode == 0, f"mlcir {' '.join(map(str, args))}:\n{result.stderr}"


def check_cli(name: str, sizes_list: list[dict[str, int]], tmp_path: Path) -> None:
    """``mlcir compile`` once, then ``mlcir run`` at each size against onnxruntime."""
    sess = session(name)
    compiled = tmp_path / f"{name}.mlcir"
    run_cli("compile", MODELS / f"{name}.onnx", "-o", compiled)
    for k, sizes in enumerate(sizes_list):
        inputs = feeds(sess, sizes, seed=k)
        np.savez(tmp_path / "in.npz", **inputs)
        run_cli("run", compiled, "--inputs", tmp_path / "in.npz", "--outputs",
                tmp_path / "out.npz")
        with np.load(tmp_path / "out.npz") as out:
            assert_matches({key: out[key] for key in out.files}, sess, inputs)


def check_build(name: str, sizes_list: list[dict[str, int]]) -> None:
    """``mlcir.build`` once, then a call at each size against onnxruntime."""
    sess = session(name)
    ex = mlcir.build(from_onnx(MODELS / f"{name}.onnx"))
    for k, sizes in enumerate(sizes_list):
        inputs = feeds(sess, sizes, seed=k)
        assert_matches(ex.main.run(inputs), sess, inputs)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["bert_static", "mobilenet_v2"])
def test_static_export_builds_and_matches_onnxruntime(name):
    check_build(name, [{}])


def test_dynamic_bert_compiles_once_and_runs_at_two_batches_and_two_lengths():
    check_build("bert_dynamic", BERT_SIZES)


@pytest.mark.parametrize("name", ["lenet_dyn", "block_dyn", "attn_dyn"])
def test_dynamic_batch_pytorch_export_runs_at_any_batch(name):
    check_build(name, BATCHES)


@pytest.mark.slow
@pytest.mark.parametrize("name, sizes", [
    ("bert_static", [{}]), ("mobilenet_v2", [{}]), ("bert_dynamic", BERT_SIZES),
    *[(name, BATCHES) for name in ("lenet_dyn", "block_dyn", "attn_dyn")]])
def test_export_through_the_cli_matches_onnxruntime(name, sizes, tmp_path):
    check_cli(name, sizes, tmp_path)
