"""Bad inputs at every surface, each refused with an mlcir error that names the input, the value
and what is allowed (no crash, hang, silent acceptance or raw traceback); and valid-but-odd
inputs (NaN/inf, non-contiguous or read-only arrays, float16/int8/int64 end to end) that must
compute correctly.

Organised by surface: CLI compile, CLI run, CLI tune, Python build/call/load, Python tune,
ONNX import, mlcir-opt, trace JSON, database files, saved models, odd-but-valid inputs. The CLI
cases run ``mlcir.cli.main`` in this process (cheap); a few run the console script to check
that a real process prints one line and no traceback.
"""

from __future__ import annotations

import json
import re
import os
import signal
import subprocess
import sys
import tempfile
import warnings
import zipfile
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import mlcir
from mlcir.cli import main as cli_main
from mlcir.errors import (FrontendError, LoadError, MlcirError, RuntimeInputError, TargetError,
                          TuningError)
from mlcir.frontend import from_onnx
from mlcir.schedule import Trace
from mlcir.schedule.errors import ScheduleError
from mlcir.testing import kernels
from mlcir.transform import TransformError
from mlcir.tune.database import Database, DatabaseError
from mlcir.tune.records_file import RecordsFile

MLCIR = Path(sys.executable).with_name("mlcir")
INPUTS = Path(__file__).parents[1] / "lit_tests" / "schedule" / "Inputs"


# -- models shared by the cases ------------------------------------------------------------------

def _add_model(dtype: int = TensorProto.FLOAT, shape=(2, 3)) -> onnx.ModelProto:
    """``w = -(x + y)``: two inputs, one output, of one element type."""
    graph = helper.make_graph(
        [helper.make_node("Add", ["x", "y"], ["z"]), helper.make_node("Neg", ["z"], ["w"])], "g",
        [helper.make_tensor_value_info("x", dtype, list(shape)),
         helper.make_tensor_value_info("y", dtype, list(shape))],
        [helper.make_tensor_value_info("w", dtype, list(shape))])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


@pytest.fixture(scope="module")
def models(tmp_path_factory) -> Path:
    """A folder with add.onnx, its compiled add.mlcir, a 3.5 PiB-input model and inputs."""
    folder = tmp_path_factory.mktemp("bad-inputs")
    onnx.save(_add_model(), folder / "add.onnx")
    mlcir.compile(from_onnx(str(folder / "add.onnx")), "llvm", folder / "add.mlcir")
    onnx.save(_add_model(shape=(2**20, 2**20, 896)), folder / "huge.onnx")
    mlcir.compile(from_onnx(str(folder / "huge.onnx")), "llvm", folder / "huge.mlcir")
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    np.savez(folder / "good.npz", x=x, y=np.ones((2, 3), np.float32))
    return folder


@pytest.fixture(scope="module")
def add(models) -> mlcir.Executable:
    return mlcir.load(models / "add.mlcir")


def cli_error(capsys, *args) -> str:
    """Run ``mlcir ARGS`` in this process; it must fail with status 1 and one ``mlcir: error:``
    line (and no traceback). Returns the message."""
    status = cli_main([str(a) for a in args])
    err = capsys.readouterr().err
    assert status == 1, err
    assert "Traceback" not in err
    lines = [line for line in err.strip().splitlines() if not line.startswith("mlcir: warning")]
    assert lines and lines[0].startswith("mlcir: error: "), err
    return "\n".join(lines)[len("mlcir: error: "):]


def _rewrite_member(src: Path, dst: Path, member: str, edit) -> None:
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w") as zout:
        for item in zin.infolist():
            data = zin.read(item.filename)
            zout.writestr(item, edit(data) if item.filename == member else data)


def _edit_metadata(change):
    def edit(data: bytes) -> bytes:
        meta = json.loads(data)
        change(meta)
        return json.dumps(meta).encode()
    return edit


# -- CLI: compile --------------------------------------------------------------------------------

BAD_TARGETS = [
    ("llvm -opt-level=9", r"-opt-level.*9"),
    ("llvm -opt-level=-1", r"-opt-level.*-1"),
    ("llvm -threads=-2", r"-threads.*-2"),
    ("llvm -threads=abc", r"-threads.*abc"),
    ("llvm -thread=2", r"thread"),
    ("llvm -bogus=1", r"bogus"),
    ("tpu", r"tpu"),
    ("", r"target"),
    ("llvm -opt-level", r"opt-level"),
]


@pytest.mark.parametrize("target, words", BAD_TARGETS)
def test_cli_compile_refuses_a_bad_target(capsys, models, tmp_path, target, words):
    message = cli_error(capsys, "compile", models / "add.onnx", "--target", target,
                        "-o", tmp_path / "m.mlcir")
    assert "bad target" in message
    assert re.search(words, message), message
    assert not (tmp_path / "m.mlcir").exists()


@pytest.mark.parametrize("target, words", BAD_TARGETS + [
    ("llvm -threads=99999999999999999999", "is too large"),
    (123, "got int 123"),
    (None, "got NoneType None"),
])
def test_python_build_refuses_a_bad_target(target, words):
    with pytest.raises(TargetError) as info:
        mlcir.build(kernels.matmul(4, 4, 4)[0], target)
    assert re.search(words, str(info.value)), info.value


@pytest.mark.parametrize("source, words", [
    ("func.func @main( {{", "error"),
    ("", "no public function"),
])
def test_python_build_refuses_bad_mlir(source, words):
    with pytest.raises(MlcirError) as info:
        mlcir.build(source, "llvm")
    assert words in str(info.value)


def test_python_build_refuses_missing_records(tmp_path):
    with pytest.raises(DatabaseError, match=r"no tuning database in .*nowhere"):
        mlcir.build(kernels.matmul(4, 4, 4)[0], "llvm", records=tmp_path / "nowhere")


