"""The ``mlcir`` console script, run in subprocesses: compile → run against onnxruntime, filled
inputs, timings, error messages and exit codes, help texts, tune → compile with records; and
the one-file records format it writes."""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

import mlcir
from mlcir.cli import make_parser
from mlcir.runtime.model_file import read_metadata
from mlcir.testing import mlp, onnx_models
from mlcir.testing.hardware import cuda_available

MLCIR = Path(sys.executable).with_name("mlcir")


def run_cli(*args: str, cwd: Path | None = None, check: bool = True) -> subprocess.CompletedProcess:
    result = subprocess.run([str(MLCIR), *map(str, args)], capture_output=True, text=True,
                            cwd=cwd, timeout=600)
    if check:
        assert result.returncode == 0, f"mlcir {' '.join(map(str, args))}:\n{result.stderr}"
    return result


def error_of(result: subprocess.CompletedProcess) -> str:
    """The one-line error a failed command printed (and nothing like a traceback)."""
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert lines[0].startswith("mlcir: error: "), result.stderr
    return result.stderr.strip()


@pytest.fixture(scope="module")
def mlp_onnx(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("models") / "mlp.onnx"
    onnx.save(onnx_models.mlp(), path)
    return path


@pytest.fixture(scope="module")
def compiled(mlp_onnx) -> Path:
    output = mlp_onnx.with_name("mlp.mlcir")
    run_cli("compile", mlp_onnx, "-o", output)
    return output


def _reference(model_path: Path, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    return onnx_models.reference(str(model_path), inputs)


def _close(got, want):
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5 * max(np.abs(want).max(), 1))


def test_console_script_is_installed():
    assert MLCIR.exists(), f"{MLCIR} missing: is mlcir installed in this environment?"
    out = run_cli("--version").stdout
    assert re.fullmatch(rf"mlcir {re.escape(mlcir.__version__)} \(MLIR [\d.]+\)\n", out)


def test_compile_then_run_matches_onnxruntime(tmp_path, mlp_onnx, compiled):
    inputs = onnx_models.mlp_inputs(seed=3)
    np.savez(tmp_path / "in.npz", **inputs)
    result = run_cli("run", compiled, "--inputs", tmp_path / "in.npz",
                     "--outputs", tmp_path / "out.npz")
    with np.load(tmp_path / "out.npz") as out:
        assert out.files == ["logits"]
        logits = out["logits"]
    want = _reference(mlp_onnx, inputs)["logits"]
    _close(logits, want)
    # The summary: name, dtype and shape, min/max/mean, the top-5 classes (largest first).
    summary = re.search(r"^logits: float32\[1, 10\]  min (\S+)  max (\S+)  mean (\S+)$",
                        result.stdout, re.M)
    assert summary, result.stdout
    np.testing.assert_allclose([float(v) for v in summary.groups()],
                               [want.min(), want.max(), want.mean()], rtol=1e-4, atol=1e-5)
    top = re.search(r"^  top-5: (.*)$", result.stdout, re.M).group(1)
    assert [int(i) for i in re.findall(r"(\d+) \(", top)] == list(np.argsort(-want[0])[:5])
    # Two OpenMP threads at run time: the same numbers.
    run_cli("run", compiled, "--inputs", tmp_path / "in.npz", "--threads", 2,
            "--outputs", tmp_path / "out2.npz")
    with np.load(tmp_path / "out2.npz") as out:
        np.testing.assert_array_equal(out["logits"], logits)


def test_symbolic_batch_fixed_by_input_shapes(tmp_path):
    model = tmp_path / "mlp_n.onnx"
    onnx.save(onnx_models.mlp(batch="N"), model)
    run_cli("compile", model, "--input-shapes", "x:[3,784]", "-o", tmp_path / "b3.mlcir")
    inputs = onnx_models.mlp_inputs(batch=3, seed=1)
    np.savez(tmp_path / "in.npz", **inputs)
    run_cli("run", tmp_path / "b3.mlcir", "--inputs", tmp_path / "in.npz",
            "--outputs", tmp_path / "out.npz")
    with np.load(tmp_path / "out.npz") as out:
        _close(out["logits"], _reference(model, inputs)["logits"])


def test_fill_mode_random_is_seeded_and_fills_only_missing_inputs(tmp_path, compiled):
    outs = []
    for seed in (7, 7, 8):
        run_cli("run", compiled, "--fill-mode", "random", "--seed", seed,
                "--outputs", tmp_path / f"out{len(outs)}.npz")
        with np.load(tmp_path / f"out{len(outs)}.npz") as out:
            outs.append(out["logits"])
    np.testing.assert_array_equal(outs[0], outs[1])
    assert not np.allclose(outs[0], outs[2])
    # The graph-level MLP takes its weights as inputs: give x, fill the weights with zeros.
    graph = tmp_path / "mlp_graph.mlir"
    graph.write_text(str(mlp.build_module("compiled")))
    run_cli("compile", graph, "-o", tmp_path / "graph.mlcir")
    x = onnx_models.mlp_inputs()["x"]
    np.savez(tmp_path / "x.npz", x=x)
    run_cli("run", tmp_path / "graph.mlcir", "--inputs", tmp_path / "x.npz",
            "--fill-mode", "zeros", "--outputs", tmp_path / "zero.npz")
    with np.load(tmp_path / "zero.npz") as out:
        np.testing.assert_array_equal(out["output0"], np.zeros((1, 10), np.float32))
    run_cli("run", tmp_path / "graph.mlcir", "--inputs", tmp_path / "x.npz",
            "--fill-mode", "ones", "--outputs", tmp_path / "ones.npz")
    ones = {k: np.ones(s, np.float32) for k, s in mlp.SHAPES.items()}
    with np.load(tmp_path / "ones.npz") as out:
        _close(out["output0"], mlp.reference(x, ones))


def test_print_time_output_format(compiled):
    out = run_cli("run", compiled, "--fill-mode", "zeros", "--print-time", "--repeat", 4,
                  "--number", 2).stdout
    lines = out.splitlines()
    i = lines.index("Execution time summary:")
    assert lines[i + 1].split() == ["mean", "(ms)", "median", "(ms)", "max", "(ms)", "min",
                                    "(ms)", "std", "(ms)"]
    mean, median, maximum, minimum, std = map(float, lines[i + 2].split())
    assert 0 < minimum <= median <= maximum and minimum <= mean <= maximum and std >= 0


def test_shape_mismatch_is_a_one_line_error(tmp_path, compiled):
    np.savez(tmp_path / "bad.npz", x=np.zeros((1, 783), np.float32))
    message = error_of(run_cli("run", compiled, "--inputs", tmp_path / "bad.npz", check=False))
    assert message == ("mlcir: error: argument 'x': expected shape float32[1, 784], got "
                       "float32[1, 783]")
    np.savez(tmp_path / "f64.npz", x=np.zeros((1, 784), np.float64))
    message = error_of(run_cli("run", compiled, "--inputs", tmp_path / "f64.npz", check=False))
    assert "argument 'x': expected dtype float32, got float64" in message


def test_unknown_and_missing_inputs_are_listed(tmp_path, compiled):
    np.savez(tmp_path / "unknown.npz", x=np.zeros((1, 784), np.float32), y=np.zeros(3))
    message = error_of(run_cli("run", compiled, "--inputs", tmp_path / "unknown.npz", check=False))
    assert "unknown input(s) y; main() takes x" in message
    message = error_of(run_cli("run", compiled, check=False))
    assert "missing input(s) x (expected x: float32[1, 784]); pass --fill-mode" in message


def test_errors_are_one_line_with_status_1(tmp_path, mlp_onnx):
    message = error_of(run_cli("compile", tmp_path / "nope.onnx", check=False))
    assert message == f"mlcir: error: {tmp_path / 'nope.onnx'}: no such file"
    message = error_of(run_cli("compile", mlp_onnx, "--target", "llvm -threads=x",
                               "-o", tmp_path / "m.mlcir", check=False))
    assert message.startswith("mlcir: error: bad target 'llvm -threads=x'")
    message = error_of(run_cli("compile", mlp_onnx, "--target", "tpu", check=False))
    assert "bad target 'tpu'" in message and "llvm, cuda" in message
    message = error_of(run_cli("run", mlp_onnx, check=False))
    assert f"{mlp_onnx}: not an mlcir model" in message
    assert not (tmp_path / "m.mlcir").exists()


def test_unsupported_onnx_ops_are_listed(tmp_path):
    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["r"], name="relu0"),
         helper.make_node("Det", ["r"], ["y"], name="det0")], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [])])
    model = tmp_path / "det.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), model)
    message = error_of(run_cli("compile", model, check=False))
    assert "det0" in message and "Det" in message
    assert not (tmp_path / "det.mlcir").exists()


