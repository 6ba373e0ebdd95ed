"""Saved models: ``Executable.save`` / ``mlcir.load`` round trips, library functions bound after
loading, and clear errors for files that cannot be loaded."""

from __future__ import annotations

import json
import platform
import subprocess
import sys
import zipfile

import numpy as np
import pytest

import mlcir
from mlcir.errors import BuildError, LoadError, RuntimeInputError
from mlcir.passes.bind_params import bind_params
from mlcir.runtime import library
from mlcir.runtime.model_file import FORMAT_VERSION, read_metadata, seal
from mlcir.testing import mlp
from mlcir.testing.hardware import cuda_available

MATMUL_MEMREF = """
func.func @matmul(%A: memref<16x32xf32>, %B: memref<32x8xf32>, %C: memref<16x8xf32>) {
  linalg.matmul ins(%A, %B : memref<16x32xf32>, memref<32x8xf32>) outs(%C : memref<16x8xf32>)
  return
}
"""

WEIGHTS = ("w0", "b0", "w1", "b1")


@pytest.fixture(scope="module")
def params():
    mlp.register_library()
    return mlp.random_params(seed=0)


@pytest.fixture(scope="module")
def x():
    return np.random.default_rng(42).standard_normal((1, 784)).astype(np.float32)


@pytest.fixture(scope="module")
def saved_mlp(tmp_path_factory, params):
    """The MLP with its weights bound into the code, saved once for the error tests."""
    module = mlp.build_module("compiled")
    with module.context:
        bind_params(module, params)
    path = tmp_path_factory.mktemp("saved") / "mlp.mlcir"
    mlcir.build(module).save(path)
    return path


def _close(got, want):
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5 * np.abs(want).max())


def test_graph_model_with_bound_weights_round_trip(saved_mlp, params, x):
    loaded = mlcir.load(saved_mlp)
    # The weights are in the saved code: the loaded model takes x alone.
    assert [a.name for a in loaded.main.signature.args] == ["x"]
    assert loaded.main.signature.results[0].shape == (1, 10)
    _close(loaded.main(x), mlp.reference(x, params))


def test_loaded_code_is_the_code_that_was_built(tmp_path, params, x):
    ex = mlcir.build(mlp.build_module("compiled"))
    ex.save(tmp_path / "m.mlcir")
    loaded = mlcir.load(tmp_path / "m.mlcir")
    args = [x] + [params[k] for k in WEIGHTS]
    np.testing.assert_array_equal(loaded.main(*args), ex.main(*args))  # bit for bit


def test_upstream_memref_kernel_round_trip(tmp_path, rng):
    mlcir.build(MATMUL_MEMREF, target="llvm -threads=2").save(tmp_path / "matmul.mlcir")
    loaded = mlcir.load(tmp_path / "matmul.mlcir")
    assert str(loaded.target) == "llvm -threads=2"
    assert [a.kind for a in loaded.matmul.signature.args] == ["input", "input", "inout"]
    a = rng.standard_normal((16, 32)).astype(np.float32)
    b = rng.standard_normal((32, 8)).astype(np.float32)
    c = np.zeros((16, 8), np.float32)
    assert loaded.matmul(a, b, c) is None  # destination passing: C written in place
    _close(c, a @ b)


def test_loading_compiles_nothing(saved_mlp, params, x, monkeypatch):
    def refuse(*_args, **_kwargs):
        raise AssertionError("loading a saved model must not compile")

    import mlcir.runtime.aot as aot
    import mlcir.runtime.jit as jit
    import mlcir.targets.cpu.backend as cpu_backend

    monkeypatch.setattr(jit, "ExecutionEngine", refuse)
    monkeypatch.setattr(aot, "ExecutionEngine", refuse)
    monkeypatch.setattr(cpu_backend, "run_pipeline", refuse)
    _close(mlcir.load(saved_mlp).main(x), mlp.reference(x, params))


def test_loaded_model_still_validates_its_inputs(saved_mlp, x):
    loaded = mlcir.load(saved_mlp)
    with pytest.raises(RuntimeInputError, match=r"argument 'x': expected shape float32\[1, 784\], "
                                                r"got float32\[1, 783\]"):
        loaded.main(x[:, :783])
    with pytest.raises(RuntimeInputError, match="expected dtype float32, got float64"):
        loaded.main(x.astype(np.float64))


