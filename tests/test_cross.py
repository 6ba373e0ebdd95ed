"""Cross-compiling for aarch64 (llvm -mtriple=aarch64-linux-gnu): the library is an AArch64 ELF
shared object with NEON (or SVE) code, its metadata names the machine, this machine refuses to
load it, and under QEMU user-mode emulation (marked ``qemu``) it matches onnxruntime."""

from __future__ import annotations

import re
import subprocess
import zipfile
from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest

import mlcir
from mlcir.cli import main as cli
from mlcir.errors import BuildError, LoadError
from mlcir.frontend import from_onnx
from mlcir.paths import llvm_tool
from mlcir.targets.cross import remote
from mlcir.testing import onnx_models

EM_AARCH64 = 183
ET_DYN = 3
MODELS = {
    # name: (model, inputs, target)
    "mlp": (onnx_models.mlp, onnx_models.mlp_inputs,
            "llvm -mtriple=aarch64-linux-gnu -mcpu=cortex-a72"),
    "cnn": (onnx_models.mnist_cnn, onnx_models.mnist_cnn_inputs,
            "llvm -mtriple=aarch64-linux-gnu -mcpu=neoverse-n1"),
    "transformer": (onnx_models.transformer_encoder, onnx_models.transformer_encoder_inputs,
                    "llvm -mtriple=aarch64-linux-gnu"),
    # Channel blocks and weight panels of NEON's 4 lanes (tests/test_stages.py checks them).
    "resnet_block": (lambda: onnx_models.resnet_block(channels=32, hw=16),
                     lambda: onnx_models.resnet_block_inputs(channels=32, hw=16),
                     "llvm -mtriple=aarch64-linux-gnu"),
    "mobilenet_block": (lambda: onnx_models.mobilenet_v2_blocks(hw=16),
                        lambda: onnx_models.mobilenet_v2_blocks_inputs(hw=16),
                        "llvm -mtriple=aarch64-linux-gnu -mcpu=neoverse-n1"),
    "transformer-sve": (onnx_models.transformer_encoder,
                        onnx_models.transformer_encoder_inputs,
                        "llvm -mtriple=aarch64-linux-gnu -mattr=+sve"),
}


@pytest.fixture(scope="module")
def compiled(tmp_path_factory):
    """Each model of MODELS compiled once: {name: (saved model, inputs, onnxruntime's
    outputs)}."""
    folder = tmp_path_factory.mktemp("cross")
    out = {}
    for name, (model_fn, inputs_fn, target) in MODELS.items():
        model, inputs = model_fn(), inputs_fn()
        expected = ort.InferenceSession(model.SerializeToString()).run(None, inputs)
        saved = mlcir.compile(from_onnx(model), target, folder / f"{name}.mlcir")
        out[name] = (saved, inputs, expected)
    return out


def _library(saved) -> bytes:
    with zipfile.ZipFile(saved.path) as archive:
        return archive.read("model.so")


def _disassembly(saved, tmp_path: Path) -> str:
    so = tmp_path / "model.so"
    so.write_bytes(_library(saved))
    return subprocess.run([llvm_tool("llvm-objdump"), "-d", str(so)], capture_output=True,
                          text=True, check=True).stdout


@pytest.mark.parametrize("name", list(MODELS))
def test_the_library_is_an_aarch64_shared_object_and_its_metadata_says_so(compiled, name):
    saved = compiled[name][0]
    elf = _library(saved)
    assert elf[:4] == b"\x7fELF" and elf[4] == 2  # 64-bit
    assert int.from_bytes(elf[16:18], "little") == ET_DYN
    assert int.from_bytes(elf[18:20], "little") == EM_AARCH64
    meta = saved.metadata
    assert meta["platform"] == {"system": "Linux", "machine": "aarch64"}
    assert meta["target"] == MODELS[name][2]
    assert meta["cpu"]["triple"] == "aarch64-unknown-linux-gnu"
    assert meta["cpu"]["cpu"] == dict(t.lstrip("-").split("=") for t in
                                      MODELS[name][2].split()[1:]).get("mcpu", "generic")
    assert meta["cpu_features"] == (["sve"] if name.endswith("sve") else [])