def test_compile_mlir_input_and_dump_every_stage(tmp_path, mlp_onnx):
    out = run_cli("compile", mlp_onnx, "-o", tmp_path / "m.mlcir", "--dump-mlir", "graph", "-",
                  "--dump-mlir", "kernels", tmp_path / "kernels.mlir",
                  "--dump-mlir", "llvm", tmp_path / "llvm.mlir").stdout
    assert '"graph.matmul"' in out and 'graph.name = "logits"' in out
    kernels = (tmp_path / "kernels.mlir").read_text()
    assert "loop.kernel" in kernels and "linalg." in kernels and "graph.matmul" not in kernels
    llvm = (tmp_path / "llvm.mlir").read_text()
    assert "llvm.func @_mlir_ciface_main" in llvm and "linalg." not in llvm
    # The dumped graph compiles again as an .mlir model, to the same numbers.
    (tmp_path / "graph.mlir").write_text(out)
    run_cli("compile", tmp_path / "graph.mlir", "-o", tmp_path / "again.mlcir")
    inputs = onnx_models.mlp_inputs(seed=5)
    np.savez(tmp_path / "in.npz", **inputs)
    run_cli("run", tmp_path / "again.mlcir", "--inputs", tmp_path / "in.npz",
            "--outputs", tmp_path / "out.npz")
    with np.load(tmp_path / "out.npz") as result:
        _close(result["logits"], _reference(mlp_onnx, inputs)["logits"])


