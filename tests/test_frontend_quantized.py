"""Quantized ONNX ops (mlcir/frontend/converters/quantize.py) against onnxruntime, one node at a
time, seeded inputs: bit-exact where ONNX fixes the result (integer accumulation, round half to
even), at most one unit off where onnxruntime's kernel uses another float arithmetic
(the com.microsoft QLinearAdd/Mul/Concat/GlobalAveragePool; docs/quantized.md)."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import mlcir
from mlcir.errors import FrontendError, MlcirError
from mlcir.frontend import from_onnx
from mlcir.testing import onnx_models as om

U8, I8 = np.dtype(np.uint8), np.dtype(np.int8)

#: The ops this file checks (tests/test_frontend.py's every-op test reads it).
TESTED_OPS = {"QuantizeLinear", "DequantizeLinear", "DynamicQuantizeLinear", "MatMulInteger",
              "ConvInteger", "QLinearMatMul", "QLinearConv", "com.microsoft.QLinearAdd",
              "com.microsoft.QLinearMul", "com.microsoft.QLinearGlobalAveragePool",
              "com.microsoft.QLinearConcat", "com.microsoft.QGemm"}


def _rng(seed: int = 0) -> np.random.Generator:
    return np.random.default_rng(seed)


def q(dtype: np.dtype, *shape: int, seed: int = 0, seven_bit: bool = False) -> np.ndarray:
    """Random values over the whole range of ``dtype`` (``seven_bit``: [-64, 63], see
    :func:`w`)."""
    info = np.iinfo(dtype)
    lo, hi = (-64, 63) if seven_bit else (int(info.min), int(info.max))
    return _rng(seed).integers(lo, hi + 1, shape).astype(dtype)


def w(data: np.dtype, dtype: np.dtype, *shape: int, seed: int = 0) -> np.ndarray:
    """A weight for ``data`` inputs: int8 weights for uint8 data keep to 7 bits, since
    onnxruntime's u8s8 AVX2 kernel (vpmaddubsw) saturates pairs of products at int16 with
    full-range weights (test_u8s8_full_range_is_exact: mlcir is exact there)."""
    return q(dtype, *shape, seed=seed, seven_bit=data == U8 and dtype == I8)


def model(op: str, inputs: dict[str, np.ndarray], inits: dict[str, np.ndarray | None],
          outputs: int = 1, opset: int = 13, **attrs) -> onnx.ModelProto:
    """One ai.onnx node: graph inputs (typed by their example arrays), then initializers
    (None: an empty optional input), in order; output types by shape inference."""
    ins = [helper.make_tensor_value_info(k, helper.np_dtype_to_tensor_dtype(v.dtype), v.shape)
           for k, v in inputs.items()]
    names = list(inputs) + [k if v is not None else "" for k, v in inits.items()]
    while names and not names[-1]:
        names.pop()
    outs = ["y"] if outputs == 1 else [f"y{i}" for i in range(outputs)]
    node = helper.make_node(op, names, outs, **attrs)
    graph = helper.make_graph(
        [node], "g", ins, [helper.make_tensor_value_info(o, TensorProto.UNDEFINED, None)
                           for o in outs],
        [numpy_helper.from_array(v, k) for k, v in inits.items() if v is not None])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    return onnx.shape_inference.infer_shapes(m, strict_mode=True)


def check(m: onnx.ModelProto, inputs: dict[str, np.ndarray], units: int = 0) -> list:
    """Build ``m`` and compare each output with onnxruntime's: equal (``units`` 0) or within
    ``units`` of it, and at least 90% equal."""
    ex = mlcir.build(from_onnx(m))
    got = ex.main(*inputs.values())
    got = list(got) if isinstance(got, tuple) else [got]
    want = list(om.reference(m, inputs).values())
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.shape == w.shape
        if units == 0 or w.dtype.kind == "f":
            np.testing.assert_array_equal(g, w)
        else:
            diff = np.abs(g.astype(np.int32) - w.astype(np.int32))
            assert diff.max() <= units, diff.max()
            assert (diff == 0).mean() >= 0.9  # 92-100% equal in these tests
    return got


def scalar(value, dtype) -> np.ndarray:
    return np.array(value, dtype=dtype)


# -- QuantizeLinear / DequantizeLinear --------------------------------------------------------

@pytest.mark.parametrize("opset", [13, 19, 21])
@pytest.mark.parametrize("dtype", [U8, I8])
@pytest.mark.parametrize("per_axis", [False, True])
def test_quantize_linear(opset, dtype, per_axis):
    """Round half to even at exact halves, saturation at both ends."""
    x = (_rng(1).standard_normal((2, 3, 8)) * 4).astype(np.float32)
    x[0, 0, :6] = [0.25, 0.75, -0.25, -0.75, 100.0, -100.0]  # halves of the 0.5 scale
    scale = (np.array([0.5, 0.03, 0.1], np.float32) if per_axis else scalar(0.5, np.float32))
    zp = (np.array([3, 7, 0], dtype) if per_axis else scalar(3, dtype))
    check(model("QuantizeLinear", {"x": x}, {"s": scale, "z": zp}, opset=opset, axis=1),
          {"x": x})


def test_quantize_linear_without_zero_point_is_uint8():
    x = (_rng(2).standard_normal((4, 5)) * 30).astype(np.float32)
    (y,) = check(model("QuantizeLinear", {"x": x}, {"s": scalar(0.25, np.float32)}), {"x": x})
    assert y.dtype == U8


@pytest.mark.parametrize("opset", [13, 19, 21])
@pytest.mark.parametrize("dtype", [U8, I8])
@pytest.mark.parametrize("per_axis", [False, True])
def test_dequantize_linear(opset, dtype, per_axis):
    x = q(dtype, 2, 3, 4, seed=3)
    scale = (np.array([0.5, 0.03, 0.1], np.float32) if per_axis else scalar(0.07, np.float32))
    zp = (np.array([3, 7, 0], dtype) if per_axis else scalar(5, dtype))
    check(model("DequantizeLinear", {"x": x}, {"s": scale, "z": zp}, opset=opset, axis=1),
          {"x": x})


def test_dequantize_int32_bias_and_constant_folding():
    """A QDQ model's int32 bias (folded at import: all its inputs are constants) and an int8
    weight dequantized per output channel feeding a float MatMul."""
    x = _rng(4).standard_normal((3, 6)).astype(np.float32)
    w = q(I8, 6, 4, seed=5)
    nodes = [helper.make_node("DequantizeLinear", ["w", "ws", "wz"], ["wf"], axis=1),
             helper.make_node("DequantizeLinear", ["b", "bs"], ["bf"]),
             helper.make_node("MatMul", ["x", "wf"], ["m"]),
             helper.make_node("Add", ["m", "bf"], ["y"])]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                                                     [3, 6])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3, 4])],
                          [numpy_helper.from_array(w, "w"),
                           numpy_helper.from_array(np.array([.01, .02, .03, .04], np.float32),
                                                   "ws"),
                           numpy_helper.from_array(np.zeros(4, I8), "wz"),
                           numpy_helper.from_array(np.array([-50, 0, 7, 1000], np.int32), "b"),
                           numpy_helper.from_array(scalar(0.001, np.float32), "bs")])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    text = str(from_onnx(m))
    assert "DequantizeLinear" not in text and "graph.astype" not in text  # folded weights
    ex = mlcir.build(from_onnx(m))
    np.testing.assert_allclose(ex.main(x), om.reference(m, {"x": x})["y"], rtol=1e-5,
                               atol=1e-6)


def test_blocked_quantization_is_refused():
    x = q(I8, 4, 8)
    m = model("DequantizeLinear", {"x": x}, {"s": np.ones((4, 2), np.float32)}, opset=21,
              axis=1, block_size=4)
    with pytest.raises(FrontendError, match=r"DequantizeLinear#0.*block_size=4 \(blocked "
                                            r"quantization\) is not supported"):
        from_onnx(m)


def test_int16_is_refused():
    x = _rng(0).integers(-1000, 1000, (4,)).astype(np.int16)
    m = model("DequantizeLinear", {"x": x}, {"s": scalar(0.1, np.float32),
                                             "z": scalar(0, np.int16)}, opset=21)
    with pytest.raises(FrontendError, match=r"DequantizeLinear#0.*input 0 \('x'\) is int16: "
                                            "only int8, uint8 and int32"):
        from_onnx(m)


# -- DynamicQuantizeLinear ----------------------------------------------------------------------

@pytest.mark.parametrize("shift", [0.0, 3.0, -3.0])
def test_dynamic_quantize_linear(shift):
    """The range includes 0 (all positive / all negative inputs); scale, zero point and the
    quantized values equal onnxruntime's."""
    x = (_rng(6).standard_normal((3, 17)) + shift).astype(np.float32)
    check(model("DynamicQuantizeLinear", {"x": x}, {}, outputs=3), {"x": x})


