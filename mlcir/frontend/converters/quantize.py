"""Quantized ops: QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear, MatMulInteger,
ConvInteger, QLinearMatMul, QLinearConv and the ``com.microsoft`` QOperator ops
(QLinearAdd, QLinearMul, QLinearGlobalAveragePool, QLinearConcat, QGemm).

Each is composed of graph ops mlcir already lowers, so a quantized model imports, fuses and
runs with no new kernel:

- an 8-bit value is widened to int32 (``astype``; an unsigned one, stored as the signless i8
  of the same bits, masked with 255 after the sign-extending cast), its zero point subtracted;
- matmul and conv2d run on those int32 values with int32 accumulation (exact);
- requantizing is ``round(acc * multiplier) + zero_point`` clipped to the type's range, the
  multiplier ``x_scale * w_scale / y_scale`` computed in float32 (onnxruntime's arithmetic), the
  rounding half to even (``graph.round``), so integer results equal onnxruntime's bit for bit;
  QuantizeLinear divides by the scale (as onnxruntime does), it does not multiply by a
  reciprocal.

Where onnxruntime's own kernel uses another float arithmetic (QLinearAdd/Mul/Concat/
GlobalAveragePool: ratios of scales, fused multiply-adds) the results may differ by one unit
(docs/quantized.md). A DequantizeLinear of a constant (QDQ weights) folds at import.
"""

from __future__ import annotations

import numpy as np

from mlcir.dialects.dtypes import mlir_element_type, signless_dtype

from ..builder import GraphBuilder
from ..converter import Converter, Node, Value, converter
from .nn import _check_window, _Window

#: The quantized types mlcir imports (int4, int16 and float8 are refused).
QTYPES = (np.dtype(np.int8), np.dtype(np.uint8))
I32, F32 = np.dtype(np.int32), np.dtype(np.float32)

#: Integers of at most this magnitude are exact in float32 (24-bit significand).
F32_EXACT = 1 << 24


def exact_in_f32(w: Value, reduced: tuple[int, ...], bias: Value | None = None) -> bool:
    """Whether an int32 product with the constant shifted weight ``w`` (reduced over the axes
    ``reduced``) is exact when accumulated in float32: every partial sum is an integer of at
    most ``255 * sum |w| (+ max |bias|)`` (an 8-bit value minus an 8-bit zero point is within
    255), and below 2^24 each such sum, hence each fused multiply-add, is exact in any order."""
    if not isinstance(w, np.ndarray) or (bias is not None and not isinstance(bias, np.ndarray)):
        return False
    total = np.abs(w.astype(np.int64)).sum(axis=reduced).max(initial=0) * 255
    if bias is not None:
        total += int(np.abs(bias.astype(np.int64)).max(initial=0))
    return int(total) < F32_EXACT


def as_i32(cx: GraphBuilder, v: Value) -> Value:
    """An integer-valued value (int32, or float32 from :func:`_shifted`) as int32."""
    return v.astype(I32) if isinstance(v, np.ndarray) else cx.astype(v, I32)


def to_f32(cx: GraphBuilder, v: Value) -> Value:
    """An int32 value as float32 (exact below 2^24)."""
    return v.astype(F32) if isinstance(v, np.ndarray) else cx.astype(v, F32)


def _limits(qdtype: np.dtype) -> tuple[int, int]:
    info = np.iinfo(qdtype)
    return int(info.min), int(info.max)


