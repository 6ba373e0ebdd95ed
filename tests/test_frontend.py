"""The ONNX frontend (mlcir.frontend.from_onnx): every converter and whole models against
onnxruntime, opset variants, symbolic dims, constant folding, names, locations and errors.

Every numerical test imports an ONNX model, builds it with ``mlcir.build`` for the CPU and
compares every output with onnxruntime's (float32: rtol 1e-4, plus atol 1e-5 for values that
cancel to about zero).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import mlcir
from mlcir.dialects.graph import NAME_ATTR
from mlcir.errors import FrontendError, MlcirError
from mlcir.frontend import MAX_OPSET, MIN_OPSET, from_onnx, supported_ops
from mlcir.frontend.opset_upgrade import OLDEST_OPSET
from mlcir.testing import onnx_models as om

ROOT = Path(__file__).resolve().parents[1]
RTOL, ATOL = 1e-4, 1e-5
F32 = TensorProto.FLOAT


def compare(model: onnx.ModelProto, inputs: dict[str, np.ndarray],
            shape_dict: dict[str, list[int]] | None = None) -> list[np.ndarray]:
    """Import, build and run ``model``; assert every output matches onnxruntime's."""
    ex = mlcir.build(from_onnx(model, shape_dict=shape_dict))
    got = ex.main(*inputs.values())
    got = list(got) if isinstance(got, tuple) else [got]
    want = om.reference(model, inputs)
    assert len(got) == len(want)
    for (name, expected), actual in zip(want.items(), got):
        assert actual.shape == expected.shape, name
        assert actual.dtype == expected.dtype, name
        np.testing.assert_allclose(actual, expected, rtol=RTOL, atol=ATOL, err_msg=name)
    return got


def f32(*shape: int, seed: int = 1, low: float | None = None) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if low is not None:
        return rng.uniform(low, low + 2.0, shape).astype(np.float32)
    return rng.standard_normal(shape).astype(np.float32)


def i64(*values: int) -> np.ndarray:
    return np.array(values, dtype=np.int64)


# ----------------------------------------------------------------------------------------------
# (a) One node at a time: every supported op and its important attributes

def case(op: str, shapes: Any, attrs: dict | None = None, inits: dict | None = None,
         opset: int = om.DEFAULT_OPSET, outputs: int = 1, positive: bool = False,
         id: str | None = None, domain: str = "normal"):
    """One ONNX node; ``positive``/``domain`` say where its inputs are drawn (see
    :data:`DOMAINS`)."""
    return pytest.param(op, shapes, attrs or {}, inits or {}, opset, outputs,
                        "positive" if positive else domain, id=id or op)


# How the standard-normal inputs are moved into an op's domain.
DOMAINS = {
    "normal": lambda v: v,
    "positive": lambda v: np.abs(v) + np.float32(0.5),
    "unit": lambda v: np.tanh(v) * np.float32(0.95),          # inside (-1, 1)
    "above-one": lambda v: np.abs(v) + np.float32(1.05),
    "wide": lambda v: v * np.float32(3),                       # both sides of the kinks
    "halves": lambda _v: np.array([0.5, 1.5, 2.5, -0.5, -1.5, -2.5], np.float32),
    "ties": lambda v: np.clip(np.round(v), -1, 1),                # many equal values
    "nonzero": lambda v: np.where(np.abs(v) < 0.1, np.float32(0.5), v * np.float32(3)),
}


