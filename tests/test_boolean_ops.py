"""Boolean tensors at run time (stored as bytes, ``mlcir-bool-storage``) and unsigned integers
(stored as signless ones): the comparison, logic, selection, float-test and bit-shift ONNX ops
on values known only at run time, against onnxruntime in every type ONNX allows that mlcir
has; bool and uint arrays through build, fusion, save/load and the CLI (npz)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto as T
from onnx import helper

import mlcir
from mlcir.frontend import from_onnx
from mlcir.testing import onnx_models as om

SHAPE = [3, 8]
TYPES = {"f16": (T.FLOAT16, np.float16), "f32": (T.FLOAT, np.float32),
         "f64": (T.DOUBLE, np.float64), "i8": (T.INT8, np.int8), "i16": (T.INT16, np.int16),
         "i32": (T.INT32, np.int32), "i64": (T.INT64, np.int64), "bool": (T.BOOL, np.bool_),
         "u8": (T.UINT8, np.uint8), "u16": (T.UINT16, np.uint16),
         "u32": (T.UINT32, np.uint32), "u64": (T.UINT64, np.uint64)}
NUMERIC = ("f32", "f64", "i8", "i16", "i32", "i64")


def _model(nodes: list[onnx.NodeProto], inputs: dict[str, tuple[str, list[int]]],
           outputs: dict[str, tuple[str, list[int]]], opset: int = 17) -> onnx.ModelProto:
    graph = helper.make_graph(
        nodes, "g",
        [helper.make_tensor_value_info(n, TYPES[t][0], s) for n, (t, s) in inputs.items()],
        [helper.make_tensor_value_info(n, TYPES[t][0], s) for n, (t, s) in outputs.items()])
    opsets = [helper.make_opsetid("", opset)]
    model = helper.make_model(graph, opset_imports=opsets,
                              ir_version=helper.find_min_ir_version_for(opsets))
    onnx.checker.check_model(model, full_check=True)
    return model


def _array(dtype: str, rng: np.random.Generator, shape=SHAPE) -> np.ndarray:
    t = TYPES[dtype][1]
    if dtype == "bool":
        return rng.random(shape) < 0.5
    if np.issubdtype(t, np.integer):
        info = np.iinfo(t)
        return rng.integers(max(info.min, -4), min(info.max, 4), shape, endpoint=True).astype(t)
    return np.round(rng.standard_normal(shape) * 2).astype(t)  # small integers: ties happen


def _against_onnxruntime(model: onnx.ModelProto, feeds: dict[str, np.ndarray],
                         numpy_reference=None) -> None:
    """mlcir against onnxruntime, or ``numpy_reference(**feeds)`` (``{output: array}``)
    where onnxruntime has no kernel for the type."""
    want = numpy_reference(**feeds) if numpy_reference else om.reference(model, feeds)
    got = mlcir.build(from_onnx(model)).main.run(feeds)
    assert list(got) == list(want)
    for name in want:
        assert got[name].dtype == want[name].dtype, name
        np.testing.assert_array_equal(got[name], want[name], err_msg=name)


COMPARISONS = ("Equal", "Less", "LessOrEqual", "Greater", "GreaterOrEqual")


@pytest.mark.parametrize("dtype", NUMERIC + ("bool",))
def test_comparisons_against_onnxruntime(dtype):
    """Every comparison of one type in one model, on runtime values that tie often; the
    right operand broadcasts. Booleans: Equal only (ONNX allows no other on them)."""
    ops = ("Equal",) if dtype == "bool" else COMPARISONS
    nodes = [helper.make_node(op, ["a", "b"], [f"y_{op}"]) for op in ops]
    model = _model(nodes, {"a": (dtype, SHAPE), "b": (dtype, SHAPE[1:])},
                   {f"y_{op}": ("bool", SHAPE) for op in ops})
    rng = np.random.default_rng(0)
    _against_onnxruntime(model, {"a": _array(dtype, rng), "b": _array(dtype, rng, SHAPE[1:])})


@pytest.mark.parametrize("dtype", ("f32", "f64"))
def test_comparisons_with_nan_are_false(dtype):
    a = np.array([[np.nan, 1.0, np.nan, -np.inf]], TYPES[dtype][1])
    b = np.array([[np.nan, np.nan, 0.0, -np.inf]], TYPES[dtype][1])
    nodes = [helper.make_node(op, ["a", "b"], [f"y_{op}"]) for op in COMPARISONS]
    model = _model(nodes, {"a": (dtype, [1, 4]), "b": (dtype, [1, 4])},
                   {f"y_{op}": ("bool", [1, 4]) for op in COMPARISONS})
    _against_onnxruntime(model, {"a": a, "b": b})


def test_logic_against_onnxruntime():
    nodes = [helper.make_node(op, ["a", "b"], [f"y_{op}"]) for op in ("And", "Or", "Xor")]
    nodes.append(helper.make_node("Not", ["a"], ["y_Not"]))
    model = _model(nodes, {"a": ("bool", SHAPE), "b": ("bool", [1, 8])},
                   {f"y_{op}": ("bool", SHAPE) for op in ("And", "Or", "Xor", "Not")})
    rng = np.random.default_rng(1)
    _against_onnxruntime(model, {"a": _array("bool", rng), "b": _array("bool", rng, [1, 8])})


@pytest.mark.parametrize("dtype", NUMERIC + ("f16", "bool", "u8"))
def test_where_against_onnxruntime(dtype):
    """Where on every type ONNX allows that mlcir has (unsigned: the same bits), broadcasting
    the condition and both branches."""
    model = _model([helper.make_node("Where", ["c", "x", "y"], ["out"])],
                   {"c": ("bool", SHAPE), "x": (dtype, [1, 8]), "y": (dtype, [3, 1])},
                   {"out": (dtype, SHAPE)})
    rng = np.random.default_rng(2)
    feeds = {"c": _array("bool", rng), "x": _array(dtype, rng, [1, 8]),
             "y": _array(dtype, rng, [3, 1])}
    if dtype == "u8":
        feeds["x"] = rng.integers(0, 256, [1, 8]).astype(np.uint8)
    # onnxruntime 1.32 has no Where kernel for int16 and bool
    numpy_reference = (lambda c, x, y: {"out": np.where(c, x, y)}) \
        if dtype in ("i16", "bool") else None
    _against_onnxruntime(model, feeds, numpy_reference)


@pytest.mark.parametrize("dtype", ("f16", "f32", "f64"))
def test_isnan_and_isinf_against_onnxruntime(dtype):
    flags = [(1, 1), (1, 0), (0, 1), (0, 0)]
    nodes = [helper.make_node("IsNaN", ["x"], ["nan"])]
    nodes += [helper.make_node("IsInf", ["x"], [f"inf_{p}{n}"], detect_positive=p,
                               detect_negative=n) for p, n in flags]
    outputs = {"nan": ("bool", SHAPE), **{f"inf_{p}{n}": ("bool", SHAPE) for p, n in flags}}
    model = _model(nodes, {"x": (dtype, SHAPE)}, outputs, opset=20)
    x = _array(dtype, np.random.default_rng(3))
    x[0, :4] = [np.nan, np.inf, -np.inf, -np.nan]
    x[2, 5] = np.inf
    _against_onnxruntime(model, {"x": x})


@pytest.mark.parametrize("dtype", ("u8", "u16", "u32", "u64"))
@pytest.mark.parametrize("direction", ("LEFT", "RIGHT"))
def test_bitshift_against_onnxruntime(dtype, direction):
    """Unsigned tensors in and out (stored as signless integers); RIGHT is a logical shift:
    the high bits of large values (signed: negative) shift in zeros."""
    t = TYPES[dtype][1]
    bits = 8 * np.dtype(t).itemsize
    model = _model([helper.make_node("BitShift", ["x", "n"], ["y"], direction=direction)],
                   {"x": (dtype, SHAPE), "n": (dtype, SHAPE[1:])}, {"y": (dtype, SHAPE)})
    rng = np.random.default_rng(4)
    x = rng.integers(0, np.iinfo(t).max, SHAPE, dtype=t, endpoint=True)
    x[0, 0] = np.iinfo(t).max
    n = rng.integers(0, bits, SHAPE[1:]).astype(t)
    n[0] = bits - 1
    _against_onnxruntime(model, {"x": x, "n": n})


def test_shift_counts_of_the_width_or_more_give_zero_as_numpy():
    """ONNX leaves them open (onnxruntime uses C's undefined shift); mlcir gives numpy's 0."""
    model = _model([helper.make_node("BitShift", ["x", "n"], ["left"], direction="LEFT"),
                    helper.make_node("BitShift", ["x", "n"], ["right"], direction="RIGHT")],
                   {"x": ("u8", [4]), "n": ("u8", [4])},
                   {"left": ("u8", [4]), "right": ("u8", [4])})
    x, n = np.array([255, 1, 128, 7], np.uint8), np.array([8, 9, 255, 7], np.uint8)
    left, right = mlcir.build(from_onnx(model)).main(x, n)
    np.testing.assert_array_equal(left, [0, 0, 0, np.left_shift(7, 7, dtype=np.uint8)])
    np.testing.assert_array_equal(right, [0, 0, 0, 0])


def test_ops_that_would_treat_unsigned_as_signed_are_refused_naming_the_node():
    model = _model([helper.make_node("Div", ["a", "b"], ["y"], name="divide_them")],
                   {"a": ("u8", [4]), "b": ("u8", [4])}, {"y": ("u8", [4])})
    with pytest.raises(mlcir.FrontendError, match=r"node 'divide_them' \(Div, opset 17\): "
                                                  r"input 0 \('a'\) is uint8: unsigned .*BitShift"):
        from_onnx(model)


def _attention_mask_model() -> onnx.ModelProto:
    """The masking an exporter writes for attention: a runtime mask, comparisons, Not/And,
    Where over scores, IsNaN cleaning the softmax of fully masked rows."""
    nodes = [
        helper.make_node("Cast", ["mask"], ["mask_b"], to=T.BOOL),
        helper.make_node("Not", ["mask_b"], ["masked"]),
        helper.make_node("Greater", ["scores", "floor"], ["big"]),
        helper.make_node("And", ["big", "mask_b"], ["keep"]),
        helper.make_node("Where", ["masked", "neg_inf", "scores"], ["filled"]),
        helper.make_node("Softmax", ["filled"], ["probs"], axis=-1),
        helper.make_node("IsNaN", ["probs"], ["bad"]),
        helper.make_node("Where", ["bad", "zero", "probs"], ["clean"]),
        helper.make_node("Equal", ["mask", "one"], ["valid"]),
    ]
    inits = [helper.make_tensor("floor", T.FLOAT, [], [0.5]),
             helper.make_tensor("neg_inf", T.FLOAT, [], [-np.inf]),
             helper.make_tensor("zero", T.FLOAT, [], [0.0]),
             helper.make_tensor("one", T.INT64, [], [1])]
    graph = helper.make_graph(
        nodes, "mask", [helper.make_tensor_value_info("scores", T.FLOAT, [2, 4, 6]),
                        helper.make_tensor_value_info("mask", T.INT64, [2, 1, 6])],
        [helper.make_tensor_value_info("clean", T.FLOAT, [2, 4, 6]),
         helper.make_tensor_value_info("keep", T.BOOL, [2, 4, 6]),
         helper.make_tensor_value_info("valid", T.BOOL, [2, 1, 6])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def _mask_inputs() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(5)
    mask = (rng.random((2, 1, 6)) < 0.6).astype(np.int64)
    mask[1] = 0  # a fully masked row: softmax of all -inf is NaN, cleaned to 0
    return {"scores": rng.standard_normal((2, 4, 6)).astype(np.float32), "mask": mask}


def _close(got: dict[str, np.ndarray], want: dict[str, np.ndarray]) -> None:
    for name in want:
        assert got[name].dtype == want[name].dtype, name
        np.testing.assert_allclose(got[name], want[name], rtol=1e-5, atol=1e-6, err_msg=name)


def test_attention_mask_runs_fused_and_saves_and_loads(tmp_path):
    model, feeds = _attention_mask_model(), _mask_inputs()
    want = om.reference(model, feeds)
    ex = mlcir.build(from_onnx(model))
    _close(ex.main.run(feeds), want)
    ex.save(tmp_path / "mask.mlcir")
    loaded = mlcir.load(tmp_path / "mask.mlcir")
    assert "bool" in loaded.main.signature.describe()
    _close(loaded.main.run(feeds), want)
    with pytest.raises(mlcir.RuntimeInputError, match="expected dtype int64"):
        loaded.main(feeds["scores"], feeds["mask"].astype(np.bool_))


def test_bool_and_uint_arrays_through_the_cli(tmp_path):
    model_path = tmp_path / "mask.onnx"
    onnx.save(_attention_mask_model(), model_path)
    feeds = _mask_inputs()
    np.savez(tmp_path / "in.npz", **feeds)
    mlcir_cli = Path(sys.executable).with_name("mlcir")
    for args in (["compile", model_path, "-o", tmp_path / "mask.mlcir"],
                 ["run", tmp_path / "mask.mlcir", "--inputs", tmp_path / "in.npz",
                  "--outputs", tmp_path / "out.npz"]):
        done = subprocess.run([str(mlcir_cli), *map(str, args)], capture_output=True,
                              text=True, timeout=600)
        assert done.returncode == 0, done.stderr
    with np.load(tmp_path / "out.npz") as out:
        _close(dict(out), om.reference(model_path.read_bytes(), feeds))


def test_uint_arrays_through_save_and_load(tmp_path):
    """The signature records the numpy dtype of unsigned inputs and outputs (graph.dtype);
    a saved model keeps it."""
    model = _model([helper.make_node("BitShift", ["x", "n"], ["y"], direction="RIGHT"),
                    helper.make_node("Equal", ["y", "x"], ["same"])],
                   {"x": ("u16", [4]), "n": ("u16", [4])},
                   {"y": ("u16", [4]), "same": ("bool", [4])})
    ex = mlcir.build(from_onnx(model))
    ex.save(tmp_path / "shift.mlcir")
    loaded = mlcir.load(tmp_path / "shift.mlcir")
    assert loaded.main.signature.describe() == \
        "main(x: uint16[4], n: uint16[4]) -> (uint16[4], bool[4])"
    x, n = np.array([65535, 32768, 5, 0], np.uint16), np.array([15, 0, 1, 3], np.uint16)
    y, same = loaded.main(x, n)
    np.testing.assert_array_equal(y, [1, 32768, 2, 0])
    np.testing.assert_array_equal(same, [False, True, False, True])
    with pytest.raises(mlcir.RuntimeInputError, match="expected dtype uint16, got int16"):
        loaded.main(x.view(np.int16), n)