def test_compile_for_cuda_needs_no_gpu_and_run_names_the_driver(tmp_path, mlp_onnx):
    output = tmp_path / "m.mlcir"
    result = run_cli("compile", mlp_onnx, "--target", "cuda -arch=sm_80", "-o", output)
    assert re.fullmatch(rf"mlcir: compiled {re.escape(str(mlp_onnx))} for 'cuda -arch=sm_80' "
                        r"\((PTX|cubin) for sm_80; it runs on a machine with an NVIDIA GPU and "
                        rf"its driver\) into {re.escape(str(output))}: <mlcir\.Function "
                        r"main\(x: float32\[1, 784\]\) -> \(float32\[1, 10\]\)>\n",
                        result.stderr), result.stderr
    meta = read_metadata(output)
    assert meta["target"] == "cuda -arch=sm_80" and meta["cuda"]["arch"] == "sm_80"
    assert [a["name"] for a in meta["functions"][0]["args"]] == ["x"]
    if cuda_available():
        pytest.skip("a GPU is here: test_gpu_cli_compile_then_run_cuda_matches_onnxruntime")
    failed = run_cli("run", output, "--fill-mode", "random", check=False)
    message = error_of(failed)
    assert len(message.splitlines()) == 1 and failed.stdout == ""
    assert message.startswith(f"mlcir: error: {output}: the model is compiled for 'cuda "
                              "-arch=sm_80' and needs the NVIDIA driver library libcuda.so.1, "
                              "which was not found")