SINGLE_OPS = [
    # unary
    *[case(op, [[2, 3, 5]]) for op in ("Relu", "Neg", "Exp", "Tanh", "Sigmoid", "Erf", "Abs")],
    *[case(op, [[4, 7]], positive=True) for op in ("Log", "Sqrt", "Reciprocal")],
    *[case(op, [[2, 3, 5]]) for op in ("Sin", "Cos", "Tan", "Atan", "Sinh", "Cosh", "Asinh",
                                       "Floor", "Ceil", "Round", "Sign")],
    *[case(op, [[4, 7]], domain=domain) for op, domain in (
        ("Asin", "unit"), ("Acos", "unit"), ("Atanh", "unit"), ("Acosh", "above-one"))],
    case("Round", [[6]], domain="halves", id="Round-halves-to-even"),
    case("Mod", [[3, 4], [4]], {"fmod": 1}, domain="nonzero", id="Mod-fmod"),
    # quantization (the integer ops: tests/test_frontend_quantized.py)
    case("QuantizeLinear", [[2, 3, 4]], {"axis": 1}, domain="wide",
         inits={"s": np.array([0.02, 0.1, 0.5], np.float32),
                "z": np.array([0, 128, 255], np.uint8)}, id="QuantizeLinear-per-axis"),
    # activations decomposed at import, and the ones with comparisons
    *[case(op, [[3, 5]], domain="wide") for op in (
        "Softplus", "Softsign", "Elu", "Selu", "Celu", "HardSigmoid", "HardSwish",
        "ThresholdedRelu", "Shrink")],
    case("Mish", [[3, 5]], opset=18, domain="wide"),
    case("Swish", [[3, 5]], opset=24, domain="wide"),
    case("Swish", [[3, 5]], {"alpha": 0.5}, opset=24, domain="wide", id="Swish-alpha"),
    case("Elu", [[3, 5]], {"alpha": 0.5}, domain="wide", id="Elu-alpha"),
    case("Celu", [[3, 5]], {"alpha": 2.0}, domain="wide", id="Celu-alpha"),
    case("Selu", [[3, 5]], {"alpha": 1.5, "gamma": 2.0}, domain="wide", id="Selu-attrs"),
    case("HardSigmoid", [[3, 5]], {"alpha": 0.5, "beta": 0.25}, domain="wide",
         id="HardSigmoid-attrs"),
    case("ThresholdedRelu", [[3, 5]], {"alpha": 0.5}, id="ThresholdedRelu-alpha"),
    case("Shrink", [[3, 5]], {"lambd": 1.0, "bias": 0.3}, domain="wide", id="Shrink-attrs"),
    case("PRelu", [[2, 3, 5]], inits={"slope": f32(3, 1)}, id="PRelu-channel-slope"),
    case("PRelu", [[2, 3, 5], [5]], id="PRelu-slope-input"),
    # broadcasting binary
    case("Add", [[2, 3, 4], [4]], id="Add-broadcast-trailing"),
    case("Add", [[2, 1, 4], [3, 1]], id="Add-broadcast-both"),
    case("Add", [[2, 3]], inits={"b": np.float32(0.5)}, id="Add-scalar-constant"),
    case("Sub", [[3, 4], [1]]),
    case("Mul", [[2, 3], [2, 3]]),
    case("Div", [[2, 3], [3]], positive=True),
    case("Pow", [[2, 3], [3]], positive=True),
    case("Pow", [[2, 3]], inits={"e": np.int64(2)}, id="Pow-int-exponent"),
    case("Max", [[2, 3], [3], [2, 1]]),
    case("Min", [[2, 3], [2, 3]]),
    case("Sum", [[2, 3], [3], [2, 3]]),
    case("Mean", [[2, 3], [2, 3], [1]]),
    # activations
    case("LeakyRelu", [[3, 5]], {"alpha": 0.2}),
    case("Clip", [[4, 5]], inits={"min": np.float32(-0.5), "max": np.float32(0.7)}),
    case("Clip", [[4, 5]], inits={"min": None, "max": np.float32(0.3)}, id="Clip-max-only"),
    case("Clip", [[4, 5]], id="Clip-unbounded"),
    case("Gelu", [[3, 8]], opset=20),
    case("Gelu", [[3, 8]], {"approximate": "tanh"}, opset=20, id="Gelu-tanh"),
    # Gemm / MatMul
    case("Gemm", [[3, 4], [4, 5]], id="Gemm-plain"),
    case("Gemm", [[3, 4]], {"transB": 1, "alpha": 0.5, "beta": 2.0},
         inits={"w": f32(5, 4), "c": f32(5)}, id="Gemm-transB-alpha-beta"),
    case("Gemm", [[4, 3], [5, 4], [3, 1]], {"transA": 1, "transB": 1, "alpha": 1.5},
         id="Gemm-transA-transB-inputs"),
    case("Gemm", [[3, 4], [4, 5]], inits={"c": np.float32(0.25)}, id="Gemm-scalar-C"),
    case("MatMul", [[3, 4], [4, 5]]),
    case("MatMul", [[2, 3, 4], [4, 5]], id="MatMul-batched"),
    case("MatMul", [[2, 1, 3, 4], [5, 4, 6]], id="MatMul-broadcast-batch"),
    case("MatMul", [[4], [4, 5]], id="MatMul-1d-lhs"),
    case("MatMul", [[3, 4], [4]], id="MatMul-1d-rhs"),
    # convolution
    case("Conv", {"x": [1, 3, 8, 8]}, {"kernel_shape": [3, 3]},
         inits={"w": f32(4, 3, 3, 3)}, id="Conv-plain"),
    case("Conv", {"x": [2, 3, 9, 9]}, {"pads": [1, 2, 0, 1], "strides": [2, 2]},
         inits={"w": f32(4, 3, 3, 3), "b": f32(4)}, id="Conv-pads-strides-bias"),
    case("Conv", {"x": [1, 2, 10, 10]}, {"dilations": [2, 2], "pads": [2, 2, 2, 2]},
         inits={"w": f32(3, 2, 3, 3)}, id="Conv-dilations"),
    case("Conv", {"x": [1, 4, 6, 6]}, {"group": 2, "pads": [1, 1, 1, 1]},
         inits={"w": f32(6, 2, 3, 3), "b": f32(6)}, id="Conv-groups"),
    case("Conv", {"x": [1, 4, 6, 6]}, {"group": 4},
         inits={"w": f32(4, 1, 3, 3)}, id="Conv-depthwise"),
    case("Conv", {"x": [1, 2, 7, 7]}, {"auto_pad": "SAME_UPPER", "strides": [2, 2]},
         inits={"w": f32(3, 2, 4, 4)}, id="Conv-same-upper"),
    case("Conv", {"x": [1, 2, 7, 7]}, {"auto_pad": "SAME_LOWER", "strides": [2, 2]},
         inits={"w": f32(3, 2, 4, 4)}, id="Conv-same-lower"),
    case("Conv", {"x": [1, 2, 7, 7]}, {"auto_pad": "VALID"},
         inits={"w": f32(3, 2, 2, 3)}, id="Conv-valid-rectangular"),
    case("Conv", {"x": [1, 2, 7, 7], "w": [3, 2, 3, 3]}, id="Conv-weight-input"),
    case("Conv", {"x": [2, 3, 12]}, {"pads": [1, 1], "strides": [2]},
         inits={"w": f32(4, 3, 3), "b": f32(4)}, id="Conv-1d"),
    # pooling
    case("MaxPool", [[1, 2, 8, 8]], {"kernel_shape": [2, 2], "strides": [2, 2]}),
    case("MaxPool", [[1, 2, 9, 9]], {"kernel_shape": [3, 3], "strides": [2, 2],
                                     "pads": [1, 1, 1, 1]}, id="MaxPool-pads"),
    case("MaxPool", [[1, 2, 8, 8]], {"kernel_shape": [3, 3], "strides": [2, 2],
                                     "ceil_mode": 1}, id="MaxPool-ceil"),
    case("MaxPool", [[1, 2, 9, 9]], {"kernel_shape": [2, 2], "dilations": [2, 2]},
         id="MaxPool-dilations"),
    case("MaxPool", [[1, 2, 7, 7]], {"kernel_shape": [3, 3], "strides": [2, 2],
                                     "auto_pad": "SAME_UPPER"}, id="MaxPool-same-upper"),
    case("MaxPool", [[1, 3, 10]], {"kernel_shape": [3], "strides": [2]}, id="MaxPool-1d"),
    case("AveragePool", [[1, 2, 8, 8]], {"kernel_shape": [2, 2], "strides": [2, 2]}),
    case("AveragePool", [[1, 2, 7, 7]], {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1]},
         id="AveragePool-pads-exclude"),
    case("AveragePool", [[1, 2, 7, 7]], {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1],
                                         "count_include_pad": 1}, id="AveragePool-pads-include"),
    case("AveragePool", [[1, 2, 8, 8]], {"kernel_shape": [3, 3], "strides": [2, 2],
                                         "ceil_mode": 1}, id="AveragePool-ceil"),
    case("AveragePool", [[1, 2, 9, 9]], {"kernel_shape": [2, 2], "dilations": [2, 2]},
         opset=19, id="AveragePool-dilations-v19"),
    case("GlobalAveragePool", [[2, 3, 5, 4]]),
    case("GlobalMaxPool", [[2, 3, 5, 4]]),
    # normalisation, softmax
    case("BatchNormalization", [[2, 3, 4, 4]], {"epsilon": 1e-3},
         inits={"scale": f32(3, low=0.5), "bias": f32(3), "mean": f32(3),
                "var": f32(3, low=0.5)}),
    case("BatchNormalization", [[2, 3]],
         inits={"scale": f32(3, low=0.5), "bias": f32(3), "mean": f32(3),
                "var": f32(3, low=0.5)}, id="BatchNormalization-2d"),
    case("Softmax", [[3, 10]]),
    case("Softmax", [[2, 5, 4]], {"axis": 1}, id="Softmax-axis1"),
    case("Softmax", [[4, 3]], {"axis": 0}, id="Softmax-axis0"),
    case("LogSoftmax", [[3, 10]]),
    case("LogSoftmax", [[2, 5, 4]], {"axis": 1}, id="LogSoftmax-axis1"),
    case("LayerNormalization", [[2, 5, 8]], {"epsilon": 1e-5},
         inits={"gamma": f32(8, low=0.5), "beta": f32(8)}),
    case("LayerNormalization", [[2, 3, 4]], {"axis": 1},
         inits={"gamma": f32(3, 4, low=0.5), "beta": f32(3, 4)}, id="LayerNormalization-axis1"),
    case("LayerNormalization", [[3, 6]], inits={"gamma": f32(6, low=0.5)},
         id="LayerNormalization-no-bias"),
    # reductions: axes attribute (opset 13) and input (opset 18; ReduceSum since 13)
    case("ReduceMean", [[2, 3, 4]], {"axes": [1]}, opset=13, id="ReduceMean-v13"),
    case("ReduceMean", [[2, 3, 4]], {"keepdims": 0}, inits={"axes": i64(-1, 0)}, opset=18,
         id="ReduceMean-v18-input-axes"),
    case("ReduceMax", [[2, 3, 4]], {"axes": [0, 2], "keepdims": 0}, opset=13,
         id="ReduceMax-v13"),
    case("ReduceMax", [[2, 3, 4]], inits={"axes": i64(1)}, opset=18, id="ReduceMax-v18"),
    case("ReduceMin", [[2, 3, 4]], {"axes": [2]}, opset=13, id="ReduceMin-v13"),
    case("ReduceSum", [[2, 3, 4]], inits={"axes": i64(1)}, opset=13, id="ReduceSum-v13"),
    case("ReduceSum", [[2, 3, 4]], {"keepdims": 0}, id="ReduceSum-all-axes"),
    case("ReduceSum", [[2, 3, 4]], {"noop_with_empty_axes": 1}, id="ReduceSum-noop"),
    case("ReduceProd", [[2, 3, 4]], {"axes": [0, 2], "keepdims": 0}, opset=13,
         id="ReduceProd-v13"),
    case("ReduceProd", [[2, 3, 4]], inits={"axes": i64(-2)}, opset=18, id="ReduceProd-v18"),
    case("ReduceProd", [[2, 3, 4]], {"keepdims": 0}, opset=18, id="ReduceProd-all-axes"),
    case("ReduceProd", [[2, 3, 4]], {"noop_with_empty_axes": 1}, opset=18,
         id="ReduceProd-noop"),
    # shapes and data movement
    case("Reshape", [[2, 3, 4]], inits={"shape": i64(4, -1)}),
    case("Reshape", [[2, 3, 4]], inits={"shape": i64(0, 12)}, id="Reshape-copy-dim"),
    case("Reshape", [[2, 3, 4]], {"allowzero": 1}, inits={"shape": i64(6, 4)}, opset=14,
         id="Reshape-allowzero"),
    case("Flatten", [[2, 3, 4, 5]]),
    case("Flatten", [[2, 3, 4, 5]], {"axis": 0}, id="Flatten-axis0"),
    case("Flatten", [[2, 3, 4, 5]], {"axis": -1}, id="Flatten-axis-neg"),
    case("Transpose", [[2, 3, 4]], {"perm": [1, 2, 0]}),
    case("Transpose", [[2, 3, 4]], id="Transpose-default"),
    case("Concat", [[2, 3], [2, 5]], {"axis": 1}),
    case("Concat", [[2, 3], [1, 3]], {"axis": -2}, inits={"c": f32(4, 3)},
         id="Concat-constant-negative-axis"),
    case("Split", [[6, 4]], {"axis": 0}, inits={"split": i64(2, 4)}, outputs=2, opset=13,
         id="Split-v13-sizes"),
    case("Split", [[3, 6]], {"axis": -1}, outputs=3, opset=13, id="Split-v13-equal"),
    case("Split", [[7, 2]], {"axis": 0, "num_outputs": 3}, outputs=3, opset=18,
         id="Split-v18-num-outputs"),
    case("Slice", [[5, 6]], inits={"starts": i64(1, 0), "ends": i64(4, 5)}),
    case("Slice", [[5, 6, 3]], inits={"starts": i64(-4), "ends": i64(np.iinfo(np.int64).max),
                                      "axes": i64(1), "steps": i64(2)}, id="Slice-axes-steps"),
    case("Slice", [[5, 6]], inits={"starts": i64(-1), "ends": i64(np.iinfo(np.int64).min),
                                   "axes": i64(0), "steps": i64(-1)}, id="Slice-reverse"),
    case("Slice", [[5, 6]], inits={"starts": i64(4, 5), "ends": i64(1, -7),
                                   "axes": i64(0, 1), "steps": i64(-2, -3)},
         id="Slice-negative-steps"),
    case("Gather", [[5, 4]], {"axis": 0}, inits={"idx": i64(4, 0, -1, 2)}),
    case("Gather", [[3, 5, 2]], {"axis": 1}, inits={"idx": np.array([[1, 0], [4, -2]],
                                                                    np.int32)},
         id="Gather-axis1-2d-indices"),
    case("Gather", [[3, 5]], {"axis": 1}, inits={"idx": np.int64(3)}, id="Gather-scalar"),
    case("GatherElements", [[3, 5]], {"axis": 1},
         inits={"idx": np.array([[4, 0, -1], [2, -5, 3], [0, 0, 1]], np.int64)}),
    case("GatherElements", [[4, 3]], {"axis": -2},
         inits={"idx": np.array([[3, 0, -4], [1, 2, 2]], np.int32)}, id="GatherElements-axis0"),
    case("Squeeze", [[1, 3, 1, 2]], inits={"axes": i64(0, -2)}),
    case("Squeeze", [[1, 3, 1, 2]], id="Squeeze-all"),
    case("Unsqueeze", [[3, 2]], inits={"axes": i64(0, -1)}),
    case("Expand", [[3, 1]], inits={"shape": i64(2, 3, 4)}),
    case("Cast", [[3, 4]], {"to": TensorProto.INT32}, id="Cast-int32"),
    case("Cast", [[3, 4]], {"to": TensorProto.DOUBLE}, id="Cast-double"),
    case("Identity", [[3, 4]]),
    case("Dropout", [[3, 4]]),
    case("Shape", [[3, 4, 5]]),
    case("Shape", [[3, 4, 5]], {"start": 1, "end": -1}, opset=15, id="Shape-start-end"),
    # Composed of graph ops (mlcir/frontend/converters/composite.py).
    case("ReduceL1", [[3, 4, 5]], inits={"axes": i64(1)}, opset=18),
    case("ReduceL1", [[3, 4, 5]], {"keepdims": 0}, opset=18, id="ReduceL1-all"),
    case("ReduceL2", [[3, 4, 5]], {"keepdims": 0}, inits={"axes": i64(0, 2)}, opset=18),
    case("ReduceSumSquare", [[3, 4, 5]], inits={"axes": i64(-1)}, opset=18),
    case("ReduceLogSumExp", [[3, 4, 5]], inits={"axes": i64(1)}, opset=18, domain="wide"),
    case("ReduceLogSumExp", [[3, 4, 5]], {"keepdims": 0}, inits={"axes": i64(2, 0)},
         opset=18, id="ReduceLogSumExp-keepdims0"),
    case("ReduceL2", [[3, 4]], {"axes": [1]}, opset=13, id="ReduceL2-axes-attribute"),
    case("LpNormalization", [[3, 4, 5]], {"axis": 1, "p": 2}),
    case("LpNormalization", [[3, 4, 5]], {"axis": -1, "p": 1}, id="LpNormalization-p1"),
    case("Hardmax", [[3, 6]]),
    case("Hardmax", [[2, 3, 4]], {"axis": 1}, id="Hardmax-axis1"),
    case("Hardmax", [[4, 6]], domain="ties", id="Hardmax-ties"),
    case("LRN", [[2, 7, 5, 5]], {"size": 3, "alpha": 1e-3, "beta": 0.75, "bias": 2.0}),
    case("ConvTranspose", [[1, 4, 5, 5]], {"strides": [2, 2], "pads": [1, 1, 1, 1],
                                            "output_padding": [1, 1]},
         inits={"w": f32(4, 3, 3, 3, seed=2), "b": f32(3, seed=3)}),
    case("ConvTranspose", [[1, 4, 5, 6]], {"strides": [2, 2], "group": 2,
                                            "output_padding": [1, 0]},
         inits={"w": f32(4, 2, 3, 3, seed=2)}, id="ConvTranspose-grouped"),
    case("ConvTranspose", [[2, 3, 4, 4]], {"dilations": [2, 2], "pads": [0, 1, 2, 0]},
         inits={"w": f32(3, 5, 3, 3, seed=2)}, id="ConvTranspose-dilated"),
    case("ConvTranspose", [[1, 2, 5, 5]], {"strides": [2, 2], "output_shape": [10, 11]},
         inits={"w": f32(2, 3, 3, 3, seed=2)}, id="ConvTranspose-output_shape"),
    case("ConvTranspose", [[1, 2, 5, 5]], {"strides": [2, 2], "auto_pad": "SAME_UPPER"},
         inits={"w": f32(2, 3, 4, 4, seed=2)}, id="ConvTranspose-same_upper"),
    case("ConvTranspose", [[1, 2, 5, 5]], {"strides": [2, 2], "pads": [3, 3, 3, 3]},
         inits={"w": f32(2, 3, 3, 3, seed=2)}, id="ConvTranspose-cropping-pads"),
    case("ConvTranspose", [[1, 3, 7]], {"strides": [3], "pads": [1, 2]},
         inits={"w": f32(3, 2, 4, seed=2)}, id="ConvTranspose-1d"),
    case("ConvTranspose", [[1, 2, 4, 4], [2, 3, 2, 2]], {"strides": [2, 2]},
         id="ConvTranspose-runtime-weight"),
    # The strided-phase form (constant filters, no dilation): taps fewer than the stride,
    # more than twice it, strides differing per axis, depthwise, a batch, output_padding.
    case("ConvTranspose", [[1, 3, 4, 5]], {"strides": [3, 3]},
         inits={"w": f32(3, 2, 2, 2, seed=2)}, id="ConvTranspose-phase-k2-s3"),
    case("ConvTranspose", [[2, 4, 5, 4]], {"strides": [2, 1], "pads": [2, 1, 1, 2],
                                            "output_padding": [1, 0]},
         inits={"w": f32(4, 3, 5, 3, seed=2), "b": f32(3, seed=4)},
         id="ConvTranspose-phase-k5-s2x1"),
    case("ConvTranspose", [[1, 8, 6, 6]], {"strides": [2, 2], "group": 8, "pads": [1, 1, 1, 1]},
         inits={"w": f32(8, 1, 4, 4, seed=2)}, id="ConvTranspose-phase-depthwise"),
    case("ConvTranspose", [[1, 2, 3, 3]], {"strides": [4, 4], "output_padding": [3, 2]},
         inits={"w": f32(2, 2, 3, 3, seed=2)}, id="ConvTranspose-phase-output-padding"),
    case("RMSNormalization", [[2, 3, 8]], {"epsilon": 1e-5},
         inits={"scale": f32(8, seed=3)}, opset=23),
    case("RMSNormalization", [[2, 3, 8]], {"axis": 1}, inits={"scale": f32(3, 8, seed=3)},
         opset=23, id="RMSNormalization-axis1"),
]