# -- MatMulInteger, ConvInteger ----------------------------------------------------------------

@pytest.mark.parametrize("ta, tb", [(U8, I8), (U8, U8), (I8, I8), (I8, U8)])
def test_matmul_integer(ta, tb):
    a, b = q(ta, 2, 5, 33, seed=7), w(ta, tb, 33, 9, seed=8)
    check(model("MatMulInteger", {"a": a}, {"b": b, "az": scalar(131 if ta == U8 else -3, ta),
                                            "bz": scalar(2, tb)}), {"a": a})


def test_matmul_integer_runtime_operands_per_column_zero_points():
    a, b = q(U8, 4, 16, seed=9), w(U8, I8, 16, 6, seed=10)
    bz = np.array([0, 1, -1, 5, -7, 3], I8)
    check(model("MatMulInteger", {"a": a, "b": b}, {"az": scalar(100, U8), "bz": bz}),
          {"a": a, "b": b})


@pytest.mark.parametrize("tx, tw", [(U8, I8), (U8, U8), (I8, I8)])
def test_conv_integer(tx, tw):
    """Padding is the input's zero point (the shift makes it zero), strides, groups."""
    x, wt = q(tx, 1, 4, 9, 9, seed=11), w(tx, tw, 6, 2, 3, 3, seed=12)
    wz = scalar(-2 if tw == I8 else 3, tw)
    check(model("ConvInteger", {"x": x}, {"w": wt, "xz": scalar(17, tx), "wz": wz},
                pads=[1, 1, 1, 1], strides=[2, 1], group=2), {"x": x})