@pytest.mark.parametrize("name", ["cnn", "transformer"])
def test_neon_code_multiplies_and_adds_in_v_registers(compiled, name, tmp_path):
    code = _disassembly(compiled[name][0], tmp_path)
    assert re.search(r"\bfmla\s+v\d+\.4s", code)
    assert not re.search(r"\bz\d+\.s\b", code)


def test_sve_code_uses_z_registers(compiled, tmp_path):
    code = _disassembly(compiled["transformer-sve"][0], tmp_path)
    assert re.search(r"\bz\d+\.s\b", code)


def test_this_machine_refuses_to_load_or_build_for_aarch64(compiled):
    saved = compiled["mlp"][0]
    with pytest.raises(LoadError, match=r"compiled for aarch64 \(Linux\), this machine is "
                                        r"x86_64 \(Linux\); its target is 'llvm -mtriple="
                                        r"aarch64-linux-gnu -mcpu=cortex-a72'"):
        mlcir.load(saved.path)
    with pytest.raises(BuildError, match="compiles for aarch64-unknown-linux-gnu, which this "
                                         r"machine cannot run: write a saved model instead"):
        mlcir.build(from_onnx(onnx_models.mlp()), "llvm -mtriple=aarch64-linux-gnu")


def test_threads_are_refused_for_a_named_cpu(tmp_path):
    with pytest.raises(BuildError, match="-threads=2 with -mtriple, -mcpu or -mattr is not "
                                         "supported: these libraries are single-threaded"):
        mlcir.compile(from_onnx(onnx_models.mlp()), "llvm -mtriple=aarch64-linux-gnu -threads=2",
                      tmp_path / "m.mlcir")


def test_a_named_host_cpu_builds_runs_saves_and_loads_here(tmp_path):
    model, inputs = onnx_models.mlp(), onnx_models.mlp_inputs()
    expected = ort.InferenceSession(model.SerializeToString()).run(None, inputs)[0]
    executable = mlcir.build(from_onnx(model), "llvm -mcpu=haswell")
    np.testing.assert_allclose(executable.main(inputs["x"]), expected, rtol=1e-4, atol=1e-5)
    executable.save(tmp_path / "m.mlcir")
    loaded = mlcir.load(tmp_path / "m.mlcir")
    np.testing.assert_allclose(loaded.main(inputs["x"]), expected, rtol=1e-4, atol=1e-5)
    assert str(loaded.target) == "llvm -mcpu=haswell"


def test_without_qemu_the_error_names_the_package(compiled, monkeypatch):
    monkeypatch.setattr(remote.shutil, "which", lambda _name: None)
    saved, inputs, _ = compiled["mlp"]
    model = remote.foreign_model(saved.path)
    with pytest.raises(BuildError, match=r"qemu-aarch64 is not installed \(Debian/Ubuntu: "
                                         r"apt-get install qemu-user libc6-arm64-cross\)"):
        remote.run_foreign(model, "main", [inputs["x"]])


@pytest.mark.qemu
@pytest.mark.parametrize("name", list(MODELS))
def test_under_qemu_the_model_matches_onnxruntime(compiled, name):
    saved, inputs, expected = compiled[name]
    model = remote.foreign_model(saved.path)
    args = [inputs[a.name] for a in model.signatures["main"].args]
    outputs = remote.run_foreign(model, "main", args)
    assert len(outputs) == len(expected)
    for got, want in zip(outputs.values(), expected):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


@pytest.mark.qemu
def test_mlcir_run_emulates_and_never_reports_timings(compiled, tmp_path, capsys):
    saved, inputs, expected = compiled["mlp"]
    np.savez(tmp_path / "x.npz", **inputs)
    assert cli(["run", str(saved.path), "--inputs", str(tmp_path / "x.npz"),
                "--outputs", str(tmp_path / "y.npz")]) == 0
    err = capsys.readouterr().err
    assert "(aarch64-unknown-linux-gnu) under emulation with qemu-aarch64; timings under " \
           "emulation are not reported" in err
    with np.load(tmp_path / "y.npz") as outputs:
        np.testing.assert_allclose(outputs["logits"], expected[0], rtol=1e-4, atol=1e-5)
    assert cli(["run", str(saved.path), "--inputs", str(tmp_path / "x.npz"),
                "--print-time"]) == 1
    assert "--print-time: " in capsys.readouterr().err