@pytest.mark.parametrize("op, shapes, attrs, inits, opset, outputs, domain", SINGLE_OPS)
def test_single_op(op, shapes, attrs, inits, opset, outputs, domain):
    model = om.single_op(op, shapes, attrs, opset=opset, initializers=inits,
                         num_outputs=outputs)
    inputs = {k: DOMAINS[domain](v) for k, v in om.single_op_inputs(model).items()}
    compare(model, inputs)


def test_every_supported_op_is_tested():
    # CastLike: a test below; the integer-only ops: tests/test_elementwise_dtypes.py; the
    # boolean and unsigned ones: tests/test_boolean_ops.py.
    boolean_ops = {"Equal", "Less", "LessOrEqual", "Greater", "GreaterOrEqual", "And", "Or",
                   "Xor", "Not", "Where", "IsNaN", "IsInf", "BitShift"}
    # Shape arithmetic on symbolic dims (ConstantOfShape, Range, Size with symbolic inputs):
    # tests/test_symbolic_import.py.
    shape_ops = {"ConstantOfShape", "Range", "Size"}
    from test_frontend_ops_exporters import TESTED_OPS  # the exporters' ops: tested there
    from test_frontend_quantized import TESTED_OPS as QUANTIZED_OPS

    # MeanVarianceNormalization: test_mean_variance_normalization (onnx's strict shape
    # inference of its function body fails, so not through single_op).
    tested = {p.values[0] for p in SINGLE_OPS} | {"MeanVarianceNormalization", "OneHot"} | {
                  "Attention", "RotaryEmbedding"} | {  # tests/test_frontend_llm_ops.py
                  "LSTM", "GRU", "RNN"} | {  # tests/test_frontend_recurrent.py
                  "CastLike", "BitwiseAnd", "BitwiseOr",
                                                  "BitwiseXor", "BitwiseNot", "Mod"} | \
        boolean_ops | shape_ops
    assert set(supported_ops()) - tested - TESTED_OPS - QUANTIZED_OPS == set()