def _compile_case(tmp_path: Path, models: Path, name: str) -> tuple[list, str]:
    """The arguments and the expected message words of one bad `mlcir compile`."""
    bad = tmp_path / "bad"
    if name == "missing-model":
        return ["compile", tmp_path / "nope.onnx"], "nope.onnx: no such file"
    if name == "model-is-a-directory":
        (tmp_path / "dir.onnx").mkdir()
        return ["compile", tmp_path / "dir.onnx"], "no such file"
    if name == "unknown-extension":
        (tmp_path / "m.txt").write_text("x")
        return ["compile", tmp_path / "m.txt"], "cannot tell the model format"
    if name == "garbage-onnx":
        (tmp_path / "g.onnx").write_bytes(b"\x00\x01garbage" * 10)
        return ["compile", tmp_path / "g.onnx"], "not an ONNX model"
    if name == "empty-onnx":
        (tmp_path / "e.onnx").write_bytes(b"")
        return ["compile", tmp_path / "e.onnx"], "not an ONNX model"
    if name == "garbage-mlir":
        (tmp_path / "g.mlir").write_text("func.func @main( {{{")
        return ["compile", tmp_path / "g.mlir"], "g.mlir"
    if name == "non-utf8-mlir":
        (tmp_path / "n.mlir").write_bytes(b"module {}\n\xff\xfe\n")
        return ["compile", tmp_path / "n.mlir"], "not MLIR text (not UTF-8)"
    if name == "onnx-as-mlir":
        return ["compile", models / "add.onnx", "--model-format", "mlir"], "add.onnx:1:1: error"
    if name == "shapes-bad-dim":
        return ["compile", models / "add.onnx", "--input-shapes", "x:[a,3]"], "bad dimension"
    if name == "shapes-garbage":
        return ["compile", models / "add.onnx", "--input-shapes", "nonsense"], "cannot read"
    if name == "shapes-for-mlir":
        (tmp_path / "k.mlir").write_text(kernels.matmul(4, 4, 4)[0])
        return (["compile", tmp_path / "k.mlir", "--input-shapes", "x:[1]"],
                "applies to ONNX models")
    if name == "shapes-unknown-input":
        return ["compile", models / "add.onnx", "--input-shapes", "q:[2,3]"], "q"
    if name == "shapes-wrong-rank":
        return ["compile", models / "add.onnx", "--input-shapes", "x:[2,3,4]"], "x"
    if name == "shapes-conflict":
        return ["compile", models / "add.onnx", "--input-shapes", "x:[5,3]"], "x"
    if name == "dump-unknown-stage":
        return (["compile", models / "add.onnx", "--dump-mlir", "bogus", "-", "-o",
                 tmp_path / "m.mlcir"], "unknown stage(s) bogus")
    if name == "records-missing":
        return (["compile", models / "add.onnx", "--tuning-records", tmp_path / "no.json"],
                "no.json")
    if name == "records-garbage":
        (tmp_path / "r.json").write_text("hello\n")
        return (["compile", models / "add.onnx", "--tuning-records", tmp_path / "r.json"],
                "not a tuning-records file")
    if name == "records-binary":
        (tmp_path / "r.json").write_bytes(b"\xff\xfe\x00\x01")
        return (["compile", models / "add.onnx", "--tuning-records", tmp_path / "r.json"],
                "not a tuning-records file")
    if name == "records-future-schema":
        (tmp_path / "r.json").write_text(json.dumps({"kind": "workload", "version": 99}) + "\n")
        return (["compile", models / "add.onnx", "--tuning-records", tmp_path / "r.json"],
                "schema version 99")
    if name == "output-in-missing-dir":
        return (["compile", models / "add.onnx", "-o", tmp_path / "no" / "such" / "m.mlcir"],
                "No such file or directory")
    if name == "bad-pipeline":
        return (["compile", models / "add.onnx", "--pipeline", "no-such-pass", "-o",
                 tmp_path / "m.mlcir"], "no-such-pass")
    if name == "unsupported-op":
        graph = helper.make_graph([helper.make_node("Unique", ["x"], ["y"])], "g",
                                  [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
                                  [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])])
        onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), bad)
        return ["compile", bad, "--model-format", "onnx"], "Unique"
    if name == "string-input":
        graph = helper.make_graph([helper.make_node("Identity", ["x"], ["y"])], "g",
                                  [helper.make_tensor_value_info("x", TensorProto.STRING, [4])],
                                  [helper.make_tensor_value_info("y", TensorProto.STRING, [4])])
        onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), bad)
        return ["compile", bad, "--model-format", "onnx"], "x"
    if name == "old-opset":
        model = _add_model()
        model.opset_import[0].version = 6
        onnx.save(model, bad)
        return ["compile", bad, "--model-format", "onnx"], "opset 6 is not supported"
    raise AssertionError(name)


COMPILE_CASES = ["missing-model", "model-is-a-directory", "unknown-extension", "garbage-onnx",
                 "empty-onnx", "garbage-mlir", "non-utf8-mlir", "onnx-as-mlir", "shapes-bad-dim",
                 "shapes-garbage", "shapes-for-mlir", "shapes-unknown-input",
                 "shapes-wrong-rank", "shapes-conflict", "dump-unknown-stage", "records-missing",
                 "records-garbage", "records-binary", "records-future-schema",
                 "output-in-missing-dir", "bad-pipeline", "unsupported-op", "string-input",
                 "old-opset"]


@pytest.mark.parametrize("case", COMPILE_CASES)
def test_cli_compile_refuses(capsys, models, tmp_path, case):
    args, words = _compile_case(tmp_path, models, case)
    assert words in cli_error(capsys, *args)


# -- CLI: run ------------------------------------------------------------------------------------

RUN_OPTION_CASES = [
    (["--print-time", "--repeat", "0"], "--repeat must be at least 1, got 0"),
    (["--print-time", "--repeat", "-5"], "--repeat must be at least 1, got -5"),
    (["--print-time", "--number", "0"], "--number must be at least 1, got 0"),
    (["--print-top", "-1"], "--print-top must be at least 0, got -1"),
    (["--fill-mode", "random", "--seed", "-1"], "--seed must be at least 0, got -1"),
    (["--threads", "0"], "--threads must be at least 1, got 0"),
    (["--threads", "-3"], "--threads must be at least 1, got -3"),
    (["--function", "nope"], "no function 'nope'"),
]


@pytest.mark.parametrize("options, words", RUN_OPTION_CASES)
def test_cli_run_refuses_a_bad_option(capsys, models, options, words):
    message = cli_error(capsys, "run", models / "add.mlcir", "--inputs", models / "good.npz",
                        *options)
    assert words in message