@pytest.mark.parametrize("variant", ["mixed", "library"])
def test_library_calls_after_load(tmp_path, variant, params, x):
    ex = mlcir.build(mlp.build_module(variant))
    ex.save(tmp_path / f"{variant}.mlcir")
    meta = read_metadata(tmp_path / f"{variant}.mlcir")
    assert {d["name"] for d in meta["library_functions"]} == {"env.linear", "env.relu"}
    loaded = mlcir.load(tmp_path / f"{variant}.mlcir")
    _close(loaded.main(x, *[params[k] for k in WEIGHTS]), mlp.reference(x, params))


def test_two_loaded_models_bind_the_same_library_symbol_separately(tmp_path, params, x):
    """Both models define `_mlir_ciface_env.relu`; each must call through its own slot."""
    calls = []

    def counting_relu(a, out):
        calls.append(a.shape)
        np.maximum(a, 0, out=out)

    for variant in ("mixed", "library"):
        mlcir.build(mlp.build_module(variant)).save(tmp_path / f"{variant}.mlcir")
    first = mlcir.load(tmp_path / "mixed.mlcir")
    mlcir.register_func("env.relu", counting_relu, override=True)
    try:
        second = mlcir.load(tmp_path / "library.mlcir")
        args = [x] + [params[k] for k in WEIGHTS]
        _close(first.main(*args), mlp.reference(x, params))
        assert calls == []  # the first model keeps the callback it was loaded with
        _close(second.main(*args), mlp.reference(x, params))
        assert calls == [(1, 128)]
    finally:
        mlp.register_library()


def test_library_errors_after_load_surface_as_python_errors(tmp_path, params, x):
    mlcir.build(mlp.build_module("library")).save(tmp_path / "lib.mlcir")

    def fails(_a, _w, _b, _out):
        raise ValueError("deliberate failure")

    mlcir.register_func("env.linear", fails, override=True)
    try:
        loaded = mlcir.load(tmp_path / "lib.mlcir")
        with pytest.raises(RuntimeError, match="library function 'env.linear' raised ValueError: "
                                               "deliberate failure"):
            loaded.main(x, *[params[k] for k in WEIGHTS])
    finally:
        mlp.register_library()


@pytest.mark.usefixtures("params")  # registers the library functions
def test_unregistered_library_function_at_load_is_named(tmp_path, monkeypatch):
    mlcir.build(mlp.build_module("mixed")).save(tmp_path / "mixed.mlcir")
    monkeypatch.delitem(library._REGISTRY, "env.relu")
    with pytest.raises(LoadError, match=r"mixed\.mlcir: the model calls library function\(s\) "
                                        r"env\.relu, not registered in this process"):
        mlcir.load(tmp_path / "mixed.mlcir")


def test_a_fresh_process_loads_and_runs_with_its_own_registrations(tmp_path, params, x):
    mlcir.build(mlp.build_module("mixed")).save(tmp_path / "mixed.mlcir")
    np.savez(tmp_path / "in.npz", x=x, **params)
    script = f"""
import sys, numpy as np, mlcir
from mlcir.testing import mlp
if sys.argv[1] == "register":
    mlp.register_library()
try:
    model = mlcir.load({str(tmp_path / "mixed.mlcir")!r})
except mlcir.LoadError as error:
    print("LoadError:", error); sys.exit(3)
d = np.load({str(tmp_path / "in.npz")!r})
np.save({str(tmp_path / "out.npy")!r}, model.main(d["x"], d["w0"], d["b0"], d["w1"], d["b1"]))
"""
    ok = subprocess.run([sys.executable, "-c", script, "register"], capture_output=True, text=True)
    assert ok.returncode == 0, ok.stderr
    _close(np.load(tmp_path / "out.npy"), mlp.reference(x, params))
    missing = subprocess.run([sys.executable, "-c", script, "none"], capture_output=True,
                             text=True)
    assert missing.returncode == 3, missing.stderr
    assert "library function(s) env.linear, env.relu, not registered" in missing.stdout


def test_a_loaded_model_saves_again(tmp_path, saved_mlp, params, x):
    mlcir.load(saved_mlp).save(tmp_path / "again.mlcir")
    _close(mlcir.load(tmp_path / "again.mlcir").main(x), mlp.reference(x, params))


def test_metadata_describes_the_model(saved_mlp):
    meta = read_metadata(saved_mlp)
    assert meta["format"] == "mlcir-model" and meta["format_version"] == FORMAT_VERSION
    assert meta["mlcir_version"] == mlcir.__version__ and meta["target"] == "llvm"
    (main,) = meta["functions"]
    assert main["name"] == "main"
    assert main["args"] == [{"name": "x", "shape": [1, 784], "dtype": "float32", "kind": "input"}]
    assert main["results"][0]["shape"] == [1, 10]
    assert meta["library_functions"] == []
    assert "sse2" in meta["cpu_features"] or platform.machine() != "x86_64"