@pytest.mark.parametrize("axis, depth, values", [
    (-1, np.array([5], np.int64), np.array([0.5, 2.0], np.float32)),
    (0, np.array(4, np.int64), np.array([-1, 9], np.int64)),
    (1, np.array([6.0], np.float32), np.array([0, 1], np.int32)),
])
def test_one_hot_of_runtime_indices(axis, depth, values):
    """Indices known only at run time, negative ones counted from the end, out-of-range ones
    a row of the off value."""
    idx = helper.make_tensor_value_info("idx", TensorProto.INT64, [2, 3])
    y = helper.make_tensor_value_info("y", helper.np_dtype_to_tensor_dtype(values.dtype), None)
    model = helper.make_model(helper.make_graph(
        [helper.make_node("OneHot", ["idx", "depth", "values"], ["y"], axis=axis)], "g", [idx],
        [y], [numpy_helper.from_array(depth, "depth"), numpy_helper.from_array(values, "values")]),
        opset_imports=[helper.make_opsetid("", 13)])
    model = onnx.shape_inference.infer_shapes(model)
    compare(model, {"idx": np.array([[0, 2, -1], [4, 1, 7]], np.int64)})


@pytest.mark.parametrize("shape, attrs", [([2, 3, 4, 5], {}), ([2, 3, 4], {"axes": [1]}),
                                          ([3, 5], {"axes": [0, 1]})])