def _npz(tmp_path: Path, **arrays) -> Path:
    path = tmp_path / "in.npz"
    np.savez(path, **arrays)
    return path


def _run_inputs_case(tmp_path: Path, name: str) -> tuple[Path, str]:
    good = np.ones((2, 3), np.float32)
    if name == "missing-file":
        return tmp_path / "none.npz", "cannot read it"
    if name == "directory":
        return tmp_path, "cannot read it"
    if name == "empty-file":
        (tmp_path / "e.npz").write_bytes(b"")
        return tmp_path / "e.npz", "not an .npz archive"
    if name == "npy-not-npz":
        np.save(tmp_path / "x.npy", good)
        return tmp_path / "x.npy", "not an .npz archive"
    if name == "text-file":
        (tmp_path / "t.npz").write_text("x=1")
        return tmp_path / "t.npz", "not an .npz archive"
    if name == "truncated-npz":
        data = _npz(tmp_path, x=good, y=good).read_bytes()
        (tmp_path / "t.npz").write_bytes(data[:len(data) // 2])
        return tmp_path / "t.npz", "--inputs"
    if name == "object-array":
        return _npz(tmp_path, x=np.array([{"a": 1}, None], dtype=object), y=good), "input 'x'"
    if name == "unknown-name":
        return _npz(tmp_path, x=good, y=good, q=good), "unknown input(s) q"
    if name == "missing-name":
        return _npz(tmp_path, x=good), "missing input(s) y"
    if name == "wrong-dtype":
        return _npz(tmp_path, x=good.astype(np.int32), y=good), "expected dtype float32, got int32"
    if name == "float64-for-float32":
        return _npz(tmp_path, x=good.astype(np.float64), y=good), "expected dtype float32"
    if name == "string-array":
        return _npz(tmp_path, x=np.array([["a"] * 3] * 2), y=good), "expected dtype float32"
    if name == "complex-array":
        return _npz(tmp_path, x=good.astype(np.complex64), y=good), "expected dtype float32"
    if name == "bool-array":
        return _npz(tmp_path, x=good.astype(bool), y=good), "expected dtype float32, got bool"
    if name == "wrong-shape":
        return _npz(tmp_path, x=np.ones((3, 2), np.float32), y=good), "expected shape"
    if name == "wrong-rank":
        return _npz(tmp_path, x=np.ones((6,), np.float32), y=good), "expected shape"
    if name == "scalar":
        return _npz(tmp_path, x=np.float32(1), y=good), "expected shape"
    if name == "zero-size":
        return _npz(tmp_path, x=np.ones((0, 3), np.float32), y=good), "expected shape"
    raise AssertionError(name)


RUN_INPUT_CASES = ["missing-file", "directory", "empty-file", "npy-not-npz", "text-file",
                   "truncated-npz", "object-array", "unknown-name", "missing-name", "wrong-dtype",
                   "float64-for-float32", "string-array", "complex-array", "bool-array",
                   "wrong-shape", "wrong-rank", "scalar", "zero-size"]


@pytest.mark.parametrize("case", RUN_INPUT_CASES)
def test_cli_run_refuses_bad_inputs(capsys, models, tmp_path, case):
    path, words = _run_inputs_case(tmp_path, case)
    assert words in cli_error(capsys, "run", models / "add.mlcir", "--inputs", path)


def _run_model_case(tmp_path: Path, models: Path, name: str) -> tuple[Path, str]:
    bad = tmp_path / "bad.mlcir"
    saved = models / "add.mlcir"
    if name == "missing":
        return tmp_path / "none.mlcir", "cannot read the file"
    if name == "directory":
        return tmp_path, "cannot read the file"
    if name == "text-file":
        bad.write_text("hello")
        return bad, "not an mlcir model"
    if name == "empty":
        bad.write_bytes(b"")
        return bad, "not an mlcir model"
    if name == "truncated":
        bad.write_bytes(saved.read_bytes()[:200])
        return bad, "truncated or corrupt"
    if name == "onnx-file":
        return models / "add.onnx", "not an mlcir model"
    if name == "zip-without-metadata":
        with zipfile.ZipFile(bad, "w") as archive:
            archive.writestr("other.txt", "x")
        return bad, "the archive has no metadata.json"
    if name == "metadata-not-json":
        _rewrite_member(saved, bad, "metadata.json", lambda _: b"{not json")
        return bad, "metadata.json is corrupt"
    if name == "metadata-not-utf8":
        _rewrite_member(saved, bad, "metadata.json", lambda _: b"\xff\xfe{}")
        return bad, "metadata.json is corrupt"
    if name == "metadata-a-list":
        _rewrite_member(saved, bad, "metadata.json", lambda _: b"[1, 2]")
        return bad, "not an mlcir model"
    if name == "library-missing":
        with zipfile.ZipFile(saved) as zin, zipfile.ZipFile(bad, "w") as zout:
            zout.writestr("metadata.json", zin.read("metadata.json"))
        return bad, "the archive has no model.so"
    if name == "library-flipped":
        _rewrite_member(saved, bad, "model.so",
                        lambda d: d[:500] + bytes(b ^ 0xFF for b in d[500:510]) + d[510:])
        return bad, "model.so does not match its checksum"
    if name == "edited-shape":
        def change(meta):
            meta["functions"][0]["args"][0]["shape"] = [2000, 3000]
        _rewrite_member(saved, bad, "metadata.json", _edit_metadata(change))
        return bad, "metadata.json does not match its checksum"
    if name == "edited-dtype":
        def change(meta):
            meta["functions"][0]["args"][0]["dtype"] = "float64"
        _rewrite_member(saved, bad, "metadata.json", _edit_metadata(change))
        return bad, "metadata.json does not match its checksum"
    if name == "edited-target":
        _rewrite_member(saved, bad, "metadata.json",
                        _edit_metadata(lambda meta: meta.update(target="llvm -threads=64")))
        return bad, "metadata.json does not match its checksum"
    if name == "checksum-removed":
        _rewrite_member(saved, bad, "metadata.json",
                        _edit_metadata(lambda meta: meta.pop("metadata_sha256")))
        return bad, "metadata.json does not match its checksum"
    if name == "target-garbage":
        _rewrite_member(saved, bad, "metadata.json",
                        _edit_metadata(lambda meta: meta.update(target="llvm -bogus=1")))
        return bad, "metadata.json is corrupt (target 'llvm -bogus=1')"
    raise AssertionError(name)


RUN_MODEL_CASES = ["missing", "directory", "text-file", "empty", "truncated", "onnx-file",
                   "zip-without-metadata", "metadata-not-json", "metadata-not-utf8",
                   "metadata-a-list", "library-missing", "library-flipped", "edited-shape",
                   "edited-dtype", "edited-target", "checksum-removed", "target-garbage"]


@pytest.mark.parametrize("case", RUN_MODEL_CASES)
def test_cli_run_and_load_refuse_a_bad_saved_model(capsys, models, tmp_path, case):
    path, words = _run_model_case(tmp_path, models, case)
    assert words in cli_error(capsys, "run", path, "--fill-mode", "zeros")
    with pytest.raises(LoadError) as info:
        mlcir.load(path)
    assert words in str(info.value) and str(path) in str(info.value)


def test_cli_run_refuses_to_fill_a_huge_input(capsys, models):
    message = cli_error(capsys, "run", models / "huge.mlcir", "--fill-mode", "zeros")
    assert "input 'x'" in message and "3.5 PiB" in message and "at most 16 GiB" in message


def test_cli_run_outputs_into_a_missing_folder(capsys, models, tmp_path):
    message = cli_error(capsys, "run", models / "add.mlcir", "--inputs", models / "good.npz",
                        "--outputs", tmp_path / "no" / "out.npz")
    assert "No such file or directory" in message


# -- CLI: tune -----------------------------------------------------------------------------------

TUNE_OPTION_CASES = [
    (["--trials", "0"], "--trials must be at least 1, got 0"),
    (["--trials", "-4"], "--trials must be at least 1, got -4"),
    (["--trials-per-round", "0"], "--trials-per-round must be at least 1, got 0"),
    (["--trials-per-round", "-1"], "--trials-per-round must be at least 1, got -1"),
    (["--trials-per-task", "0"], "--trials-per-task must be at least 1, got 0"),
    (["--builders", "0"], "--builders must be at least 1, got 0"),
    (["--builders", "-2"], "--builders must be at least 1, got -2"),
    (["--seed", "-1"], "--seed must be at least 0, got -1"),
    (["--target", "llvm -opt-level=7"], "bad target"),
    (["--target", "bogus"], "bad target"),
]


@pytest.mark.parametrize("options, words", TUNE_OPTION_CASES)
def test_cli_tune_refuses_a_bad_option(capsys, models, tmp_path, options, words):
    message = cli_error(capsys, "tune", models / "add.onnx", "-o", tmp_path / "r.json",
                        "--work-dir", tmp_path / "wd", *options)
    assert words in message
    assert not (tmp_path / "r.json").exists()


def test_cli_tune_refuses_a_work_dir_that_is_a_file(capsys, models, tmp_path):
    (tmp_path / "wd").write_text("")
    message = cli_error(capsys, "tune", models / "add.onnx", "-o", tmp_path / "r.json",
                        "--work-dir", tmp_path / "wd", "--trials", "1", "-q")
    assert "work_dir" in message and "wd" in message and "writable directory" in message


def test_cli_tune_refuses_a_missing_model(capsys, tmp_path):
    message = cli_error(capsys, "tune", tmp_path / "none.onnx", "-o", tmp_path / "r.json")
    assert "none.onnx: no such file" in message


def test_a_real_process_prints_one_line_and_no_traceback(tmp_path):
    result = subprocess.run([str(MLCIR), "compile", str(tmp_path / "m.onnx"), "--target",
                             "llvm -opt-level=9"], capture_output=True, text=True, timeout=120)
    assert result.returncode == 1
    assert result.stderr.startswith("mlcir: error: bad target") and "Traceback" not in result.stderr


# -- Python: calling a compiled function ---------------------------------------------------------

CALL_CASES = [
    ("too-few", lambda x: (x,), "takes 2 arguments"),
    ("too-many", lambda x: (x, x, x, x), "takes 2 arguments"),
    ("a-list", lambda x: (x.tolist(), x), "expected a numpy array"),
    ("a-scalar", lambda x: (1.0, x), "expected a numpy array"),
    ("int32", lambda x: (x.astype(np.int32), x), "expected dtype float32, got int32"),
    ("float16", lambda x: (x.astype(np.float16), x), "expected dtype float32, got float16"),
    ("object", lambda x: (x.astype(object), x), "expected dtype float32, got object"),
    ("wrong-shape", lambda x: (x.T.copy(), x), "expected shape"),
    ("wrong-rank", lambda x: (x.reshape(-1), x), "expected shape"),
    ("zero-size", lambda x: (x[:0], x), "expected shape"),
    ("read-only-output", lambda x: (x, x, np.zeros((2, 3), np.float32)[::1].view()), None),
]


@pytest.mark.parametrize("make, words", [c[1:] for c in CALL_CASES],
                         ids=[c[0] for c in CALL_CASES])
def test_python_call_refuses_bad_arguments(add, make, words):
    x = np.ones((2, 3), np.float32)
    args = make(x)
    if words is None:  # a read-only output buffer
        args[-1].flags.writeable = False
        words = "must be a writable"
    with pytest.raises(RuntimeInputError) as info:
        add["main"](*args)
    assert words in str(info.value)


def test_python_keyword_arguments_are_checked(add):
    x = np.ones((2, 3), np.float32)
    with pytest.raises(RuntimeInputError, match="has no argument 'q'"):
        add["main"](x=x, y=x, q=x)
    with pytest.raises(RuntimeInputError, match="missing argument 'y'"):
        add["main"](x=x)


def test_python_unknown_function_and_bad_timing_counts(add):
    with pytest.raises(KeyError, match="no function 'nope'"):
        add["nope"]
    x = np.ones((2, 3), np.float32)
    for number, repeat in ((0, 1), (1, 0), (-1, 3)):
        with pytest.raises(RuntimeInputError, match=f"number={number}, repeat={repeat}"):
            add.time_evaluator("main", number=number, repeat=repeat)(x, x)


@pytest.mark.parametrize("threads", [0, -1, 2.5, "4"])
def test_python_bad_thread_counts(add, threads):
    with pytest.raises(RuntimeInputError, match=f"threads must be an integer >= 1, got {threads!r}"):
        add.set_num_threads(threads)


# -- Python: tuning parameters -------------------------------------------------------------------

TUNE_KERNEL_CASES = [
    ({"max_trials": 0}, "max_trials must be an integer >= 1, got 0"),
    ({"max_trials": -3}, "max_trials must be an integer >= 1, got -3"),
    ({"max_trials": 2.5}, "max_trials must be an integer >= 1, got 2.5"),
    ({"max_trials": True}, "max_trials must be an integer >= 1, got True"),
    ({"num_trials_per_iter": 0}, "num_trials_per_iter must be an integer >= 1, got 0"),
    ({"num_trials_per_iter": -16}, "num_trials_per_iter must be an integer >= 1, got -16"),
    ({"builders": 0}, "builders must be an integer >= 1, got 0"),
    ({"builders": -1}, "builders must be an integer >= 1, got -1"),
    ({"strategy": "genetic"}, "unknown search strategy 'genetic'"),
    ({"cost_model": "lightgbm"}, "unknown cost model 'lightgbm'"),
    ({"space": "huge"}, "unknown design space 'huge'"),
    ({"builder": "remote"}, "unknown builder 'remote'"),
    ({"runner": "rpc"}, "unknown runner 'rpc'"),
    ({"feature_extractor": "bag"}, "unknown feature extractor 'bag'"),
]


@pytest.mark.parametrize("options, words", TUNE_KERNEL_CASES)
def test_tune_kernel_refuses_bad_parameters(tmp_path, options, words):
    with pytest.raises(TuningError) as info:
        mlcir.tune.tune_kernel(kernels.matmul(4, 4, 4)[0], work_dir=tmp_path, verbose=0,
                               **options)
    assert words in str(info.value)
    assert isinstance(info.value, (MlcirError, ValueError))


@pytest.mark.parametrize("options, words", [
    ({"max_trials_global": 0}, "max_trials_global must be an integer >= 1, got 0"),
    ({"max_trials_per_task": 0}, "max_trials_per_task must be an integer >= 1, got 0"),
    ({"max_trials_per_task": -2}, "max_trials_per_task must be an integer >= 1, got -2"),
    ({"task_scheduler": "fair"}, "unknown task scheduler 'fair'"),
])
def test_tune_module_refuses_bad_parameters(tmp_path, models, options, words):
    with pytest.raises(TuningError) as info:
        mlcir.tune.tune_module(from_onnx(str(models / "add.onnx")), work_dir=tmp_path,
                               verbose=0, **options)
    assert words in str(info.value)


def test_tune_refuses_a_work_dir_that_is_a_file(tmp_path):
    (tmp_path / "file").write_text("")
    with pytest.raises(TuningError, match=r"work_dir '.*file' cannot hold the tuning database"):
        mlcir.tune.tune_kernel(kernels.matmul(4, 4, 4)[0], work_dir=tmp_path / "file",
                               max_trials=1, verbose=0)


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only folders")
def test_tune_refuses_a_read_only_work_dir(tmp_path):
    folder = tmp_path / "ro"
    folder.mkdir()
    folder.chmod(0o500)
    try:
        with pytest.raises(TuningError, match="Permission denied"):
            mlcir.tune.tune_kernel(kernels.matmul(4, 4, 4)[0], work_dir=folder, max_trials=1,
                                   verbose=0)
    finally:
        folder.chmod(0o700)


@pytest.mark.filterwarnings("error::ResourceWarning",
                            "error::pytest.PytestUnraisableExceptionWarning")
def test_a_tuning_run_leaves_no_temporary_files_and_closes_its_pipes(tmp_path, monkeypatch):
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setenv("TMPDIR", str(scratch))
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    with warnings.catch_warnings():
        warnings.simplefilter("error", ResourceWarning)
        best = mlcir.tune.tune_kernel(kernels.matmul(16, 16, 16)[0], work_dir=tmp_path / "wd",
                                      max_trials=2, num_trials_per_iter=2, builders=2,
                                      cost_model="random", verbose=0)
        import gc
        gc.collect()
    assert best is not None
    assert sorted(p.name for p in scratch.iterdir()) == []


def test_a_failed_tuning_run_leaves_no_temporary_files(tmp_path, monkeypatch):
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))

    class Interrupting:
        """A cost model that is interrupted (Ctrl-C) at its first use."""

        def predict(self, *_args):
            raise KeyboardInterrupt

        def update(self, *_args):
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        mlcir.tune.tune_kernel(kernels.matmul(16, 16, 16)[0], work_dir=tmp_path / "wd",
                               max_trials=2, cost_model=Interrupting(), verbose=0)
    assert sorted(p.name for p in scratch.iterdir()) == []