def _qdtype(cx: GraphBuilder, node: Node, inputs: list[Value], data: int, zero_point: int | None,
            default: np.dtype | None = None, wide: bool = False) -> np.dtype:
    """The element type of the quantized input ``data`` (int8 or uint8): the zero point's type
    (the same by the ONNX spec), else ONNX's type of the input, else ``default``. mlcir stores
    uint8 as i8, so the SSA value's own type cannot tell them apart. ``wide``: int32 allowed
    (DequantizeLinear of a bias)."""
    found = None
    zp = inputs[zero_point] if zero_point is not None and zero_point < len(inputs) else None
    if isinstance(zp, np.ndarray):
        found = zp.dtype
    elif isinstance(inputs[data], np.ndarray):
        found = inputs[data].dtype
    elif node.input(data).type is not None:
        found = node.input(data).type[1]
    elif zero_point is not None and node.input(zero_point).type is not None:
        found = node.input(zero_point).type[1]
    elif default is not None:
        found = default
    if found is None:
        raise cx.error(f"the type of input {data} ('{node.input(data).name}') is unknown: "
                       "give it a type (shape inference) or a constant zero point")
    found = np.dtype(found)
    allowed = QTYPES + ((I32,) if wide else ())
    if found not in allowed:
        raise cx.error(f"input {data} ('{node.input(data).name}') is {found}: only "
                       f"{', '.join(str(t) for t in allowed)} quantized tensors are supported")
    return found


def widen(cx: GraphBuilder, v: Value, qdtype: np.dtype) -> Value:
    """``v`` (stored as ``qdtype``'s bits) as int32 values: sign-extended, and masked with 255
    when it is uint8 (stored as signless i8)."""
    if isinstance(v, np.ndarray):
        return v.astype(qdtype, copy=False).astype(I32) if v.dtype != I32 else v
    if cx.dtype(v) == I32:
        return v
    wide = cx.op("astype", v, dtype=mlir_element_type(I32))
    if qdtype.kind == "u":
        wide = cx.op("bitwise_and", wide, np.array(0xFF, I32))
    return wide


def narrow(cx: GraphBuilder, v: Value, qdtype: np.dtype) -> Value:
    """int32 ``v`` (already within ``qdtype``'s range) stored as ``qdtype``."""
    if isinstance(v, np.ndarray):
        return v.astype(qdtype)
    return cx.op("astype", v, dtype=mlir_element_type(signless_dtype(qdtype)))


def _along(cx: GraphBuilder, v: Value | None, axis: int, rank: int) -> Value | None:
    """A scale or zero point broadcastable against a rank-``rank`` tensor: a scalar (or one
    element) as it is, a 1-D one along ``axis`` (per-axis quantization)."""
    if v is None:
        return None
    shape = cx.shape(v)
    if len(shape) == 0:
        return v
    if len(shape) != 1:
        raise cx.error(f"a scale or zero point of shape {list(shape)} is not supported "
                       "(a scalar, or 1-D for per-axis quantization; blocked quantization "
                       "is refused)")
    if shape[0] == 1:
        return cx.reshape(v, [])
    target = [1] * rank
    target[axis] = -1 if shape[0] is None else int(shape[0])
    return cx.reshape(v, target)


def _axis(cx: GraphBuilder, node: Node, scale: Value, rank: int) -> int:
    """The quantization axis, checked only when it matters (a 1-D scale of several
    elements): a per-tensor DequantizeLinear of a 1-D bias keeps the default axis 1."""
    if len(cx.shape(scale)) == 1 and cx.shape(scale)[0] != 1:
        return cx.axis(node.attr("axis", 1), rank)
    return 0


def _shifted(cx: GraphBuilder, v: Value, zp: Value | None, qdtype: np.dtype) -> Value:
    """``int32(v) - int32(zp)``; float32 holding those integers when ``v`` was quantized in
    this model (its float source known: no 8-bit round trip). :func:`as_i32` makes it int32
    where an integer op needs it."""
    source = None if isinstance(v, np.ndarray) else cx.integer_floats.get(v)
    if source is not None:
        if zp is None or (isinstance(zp, np.ndarray) and not zp.any()):
            return source
        return cx.op("subtract", source, to_f32(cx, widen(cx, zp, qdtype)))
    wide = widen(cx, v, qdtype)
    if zp is None or (isinstance(zp, np.ndarray) and not zp.any()):
        return wide
    return cx.op("subtract", wide, widen(cx, zp, qdtype))