def test_mean_variance_normalization(shape, attrs):
    x = helper.make_tensor_value_info("x", F32, shape)
    y = helper.make_tensor_value_info("y", F32, shape)
    model = helper.make_model(helper.make_graph(
        [helper.make_node("MeanVarianceNormalization", ["x"], ["y"], **attrs)], "g", [x], [y]),
        opset_imports=[helper.make_opsetid("", 13)])
    compare(model, {"x": f32(*shape)})


def test_mean_variance_normalization_of_a_constant_group_is_nan():
    """No epsilon, as the ONNX function and onnxruntime: a group of one element (an axis of
    size 1) or of equal values is 0 / 0 = NaN, the others normalised (found by the model
    fuzzer: mlcir added onnxruntime's old epsilon and answered 0)."""
    x = helper.make_tensor_value_info("x", F32, [3, 4, 1])
    y = helper.make_tensor_value_info("y", F32, [3, 4, 1])
    nodes = [helper.make_node("MeanVarianceNormalization", ["x"], ["y"], axes=[2]),
             helper.make_node("MeanVarianceNormalization", ["x"], ["z"], axes=[1, 2])]
    z = helper.make_tensor_value_info("z", F32, [3, 4, 1])
    model = helper.make_model(helper.make_graph(nodes, "g", [x], [y, z]),
                              opset_imports=[helper.make_opsetid("", 13)])
    values = f32(3, 4, 1)
    values[1] = 0.5  # a constant group along axes [1, 2]
    got = compare(model, {"x": values})
    assert np.isnan(got[0]).all()
    assert np.isnan(got[1][1]).all() and not np.isnan(got[1][[0, 2]]).any()


def _model(nodes, inputs, outputs, initializers=(), opset=om.DEFAULT_OPSET,
           ir_version=None) -> onnx.ModelProto:
    graph = helper.make_graph(nodes, "test", inputs, outputs, initializer=list(initializers))
    opsets = [helper.make_opsetid("", opset)]
    model = helper.make_model(graph, opset_imports=opsets, producer_name="test",
                              ir_version=ir_version or helper.find_min_ir_version_for(opsets))
    onnx.checker.check_model(model)
    return model


def test_gather_with_runtime_indices_and_castlike():
    """An embedding lookup: a constant table, int64 indices from the caller."""
    table = numpy_helper.from_array(f32(10, 4), "table")
    model = _model(
        [helper.make_node("Gather", ["table", "ids"], ["emb"], name="lookup"),
         helper.make_node("CastLike", ["ids", "emb"], ["ids_f"], name="castlike")],
        [helper.make_tensor_value_info("ids", TensorProto.INT64, [2, 3])],
        [helper.make_tensor_value_info("emb", F32, [2, 3, 4]),
         helper.make_tensor_value_info("ids_f", F32, [2, 3])], [table])
    compare(model, {"ids": np.array([[1, 9, 0], [-1, 3, 3]], np.int64)})


def test_clip_of_integers():
    """Clip of an integer tensor (bounds of its type) uses maximum/minimum."""
    nodes = [helper.make_node("Cast", ["x"], ["xi"], name="to_int", to=TensorProto.INT64),
             helper.make_node("Clip", ["xi", "lo", "hi"], ["y"], name="clip")]
    model = _model(nodes, [helper.make_tensor_value_info("x", F32, [3, 4])],
                   [helper.make_tensor_value_info("y", TensorProto.INT64, [3, 4])],
                   [numpy_helper.from_array(np.array(-2, np.int64), "lo"),
                    numpy_helper.from_array(np.array(3, np.int64), "hi")])
    compare(model, {"x": f32(3, 4) * 4})


# ----------------------------------------------------------------------------------------------
# (b) Whole models

MODELS = {
    "mlp": (lambda: om.mlp(), lambda: om.mlp_inputs()),
    "mlp_batch64": (lambda: om.mlp(batch=64), lambda: om.mlp_inputs(batch=64)),
    "mnist_cnn": (lambda: om.mnist_cnn(), lambda: om.mnist_cnn_inputs()),
    "resnet_block": (lambda: om.resnet_block(), lambda: om.resnet_block_inputs()),
    "resnet_block_downsample": (lambda: om.resnet_block(downsample=True),
                                lambda: om.resnet_block_inputs()),
    "transformer_encoder": (lambda: om.transformer_encoder(),
                            lambda: om.transformer_encoder_inputs()),
    "transformer_encoder_gelu_v20": (lambda: om.transformer_encoder(opset=20),
                                     lambda: om.transformer_encoder_inputs()),
}


@pytest.mark.parametrize("name", list(MODELS))
def test_model_matches_onnxruntime(name):
    make_model, make_inputs = MODELS[name]
    compare(make_model(), make_inputs())


def test_digits_mlp_reaches_onnxruntime_accuracy():
    """The shipped trained model classifies the held-out digits as well as onnxruntime."""
    path = ROOT / "examples" / "models" / "digits_mlp.onnx"
    data = np.load(ROOT / "examples" / "models" / "digits_test.npz")
    images, labels = data["images"], data["labels"]
    ex = mlcir.build(from_onnx(path))
    ours = np.concatenate([ex.main(image[None, :]) for image in images])
    theirs = np.concatenate([om.reference(path, {"image": image[None, :]})["probabilities"]
                             for image in images])
    np.testing.assert_allclose(ours, theirs, rtol=RTOL, atol=ATOL)
    accuracy = (ours.argmax(axis=1) == labels).mean()
    assert accuracy == (theirs.argmax(axis=1) == labels).mean()
    assert accuracy > 0.9


# ----------------------------------------------------------------------------------------------
# (d) Opset variants: the oldest supported opset and the newest onnx knows

@pytest.mark.parametrize("opset", [MIN_OPSET, MAX_OPSET])
@pytest.mark.parametrize("op, shapes, attrs, inits, outputs", [
    ("Split", [[6, 4]], {"axis": 0}, {"split": i64(1, 5)}, 2),
    ("ReduceSum", [[2, 3, 4]], {"keepdims": 0}, {"axes": i64(0, 2)}, 1),
    ("Squeeze", [[1, 3, 1]], {}, {"axes": i64(2)}, 1),
    ("Unsqueeze", [[3, 2]], {}, {"axes": i64(1)}, 1),
    ("Clip", [[3, 4]], {}, {"min": np.float32(-0.2), "max": np.float32(0.2)}, 1),
    ("Reshape", [[2, 6]], {}, {"shape": i64(3, -1)}, 1),
    ("Softmax", [[2, 7]], {}, {}, 1),
    ("Cast", [[2, 7]], {"to": TensorProto.INT64}, {}, 1),
    ("Shape", [[2, 7]], {}, {}, 1),
    ("Gemm", [[2, 3]], {"transB": 1}, {"w": f32(4, 3)}, 1),
], ids=["Split", "ReduceSum", "Squeeze", "Unsqueeze", "Clip", "Reshape", "Softmax", "Cast",
        "Shape", "Gemm"])