def test_conv_integer_1d():
    x, wt = q(U8, 2, 3, 11, seed=13), w(U8, I8, 4, 3, 3, seed=14)
    check(model("ConvInteger", {"x": x}, {"w": wt, "xz": scalar(128, U8),
                                          "wz": scalar(-3, I8)}, pads=[1, 2]), {"x": x})


def test_conv_integer_per_channel_weight_zero_point():
    """A zero point per output channel (onnxruntime refuses it: "Non per-tensor quantization
    is not supported now"): checked against numpy, exactly."""
    x, wt = q(U8, 1, 3, 6, 6, seed=13), q(I8, 4, 3, 3, 3, seed=14)
    wz = np.array([0, 1, 2, -3], I8)
    m = model("ConvInteger", {"x": x}, {"w": wt, "xz": scalar(128, U8), "wz": wz})
    got = mlcir.build(from_onnx(m)).main(x)
    xs = x.astype(np.int64) - 128
    ws = wt.astype(np.int64) - wz.astype(np.int64)[:, None, None, None]
    want = np.zeros((1, 4, 4, 4), np.int64)
    for i in range(4):
        for j in range(4):
            want[0, :, i, j] = np.einsum("chw,mchw->m", xs[0, :, i:i + 3, j:j + 3], ws)
    np.testing.assert_array_equal(got, want)


def test_u8s8_full_range_is_exact():
    """Full-range int8 weights with uint8 data: mlcir's int32 accumulation is exact (numpy in
    int64), where onnxruntime's AVX2 kernel saturates (documented in docs/quantized.md)."""
    a, b = q(U8, 2, 5, 33, seed=7), q(I8, 33, 9, seed=8)
    m = model("MatMulInteger", {"a": a}, {"b": b, "az": scalar(131, U8), "bz": scalar(2, I8)})
    got = mlcir.build(from_onnx(m)).main(a)
    np.testing.assert_array_equal(got, (a.astype(np.int64) - 131) @ (b.astype(np.int64) - 2))


# -- QLinearMatMul, QLinearConv ----------------------------------------------------------------

@pytest.mark.parametrize("ta, tb", [(U8, I8), (U8, U8), (I8, I8)])
def test_qlinear_matmul(ta, tb):
    a, b = q(ta, 3, 40, seed=15), w(ta, tb, 40, 7, seed=16)
    check(model("QLinearMatMul", {"a": a}, {
        "as": scalar(0.02, np.float32), "az": scalar(120 if ta == U8 else 1, ta), "b": b,
        "bs": scalar(0.013, np.float32), "bz": scalar(0, tb), "ys": scalar(0.31, np.float32),
        "yz": scalar(128 if ta == U8 else -5, ta)}), {"a": a})