# -- ONNX import ---------------------------------------------------------------------------------

def _external_model(tmp_path: Path, location: str) -> Path:
    weight = numpy_helper.from_array(np.ones((2, 3), np.float32), "w")
    weight.data_location = TensorProto.EXTERNAL
    weight.ClearField("raw_data")
    for key, value in (("location", location), ("offset", "0"), ("length", "24")):
        entry = weight.external_data.add()
        entry.key, entry.value = key, value
    graph = helper.make_graph([helper.make_node("Add", ["x", "w"], ["y"])], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])],
                              initializer=[weight])
    path = tmp_path / "model" / "m.onnx"
    path.parent.mkdir()
    path.write_bytes(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
                     .SerializeToString())
    return path


def _onnx_case(tmp_path: Path, name: str):
    """The source and shape_dict of one bad ONNX import, and the message words."""
    if name == "missing":
        return tmp_path / "no.onnx", None, "no.onnx: no such file"
    if name == "directory":
        return tmp_path, None, "is a directory"
    if name == "garbage-bytes":
        return b"\x08\x07garbage", None, "not an ONNX model"
    if name == "empty-bytes":
        return b"", None, "not an ONNX model"
    if name == "text":
        return b"this is not a model at all", None, "not an ONNX model"
    if name == "truncated":
        data = _add_model().SerializeToString()
        return data[:len(data) // 2], None, "not an ONNX model"
    if name == "external-data-missing":
        return _external_model(tmp_path, "weights.bin"), None, "external data"
    if name == "external-data-outside":
        (tmp_path / "secret.bin").write_bytes(b"\0" * 24)
        return _external_model(tmp_path, "../secret.bin"), None, "external data"
    if name == "external-data-absolute":
        (tmp_path / "secret.bin").write_bytes(b"\0" * 24)
        return _external_model(tmp_path, str(tmp_path / "secret.bin")), None, "external data"
    if name == "no-opset":
        model = _add_model()
        del model.opset_import[:]
        return model.SerializeToString(), None, "not an ONNX model"
    if name == "future-opset":
        model = _add_model()
        model.opset_import[0].version = 999
        return model, None, "opset 999 is not supported"
    if name == "dangling-input":
        model = _add_model()
        model.graph.node[0].input[1] = "nowhere"
        return model, None, "nowhere"
    if name == "shape-dict-unknown":
        return _add_model(), {"q": [1]}, "q"
    if name == "shape-dict-negative":
        return _add_model(), {"x": [-3, 3]}, "x"
    if name == "shape-dict-rank":
        return _add_model(), {"x": [2]}, "x"
    if name == "string-input":
        model = _add_model()
        model.graph.input[0].type.tensor_type.elem_type = TensorProto.STRING
        return model, None, "x"
    if name == "complex-input":
        model = _add_model()
        model.graph.input[0].type.tensor_type.elem_type = TensorProto.COMPLEX64
        return model, None, "x"
    if name == "bfloat16-input":
        model = _add_model()
        for value in (*model.graph.input, *model.graph.output):
            value.type.tensor_type.elem_type = TensorProto.BFLOAT16
        return model, None, "x"
    raise AssertionError(name)


ONNX_CASES = ["missing", "directory", "garbage-bytes", "empty-bytes", "text", "truncated",
              "external-data-missing", "external-data-outside", "external-data-absolute",
              "no-opset", "future-opset", "dangling-input", "shape-dict-unknown",
              "shape-dict-negative", "shape-dict-rank", "string-input", "complex-input",
              "bfloat16-input"]


@pytest.mark.parametrize("case", ONNX_CASES)
def test_onnx_import_refuses(tmp_path, case):
    source, shapes, words = _onnx_case(tmp_path, case)
    if isinstance(source, Path):
        source = str(source)
    with pytest.raises(FrontendError) as info:
        from_onnx(source, shape_dict=shapes)
    assert words in str(info.value)


# -- mlcir-opt -----------------------------------------------------------------------------------

def _opt(capsys, *args) -> tuple[int, str]:
    from mlcir.tools.mlcir_opt import main as opt_main

    status = opt_main([str(a) for a in args])
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return status, err


def _script(tmp_path: Path, old: str, new: str) -> Path:
    text = (INPUTS / "course_schedule.mlir").read_text()
    assert old in text
    path = tmp_path / "script.mlir"
    path.write_text(text.replace(old, new, 1))
    return path


@pytest.mark.parametrize("old, new, words", [
    ("tile_sizes [1, 0, 0]", "tile_sizes [-3, 0, 0]", "static_tile_sizes [-3, 0, 0]"),
    ("tile_sizes [0, 0, 1]", "tile_sizes [0, 0, -1]", "static_sizes [0, 0, -1]"),
    ("tile_sizes [1, 0, 0]", "tile_sizes [0, -7, 0]", "sizes must be >= 0"),
])
def test_mlcir_opt_refuses_negative_tile_sizes(capsys, tmp_path, old, new, words):
    status, err = _opt(capsys, INPUTS / "matmul.mlir",
                       f"--transform-script={_script(tmp_path, old, new)}")
    assert status == 1
    assert "invalid transform script" in err and words in err


def test_mlcir_opt_refuses_bad_files(capsys, tmp_path):
    (tmp_path / "bin.mlir").write_bytes(b"module {}\n\xff\xfe")
    status, err = _opt(capsys, tmp_path / "bin.mlir")
    assert status == 1 and "bin.mlir is not MLIR text (not UTF-8" in err
    status, err = _opt(capsys, tmp_path / "none.mlir")
    assert status == 1 and "cannot read" in err and "none.mlir" in err
    status, err = _opt(capsys, INPUTS / "matmul.mlir", f"--transform-script={tmp_path / 'bin.mlir'}")
    assert status == 1 and "is not MLIR text (not UTF-8)" in err
    (tmp_path / "garbage.mlir").write_text("transform.garbage {")
    status, err = _opt(capsys, INPUTS / "matmul.mlir",
                       f"--transform-script={tmp_path / 'garbage.mlir'}")
    assert status == 1 and "garbage.mlir" in err
    status, err = _opt(capsys, INPUTS / "matmul.mlir", "--pass-pipeline=builtin.module(nope)")
    assert status == 1 and "nope" in err


def test_transform_apply_checks_static_sizes_before_running():
    from mlcir.ir import make_context, parse
    from mlcir.transform import check_static_sizes

    text = (INPUTS / "course_schedule.mlir").read_text().replace("tile_sizes [1, 0, 0]",
                                                                 "tile_sizes [-3, 0, 0]")
    with make_context():
        with pytest.raises(TransformError, match=r"has static_tile_sizes \[-3, 0, 0\]"):
            check_static_sizes(parse(text, verify=False))
        good = (INPUTS / "course_schedule.mlir").read_text()
        check_static_sizes(parse(good, verify=False))  # a dynamic size (a knob) is fine


# -- trace JSON ----------------------------------------------------------------------------------

TRACE_CASES = [
    ("garbage", "not a trace"),
    ("", "not a trace"),
    ("null", "not a trace"),
    ("[]", "not a trace"),
    ("{}", "expected a JSON object with 'insts'"),
    ('{"insts": 5}', "not a trace"),
    ('{"insts": [5]}', "not a trace"),
    ('{"insts": [["split", [], {}]]}', "not a trace"),
    ('{"insts": [["bogus", [], {}, []]]}', "unknown primitive 'bogus'"),
    ('{"insts": [["get_block", ["$b9"], {}, []]]}', "uses b9 before it is defined"),
    ('{"insts": [], "version": 99}', "schema version 99"),
    ('{"insts": [], "decisions": [[1]]}', "not a trace"),
    ('{"insts": [], "decisions": [["x", 1]]}', "not a trace"),
    ('{"insts": [["get_block", [], {}, [7]]]}', "not a trace"),
    ('{"insts": [["get_block", [], 3, []]]}', "not a trace"),
]


@pytest.mark.parametrize("text, words", TRACE_CASES)
def test_trace_from_json_refuses_garbage(text, words):
    with pytest.raises(ScheduleError) as info:
        Trace.from_json(text)
    assert words in str(info.value)


def test_trace_from_json_refuses_non_utf8_bytes():
    with pytest.raises(ScheduleError, match="not a trace"):
        Trace.from_json(b"\xff\xfe")


# -- tuning database files -----------------------------------------------------------------------

def _record_line(workload: str = "w", seconds: float = 1e-3) -> str:
    return json.dumps({"version": 1, "workload": workload, "target": "llvm",
                       "trace": {"insts": [], "decisions": [], "version": 1},
                       "run_secs": [seconds]}, sort_keys=True) + "\n"


def _workload_line(name: str = "w") -> str:
    return json.dumps({"version": 1, "hash": name, "name": name, "text": "module {}"}) + "\n"


def _database_dir(tmp_path: Path, records: str) -> Path:
    folder = tmp_path / "wd" / "database"
    folder.mkdir(parents=True)
    (folder / "workloads.json").write_text(_workload_line())
    (folder / "records.json").write_text(records)
    return tmp_path / "wd"


def test_a_partial_last_line_is_cut_off_before_appending(tmp_path):
    work_dir = _database_dir(tmp_path, _record_line(seconds=1) + _record_line(seconds=2)
                             + _record_line(seconds=3)[:40])
    with pytest.warns(RuntimeWarning, match=r"records\.json:3: removed a partial last line"):
        db = Database(work_dir)
    assert [r.run_secs for r in db.records()] == [[1], [2]]
    record = db.records()[0]
    record.run_secs = [4]
    db.commit_record(record)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        again = Database(work_dir)
    assert [r.run_secs for r in again.records()] == [[1], [2], [4]]


def test_a_complete_last_line_without_newline_is_kept(tmp_path):
    work_dir = _database_dir(tmp_path, _record_line(seconds=1) + _record_line(seconds=2)[:-1])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        db = Database(work_dir)
    record = db.records()[0]
    db.commit_record(record)
    assert [r.run_secs for r in Database(work_dir).records()] == [[1], [2], [1]]


def test_a_writer_killed_mid_line_loses_no_finished_record(tmp_path):
    """A process writes two records, then half a line, and is killed (SIGKILL); the next run
    keeps both records, and the record it appends is read back."""
    work_dir = _database_dir(tmp_path, "")
    records = work_dir / "database" / "records.json"
    script = (f"import os, sys, time\n"
              f"f = open({str(records)!r}, 'a')\n"
              f"f.write({_record_line(seconds=1)!r} + {_record_line(seconds=2)!r})\n"
              f"f.write({_record_line(seconds=3)[:30]!r}); f.flush()\n"
              f"print('ready', flush=True); time.sleep(60)\n")
    writer = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        assert writer.stdout.readline().strip() == "ready"
    finally:
        writer.send_signal(signal.SIGKILL)
        writer.wait()
        writer.stdout.close()
    assert not records.read_text().endswith("\n")
    with pytest.warns(RuntimeWarning, match=r"records\.json:3: removed a partial last line"):
        db = Database(work_dir)
    record = db.records()[0]
    record.run_secs = [5]
    db.commit_record(record)
    assert [r.run_secs for r in Database(work_dir).records()] == [[1], [2], [5]]


@pytest.mark.parametrize("line, words", [
    ("not json\n", "records.json:2: skipped a corrupt or truncated line"),
    ("[1, 2]\n", "not a JSON object"),
    ('{"version": 99}\n', "schema version 99"),
    ('{"version": 1, "workload": "w"}\n', "skipped a record without 'target'"),
    ('{"version": 1, "workload": "w", "target": "llvm", "trace": {}}\n',
     "skipped a record without 'run_secs' or 'error'"),
    ("\xff\n", "records.json:2: skipped a corrupt"),
])
def test_corrupt_database_lines_are_skipped_with_file_and_line(tmp_path, line, words):
    work_dir = _database_dir(tmp_path, _record_line() + line + _record_line(seconds=2))
    with pytest.warns(RuntimeWarning) as caught:
        db = Database(work_dir)
    assert any(words in str(w.message) for w in caught), [str(w.message) for w in caught]
    assert [r.run_secs for r in db.records()] == [[1e-3], [2]]


def test_database_refuses_records_of_unknown_workloads(tmp_path):
    db = Database(_database_dir(tmp_path, ""))
    record = Database.__new__(Database)  # noqa: F841 - only the record matters below
    from mlcir.tune.database import Record

    with pytest.raises(DatabaseError, match="record for unknown workload nope"):
        db.commit_record(Record("nope", "llvm", {"insts": []}, [1.0]))
    assert isinstance(DatabaseError("x"), MlcirError)


@pytest.mark.parametrize("text, words", [
    ("hello\n", "not a tuning-records file"),
    ("[]\n", "not a tuning-records file"),
    ('{"kind": "workload", "version": 99}\n', "schema version 99"),
    ('{"kind": "banana", "version": 1}\n', "not a tuning-records file"),
])
def test_records_files_that_are_not_ones_are_refused(tmp_path, text, words):
    (tmp_path / "r.json").write_text(text)
    with pytest.raises(DatabaseError) as info:
        RecordsFile(tmp_path / "r.json")
    assert words in str(info.value) and "r.json:1" in str(info.value)


def test_a_records_file_is_read_only(tmp_path):
    (tmp_path / "r.json").write_text(json.dumps({"kind": "workload", "version": 1, "hash": "w",
                                                 "name": "w", "text": ""}) + "\n")
    with pytest.raises(DatabaseError, match="read-only records file"):
        RecordsFile(tmp_path / "r.json").commit_workload(None)


# -- odd but valid inputs ------------------------------------------------------------------------

def _reference(x, y):
    return -(x + y)


@pytest.mark.parametrize("name", ["nan-inf", "non-contiguous", "read-only", "fortran-order",
                                  "negative-strides", "broadcast-view", "unaligned"])
def test_odd_but_valid_arrays_compute_correctly(add, name):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 3)).astype(np.float32)
    y = rng.standard_normal((2, 3)).astype(np.float32)
    if name == "nan-inf":
        x[0, 0], x[0, 1], x[1, 2] = np.nan, np.inf, -np.inf
    elif name == "non-contiguous":
        x = rng.standard_normal((2, 6)).astype(np.float32)[:, ::2]
    elif name == "read-only":
        x.flags.writeable = False
        y.flags.writeable = False
    elif name == "fortran-order":
        x = np.asfortranarray(x)
    elif name == "negative-strides":
        x = x[::-1, ::-1]
    elif name == "broadcast-view":
        x = np.broadcast_to(np.float32(2.5), (2, 3))
    elif name == "unaligned":
        raw = np.zeros(6 * 4 + 1, np.uint8)[1:].view(np.float32).reshape(2, 3)
        raw[...] = x
        x = raw
    got = add["main"](x, y)
    np.testing.assert_array_equal(got, _reference(x, y))