def test_opset_variants(op, shapes, attrs, inits, outputs, opset):
    model = om.single_op(op, shapes, attrs, opset=opset, initializers=inits,
                         num_outputs=outputs)
    compare(model, om.single_op_inputs(model))


@pytest.mark.parametrize("opset", [13, 17, 18, MAX_OPSET])
def test_reduce_mean_axes_attribute_then_input(opset):
    """ReduceMean's axes: an attribute before opset 18, an input from 18."""
    if opset < 18:
        model = om.single_op("ReduceMean", [[2, 3, 4]], {"axes": [-1]}, opset=opset)
    else:
        model = om.single_op("ReduceMean", [[2, 3, 4]], opset=opset,
                             initializers={"axes": i64(-1)})
    compare(model, om.single_op_inputs(model))


@pytest.mark.parametrize("opset", [20, MAX_OPSET])
def test_newer_ops_at_newest_opset(opset):
    for op, shapes, attrs, inits in [
            ("Gelu", [[2, 5]], {}, {}),
            ("LayerNormalization", [[2, 5]], {}, {"g": f32(5, low=0.5), "b": f32(5)}),
            ("Split", [[5, 2]], {"num_outputs": 2}, {})]:
        outputs = 2 if op == "Split" else 1
        model = om.single_op(op, shapes, attrs, opset=opset, initializers=inits,
                             num_outputs=outputs)
        compare(model, om.single_op_inputs(model))


def test_converter_is_chosen_by_opset():
    from mlcir.frontend.registry import converter_table

    table = converter_table()
    assert table["ReduceMean"].impl(17) == table["ReduceMean"]._impl_v13
    assert table["ReduceMean"].impl(18) == table["ReduceMean"]._impl_v18
    assert table["ReduceMean"].impl(MAX_OPSET) == table["ReduceMean"]._impl_v18
    assert table["Gelu"].impl(19) is None
    assert table["Split"].impl(13) == table["Split"]._impl_v13


# ----------------------------------------------------------------------------------------------
# (e) Symbolic dims

def test_symbolic_batch_stays_dynamic_without_shape_dict():
    model = om.mlp(batch="N")
    mod = from_onnx(model)
    fn = mod.body.operations[0]
    assert str(fn.type.inputs[0]) == "tensor<?x784xf32>"
    assert str(fn.type.results[0]) == "tensor<?x10xf32>"
    ex = mlcir.build(mod)
    for batch in (1, 5):
        inputs = om.mlp_inputs(batch=batch)
        logits = np.empty((batch, 10), np.float32)  # a dynamic result: the caller's array
        ex.main(inputs["x"], logits)
        np.testing.assert_allclose(logits, om.reference(model, inputs)["logits"],
                                   rtol=RTOL, atol=ATOL)


def test_shape_dict_fixes_symbolic_batch():
    model = om.mlp(batch="N")
    mod = from_onnx(model, shape_dict={"x": [64, 784]})
    fn = mod.body.operations[0]
    assert str(fn.type.inputs[0]) == "tensor<64x784xf32>"
    assert str(fn.type.results[0]) == "tensor<64x10xf32>"
    compare(model, om.mlp_inputs(batch=64), shape_dict={"x": [64, 784]})


def test_symbolic_batch_through_reshape():
    """A Reshape with dynamic dims (the batch as a -1, or two kept in place as 0s) imports and
    runs at any size; one that would move a dynamic dim is an error naming the node."""
    model = om.transformer_encoder(batch="B")
    ex = mlcir.build(from_onnx(model))
    for batch in (1, 3):
        inputs = om.transformer_encoder_inputs(batch=batch)
        (want,) = om.reference(model, inputs).values()
        np.testing.assert_allclose(ex.main(*inputs.values()), want, rtol=RTOL, atol=ATOL)
    compare(model, om.transformer_encoder_inputs(batch=2), shape_dict={"x": [2, 16, 64]})
    nodes = [helper.make_node("Flatten", ["x"], ["y"], name="flat", axis=2)]
    two = _model(nodes, [helper.make_tensor_value_info("x", F32, ["N", "M", 3, 2])],
                 [helper.make_tensor_value_info("y", F32, ["N", None])])
    ex = mlcir.build(from_onnx(two))
    assert ex.main(f32(2, 5, 3, 2)).shape == (10, 6)
    swap = _model([helper.make_node("Shape", ["x"], ["s"], name="shape"),
                   helper.make_node("Constant", [], ["perm"], value_ints=[1, 0]),
                   helper.make_node("Gather", ["s", "perm"], ["t"], name="swap"),
                   helper.make_node("Reshape", ["x", "t"], ["y"], name="reshape_swapped")],
                  [helper.make_tensor_value_info("x", F32, ["N", "M"])],
                  [helper.make_tensor_value_info("y", F32, ["M", "N"])])
    with pytest.raises(FrontendError, match=r"reshape_swapped.*\[N, M\] to \[M, N\].*more than "
                                            r"one dynamic dim"):
        from_onnx(swap)


def test_shape_of_symbolic_dim_is_computed_at_run_time():
    nodes = [helper.make_node("Shape", ["x"], ["s"], name="shape_of_x")]
    model = _model(nodes, [helper.make_tensor_value_info("x", F32, ["N", 3])],
                   [helper.make_tensor_value_info("s", TensorProto.INT64, [2])])
    ex = mlcir.build(from_onnx(model))
    for n in (1, 4):
        np.testing.assert_array_equal(ex.main(f32(n, 3)), [n, 3])
    compare(model, {"x": f32(4, 3)}, shape_dict={"x": [4, 3]})


# ----------------------------------------------------------------------------------------------
# Constant folding, parameters, names, locations

def _shape_arithmetic_model() -> onnx.ModelProto:
    """How exporters flatten: x.reshape(x.shape[0], -1), computed with Shape/Gather/Concat."""
    nodes = [
        helper.make_node("Shape", ["x"], ["shape"], name="shape"),
        helper.make_node("Constant", [], ["zero"], name="zero", value=numpy_helper.from_array(
            np.array(0, np.int64))),
        helper.make_node("Gather", ["shape", "zero"], ["batch"], name="batch", axis=0),
        helper.make_node("Unsqueeze", ["batch", "axes0"], ["batch1"], name="unsqueeze"),
        helper.make_node("Constant", [], ["minus1"], name="minus1", value_ints=[-1]),
        helper.make_node("Concat", ["batch1", "minus1"], ["target"], name="concat", axis=0),
        helper.make_node("Reshape", ["x", "target"], ["flat"], name="flatten"),
        helper.make_node("Transpose", ["w"], ["wt"], name="transpose_w"),
        helper.make_node("MatMul", ["flat", "wt"], ["y"], name="fc"),
    ]
    return _model(nodes, [helper.make_tensor_value_info("x", F32, [2, 3, 4])],
                  [helper.make_tensor_value_info("y", F32, [2, 5])],
                  [numpy_helper.from_array(i64(0), "axes0"),
                   numpy_helper.from_array(f32(5, 12), "w")])


