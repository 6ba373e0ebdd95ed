"""Quantized test models: a float model quantized by onnxruntime.quantization, as a user would
(quantize_static over a calibration reader of seeded random inputs, or quantize_dynamic).

onnxruntime is a test dependency: imported when a model is asked for.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
import onnx

from . import onnx_models as om


def _calibration(model: onnx.ModelProto, samples: int, seed: int):
    """A CalibrationDataReader over ``samples`` seeded standard-normal inputs."""
    from onnxruntime.quantization import CalibrationDataReader

    feeds = [om.example_inputs(model, seed=seed + i) for i in range(samples)]

    class Reader(CalibrationDataReader):
        def __init__(self) -> None:
            self._it = iter(feeds)

        def get_next(self) -> dict[str, np.ndarray] | None:
            return next(self._it, None)

    return Reader()


def quantize_static(model: onnx.ModelProto, *, qdq: bool = True, per_channel: bool = True,
                    samples: int = 8, seed: int = 100, activation: str = "uint8",
                    reduce_range: bool = True) -> onnx.ModelProto:
    """``onnxruntime.quantization.quantize_static`` of ``model``: QDQ (``qdq``) or QOperator
    format, per-channel weights, uint8 or int8 activations, int8 weights (``reduce_range``: 7
    bits, what onnxruntime advises on machines without VNNI, whose u8s8 kernel saturates)."""
    from onnxruntime.quantization import QuantFormat, QuantType
    from onnxruntime.quantization import quantize_static as ort_quantize_static

    with tempfile.TemporaryDirectory() as tmp:
        src, dst = Path(tmp) / "float.onnx", Path(tmp) / "int8.onnx"
        onnx.save(model, src)
        ort_quantize_static(
            str(src), str(dst), _calibration(model, samples, seed),
            quant_format=QuantFormat.QDQ if qdq else QuantFormat.QOperator,
            per_channel=per_channel, reduce_range=reduce_range,
            activation_type=QuantType.QUInt8 if activation == "uint8" else QuantType.QInt8,
            weight_type=QuantType.QInt8)
        return onnx.load(dst)


def quantize_dynamic(model: onnx.ModelProto, *, per_channel: bool = False,
                     reduce_range: bool = True) -> onnx.ModelProto:
    """``onnxruntime.quantization.quantize_dynamic`` of ``model`` (int8 weights,
    DynamicQuantizeLinear + MatMulInteger/ConvInteger)."""
    from onnxruntime.quantization import QuantType
    from onnxruntime.quantization import quantize_dynamic as ort_quantize_dynamic

    with tempfile.TemporaryDirectory() as tmp:
        src, dst = Path(tmp) / "float.onnx", Path(tmp) / "int8.onnx"
        onnx.save(model, src)
        ort_quantize_dynamic(str(src), str(dst), per_channel=per_channel,
                             reduce_range=reduce_range, weight_type=QuantType.QInt8)
        return onnx.load(dst)