# -- files that cannot be loaded ---------------------------------------------------------------

def _rewrite_metadata(src, dst, **changes):
    """A copy of ``src`` with ``changes`` in its metadata, resealed (its checksum updated) so
    that the checks behind the checksum are reached."""
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w") as zout:
        for item in zin.infolist():
            data = zin.read(item.filename)
            if item.filename == "metadata.json":
                meta = json.loads(data)
                meta.update(changes)
                data = json.dumps(seal(meta)).encode()
            zout.writestr(item, data)


@pytest.mark.parametrize("change, message", [
    ({"mlcir_version": "0.0.1"}, r"saved by mlcir 0\.0\.1, this is mlcir .* \(recompile the model\)"),
    ({"format_version": FORMAT_VERSION + 1},
     rf"saved-model format version {FORMAT_VERSION + 1}; this mlcir reads version {FORMAT_VERSION}"),
    ({"format": "something-else"}, r"not an mlcir model \(metadata.json does not say"),
    ({"platform": {"system": "Linux", "machine": "riscv64"}},
     r"compiled for riscv64 \(Linux\), this machine is"),
    ({"functions": "main"}, r"metadata.json is corrupt \(no valid 'functions'\)"),
    ({"cpu_features": ["avx2", "avx_from_the_future"]},
     r"compiled for a CPU with avx_from_the_future, which this CPU lacks"),
])
def test_incompatible_metadata_is_refused(tmp_path, saved_mlp, change, message):
    bad = tmp_path / "bad.mlcir"
    _rewrite_metadata(saved_mlp, bad, **change)
    with pytest.raises(LoadError, match=rf"bad\.mlcir: {message}"):
        mlcir.load(bad)