@pytest.mark.parametrize("tx, tw", [(U8, I8), (I8, I8)])
def test_qlinear_conv_per_channel_with_bias(tx, tw):
    x, wt = q(tx, 1, 3, 10, 10, seed=17), w(tx, tw, 5, 3, 3, 3, seed=18)
    bias = _rng(19).integers(-5000, 5000, 5).astype(np.int32)
    check(model("QLinearConv", {"x": x}, {
        "xs": scalar(0.05, np.float32), "xz": scalar(128 if tx == U8 else 0, tx), "w": wt,
        "ws": np.array([0.01, 0.02, 0.005, 0.03, 0.011], np.float32), "wz": np.zeros(5, tw),
        "ys": scalar(0.7, np.float32), "yz": scalar(100 if tx == U8 else -3, tx), "b": bias},
        pads=[1, 1, 1, 1], strides=[2, 2]), {"x": x})


def test_qlinear_conv_depthwise_per_tensor():
    x, wt = q(U8, 1, 4, 8, 8, seed=20), w(U8, I8, 4, 1, 3, 3, seed=21)
    check(model("QLinearConv", {"x": x}, {
        "xs": scalar(0.05, np.float32), "xz": scalar(128, U8), "w": wt,
        "ws": scalar(0.02, np.float32), "wz": scalar(0, I8), "ys": scalar(0.1, np.float32),
        "yz": scalar(128, U8)}, group=4, pads=[1, 1, 1, 1]), {"x": x})


# -- com.microsoft ------------------------------------------------------------------------------

MS = "com.microsoft"


@pytest.mark.parametrize("op", ["QLinearAdd", "QLinearMul"])
@pytest.mark.parametrize("dtype", [U8, I8])
def test_qlinear_add_mul(op, dtype):
    a, b = q(dtype, 2, 3, 16, seed=22), q(dtype, 2, 3, 16, seed=23)
    zero = 128 if dtype == U8 else 0
    check(_binary(op, dtype, a, b, zero), {"a": a, "b": b}, units=1)


def _binary(op, dtype, a, b, zero):
    """A QLinearAdd/Mul node: a, scale, zp, b, scale, zp, C scale, zp (the data inputs are
    graph inputs, the rest initializers)."""
    inits = {"as_": scalar(0.03, np.float32), "az": scalar(zero + 3, dtype),
             "bs": scalar(0.05, np.float32), "bz": scalar(zero - 2, dtype),
             "cs": scalar(0.06 if op == "QLinearAdd" else 0.4, np.float32),
             "cz": scalar(zero + 1, dtype)}
    node = helper.make_node(op, ["a", "as_", "az", "b", "bs", "bz", "cs", "cz"], ["y"],
                            domain=MS)
    return _ms_model(node, {"a": a, "b": b}, inits)


def _ms_model(node, inputs, inits, out=None):
    """A com.microsoft node; the output's type is the first input's (``out``: another)."""
    ins = [helper.make_tensor_value_info(k, helper.np_dtype_to_tensor_dtype(v.dtype), v.shape)
           for k, v in inputs.items()]
    dtype = out or next(iter(inputs.values())).dtype
    g = helper.make_graph([node], "g", ins,
                          [helper.make_tensor_value_info(
                              "y", helper.np_dtype_to_tensor_dtype(np.dtype(dtype)), None)],
                          [numpy_helper.from_array(v, k) for k, v in inits.items()])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13),
                                            helper.make_opsetid(MS, 1)])
    shape = om.reference(m, inputs)["y"].shape  # onnx cannot infer it; mlcir's checker needs it
    m.graph.output[0].CopyFrom(helper.make_tensor_value_info(
        "y", helper.np_dtype_to_tensor_dtype(np.dtype(dtype)), shape))
    return m