def quantize(cx: GraphBuilder, x: Value, scale: Value, zp: Value | None, qdtype: np.dtype,
             divide: bool = True) -> Value:
    """``saturate(round_half_even(x / scale) + zp)`` as ``qdtype`` (``divide`` false: ``x *
    scale``, the requantize multiplier). ``zp`` is an int32 or float value (or None)."""
    lo, hi = _limits(qdtype)
    scale = cx.astype(scale, F32)
    y = cx.op("divide" if divide else "multiply", x, scale)
    y = cx.op("round", y)
    if zp is not None and not (isinstance(zp, np.ndarray) and not zp.any()):
        y = cx.op("add", y, cx.astype(zp, F32))
    y = cx.op("clip", y, min=float(lo), max=float(hi))
    q = narrow(cx, cx.astype(y, I32), qdtype)
    if not isinstance(q, np.ndarray):
        cx.integer_floats[q] = y
    return q


def requantize(cx: GraphBuilder, acc: Value, multiplier: Value, zp: Value | None,
               qdtype: np.dtype) -> Value:
    """int32 ``acc`` scaled by the float32 ``multiplier`` and quantized to ``qdtype``
    (onnxruntime's MlasRequantizeOutput: float multiply, round half to even, add the zero
    point, saturate)."""
    zp32 = None if zp is None else widen(cx, zp, qdtype)
    return quantize(cx, cx.astype(acc, F32), multiplier, zp32, qdtype, divide=False)


def _multiplier(cx: GraphBuilder, *scales: Value, over: Value | None = None) -> Value:
    """The float32 product of ``scales`` divided by ``over`` (folded when constant)."""
    m = cx.astype(scales[0], F32)
    for s in scales[1:]:
        m = cx.op("multiply", m, cx.astype(s, F32))
    if over is not None:
        m = cx.op("divide", m, cx.astype(over, F32))
    return m


def _check_float_input(node: Node, index: int, problems: list[str]) -> None:
    info = node.input(index)
    if info.type is not None and info.type[1] != F32:
        problems.append(f"input {index} ('{info.name}') is {info.type[1]}: only float32 "
                        "tensors are quantized")


def _check_scale(node: Node, index: int, problems: list[str]) -> None:
    info = node.input(index)
    if info.type is not None and info.type[1] != F32:
        problems.append(f"the scale (input {index}, '{info.name}') is {info.type[1]}: only "
                        "float32 scales are supported")


def _check_block(node: Node, problems: list[str]) -> None:
    if int(node.attr("block_size", 0)) != 0:
        problems.append(f"block_size={node.attr('block_size')} (blocked quantization) is not "
                        "supported: per-tensor and per-axis only")


# ----------------------------------------------------------------------------------------------
# ai.onnx


@converter
class QuantizeLinear(Converter):
    """QuantizeLinear: ``saturate(round(x / scale) + zero_point)``, per tensor or per axis,
    int8 or uint8 (the zero point's type; uint8 without one, or ``output_dtype`` at 21)."""

    graph_ops = ("divide", "round", "add", "clip", "astype")
    unsigned_inputs = True

    @classmethod
    def check(cls, node: Node) -> list[str]:
        problems: list[str] = []
        _check_float_input(node, 0, problems)
        _check_scale(node, 1, problems)
        _check_block(node, problems)  # saturate (opset 19) applies to float8 only: ignored
        return problems

    @classmethod
    def _impl_v13(cls, cx: GraphBuilder, node: Node, inputs: list[Value]) -> Value:
        x, scale = inputs[0], inputs[1]
        zp = inputs[2] if len(inputs) > 2 else None
        default = np.dtype(np.uint8)
        if node.attr("output_dtype"):
            from onnx import helper
            default = np.dtype(helper.tensor_dtype_to_np_dtype(node.attr("output_dtype")))
        if zp is None and default not in QTYPES:
            raise cx.error(f"output_dtype {default} is not supported: only int8 and uint8")
        qdtype = np.dtype(zp.dtype) if isinstance(zp, np.ndarray) else default
        if zp is not None and not isinstance(zp, np.ndarray):
            qdtype = _qdtype(cx, node, inputs, 2, None, default)
        if qdtype not in QTYPES:
            raise cx.error(f"the zero point is {qdtype}: only int8 and uint8 outputs are "
                           "supported (int4, int16 and float8 are refused)")
        if cx.dtype(x) != F32:
            raise cx.error(f"input 0 is {cx.dtype(x)}: only float32 tensors are quantized")
        rank = cx.rank(x)
        axis = _axis(cx, node, scale, rank)
        zp32 = None if zp is None else widen(cx, _along(cx, zp, axis, rank), qdtype)
        return quantize(cx, x, _along(cx, scale, axis, rank), zp32, qdtype)


