"""UMA backends (docs/uma.md): pattern matches offloaded to external C functions compiled into
the model; the calling convention as a C function records it, the Vanilla example against
onnxruntime from Python, `mlcir run` and the C runner, the BLAS backend, refusals and errors."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest
from mlir import ir
from mlir.dialects import func

import mlcir
from mlcir.cli import main as cli
from mlcir.dialects import graph
from mlcir.errors import BuildError
from mlcir.frontend import from_onnx
from mlcir.passes.patterns import is_op, wildcard
from mlcir.testing import onnx_models
from mlcir.uma import UMABackend, get_backend

ROOT = Path(__file__).resolve().parents[1]
VANILLA = ROOT / "examples" / "uma_vanilla"
VANILLA_SPEC = f"{VANILLA / 'backend.py'}:VanillaAcceleratorBackend"
sys.path.insert(0, str(VANILLA))

from run import one_conv_model, small_cnn_model  # noqa: E402

RECORDER = r"""
#include <stdio.h>
void record_f32(const float *a, const float *b, float *out, int a0, int a1, int a2, int b0,
                int b1, int o0, int o1, int o2) {
  FILE *f = fopen(RECORD_PATH, "a");
  fprintf(f, "record_f32 %d %d %d %d %d %d %d %d\na", a0, a1, a2, b0, b1, o0, o1, o2);
  for (int i = 0; i < a0 * a1 * a2; ++i) fprintf(f, " %g", a[i]);
  fprintf(f, "\nb");
  for (int i = 0; i < b0 * b1; ++i) fprintf(f, " %g", b[i]);
  fprintf(f, "\n");
  fclose(f);
  for (int i = 0; i < o0 * o1 * o2; ++i) out[i] = (float)i;
}
void record_f64(const double *x, double *y, long long n0, long long n1, long long m0,
                long long m1) {
  FILE *f = fopen(RECORD_PATH, "a");
  fprintf(f, "record_f64 %lld %lld %lld %lld\n", n0, n1, m0, m1);
  fclose(f);
  for (long long i = 0; i < n0 * n1; ++i) y[i] = 2 * x[i];
}
"""


def _tensor(dtype: ir.Type, *shape: int) -> ir.Type:
    return ir.RankedTensorType.get(list(shape), dtype)


def _recording_module() -> ir.Module:
    """main(x f32[2, 4, 3], w f32[4, 5], z f64[3, 2]) -> (matmul(permute(x), w), relu(z))."""
    ctx = mlcir.make_context()
    with ctx, ir.Location.unknown():
        module = ir.Module.create()
        f32, f64 = ir.F32Type.get(), ir.F64Type.get()
        with ir.InsertionPoint(module.body):
            fn = func.FuncOp("main", ir.FunctionType.get(
                [_tensor(f32, 2, 4, 3), _tensor(f32, 4, 5), _tensor(f64, 3, 2)],
                [_tensor(f32, 2, 3, 5), _tensor(f64, 3, 2)]))
            with ir.InsertionPoint(fn.add_entry_block()):
                x, w, z = fn.arguments
                a = graph.permute_dims(x, axes=[0, 2, 1])  # C must see it contiguous
                func.ReturnOp([graph.matmul(a, w), graph.relu(z)])
    return module


def _recorder(tmp_path: Path, name: str = "recorder") -> UMABackend:
    source = tmp_path / "recorder.c"
    source.write_text(RECORDER)

    class Recorder(UMABackend):
        target_name = name
        sources = (source,)
        cflags = (f'-DRECORD_PATH="{tmp_path / "calls.txt"}"',)

        def __init__(self) -> None:
            super().__init__()
            self.register_pattern("matmul", is_op("graph.matmul")(wildcard("a"), wildcard("b")),
                                  "record_f32")
            self.register_pattern("relu", is_op("graph.relu")(wildcard("x")), "record_f64",
                                  int_type="long long")

    return Recorder()


def test_the_calling_convention_is_inputs_outputs_then_static_sizes(tmp_path):
    rng = np.random.default_rng(0)
    x = rng.integers(-9, 9, (2, 4, 3)).astype(np.float32)
    w = rng.integers(-9, 9, (4, 5)).astype(np.float32)
    z = rng.standard_normal((3, 2))
    ex = mlcir.build(_recording_module(), backend=_recorder(tmp_path))
    assert [d.function for d in ex.partition_report.offloaded] == ["record_f32", "record_f64"]
    y, r = ex.main(x, w, z)
    np.testing.assert_array_equal(y, np.arange(30, dtype=np.float32).reshape(2, 3, 5))
    np.testing.assert_array_equal(r, 2 * z)  # f64 buffers, long long sizes
    lines = (tmp_path / "calls.txt").read_text().splitlines()
    assert lines[0] == "record_f32 2 3 4 4 5 2 3 5"  # dims of a, of b, of the output
    seen_a = np.array(lines[1].split()[1:], np.float32)
    np.testing.assert_array_equal(seen_a, np.transpose(x, (0, 2, 1)).ravel())  # row-major
    np.testing.assert_array_equal(np.array(lines[2].split()[1:], np.float32), w.ravel())
    assert lines[3] == "record_f64 3 2 3 2"

    ex.save(tmp_path / "rec.mlcir")  # the C code is linked into the saved model
    y, r = mlcir.load(tmp_path / "rec.mlcir").main(x, w, z)
    np.testing.assert_array_equal(r, 2 * z)
    assert len((tmp_path / "calls.txt").read_text().splitlines()) == 8


def test_a_missing_function_is_named_with_its_backend(tmp_path):
    source = tmp_path / "empty.c"
    source.write_text("int unrelated(void) { return 0; }\n")

    class Missing(UMABackend):
        target_name = "missing_fn"
        sources = (source,)

        def __init__(self) -> None:
            super().__init__()
            self.register_pattern("relu", is_op("graph.relu")(wildcard("x")), "not_there")

    with pytest.raises(BuildError, match=r"UMA backend 'missing_fn': function 'not_there' is "
                                         r"not defined by its sources or libraries \(.*empty\.c"):
        mlcir.build(_recording_module(), backend=Missing())


@pytest.fixture(scope="module")
def run_model(tmp_path_factory) -> Path:
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler")
    from mlcir.runtime.c_interface import c_runner_source, include_dir

    exe = tmp_path_factory.mktemp("c_runner") / "run_model"
    subprocess.run([cc, "-O2", str(c_runner_source()), f"-I{include_dir()}", "-ldl", "-o",
                    str(exe)], check=True)
    return exe


def _onnxruntime(model, x: np.ndarray) -> np.ndarray:
    return ort.InferenceSession(model.SerializeToString()).run(None, {"x": x})[0]


def test_vanilla_one_conv_runs_from_python_mlcir_run_and_c(tmp_path, run_model, capsys):
    model = one_conv_model()
    onnx_path = tmp_path / "one_conv.onnx"
    onnx_path.write_bytes(model.SerializeToString())
    x = np.random.default_rng(1).standard_normal((1, 3, 14, 14)).astype(np.float32)
    expected = _onnxruntime(model, x)
    saved = tmp_path / "one_conv.mlcir"
    assert cli(["compile", str(onnx_path), "--backend", VANILLA_SPEC, "-o", str(saved),
                "--dump-mlir", "graph", str(tmp_path / "graph.mlir"), "-q"]) == 0
    graph_stage = (tmp_path / "graph.mlir").read_text()  # the graph stage is partitioned
    assert 'graph.extern = {backend = "vanilla_accelerator", flops = 8.467200e+04 : f64, ' \
        'function = "vanilla_conv2dnchw", int_type = "int", ints = array<i64: 8, 14, 14, 3, 3, ' \
        '3>, returns = "int"}' in graph_stage
    assert "graph.extern_code = {vanilla_accelerator = {" in graph_stage
    np.testing.assert_allclose(mlcir.load(saved).main(x), expected, rtol=1e-4, atol=1e-5)

    np.savez(tmp_path / "in.npz", x=x)
    assert cli(["run", str(saved), "--inputs", str(tmp_path / "in.npz"), "--outputs",
                str(tmp_path / "out.npz")]) == 0
    capsys.readouterr()
    np.testing.assert_allclose(np.load(tmp_path / "out.npz")["y"], expected, rtol=1e-4,
                               atol=1e-5)

    so = tmp_path / "one_conv.so"
    with zipfile.ZipFile(saved) as archive:
        so.write_bytes(archive.read("model.so"))
    info = subprocess.run([run_model, so, "--info"], capture_output=True, text=True)
    assert info.returncode == 0 and "library function" not in info.stdout
    np.save(tmp_path / "x.npy", x)
    result = subprocess.run([run_model, so, "main", tmp_path / "x.npy", "-o",
                             tmp_path / "y.npy"], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    np.testing.assert_allclose(np.load(tmp_path / "y.npy"), expected, rtol=1e-4, atol=1e-5)


def test_vanilla_offloads_only_stride_1_convolutions_of_the_cnn():
    model = small_cnn_model()
    x = np.random.default_rng(2).standard_normal((1, 3, 16, 16)).astype(np.float32)
    backend = get_backend(VANILLA_SPEC)
    ex = mlcir.build(from_onnx(model), backend=backend)
    report = ex.partition_report
    assert [d.location for d in report.offloaded] == ['loc("c1")', 'loc("c3")']
    assert report.refused == []  # c2 (stride 2) is not even a match: strides=[1, 1]
    np.testing.assert_allclose(ex.main(x), _onnxruntime(model, x), rtol=1e-4, atol=1e-5)
    # Another model calling the same function at other sizes (an adapter of the same name)
    # in the same process: each engine calls its own adapter.
    other = mlcir.build(from_onnx(one_conv_model()), backend=backend)
    x1 = np.random.default_rng(6).standard_normal((1, 3, 14, 14)).astype(np.float32)
    np.testing.assert_allclose(other.main(x1), _onnxruntime(one_conv_model(), x1), rtol=1e-4,
                               atol=1e-5)
    np.testing.assert_allclose(ex.main(x), _onnxruntime(model, x), rtol=1e-4, atol=1e-5)

    profile = ex.profile(x, repeat=2)
    external = [k for k in profile.kernels if k.schedule == "external"]
    assert len(external) == 2 and all(k.seconds > 0 and k.gflops > 0 for k in external)

    from mlcir.tune import extract_tasks

    tasks = extract_tasks(from_onnx(model), "llvm", backend=backend)
    names = " ".join(t.name for t in tasks)
    assert "conv2d" in names  # c2 stays a tunable kernel ...
    assert "vanilla" not in names and len([t for t in tasks if "conv2d" in t.name]) == 1


def test_vanilla_check_refuses_with_the_reason():
    ctx = mlcir.make_context()
    with ctx, ir.Location.unknown():
        module = ir.Module.create()
        f32 = ir.F32Type.get()
        with ir.InsertionPoint(module.body):
            fn = func.FuncOp("main", ir.FunctionType.get(
                [_tensor(f32, 1, 2, 6, 6), _tensor(f32, 3, 2, 3, 3)], [_tensor(f32, 1, 3, 4, 4)]))
            with ir.InsertionPoint(fn.add_entry_block()):
                x, w = fn.arguments
                func.ReturnOp([graph.conv2d(x, w, strides=[1, 1], padding=[0, 0, 0, 0],
                                            dilation=[1, 1], groups=1)])
    ex = mlcir.build(module, backend=get_backend(VANILLA_SPEC))
    assert ex.partition_report.offloaded == []
    [refused] = ex.partition_report.refused
    assert refused.reason == "padding [0, 0, 0, 0] is not 'same' for a 3x3 kernel"
    rng = np.random.default_rng(3)
    x, w = rng.standard_normal((1, 2, 6, 6), np.float32), rng.standard_normal((3, 2, 3, 3),
                                                                               np.float32)
    np.testing.assert_allclose(ex.main(x, w), graph._np_conv2d(x, w, [1, 1], [0, 0, 0, 0],
                                                              [1, 1], 1), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("batch", [1, 4])  # one row: sgemv
def test_blas_backend_takes_the_mlp_gemms(batch, run_model, tmp_path):
    model = onnx_models.mlp(batch=batch)
    x = onnx_models.mlp_inputs(batch=batch)["x"]
    if batch == 1:  # TVM's composite target names the backend too
        ex = mlcir.build(from_onnx(model), "blas, llvm")
    else:
        ex = mlcir.build(from_onnx(model), backend="blas")
    assert [d.pattern for d in ex.partition_report.offloaded] == ["linear", "linear"]
    np.testing.assert_allclose(ex.main(x), _onnxruntime(model, x), rtol=1e-4, atol=1e-5)
    external = [k for k in ex.profile(x, repeat=2).kernels if k.schedule == "external"]
    assert sorted(k.flops for k in external) == [2 * batch * 128 * 10, 2 * batch * 784 * 128]
    ex.save(tmp_path / "mlp.mlcir")  # from C: OpenBLAS found through the library's run path
    with zipfile.ZipFile(tmp_path / "mlp.mlcir") as archive:
        (tmp_path / "mlp.so").write_bytes(archive.read("model.so"))
    np.save(tmp_path / "x.npy", x)
    result = subprocess.run([run_model, tmp_path / "mlp.so", "main", tmp_path / "x.npy", "-o",
                             tmp_path / "y.npy"], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    np.testing.assert_allclose(np.load(tmp_path / "y.npy"), _onnxruntime(model, x), rtol=1e-4,
                               atol=1e-5)


def test_blas_backend_takes_batched_and_transposed_matmuls():
    ctx = mlcir.make_context()
    with ctx, ir.Location.unknown():
        module = ir.Module.create()
        f32 = ir.F32Type.get()
        with ir.InsertionPoint(module.body):
            fn = func.FuncOp("main", ir.FunctionType.get(
                [_tensor(f32, 2, 8, 16), _tensor(f32, 2, 8, 16), _tensor(f32, 16, 4),
                 _tensor(f32, 1, 16)],
                [_tensor(f32, 2, 8, 8), _tensor(f32, 2, 8, 4), _tensor(f32, 1, 4)]))
            with ir.InsertionPoint(fn.add_entry_block()):
                q, k, w, v = fn.arguments
                scores = graph.matmul(q, graph.permute_dims(k, axes=[0, 2, 1]))
                wt = graph.permute_dims(w, axes=[1, 0])  # [4, 16]: one row against it, sgemv
                func.ReturnOp([scores, graph.matmul(q, w), graph.matmul(v, graph.permute_dims(
                    wt, axes=[1, 0]))])
    ex = mlcir.build(module, backend="blas")
    assert sorted(d.pattern for d in ex.partition_report.offloaded) == \
        ["matmul", "matmul_t", "matmul_t"]
    rng = np.random.default_rng(4)
    q, k = rng.standard_normal((2, 2, 8, 16), np.float32)
    w, v = rng.standard_normal((16, 4), np.float32), rng.standard_normal((1, 16), np.float32)
    scores, y, z = ex.main(q, k, w, v)
    np.testing.assert_allclose(scores, q @ np.transpose(k, (0, 2, 1)), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(y, q @ w, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(z, v @ w, rtol=1e-4, atol=1e-4)


def test_unknown_backend_names_the_registered_ones():
    with pytest.raises(BuildError, match=r"no UMA backend named 'nope' \(registered: .*blas"):
        get_backend("nope")
    with pytest.raises(BuildError, match=r"a composite target names one UMA backend then"):
        mlcir.build(_recording_module(), "blas, llvm", backend="blas")
    with pytest.raises(BuildError, match=r"target 'cuda.*': UMA backends' C functions run on "
                                         r"the CPU"):
        mlcir.compile(_recording_module(), "cuda", "never.mlcir", backend="blas")


@pytest.mark.qemu
def test_vanilla_cross_compiles_its_c_for_aarch64_and_runs_under_qemu(tmp_path):
    from mlcir.targets.cross import remote

    model = small_cnn_model()
    x = np.random.default_rng(5).standard_normal((1, 3, 16, 16)).astype(np.float32)
    saved = mlcir.compile(from_onnx(model), "llvm -mtriple=aarch64-linux-gnu",
                          tmp_path / "cnn_arm.mlcir", backend=get_backend(VANILLA_SPEC))
    with zipfile.ZipFile(saved.path) as archive:
        elf = archive.read("model.so")
    assert int.from_bytes(elf[18:20], "little") == 183  # EM_AARCH64
    assert b"vanilla_conv2dnchw" in elf
    foreign = remote.foreign_model(saved.path)
    [y] = remote.run_foreign(foreign, "main", [x]).values()
    np.testing.assert_allclose(y, _onnxruntime(model, x), rtol=1e-4, atol=1e-5)


def test_cpp_sources_and_int64_sizes(tmp_path):
    source = tmp_path / "relu.cpp"
    source.write_text('#include <algorithm>\n#include <cstdint>\n#include <vector>\n'
                      'extern "C" void cpp_relu(const double *x, double *y, int64_t n0, '
                      'int64_t n1, int64_t, int64_t) {\n'
                      '  std::vector<double> v(x, x + n0 * n1);\n'
                      '  for (auto &e : v) e = std::max(e, 0.0);\n'
                      '  std::copy(v.begin(), v.end(), y);\n}\n')

    class Cpp(UMABackend):
        target_name = "cpp"
        sources = (source,)

        def __init__(self) -> None:
            super().__init__()
            self.register_pattern("relu", is_op("graph.relu")(wildcard("x")), "cpp_relu",
                                  int_type="int64_t")

    ex = mlcir.build(_recording_module(), backend=Cpp())
    assert [d.function for d in ex.partition_report.offloaded] == ["cpp_relu"]
    z = np.random.default_rng(8).standard_normal((3, 2))
    x, w = np.ones((2, 4, 3), np.float32), np.ones((4, 5), np.float32)
    y, r = ex.main(x, w, z)
    np.testing.assert_array_equal(r, np.maximum(z, 0))
    np.testing.assert_allclose(y, np.full((2, 3, 5), 4, np.float32))


def test_blas_backend_takes_1x1_convolutions():
    ctx = mlcir.make_context()
    with ctx, ir.Location.unknown():
        module = ir.Module.create()
        f32 = ir.F32Type.get()
        with ir.InsertionPoint(module.body):
            fn = func.FuncOp("main", ir.FunctionType.get(
                [_tensor(f32, 2, 8, 5, 6), _tensor(f32, 4, 8, 1, 1), _tensor(f32, 4, 4, 3, 3)],
                [_tensor(f32, 2, 4, 3, 4)]))
            with ir.InsertionPoint(fn.add_entry_block()):
                x, w1, w3 = fn.arguments
                y = graph.conv2d(x, w1, strides=[1, 1], padding=[0, 0, 0, 0], dilation=[1, 1],
                                 groups=1)
                func.ReturnOp([graph.conv2d(y, w3, strides=[1, 1], padding=[0, 0, 0, 0],
                                            dilation=[1, 1], groups=1)])
    ex = mlcir.build(module, backend="blas")
    assert [d.pattern for d in ex.partition_report.offloaded] == ["conv1x1"]
    assert [d.reason for d in ex.partition_report.refused] == [
        "conv1x1: a 3x3 kernel is not 1x1"]
    rng = np.random.default_rng(9)
    x = rng.standard_normal((2, 8, 5, 6), np.float32)
    w1, w3 = rng.standard_normal((4, 8, 1, 1), np.float32), rng.standard_normal((4, 4, 3, 3),
                                                                                 np.float32)
    y = graph._np_conv2d(x, w1, [1, 1], [0, 0, 0, 0], [1, 1], 1)
    np.testing.assert_allclose(ex.main(x, w1, w3), graph._np_conv2d(
        y, w3, [1, 1], [0, 0, 0, 0], [1, 1], 1), rtol=1e-4, atol=1e-4)