@pytest.mark.parametrize("channels_last", [0, 1])
def test_qlinear_global_average_pool(channels_last):
    x = q(U8, 2, 5, 6, 7, seed=24)
    node = helper.make_node("QLinearGlobalAveragePool", ["x", "xs", "xz", "ys", "yz"], ["y"],
                            domain=MS, channels_last=channels_last)
    m = _ms_model(node, {"x": x}, {"xs": scalar(0.04, np.float32), "xz": scalar(120, U8),
                                   "ys": scalar(0.03, np.float32), "yz": scalar(128, U8)})
    check(m, {"x": x}, units=1)


def test_qlinear_concat():
    a, b = q(U8, 1, 2, 4, seed=25), q(U8, 1, 3, 4, seed=26)
    node = helper.make_node("QLinearConcat", ["ys", "yz", "a", "as_", "az", "b", "bs", "bz"],
                            ["y"], domain=MS, axis=1)
    m = _ms_model(node, {"a": a, "b": b}, {
        "ys": scalar(0.05, np.float32), "yz": scalar(128, U8), "as_": scalar(0.05, np.float32),
        "az": scalar(128, U8), "bs": scalar(0.08, np.float32), "bz": scalar(100, U8)})
    check(m, {"a": a, "b": b}, units=1)


@pytest.mark.parametrize("float_output", [False, True])
def test_qgemm(float_output):
    a, b = q(U8, 4, 24, seed=27), w(U8, I8, 10, 24, seed=28)
    c = _rng(29).integers(-2000, 2000, 10).astype(np.int32)
    names = ["a", "as_", "az", "b", "bs", "bz", "c"] + ([] if float_output else ["ys", "yz"])
    node = helper.make_node("QGemm", names, ["y"], domain=MS, transB=1, alpha=1.0)
    inits = {"as_": scalar(0.02, np.float32), "az": scalar(128, U8), "b": b,
             "bs": scalar(0.01, np.float32), "bz": scalar(0, I8), "c": c}
    if not float_output:
        inits.update(ys=scalar(0.05, np.float32), yz=scalar(110, U8))
    m = _ms_model(node, {"a": a}, inits, out=np.float32 if float_output else U8)
    ex = mlcir.build(from_onnx(m))
    got, want = ex.main(a), om.reference(m, {"a": a})["y"]
    if float_output:
        np.testing.assert_allclose(got, want, rtol=1e-6)
    else:
        assert np.abs(got.astype(int) - want.astype(int)).max() <= 1


def test_refused_com_microsoft_op_names_node_and_op():
    node = helper.make_node("QLinearSigmoid", ["x", "s", "z", "s", "z"], ["y"], domain=MS,
                            name="sig")
    g = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.UINT8,
                                                                      [4])],
                          [helper.make_tensor_value_info("y", TensorProto.UINT8, [4])],
                          [numpy_helper.from_array(scalar(0.1, np.float32), "s"),
                           numpy_helper.from_array(scalar(128, U8), "z")])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13),
                                            helper.make_opsetid(MS, 1)])
    with pytest.raises(MlcirError, match=r"node 'sig' \(QLinearSigmoid.*com.microsoft op "
                                         r"QLinearSigmoid is not supported yet"):
        from_onnx(m)


@pytest.mark.parametrize("dtype", [U8, I8])
def test_max_pool_of_8_bit_integers(dtype):
    """A QOperator model max-pools its uint8 activations: unsigned order, padding ignored."""
    x = q(dtype, 1, 3, 9, 9, seed=31)
    check(model("MaxPool", {"x": x}, {}, kernel_shape=[3, 3], strides=[2, 2],
                pads=[1, 1, 1, 1]), {"x": x})


@pytest.mark.parametrize("k, kernel", [(64, "f32"), (1500, "i32")])
def test_accumulation_in_float32_only_when_provably_exact(k, kernel):
    """A constant weight whose bound 255 * max column sum |w| stays below 2^24 runs on the
    float32 kernels (the same integers); a larger one stays int32. Both exact (numpy, int64)."""
    a, b = q(U8, 3, k, seed=32), q(I8, k, 5, seed=33)
    m = model("MatMulInteger", {"a": a}, {"b": b, "az": scalar(7, U8), "bz": scalar(-1, I8)})
    text = str(from_onnx(m))
    assert f"-> tensor<3x5x{kernel}>" in text.split('"graph.matmul"')[1].splitlines()[0]
    got = mlcir.build(from_onnx(m)).main(a)
    np.testing.assert_array_equal(got, (a.astype(np.int64) - 7) @ (b.astype(np.int64) + 1))