def test_shape_computations_fold_at_import():
    model = _shape_arithmetic_model()
    text = str(from_onnx(model))
    # Only the data path is built: Shape/Gather/Unsqueeze/Concat and the weight's Transpose
    # were evaluated at import.
    graph_ops = sorted({line.split('"')[1] for line in text.splitlines() if '"graph.' in line})
    assert graph_ops == ["graph.matmul", "graph.reshape"]
    assert "tensor<12x5xf32>" in text  # the folded, transposed weight
    compare(model, {"x": f32(2, 3, 4)})


def test_names_locations_and_bound_parameters():
    model = om.mlp()
    mod = from_onnx(model)
    fn = mod.body.operations[0]
    assert fn.sym_name.value == "main"
    assert [str(a.type) for a in fn.arguments] == ["tensor<1x784xf32>"]
    arg_names = [a[NAME_ATTR].value for a in fn.arg_attrs]
    res_names = [a[NAME_ATTR].value for a in fn.res_attrs]
    assert (arg_names, res_names) == (["x"], ["logits"])
    ops = list(fn.regions[0].blocks[0].operations)
    locations = {op.name: set() for op in ops}
    for op in ops:
        locations[op.name].add(str(op.location))
    assert locations["graph.matmul"] == {'loc("fc0")', 'loc("fc1")'}
    assert locations["graph.relu"] == {'loc("relu0")'}
    # The weights are constants: the large matrices as dense_resource blobs, the biases inline.
    constants = [op for op in ops if op.name == "arith.constant"]
    assert len(constants) == 4
    text = str(mod)
    assert text.count("dense_resource<") == 2 and "tensor<784x128xf32>" in text


def test_lowering_error_names_the_onnx_node():
    """The location of a node's ops reaches the errors of later stages: here the lowering
    refuses a Sigmoid on integers (the frontend does not type-check ONNX models)."""
    model = _model([helper.make_node("Sigmoid", ["x"], ["y"], name="int_sigmoid")],
                   [helper.make_tensor_value_info("x", TensorProto.INT32, [4])],
                   [helper.make_tensor_value_info("y", TensorProto.INT32, [4])])
    mod = from_onnx(model)
    with pytest.raises(mlcir.LoweringError, match=r'^loc\("int_sigmoid"\): error: '
                       r"'graph.sigmoid' needs a floating-point element type"):
        mlcir.build(mod)


def test_unnamed_nodes_are_located_by_op_type_and_index():
    nodes = [helper.make_node("Relu", ["x"], ["r"]), helper.make_node("Exp", ["r"], ["y"])]
    model = _model(nodes, [helper.make_tensor_value_info("x", F32, [3])],
                   [helper.make_tensor_value_info("y", F32, [3])])
    mod = from_onnx(model)
    ops = list(mod.body.operations[0].regions[0].blocks[0].operations)
    assert [(op.name, str(op.location)) for op in ops[:2]] == [
        ("graph.relu", 'loc("Relu#0")'), ("graph.exp", 'loc("Exp#1")')]


def test_initializer_inputs_of_old_ir_are_parameters():
    """IR < 4 lists initializers among the graph inputs: they are parameters, not arguments."""
    w = numpy_helper.from_array(f32(3, 4), "w")
    model = _model([helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")],
                   [helper.make_tensor_value_info("x", F32, [2, 3]),
                    helper.make_tensor_value_info("w", F32, [3, 4])],
                   [helper.make_tensor_value_info("y", F32, [2, 4])], [w], opset=13,
                   ir_version=3)
    mod = from_onnx(model)
    fn = mod.body.operations[0]
    assert [a[NAME_ATTR].value for a in fn.arg_attrs] == ["x"]
    x = f32(2, 3)
    np.testing.assert_allclose(mlcir.build(mod).main(x), x @ numpy_helper.to_array(w),
                               rtol=RTOL, atol=ATOL)


def test_model_local_functions_are_inlined():
    """Exporters may wrap modules in model-local functions; their bodies are imported."""
    block = helper.make_function(
        "local", "ScaledRelu", ["a", "s"], ["b"],
        [helper.make_node("Mul", ["a", "s"], ["m"]), helper.make_node("Relu", ["m"], ["b"])],
        opset_imports=[helper.make_opsetid("", 17)])
    graph = helper.make_graph(
        [helper.make_node("ScaledRelu", ["x", "scale"], ["y"], name="block", domain="local")],
        "g", [helper.make_tensor_value_info("x", F32, [2, 3])],
        [helper.make_tensor_value_info("y", F32, [2, 3])],
        initializer=[numpy_helper.from_array(np.float32(-2.0), "scale")])
    model = helper.make_model(graph, functions=[block], opset_imports=[
        helper.make_opsetid("", 17), helper.make_opsetid("local", 1)])
    onnx.checker.check_model(model)
    compare(model, {"x": f32(2, 3)})


def test_accepts_path_bytes_and_proto(tmp_path):
    model = om.single_op("Relu", [[2, 3]])
    path = tmp_path / "relu.onnx"
    onnx.save(model, path)
    texts = {str(from_onnx(source)) for source in (model, model.SerializeToString(), path,
                                                   str(path))}
    assert len(texts) == 1


def test_outputs_that_are_inputs_or_constants():
    nodes = [helper.make_node("Identity", ["x"], ["same"], name="id"),
             helper.make_node("Constant", [], ["k"], name="k", value_floats=[1.0, 2.0])]
    model = _model(nodes, [helper.make_tensor_value_info("x", F32, [2])],
                   [helper.make_tensor_value_info("same", F32, [2]),
                    helper.make_tensor_value_info("k", F32, [2])])
    compare(model, {"x": f32(2)})


# ----------------------------------------------------------------------------------------------
# (c) Errors


def test_data_sized_results_are_refused_with_the_reason():
    """NonZero and NonMaxSuppression on run-time values (result sizes known only after the
    kernel runs) are refused, each node named with why."""
    nodes = [helper.make_node("NonZero", ["x"], ["nz"], name="nz"),
             helper.make_node("NonMaxSuppression", ["boxes", "scores"], ["sel"], name="nms")]
    model = _model(nodes, [helper.make_tensor_value_info("x", F32, [2, 3]),
                           helper.make_tensor_value_info("boxes", F32, [1, 4, 4]),
                           helper.make_tensor_value_info("scores", F32, [1, 1, 4])],
                   [helper.make_tensor_value_info("nz", TensorProto.INT64, [2, None]),
                    helper.make_tensor_value_info("sel", TensorProto.INT64, [None, 3])])
    with pytest.raises(FrontendError) as info:
        from_onnx(model)
    message = str(info.value)
    for where in ("node 'nz' (NonZero", "node 'nms' (NonMaxSuppression"):
        assert f"{where}, opset {om.DEFAULT_OPSET}): unsupported op" in message
    assert message.count("the size of its result depends on the values") == 2


def test_unsupported_nodes_are_listed_together():
    nodes = [
        helper.make_node("Relu", ["x"], ["r"], name="ok_relu"),
        helper.make_node("Bernoulli", ["r"], ["h"], name="the_bernoulli"),
        helper.make_node("Conv", ["h", "w3"], ["c"], name="conv3d"),
        helper.make_node("Gelu", ["r"], ["g"], name="weird_gelu", approximate="cubic"),
        helper.make_node("Custom", ["g"], ["u"], name="custom", domain="com.example"),
        helper.make_node("Add", ["c", "u"], ["y"], name="add"),
    ]
    graph = helper.make_graph(
        nodes, "bad", [helper.make_tensor_value_info("x", F32, [1, 2, 4, 4, 4])],
        [helper.make_tensor_value_info("y", F32, [None] * 5)],
        initializer=[numpy_helper.from_array(f32(2, 2, 1, 1, 1), "w3")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20),
                                                    helper.make_opsetid("com.example", 1)])
    with pytest.raises(FrontendError) as info:
        from_onnx(model)
    message = str(info.value)
    assert "cannot import 4 nodes (ai.onnx opset 20)" in message
    assert "node 'the_bernoulli' (Bernoulli, opset 20): unsupported op" in message
    assert "node 'conv3d' (Conv, opset 20): 3-D windows are not supported" in message
    assert "node 'weird_gelu' (Gelu, opset 20): approximate='cubic' is not supported" in message
    assert "node 'custom' (Custom, opset 20): ops of the domain 'com.example'" in message
    assert "ok_relu" not in message and "'add'" not in message
    assert [where for where, _ in info.value.problems] == [
        "node 'the_bernoulli' (Bernoulli, opset 20)", "node 'conv3d' (Conv, opset 20)",
        "node 'weird_gelu' (Gelu, opset 20)", "node 'custom' (Custom, opset 20)"]
    assert isinstance(info.value, MlcirError)