DTYPES = [(TensorProto.FLOAT16, np.float16), (TensorProto.INT8, np.int8),
          (TensorProto.INT64, np.int64)]


@pytest.mark.parametrize("onnx_type, dtype", DTYPES, ids=["float16", "int8", "int64"])
def test_documented_dtypes_work_end_to_end(capsys, tmp_path, onnx_type, dtype):
    """float16, int8 and int64 inputs and outputs through build, call, save/load and the CLI
    (bool tensors: tests of the comparison ops)."""
    onnx.save(_add_model(onnx_type), tmp_path / "m.onnx")
    info = np.finfo(dtype) if np.dtype(dtype).kind == "f" else np.iinfo(dtype)
    x = np.array([[1, -2, 3], [int(info.max) - 1, 0, 7]]).astype(dtype)
    y = np.ones((2, 3), dtype)
    with np.errstate(over="ignore"):
        want = -(x + y)
    executable = mlcir.build(from_onnx(str(tmp_path / "m.onnx")), "llvm")
    got = executable["main"](x, y)
    assert got.dtype == dtype
    np.testing.assert_array_equal(got, want)
    executable.save(tmp_path / "py.mlcir")
    np.testing.assert_array_equal(mlcir.load(tmp_path / "py.mlcir")["main"](x, y), want)
    np.savez(tmp_path / "in.npz", x=x, y=y)
    assert cli_main(["compile", str(tmp_path / "m.onnx"), "-o", str(tmp_path / "cli.mlcir"),
                     "-q"]) == 0
    assert cli_main(["run", str(tmp_path / "cli.mlcir"), "--inputs", str(tmp_path / "in.npz"),
                     "--outputs", str(tmp_path / "out.npz")]) == 0
    assert f"w: {np.dtype(dtype).name}[2, 3]" in capsys.readouterr().out
    with np.load(tmp_path / "out.npz") as out:
        assert out["w"].dtype == dtype
        np.testing.assert_array_equal(out["w"], want)
    assert cli_main(["run", str(tmp_path / "cli.mlcir"), "--fill-mode", "random"]) == 0


