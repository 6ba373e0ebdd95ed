"""The C interface: every saved model's library exports its functions' signatures (mlcir.h), and
the reference C runner (run_model.c, built with the system's cc) runs it on .npy files."""

from __future__ import annotations

import shutil
import subprocess
import zipfile
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest

import mlcir
from mlcir.cli import main as cli
from mlcir.frontend import from_onnx
from mlcir.testing import mlp, onnx_models

ROOT = Path(__file__).resolve().parents[1]
DIGITS = ROOT / "examples" / "models" / "digits_mlp.onnx"


def _config(capsys, flag: str) -> Path:
    assert cli(["config", flag]) == 0
    return Path(capsys.readouterr().out.strip())


@pytest.fixture(scope="module")
def run_model(tmp_path_factory) -> Path:
    """run_model.c built as docs/deploy.md says (cc ... -I$(mlcir config --includedir) -ldl)."""
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler")
    from mlcir.runtime.c_interface import c_runner_source, include_dir

    exe = tmp_path_factory.mktemp("c_runner") / "run_model"
    subprocess.run([cc, "-Wall", "-Werror", "-O2", str(c_runner_source()), f"-I{include_dir()}",
                    "-ldl", "-o", str(exe)], check=True)
    return exe


def _library(model: Path, folder: Path) -> Path:
    so = folder / f"{model.stem}.so"
    with zipfile.ZipFile(model) as archive:
        so.write_bytes(archive.read("model.so"))
    return so


def _run(*args: object) -> subprocess.CompletedProcess:
    return subprocess.run([str(a) for a in args], capture_output=True, text=True)


def test_mlcir_config_prints_the_header_and_runner(capsys):
    assert (_config(capsys, "--includedir") / "mlcir.h").is_file()
    runner = _config(capsys, "--c-runner")
    assert runner.name == "run_model.c" and runner.is_file()


def test_the_digits_model_classifies_from_c(run_model, tmp_path):
    model = onnx.load(DIGITS)
    mlcir.compile(from_onnx(model), "llvm", tmp_path / "digits.mlcir")
    so = _library(tmp_path / "digits.mlcir", tmp_path)
    with np.load(ROOT / "examples" / "models" / "digits_test.npz") as data:
        images = data["images"][:4]
    session = ort.InferenceSession(model.SerializeToString())
    for image in images:
        np.save(tmp_path / "x.npy", image[None])
        result = _run(run_model, so, "main", tmp_path / "x.npy", "-o", tmp_path / "y.npy")
        assert result.returncode == 0, result.stderr
        expected = session.run(None, {"image": image[None]})[0]
        np.testing.assert_allclose(np.load(tmp_path / "y.npy"), expected, rtol=1e-5, atol=1e-6)
    info = _run(run_model, so, "--info")
    assert info.stdout.splitlines() == ["target: llvm", "main",
                                        "  argument image: float32[1, 64]",
                                        "  result probabilities: float32[1, 10]"]


def test_dynamic_dims_come_from_the_files_and_shape_option(run_model, tmp_path):
    model = onnx_models.mlp(batch="N")
    mlcir.compile(from_onnx(model), "llvm", tmp_path / "mlp.mlcir")
    so = _library(tmp_path / "mlp.mlcir", tmp_path)
    x = onnx_models.mlp_inputs(batch=3)["x"]
    np.save(tmp_path / "x.npy", x)
    missing = _run(run_model, so, "main", tmp_path / "x.npy", "-o", tmp_path / "y.npy")
    assert missing.returncode == 1
    assert "result 'logits' has a dynamic shape: give it with --shape logits=D0,D1" in \
        missing.stderr
    result = _run(run_model, so, "main", tmp_path / "x.npy", "-o", tmp_path / "y.npy",
                  "--shape", "logits=3,10")
    assert result.returncode == 0, result.stderr
    expected = ort.InferenceSession(model.SerializeToString()).run(None, {"x": x})[0]
    np.testing.assert_allclose(np.load(tmp_path / "y.npy"), expected, rtol=1e-4, atol=1e-5)


def test_wrong_inputs_are_named(run_model, tmp_path):
    mlcir.compile(from_onnx(onnx_models.mlp()), "llvm", tmp_path / "mlp.mlcir")
    so = _library(tmp_path / "mlp.mlcir", tmp_path)
    np.save(tmp_path / "x.npy", np.zeros((2, 784), np.float32))
    result = _run(run_model, so, "main", tmp_path / "x.npy")
    assert "argument 'x' has shape [1, 784], the file holds [2, 784]" in result.stderr
    np.save(tmp_path / "x.npy", np.zeros((1, 784), np.float64))
    result = _run(run_model, so, "main", tmp_path / "x.npy")
    assert "argument 'x' is float32 ('<f4'), the file holds '<f8'" in result.stderr
    result = _run(run_model, so, "main")
    assert "main() takes 1 input(s): x; got 0" in result.stderr


def test_python_library_functions_are_refused_by_name(run_model, tmp_path):
    mlp.register_library()
    mlcir.build(mlp.build_module("library")).save(tmp_path / "lib.mlcir")
    so = _library(tmp_path / "lib.mlcir", tmp_path)
    result = _run(run_model, so, "main", tmp_path / "x.npy")
    assert result.returncode == 1
    assert "calls library function(s) registered in Python: env.linear, env.relu; C cannot " \
           "call them: run the model from Python (mlcir.load)" in result.stderr