def test_tune_for_cuda_without_a_gpu_fails_fast_naming_the_driver(tmp_path, mlp_onnx):
    if cuda_available():
        pytest.skip("a GPU is here: tuning for cuda would run")
    failed = run_cli("tune", mlp_onnx, "--target", "cuda", "--trials", "4",
                     "-o", tmp_path / "records.json", check=False)
    message = error_of(failed)
    assert failed.returncode == 1 and len(message.splitlines()) == 1
    assert message.startswith("mlcir: error: tuning for cuda needs the NVIDIA driver library "
                              "libcuda.so.1, which was not found")
    assert not (tmp_path / "records.json").exists()


@pytest.mark.gpu
def test_gpu_cli_compile_then_run_cuda_matches_onnxruntime(tmp_path, mlp_onnx):
    from mlcir.targets.cuda import device_capability

    arch = "sm_%d%d" % device_capability()
    for target in (f"cuda -arch={arch}", "cuda -arch=sm_80 -format=isa"):
        run_cli("compile", mlp_onnx, "--target", target, "-o", tmp_path / "m.mlcir")
        inputs = onnx_models.mlp_inputs(seed=4)
        np.savez(tmp_path / "in.npz", **inputs)
        run_cli("run", tmp_path / "m.mlcir", "--inputs", tmp_path / "in.npz",
                "--outputs", tmp_path / "out.npz", "--print-time", "--repeat", 2)
        with np.load(tmp_path / "out.npz") as out:
            _close(out["logits"], _reference(mlp_onnx, inputs)["logits"])


def _subcommands() -> dict[str, argparse.ArgumentParser]:
    parser = make_parser()
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(action.choices)


@pytest.mark.parametrize("command", ["compile", "run", "tune"])
def test_help_documents_every_option(command):
    sub = _subcommands()[command]
    text = run_cli(command, "--help").stdout
    for action in sub._actions:
        assert action.help and action.help != argparse.SUPPRESS, action
        for option in action.option_strings:
            assert re.search(rf"(^|[\s,]){re.escape(option)}\b", text), (option, text)
    assert run_cli("--help").stdout.count("compile") >= 1


def test_tune_then_compile_with_the_records_file(tmp_path, mlp_onnx, compiled):
    records = tmp_path / "records.json"
    run_cli("tune", mlp_onnx, "--trials", 4, "--trials-per-round", 2, "--quiet",
            "--work-dir", tmp_path / "work", "-o", records)
    lines = [json.loads(line) for line in records.read_text().splitlines()]
    kinds = [line["kind"] for line in lines]
    assert kinds[0] == "workload" and "record" in kinds
    assert all(line["version"] == 1 for line in lines)
    assert all(line["target"] == "llvm" for line in lines if line["kind"] == "record")
    run_cli("compile", mlp_onnx, "--tuning-records", records, "-o", tmp_path / "tuned.mlcir")
    inputs = onnx_models.mlp_inputs(seed=9)
    np.savez(tmp_path / "in.npz", **inputs)
    outs = {}
    for name, model in (("tuned", tmp_path / "tuned.mlcir"), ("plain", compiled)):
        run_cli("run", model, "--inputs", tmp_path / "in.npz", "--outputs", tmp_path / f"{name}.npz")
        with np.load(tmp_path / f"{name}.npz") as out:
            outs[name] = out["logits"]
    _close(outs["tuned"], outs["plain"])
    _close(outs["tuned"], _reference(mlp_onnx, inputs)["logits"])
    # The file really schedules kernels, through the Python API as well.
    from mlcir.frontend import from_onnx
    from mlcir.driver import staged_module

    staged = staged_module(from_onnx(str(mlp_onnx)), "llvm", records=str(records),
                           schedule="none", until="scheduled")
    assert set(staged.schedule_sources.values()) == {"record"}
    ex = mlcir.build(from_onnx(str(mlp_onnx)), records=str(records))
    _close(ex.main(inputs["x"]), outs["plain"])
    # Records of another target key are not applied, and the user is told.
    other = run_cli("compile", mlp_onnx, "--tuning-records", records, "--target",
                    "llvm -threads=2", "-o", tmp_path / "other.mlcir")
    assert ("mlcir: warning: --tuning-records " + str(records) + ": no record for target "
            "'llvm -threads=2' (records for: llvm)") in other.stderr