def test_zero_size_dims_compute():
    """A declared zero-size dim compiles and runs: an empty elementwise result, and a sum over
    the empty axis that is all zeros."""
    graph = helper.make_graph(
        [helper.make_node("Add", ["x", "y"], ["z"]),
         helper.make_node("ReduceSum", ["x", "axes"], ["s"], keepdims=0)], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [0, 3]),
         helper.make_tensor_value_info("y", TensorProto.FLOAT, [0, 3])],
        [helper.make_tensor_value_info("z", TensorProto.FLOAT, [0, 3]),
         helper.make_tensor_value_info("s", TensorProto.FLOAT, [3])],
        initializer=[numpy_helper.from_array(np.array([0], np.int64), "axes")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    executable = mlcir.build(from_onnx(model), "llvm")
    empty = np.zeros((0, 3), np.float32)
    z, s = executable["main"](empty, empty)
    assert z.shape == (0, 3)
    np.testing.assert_array_equal(s, np.zeros(3, np.float32))


# --- Unclear errors found by hand (issue 43): each is an MlcirError naming what is at fault ---

def test_negative_input_dim_is_refused_naming_input_and_axis():
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, -3])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, -3])
    model = helper.make_model(helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g",
                                                [x], [y]),
                              opset_imports=[helper.make_opsetid("", 17)])
    with pytest.raises(FrontendError, match=r"'x' has size -3 in dimension 1"):
        from_onnx(model)