@converter
class DequantizeLinear(Converter):
    """DequantizeLinear: ``(int32(x) - int32(zero_point)) * scale`` as float32, per tensor or
    per axis; int8, uint8 and int32 (a QDQ model's bias) inputs."""

    graph_ops = ("subtract", "astype", "multiply")
    unsigned_inputs = True

    @classmethod
    def check(cls, node: Node) -> list[str]:
        problems: list[str] = []
        _check_scale(node, 1, problems)
        _check_block(node, problems)
        info = node.input(0)
        if info.type is not None and info.type[1] not in QTYPES + (I32,):
            problems.append(f"input 0 ('{info.name}') is {info.type[1]}: only int8, uint8 and "
                            "int32 tensors are dequantized (int4, int16 and float8 are refused)")
        return problems

    @classmethod
    def _impl_v13(cls, cx: GraphBuilder, node: Node, inputs: list[Value]) -> Value:
        x, scale = inputs[0], inputs[1]
        zp = inputs[2] if len(inputs) > 2 else None
        qdtype = _qdtype(cx, node, inputs, 0, 2, wide=True)
        rank = cx.rank(x)
        axis = _axis(cx, node, scale, rank)
        shifted = _shifted(cx, x, _along(cx, zp, axis, rank), qdtype)
        return cx.op("multiply", cx.astype(shifted, F32),
                     cx.astype(_along(cx, scale, axis, rank), F32))


@converter
class DynamicQuantizeLinear(Converter):
    """DynamicQuantizeLinear: uint8 quantization with the scale and zero point from the
    tensor's range (including 0), as onnxruntime computes them: ``scale = (max - min) / 255``
    (1 when max == min), ``zero_point = round(clip(-min / scale, 0, 255))``."""

    graph_ops = ("max", "min", "maximum", "minimum", "subtract", "divide", "equal", "where",
                 "negative", "round", "clip", "astype")

    @classmethod
    def check(cls, node: Node) -> list[str]:
        problems: list[str] = []
        _check_float_input(node, 0, problems)
        return problems

    @classmethod
    def _impl_v13(cls, cx: GraphBuilder, node: Node, inputs: list[Value]) -> list[Value]:
        x = inputs[0]
        if cx.dtype(x) != F32:
            raise cx.error(f"input 0 is {cx.dtype(x)}: only float32 tensors are quantized")
        axes = list(range(cx.rank(x)))
        zero = np.array(0, F32)
        hi = cx.op("maximum", cx.op("max", x, axes=axes, keepdims=0), zero)
        lo = cx.op("minimum", cx.op("min", x, axes=axes, keepdims=0), zero)
        scale = cx.op("divide", cx.op("subtract", hi, lo), np.array(255, F32))
        scale = cx.op("where", cx.op("equal", hi, lo), np.array(1, F32), scale)
        zp = cx.op("negative", cx.op("divide", lo, scale))
        zp = cx.op("round", cx.op("clip", zp, min=0.0, max=255.0))
        u8 = np.dtype(np.uint8)
        y = quantize(cx, x, scale, zp, u8)
        return [y, scale, narrow(cx, cx.astype(zp, I32), u8)]