def test_non_constant_shape_input_is_named():
    nodes = [helper.make_node("Reshape", ["x", "s"], ["y"], name="dyn_reshape")]
    model = _model(nodes, [helper.make_tensor_value_info("x", F32, [2, 3]),
                           helper.make_tensor_value_info("s", TensorProto.INT64, [2])],
                   [helper.make_tensor_value_info("y", F32, [None, None])])
    with pytest.raises(FrontendError, match=r"node 'dyn_reshape' \(Reshape, opset 17\): input 1 "
                       r"\('shape', value 's'\) must be a constant"):
        from_onnx(model)


def test_unsupported_attribute_values():
    cases = [
        (om.single_op("Cast", [[2]], {"to": TensorProto.STRING}), "to=STRING is not supported"),
        (om.single_op("MaxPool", [[1, 1, 4, 4]], {"kernel_shape": [2, 2]}, num_outputs=2),
         "the Indices output is not supported"),
        (om.single_op("BatchNormalization", [[1, 2, 3]], {"training_mode": 1}, num_outputs=3,
                      initializers={"s": f32(2), "b": f32(2), "m": f32(2), "v": f32(2, low=1)}),
         "training_mode=1 is not supported"),
        (om.single_op("LayerNormalization", [[2, 3]], initializers={"g": f32(3)},
                      num_outputs=2), "the Mean and InvStdDev outputs are not supported"),
    ]
    for model, expected in cases:
        with pytest.raises(FrontendError, match=expected):
            from_onnx(model)


def test_errors_while_building_name_the_node():
    model = om.single_op("Gather", [[3, 4]], initializers={"i": i64(1, 7)})
    with pytest.raises(FrontendError, match=r"^node 'gather' \(Gather, opset 17\): indices "
                       r"\[1, 7\] are out of range for axis 0 of size 3$"):
        from_onnx(model)
    model = _model([helper.make_node("Squeeze", ["x", "axes"], ["y"], name="squeeze")],
                   [helper.make_tensor_value_info("x", F32, [2, 3])],
                   [helper.make_tensor_value_info("y", F32, [2, 3])],
                   [numpy_helper.from_array(i64(1), "axes")])
    with pytest.raises(FrontendError, match=r"^node 'squeeze' \(Squeeze, opset 17\): cannot "
                       r"squeeze axis 1 of size 3$"):
        from_onnx(model)


def test_missing_file(tmp_path):
    with pytest.raises(FrontendError, match=r"nothere\.onnx: no such file"):
        from_onnx(tmp_path / "nothere.onnx")


def test_not_an_onnx_file(tmp_path):
    path = tmp_path / "notes.onnx"
    path.write_text("these are not the bytes you are looking for\n")
    with pytest.raises(FrontendError, match=r"notes\.onnx: not an ONNX model"):
        from_onnx(path)
    with pytest.raises(FrontendError, match=r"<bytes>: not an ONNX model"):
        from_onnx(b"")


def test_truncated_file(tmp_path):
    data = om.mlp().SerializeToString()
    path = tmp_path / "truncated.onnx"
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(FrontendError, match=r"truncated\.onnx: not an ONNX model, or a "
                       r"truncated one"):
        from_onnx(path)


def test_invalid_model_fails_the_checker():
    model = om.single_op("Relu", [[2, 3]])
    model.graph.node[0].input[0] = "undefined_value"
    with pytest.raises(FrontendError, match=r"<ModelProto>: invalid ONNX model: .*undefined_value"):
        from_onnx(model)


@pytest.mark.parametrize("opset", [5, 6, MAX_OPSET + 1])
def test_unsupported_opset(opset):
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g",
                              [helper.make_tensor_value_info("x", F32, [2])],
                              [helper.make_tensor_value_info("y", F32, [2])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    with pytest.raises(FrontendError, match=rf"ai.onnx opset {opset} is not supported \(mlcir "
                       rf"imports opsets {OLDEST_OPSET} to {MAX_OPSET}") as info:
        from_onnx(model)
    advice = "convert_version(model, 13)" if opset < MIN_OPSET else "knows opsets up to"
    assert advice in str(info.value)


@pytest.mark.parametrize("elem, name", [(TensorProto.STRING, "STRING"),
                                        (TensorProto.COMPLEX64, "COMPLEX64"),
                                        (TensorProto.BFLOAT16, "BFLOAT16")])
def test_unsupported_input_dtype(elem, name):
    model = om.single_op("Relu", [[2, 3]])
    model.graph.input[0].type.tensor_type.elem_type = elem
    with pytest.raises(FrontendError, match=rf"unsupported graph input: 'x0' has element type "
                       rf"{name}"):
        from_onnx(model)


def test_bad_shape_dict():
    model = om.mlp(batch="N")
    with pytest.raises(FrontendError, match=r"shape_dict names 'input', which is not a graph "
                       r"input \(inputs: x\)"):
        from_onnx(model, shape_dict={"input": [1, 784]})
    with pytest.raises(FrontendError, match=r"shape_dict gives input 'x' the shape \[1\], but "
                       r"it has rank 2"):
        from_onnx(model, shape_dict={"x": [1]})
    with pytest.raises(FrontendError, match=r"size 100 in dimension 1, but the model fixes it "
                       r"to 784"):
        from_onnx(model, shape_dict={"x": [1, 100]})


def test_wrong_source_type():
    with pytest.raises(TypeError, match="takes a path, bytes or an onnx.ModelProto"):
        from_onnx(42)  # type: ignore[arg-type]