@pytest.mark.parametrize("name, f, words", [
    ("env.x", 5, r"register_func\('env.x', \.\.\.\): 5 is not callable"),
    ("", print, "the name must be a non-empty string"),
    (None, print, "the name must be a non-empty string"),
])
def test_register_func_refuses_what_is_not_a_function(name, f, words):
    from mlcir.errors import RegistrationError

    with pytest.raises(RegistrationError, match=words):
        mlcir.register_func(name, f)
    assert isinstance(RegistrationError("x"), MlcirError)


def _keyword_scale(x, out, *, scale):
    out[...] = x * scale


@pytest.mark.parametrize("f, words", [
    (lambda: None, r"register_func\('env.x', \.\.\.\): .* has the signature \(\), which takes "
                   "no positional argument"),
    (_keyword_scale, r"register_func\('env.x', \.\.\.\): .* whose keyword-only argument "
                     "'scale' no call passes"),
])
def test_register_func_refuses_a_signature_no_call_fits(f, words):
    from mlcir.errors import RegistrationError
    from mlcir.runtime.library import get_func

    with pytest.raises(RegistrationError, match=words):
        mlcir.register_func("env.x", f)
    assert get_func("env.x") is None


def test_tune_kernel_without_main_names_the_functions(tmp_path):
    from mlcir.tune import tune_kernel

    text = """
    func.func @foo(%a: tensor<8x8xf32>, %b: tensor<8x8xf32>) -> tensor<8x8xf32> {
      %0 = "graph.matmul"(%a, %b) : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
      return %0 : tensor<8x8xf32>
    }"""
    with pytest.raises(TuningError, match=r"tunes the function 'main'.*has 'foo'"):
        tune_kernel(text, max_trials=2, work_dir=tmp_path)
    assert not (tmp_path / "database").exists() or not any((tmp_path / "database").iterdir())