def _matmul_operand(cx: GraphBuilder, node: Node, inputs: list[Value], data: int,
                    zp_index: int, per_row: bool) -> Value:
    """``int32(a) - int32(a_zero_point)``: a 1-D zero point is per row of A ([M] -> [M, 1])
    or per column of B ([N], broadcast along the last axis)."""
    qdtype = _qdtype(cx, node, inputs, data, zp_index)
    zp = inputs[zp_index] if zp_index < len(inputs) else None
    if zp is not None and len(cx.shape(zp)) == 1:
        if cx.shape(zp)[0] == 1:
            zp = cx.reshape(zp, [])
        elif per_row:
            zp = cx.reshape(zp, [cx.shape(zp)[0], 1])
    return _shifted(cx, inputs[data], zp, qdtype)


@converter
class MatMulInteger(Converter):
    """MatMulInteger: ``(A - a_zero_point) @ (B - b_zero_point)`` with int32 accumulation
    (graph.matmul on the widened values; a constant B folds to an int32 weight)."""

    graph_ops = ("matmul", "subtract", "astype", "bitwise_and")
    unsigned_inputs = True

    @classmethod
    def _impl_v13(cls, cx: GraphBuilder, node: Node, inputs: list[Value]) -> Value:
        a = _matmul_operand(cx, node, inputs, 0, 2, per_row=True)
        b = _matmul_operand(cx, node, inputs, 1, 3, per_row=False)
        if exact_in_f32(b, (-2,)):  # the float32 kernels, the same integers
            return cx.astype(cx.op("matmul", to_f32(cx, a), to_f32(cx, b)), I32)
        return cx.op("matmul", as_i32(cx, a), as_i32(cx, b))


def _conv(cx: GraphBuilder, node: Node, x: Value, w: Value, bias: Value | None = None
          ) -> tuple[_Window, Value]:
    """graph.conv2d of int32 (already shifted) operands with the node's window attributes;
    in float32 when that is exact (:func:`exact_in_f32`; the result then float32 holding the
    int32 values, with ``bias`` to be added still within the bound)."""
    kernel = node.attr("kernel_shape") or cx.shape(w)[2:]
    window = _Window(cx, node, x, kernel)
    if exact_in_f32(w, tuple(range(1, cx.rank(w))), bias):  # float32 kernels, same integers
        x, w = to_f32(cx, x), to_f32(cx, w)
    else:
        x, w = as_i32(cx, x), as_i32(cx, w)
    if window.one_d:
        out_c, in_c, k = cx.static_shape(w, "a 1-D convolution's weight")
        w = cx.reshape(w, [out_c, in_c, 1, k])
    y = cx.op("conv2d", window.lift(cx, x), w, strides=window.strides,
              padding=window.padding, dilation=window.dilations,
              groups=int(node.attr("group", 1)))
    return window, y


def _conv_operands(cx: GraphBuilder, node: Node, inputs: list[Value], x_index: int,
                   x_zp: int, w_index: int, w_zp: int) -> tuple[Value, Value]:
    """The shifted int32 input (its zero point a scalar: padding is then the zero point, as
    ONNX says) and weight (a per-output-channel zero point [M] as [M, 1, 1, 1])."""
    xq = _qdtype(cx, node, inputs, x_index, x_zp)
    wq = _qdtype(cx, node, inputs, w_index, w_zp)
    zx = inputs[x_zp] if x_zp < len(inputs) else None
    if zx is not None and cx.shape(zx) not in ((), (1,)):
        raise cx.error("the input's zero point must be a scalar")
    zx = None if zx is None else cx.reshape(zx, [])
    zw = inputs[w_zp] if w_zp < len(inputs) else None
    if zw is not None and len(cx.shape(zw)) == 1:
        zw = (cx.reshape(zw, []) if cx.shape(zw)[0] == 1
              else cx.reshape(zw, [-1 if cx.shape(zw)[0] is None else cx.shape(zw)[0]]
                              + [1] * (cx.rank(inputs[w_index]) - 1)))
    return _shifted(cx, inputs[x_index], zx, xq), _shifted(cx, inputs[w_index], zw, wq)


