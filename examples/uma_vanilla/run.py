"""TVM's UMA "Vanilla" tutorial with mlcir (docs/uma.md): a backend whose one C function
computes stride-1 convolutions, on a one-convolution model and a small CNN whose stride-2
convolution stays with mlcir; each result checked against onnxruntime, then the saved model run
from Python, from `mlcir run` and from the C runner (no Python).

    python examples/uma_vanilla/run.py [--work-dir uma_vanilla]
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import mlcir  # noqa: E402
from backend import VanillaAcceleratorBackend  # noqa: E402
from mlcir.frontend import from_onnx  # noqa: E402


def _conv(name: str, x: str, cin: int, cout: int, stride: int, rng, inits: list) -> onnx.NodeProto:
    w = rng.standard_normal((cout, cin, 3, 3)).astype(np.float32) * 0.3
    b = rng.standard_normal(cout).astype(np.float32) * 0.1
    inits += [numpy_helper.from_array(w, f"{name}_w"), numpy_helper.from_array(b, f"{name}_b")]
    return helper.make_node("Conv", [x, f"{name}_w", f"{name}_b"], [name], name=name,
                            pads=[1, 1, 1, 1], strides=[stride, stride])


def one_conv_model(seed: int = 0) -> onnx.ModelProto:
    """The tutorial's model: one 3x3 stride-1 convolution, x [1, 3, 14, 14] -> y [1, 8, 14, 14]."""
    rng, inits = np.random.default_rng(seed), []
    node = _conv("y", "x", 3, 8, 1, rng, inits)
    graph = helper.make_graph([node], "one_conv",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 14, 14])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8, 14, 14])],
                              inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def small_cnn_model(seed: int = 1) -> onnx.ModelProto:
    """conv s1 -> relu -> conv s2 -> relu -> conv s1 -> relu -> global average pool: the two
    stride-1 convolutions are offloaded, the stride-2 one stays with mlcir."""
    rng, inits = np.random.default_rng(seed), []
    nodes = [_conv("c1", "x", 3, 8, 1, rng, inits), helper.make_node("Relu", ["c1"], ["r1"]),
             _conv("c2", "r1", 8, 16, 2, rng, inits), helper.make_node("Relu", ["c2"], ["r2"]),
             _conv("c3", "r2", 16, 16, 1, rng, inits), helper.make_node("Relu", ["c3"], ["r3"]),
             helper.make_node("GlobalAveragePool", ["r3"], ["y"])]
    graph = helper.make_graph(nodes, "small_cnn",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 16, 16])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 16, 1, 1])],
                              inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def mlcir_command() -> list[str]:
    script = Path(sys.executable).with_name("mlcir")
    return [str(script)] if script.exists() else [sys.executable, "-m", "mlcir.cli"]


def build_c_runner(folder: Path) -> Path:
    """run_model.c built as docs/deploy.md says."""
    from mlcir.runtime.c_interface import c_runner_source, include_dir

    cc = shutil.which("cc") or shutil.which("gcc")
    exe = folder / "run_model"
    subprocess.run([cc, "-O2", str(c_runner_source()), f"-I{include_dir()}", "-ldl", "-o",
                    str(exe)], check=True)
    return exe


def run(model: onnx.ModelProto, name: str, work: Path, runner: Path) -> None:
    x = np.random.default_rng(7).standard_normal(
        [d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim]).astype(np.float32)
    expected = ort.InferenceSession(model.SerializeToString()).run(None, {"x": x})[0]

    backend = VanillaAcceleratorBackend()
    ex = mlcir.build(from_onnx(model), "llvm", backend=backend)
    print(f"\n== {name}\n{ex.partition_report}")
    y = ex.main(x)
    print(f"python:  max |mlcir - onnxruntime| = {np.abs(y - expected).max():.2e}")
    np.testing.assert_allclose(y, expected, rtol=1e-4, atol=1e-4)

    saved = work / f"{name}.mlcir"
    ex.save(saved)
    y = mlcir.load(saved).main(x)
    print(f"loaded:  max |mlcir - onnxruntime| = {np.abs(y - expected).max():.2e}")
    np.testing.assert_allclose(y, expected, rtol=1e-4, atol=1e-4)

    np.savez(work / "inputs.npz", x=x)
    subprocess.run(mlcir_command() + ["run", str(saved), "--inputs", str(work / "inputs.npz"),
                                      "--outputs", str(work / "outputs.npz")], check=True)
    y = np.load(work / "outputs.npz")["y"]
    print(f"mlcir run: max |mlcir - onnxruntime| = {np.abs(y - expected).max():.2e}")
    np.testing.assert_allclose(y, expected, rtol=1e-4, atol=1e-4)

    so = work / f"{name}.so"
    with zipfile.ZipFile(saved) as archive:
        so.write_bytes(archive.read("model.so"))
    info = subprocess.run([str(runner), str(so), "--info"], capture_output=True, text=True,
                          check=True).stdout
    print("run_model --info:\n  " + info.strip().replace("\n", "\n  "))
    assert "library function" not in info
    np.save(work / "x.npy", x)
    subprocess.run([str(runner), str(so), "main", str(work / "x.npy"), "-o",
                    str(work / "y.npy")], check=True)
    y = np.load(work / "y.npy")
    print(f"C runner: max |mlcir - onnxruntime| = {np.abs(y - expected).max():.2e}")
    np.testing.assert_allclose(y, expected, rtol=1e-4, atol=1e-4)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work-dir", default="uma_vanilla", type=Path)
    args = parser.parse_args(argv)
    args.work_dir.mkdir(parents=True, exist_ok=True)
    runner = build_c_runner(args.work_dir)
    run(one_conv_model(), "one_conv", args.work_dir, runner)
    run(small_cnn_model(), "small_cnn", args.work_dir, runner)
    return 0


if __name__ == "__main__":
    sys.exit(main())