# -- the records file --------------------------------------------------------------------------

KERNEL = """
func.func @main(%a: tensor<4x8xf32>, %b: tensor<8x4xf32>, %c: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %0 = linalg.matmul ins(%a, %b : tensor<4x8xf32>, tensor<8x4xf32>) outs(%c : tensor<4x4xf32>) -> tensor<4x4xf32>
  return %0 : tensor<4x4xf32>
}
"""


def _database(tmp_path):
    from mlcir.ir import make_context, parse
    from mlcir.tune.database import Database, Record

    with make_context():
        kernel = parse(KERNEL)
        db = Database(tmp_path / "work")
        w = db.commit_workload(kernel, "matmul")
    for target, secs in (("llvm", [3.0]), ("llvm", [1.0]), ("llvm", None),
                         ("llvm -threads=2", [2.0])):
        db.commit_record(Record(w.hash, target, {"insts": [], "decisions": {}, "secs": secs},
                                run_secs=secs, error=None if secs else "build: failed"))
    return db, w


def test_export_keeps_the_best_record_per_target(tmp_path):
    from mlcir.tune.apply import as_database
    from mlcir.tune.records_file import RecordsFile, export_best_records

    db, w = _database(tmp_path)
    assert export_best_records(db, tmp_path / "records.json") == (1, 2)
    read = as_database(tmp_path / "records.json")
    assert isinstance(read, RecordsFile)
    assert read.workloads[w.hash].text == w.text
    assert read.best(w.hash, "llvm")[0].run_secs == [1.0]
    assert read.best(w.hash, "llvm -threads=2")[0].run_secs == [2.0]
    assert len(read) == 2
    with pytest.raises(ValueError, match="read-only records file"):
        read.commit_record(read.best(w.hash, "llvm")[0])
    # A work_dir and its database/records.json still mean the database itself.
    assert len(as_database(tmp_path / "work")) == 4
    assert len(as_database(tmp_path / "work" / "database" / "records.json")) == 4


def test_records_file_reports_corrupt_lines_and_refuses_other_files(tmp_path):
    from mlcir.tune.database import DatabaseError
    from mlcir.tune.records_file import RecordsFile, export_best_records

    db, w = _database(tmp_path)
    path = tmp_path / "records.json"
    export_best_records(db, path)
    lines = path.read_text().splitlines()
    path.write_text("\n".join(lines[:2] + ['{"kind": "record", "version": 1, "workl'] + lines[2:])
                    + "\n")
    with pytest.warns(RuntimeWarning, match=rf"{re.escape(str(path))}:3: skipped a corrupt or "
                                            r"truncated line"):
        read = RecordsFile(path)
    assert len(read) == 2 and len(read.problems) == 1
    other = tmp_path / "model.onnx"
    other.write_bytes(b"\x08\x07\x12\x04onnx")
    with pytest.raises(DatabaseError, match=r"model\.onnx:1: not a tuning-records file"):
        RecordsFile(other)
    newer = tmp_path / "newer.json"
    newer.write_text(json.dumps({"kind": "workload", "version": 99}) + "\n")
    with pytest.raises(DatabaseError, match=r"newer\.json:1: tuning records of schema version 99; "
                                            r"this mlcir reads version 1"):
        RecordsFile(newer)


def test_cli_reports_a_bad_records_file(tmp_path, mlp_onnx):
    bad = tmp_path / "records.json"
    bad.write_text("hello\n")
    message = error_of(run_cli("compile", mlp_onnx, "--tuning-records", bad,
                               "-o", tmp_path / "m.mlcir", check=False))
    assert f"{bad}:1: not a tuning-records file" in message
    message = error_of(run_cli("compile", mlp_onnx, "--tuning-records", tmp_path / "nowhere",
                               "-o", tmp_path / "m.mlcir", check=False))
    assert "--tuning-records: no tuning database in" in message