def test_truncated_file_is_refused(tmp_path, saved_mlp):
    data = saved_mlp.read_bytes()
    bad = tmp_path / "truncated.mlcir"
    bad.write_bytes(data[:len(data) // 2])
    with pytest.raises(LoadError, match=r"truncated\.mlcir: the file is truncated or corrupt"):
        mlcir.load(bad)


def test_corrupt_library_is_refused(tmp_path, saved_mlp):
    data = bytearray(saved_mlp.read_bytes())
    with zipfile.ZipFile(saved_mlp) as archive:
        info = archive.getinfo("model.so")
    start = info.header_offset + 30 + len(info.filename) + len(info.extra)
    for i in range(start + 100, start + 110):  # inside the library
        data[i] ^= 0xFF
    bad = tmp_path / "corrupt.mlcir"
    bad.write_bytes(bytes(data))
    with pytest.raises(LoadError, match=r"corrupt\.mlcir: model\.so is truncated or corrupt"):
        mlcir.load(bad)


def test_files_that_are_not_models_are_refused(tmp_path):
    text = tmp_path / "notes.mlcir"
    text.write_text("func.func @f() { return }\n")
    with pytest.raises(LoadError, match=r"notes\.mlcir: not an mlcir model \(a saved model is a "
                                        r"zip archive"):
        mlcir.load(text)
    other_zip = tmp_path / "other.mlcir"
    with zipfile.ZipFile(other_zip, "w") as archive:
        archive.writestr("readme.txt", "hello")
    with pytest.raises(LoadError, match=r"other\.mlcir: not an mlcir model \(the archive has no "
                                        r"metadata\.json\)"):
        mlcir.load(other_zip)
    with pytest.raises(LoadError, match=r"missing\.mlcir: cannot read the file"):
        mlcir.load(tmp_path / "missing.mlcir")


def test_saving_a_model_of_an_unknown_target_is_refused_clearly():
    from dataclasses import replace

    from mlcir.runtime import Executable
    from mlcir.target import Target

    ex = Executable({}, engine=None, target=replace(Target.parse("llvm"), kind="tpu"))
    with pytest.raises(BuildError, match="saving a model compiled for 'tpu' is not supported "
                                         r"\(only 'llvm' and 'cuda' models can be saved\)"):
        ex.save("never-written.mlcir")


# -- cuda models: compiled here without a driver, checked like CPU models when loaded ----------

@pytest.fixture(scope="module")
def saved_cuda(tmp_path_factory):
    path = tmp_path_factory.mktemp("cuda") / "matmul.mlcir"
    mlcir.compile(MATMUL_MEMREF, "cuda -arch=sm_80 -format=isa", path)
    return path


def test_cuda_model_metadata(saved_cuda):
    meta = read_metadata(saved_cuda)
    assert meta["format"] == "mlcir-model" and meta["format_version"] == FORMAT_VERSION
    assert meta["target"] == "cuda -arch=sm_80 -format=isa"
    assert meta["platform"] == {"system": platform.system(), "machine": platform.machine()}
    (matmul,) = meta["functions"]
    assert [(a["name"], a["shape"], a["kind"]) for a in matmul["args"]] == [
        ("arg0", [16, 32], "input"), ("arg1", [32, 8], "input"), ("arg2", [16, 8], "inout")]
    assert meta["cuda"]["arch"] == "sm_80" and meta["cuda"]["binary_format"] == "isa"
    assert [k["name"] for k in meta["cuda"]["kernels"]] == ["matmul_matmul"]
    assert meta["cuda"]["runtime_library"] == "libmlir_cuda_runtime.so"


@pytest.mark.parametrize("change, message", [
    ({"mlcir_version": "0.0.1"},
     r"saved by mlcir 0\.0\.1, this is mlcir .* \(recompile the model\)"),
    ({"platform": {"system": "Linux", "machine": "riscv64"}},
     r"compiled for riscv64 \(Linux\), this machine is"),
    ({"cpu_features": ["avx_from_the_future"]},
     r"compiled for a CPU with avx_from_the_future, which this CPU lacks"),
    ({"cuda": None}, r"metadata\.json is corrupt \(no valid 'cuda' section\)"),
    ({"cuda": {"arch": 80}}, r"metadata\.json is corrupt \(no valid 'cuda' section\)"),
])
def test_incompatible_cuda_models_are_refused_before_the_driver_is_needed(tmp_path, saved_cuda,
                                                                          change, message):
    bad = tmp_path / "bad.mlcir"
    _rewrite_metadata(saved_cuda, bad, **change)
    with pytest.raises(LoadError, match=rf"bad\.mlcir: {message}"):
        mlcir.load(bad)


def test_corrupt_cuda_library_is_refused(tmp_path, saved_cuda):
    with zipfile.ZipFile(saved_cuda) as zin, zipfile.ZipFile(tmp_path / "bad.mlcir", "w") as zout:
        for item in zin.infolist():
            data = zin.read(item.filename)
            if item.filename == "model.so":
                data = data[:1000] + bytes(b ^ 0xFF for b in data[1000:1010]) + data[1010:]
            zout.writestr(item, data)
    with pytest.raises(LoadError, match=r"bad\.mlcir: model\.so does not match its checksum"):
        mlcir.load(tmp_path / "bad.mlcir")


@pytest.mark.skipif(cuda_available(), reason="checks what happens without a GPU")
def test_cuda_model_without_a_driver_is_a_driver_error(saved_cuda):
    with pytest.raises(mlcir.CudaDriverError, match=r"matmul\.mlcir: the model is compiled for "
                       r"'cuda -arch=sm_80 -format=isa' and needs the NVIDIA driver library "
                       r"libcuda\.so\.1, which was not found .* copy the file to a machine "
                       r"with one \(docs/cuda\.md\)"):
        mlcir.load(saved_cuda)


def test_saving_to_a_pipe_writes_through_it(tmp_path, saved_mlp, params, x):
    """A device or pipe (/dev/null, /dev/stdout) is written to, never renamed over."""
    import os
    import stat
    import threading

    pipe = tmp_path / "pipe"
    os.mkfifo(pipe)
    received = []
    reader = threading.Thread(target=lambda: received.append(pipe.read_bytes()))
    reader.start()
    mlcir.load(saved_mlp).save(pipe)
    reader.join(timeout=60)
    assert stat.S_ISFIFO(os.stat(pipe).st_mode)
    (tmp_path / "copy.mlcir").write_bytes(received[0])
    _close(mlcir.load(tmp_path / "copy.mlcir").main(x), mlp.reference(x, params))


def test_library_symbols_the_shim_cannot_name_are_refused():
    from mlcir.runtime.aot import library_shim

    shim = library_shim([("env.linear", 4), ("env.relu_1", 2)])
    assert '__asm__("_mlir_ciface_env.linear")' in shim and "mlcir_library_slot(1))(a0, a1)" in shim
    with pytest.raises(BuildError, match="library symbol 'env\"; evil' cannot be saved"):
        library_shim([('env"; evil', 1)])