@converter
class ConvInteger(Converter):
    """ConvInteger: a convolution of ``x - x_zero_point`` and ``w - w_zero_point`` with int32
    accumulation (padding is the input's zero point, as ONNX says: zero after the shift)."""

    graph_ops = ("conv2d", "subtract", "astype", "bitwise_and")
    unsigned_inputs = True

    @classmethod
    def check(cls, node: Node) -> list[str]:
        problems: list[str] = []
        _check_window(node, problems, weight=1)
        return problems

    @classmethod
    def _impl_v13(cls, cx: GraphBuilder, node: Node, inputs: list[Value]) -> Value:
        x, w = _conv_operands(cx, node, inputs, 0, 2, 1, 3)
        window, y = _conv(cx, node, x, w)
        return window.lower(cx, cx.astype(y, I32))


@converter
class QLinearMatMul(Converter):
    """QLinearMatMul: the int32 product of the shifted operands requantized with the float32
    multiplier ``a_scale * b_scale / y_scale`` (per column with a per-column b_scale)."""

    graph_ops = ("matmul", "subtract", "astype", "multiply", "divide", "round", "add", "clip")
    unsigned_inputs = True

    @classmethod
    def _impl_v10(cls, cx: GraphBuilder, node: Node, inputs: list[Value]) -> Value:
        a = _matmul_operand(cx, node, inputs, 0, 2, per_row=True)
        b = _matmul_operand(cx, node, inputs, 3, 5, per_row=False)
        a, b = ((to_f32(cx, a), to_f32(cx, b)) if exact_in_f32(b, (-2,))
                else (as_i32(cx, a), as_i32(cx, b)))
        acc = cx.op("matmul", a, b)
        a_scale, b_scale = inputs[1], inputs[4]
        if len(cx.shape(a_scale)) == 1 and cx.shape(a_scale)[0] != 1:
            a_scale = cx.reshape(a_scale, [cx.shape(a_scale)[0], 1])
        multiplier = _multiplier(cx, a_scale, b_scale, over=inputs[6])
        return requantize(cx, acc, multiplier, inputs[7], _qdtype(cx, node, inputs, 7, 7))


def _channel(cx: GraphBuilder, v: Value, rank: int) -> Value:
    """A per-output-channel vector [M] as [1, M, 1, ...] (a scalar as it is)."""
    shape = cx.shape(v)
    if len(shape) == 0 or shape == (1,):
        return cx.reshape(v, [])
    return cx.reshape(v, [1, shape[0]] + [1] * (rank - 2))


@converter
class QLinearConv(Converter):
    """QLinearConv: the int32 convolution of the shifted operands plus the int32 bias,
    requantized with ``x_scale * w_scale / y_scale`` (per output channel with a per-channel
    w_scale)."""

    graph_ops = ("conv2d", "subtract", "astype", "multiply", "divide", "round", "add", "clip")
    unsigned_inputs = True

    @classmethod
    def check(cls, node: Node) -> list[str]:
        problems: list[str] = []
        _check_window(node, problems, weight=3)
        return problems

    @classmethod
    def _impl_v10(cls, cx: GraphBuilder, node: Node, inputs: list[Value]) -> Value:
        x, w = _conv_operands(cx, node, inputs, 0, 2, 3, 5)
        bias = inputs[8] if len(inputs) > 8 else None
        window, acc = _conv(cx, node, x, w, bias)
        if bias is not None:
            bias = _channel(cx, widen(cx, bias, I32), 4)
            acc = cx.op("add", acc, to_f32(cx, bias) if cx.dtype(acc) == F32 else bias)
        multiplier = _multiplier(cx, inputs[1], _channel(cx, inputs[4], 4), over=inputs[6])
        y = requantize(cx, acc, multiplier, inputs[7], _qdtype(cx, node, inputs, 7, 7))
        return window.lower(cx, y)


# ----------------------------------------------------------------------------------------------
# com.microsoft (what onnxruntime.quantization writes in the QOperator format)


class _Microsoft(Converter):
    """A ``com.microsoft`` op, registered as ``com.microsoft.<op>``."""

    unsigned_inputs = True


@converter
class QLinearAdd(_Microsoft):
    """com.microsoft QLinearAdd: ``(a - za) * (sa / sc) + (b - zb) * (sb / sc)`` requantized
    to C's type (onnxruntime: the same ratios; its vector kernel may round differently by one
    unit)."""

    op_type = "com.microsoft.QLinearAdd"
    graph_ops = ("subtract", "astype", "multiply", "divide", "add", "round", "clip")

    @classmethod
    def _impl_v1(cls, cx: GraphBuilder, node: Node, inputs: list[Value]) -> Value:
        a = cx.astype(_shifted(cx, inputs[0], inputs[2], _qdtype(cx, node, inputs, 0, 2)), F32)
        b = cx.astype(_shifted(cx, inputs[3], inputs[5], _qdtype(cx, node, inputs, 3, 5)), F32)
        ra = _multiplier(cx, inputs[1], over=inputs[6])
        rb = _multiplier(cx, inputs[4], over=inputs[6])
        y = cx.op("add", cx.op("multiply", a, ra), cx.op("multiply", b, rb))
        zc = inputs[7] if len(inputs) > 7 else None
        qdtype = _qdtype(cx, node, inputs, 0, 7 if zc is not None else 2)
        return quantize(cx, y, np.array(1, F32), None if zc is None else widen(cx, zc, qdtype),
                        qdtype, divide=False)


@converter
class QLinearMul(_Microsoft):
    """com.microsoft QLinearMul: ``(a - za) * (b - zb)`` (int32) times ``sa * sb / sc``,
    requantized."""

    op_type = "com.microsoft.QLinearMul"
    graph_ops = ("subtract", "astype", "multiply", "divide", "add", "round", "clip")

    @classmethod
    def _impl_v1(cls, cx: GraphBuilder, node: Node, inputs: list[Value]) -> Value:
        a = _shifted(cx, inputs[0], inputs[2], _qdtype(cx, node, inputs, 0, 2))
        b = _shifted(cx, inputs[3], inputs[5], _qdtype(cx, node, inputs, 3, 5))
        zc = inputs[7] if len(inputs) > 7 else None
        qdtype = _qdtype(cx, node, inputs, 0, 7 if zc is not None else 2)
        return requantize(cx, cx.op("multiply", to_f32(cx, a), to_f32(cx, b)),  # < 2^16
                          _multiplier(cx, inputs[1], inputs[4], over=inputs[6]), zc, qdtype)


@converter
class QLinearGlobalAveragePool(_Microsoft):
    """com.microsoft QLinearGlobalAveragePool (NCHW, or NHWC with channels_last=1): the int32
    sum of ``x - zx`` over the spatial axes times ``sx / sy / size``, requantized."""

    op_type = "com.microsoft.QLinearGlobalAveragePool"
    graph_ops = ("sum", "subtract", "astype", "multiply", "divide", "round", "add", "clip")

    @classmethod
    def _impl_v1(cls, cx: GraphBuilder, node: Node, inputs: list[Value]) -> Value:
        x = inputs[0]
        qdtype = _qdtype(cx, node, inputs, 0, 2)
        rank = cx.rank(x)
        axes = list(range(1, rank - 1)) if node.attr("channels_last", 0) else \
            list(range(2, rank))
        shape = cx.static_shape(x, "QLinearGlobalAveragePool")
        size = int(np.prod([shape[a] for a in axes]))
        total = cx.op("sum", as_i32(cx, _shifted(cx, x, inputs[2], qdtype)), axes=axes,
                      keepdims=1)
        multiplier = _multiplier(cx, inputs[1], over=inputs[3])
        multiplier = cx.op("divide", multiplier, np.array(size, F32))
        return requantize(cx, total, multiplier, inputs[4], qdtype)


@converter
class QLinearConcat(_Microsoft):
    """com.microsoft QLinearConcat: each input requantized to (y_scale, y_zero_point) —
    ``round((x - zx) * (sx / sy)) + zy`` — then concatenated (an input already in Y's
    quantization is copied)."""

    op_type = "com.microsoft.QLinearConcat"
    graph_ops = ("subtract", "astype", "multiply", "divide", "round", "add", "clip")

    @classmethod
    def _impl_v1(cls, cx: GraphBuilder, node: Node, inputs: list[Value]) -> Value:
        y_scale, y_zp = inputs[0], inputs[1]
        qdtype = _qdtype(cx, node, inputs, 2, 1)
        parts = []
        for i in range(2, len(inputs), 3):
            x, s, z = inputs[i], inputs[i + 1], inputs[i + 2]
            same = all(isinstance(v, np.ndarray) for v in (s, z, y_scale, y_zp)) and \
                np.array_equal(s, y_scale) and np.array_equal(z, y_zp)
            if same:
                parts.append(x)
                continue
            xq = _qdtype(cx, node, inputs, i, i + 2)
            shifted = cx.astype(_shifted(cx, x, z, xq), F32)
            parts.append(requantize(cx, shifted, _multiplier(cx, s, over=y_scale), y_zp, qdtype))
        rank = cx.rank(parts[0])
        return cx.concat(parts, cx.axis(node.attr("axis"), rank))


@converter
class QGemm(_Microsoft):
    """com.microsoft QGemm: ``alpha * (A - za)' @ (B - zb)' + C`` (C int32) requantized with
    ``alpha * sa * sb / sy``; without y_scale the float32 result ``acc * alpha * sa * sb``."""

    op_type = "com.microsoft.QGemm"
    graph_ops = ("matmul", "permute_dims", "subtract", "astype", "multiply", "divide", "round",
                 "add", "clip")

    @classmethod
    def _impl_v1(cls, cx: GraphBuilder, node: Node, inputs: list[Value]) -> Value:
        a = _matmul_operand(cx, node, inputs, 0, 2, per_row=False)
        b = _matmul_operand(cx, node, inputs, 3, 5, per_row=False)
        if node.attr("transA", 0):
            a = cx.op("permute_dims", a, axes=[1, 0])
        if node.attr("transB", 0):
            b = cx.op("permute_dims", b, axes=[1, 0])
        c = inputs[6] if len(inputs) > 6 else None
        a, b = ((to_f32(cx, a), to_f32(cx, b)) if exact_in_f32(b, (-2,), c)
                else (as_i32(cx, a), as_i32(cx, b)))
        acc = cx.op("matmul", a, b)
        if c is not None:
            c = widen(cx, c, I32)
            acc = cx.op("add", acc, to_f32(cx, c) if cx.dtype(acc) == F32 else c)
        alpha = np.array(node.attr("alpha", 1.0), F32)
        y_scale = inputs[7] if len(inputs) > 7 else None
        b_scale = inputs[4]
        if y_scale is None:
            return cx.op("multiply", cx.astype(acc, F32),
                         _multiplier(cx, alpha, inputs[1], b_scale))
        y_zp = inputs[8] if len(inputs) > 8 else None
        qdtype = _qdtype(cx, node, inputs, 0, 8 if y_zp is not None else 2)
        return requantize(cx, acc, _multiplier(cx, alpha, inputs[1], b_scale, over=y_scale),
                          y_zp, qdtype)


#: com.microsoft ops refused with a reason (docs/quantized.md): what quantize_static and
#: quantize_dynamic may also write, not converted yet.
MICROSOFT_REFUSED = {
    op: "not supported yet (docs/quantized.md lists the quantized ops mlcir imports); "
        "quantize with QuantFormat.QDQ, or leave this op type out of op_types_to_quantize"
    for op in ("QLinearSigmoid", "QLinearLeakyRelu", "QLinearSoftmax", "QLinearAveragePool",
               "QLinearReduceMean", "QLinearWhere", "QAttention", "QEmbedLayerNormalization",
               "DynamicQuantizeMatMul", "MatMulIntegerToFloat", "DynamicQuantizeLSTM",
               "QuantizeLinear", "DequantizeLinear", "QLinearConv", "MatMulNBits",
               "QOrderedMatMul", "QGemm16")
}
