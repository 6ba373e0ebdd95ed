# QDQ fusion at import (mlcir/frontend/qdq.py): DequantizeLinear -> Conv/MatMul/Add ->
# QuantizeLinear becomes an integer op with a requantize epilogue; without the fusion the op
# stays float32 between a quantize and a dequantize.
# RUN: %PYTHON %s | FileCheck %s

import numpy as np
from onnx import TensorProto, helper, numpy_helper

from mlcir.frontend import from_onnx


def run(f):
    print(f"TEST: {f.__name__}")
    f()
    return f


def init(name, value):
    return numpy_helper.from_array(np.asarray(value), name)


def qdq_conv(fuse, channels=2, full_range=False):
    """A QDQ convolution; ``full_range``: int8 weights of magnitude 127 over 9 * channels
    taps, so the product's bound (255 * sum |w|) passes 2^24 and it must stay int32."""
    x = helper.make_tensor_value_info("x", TensorProto.UINT8, [1, channels, 5, 5])
    y = helper.make_tensor_value_info("y", TensorProto.UINT8, [1, 4, 5, 5])
    w = np.arange(4 * channels * 3 * 3).reshape(4, channels, 3, 3) % 60 - 30
    w = (np.where(w >= 0, 127, -127) if full_range else w).astype(np.int8)
    nodes = [
        helper.make_node("DequantizeLinear", ["x", "xs", "xz"], ["xf"]),
        helper.make_node("DequantizeLinear", ["w", "ws", "wz"], ["wf"], axis=0),
        helper.make_node("DequantizeLinear", ["b", "bs"], ["bf"], axis=0),
        helper.make_node("Conv", ["xf", "wf", "bf"], ["c"], name="conv", pads=[1, 1, 1, 1]),
        helper.make_node("QuantizeLinear", ["c", "ys", "yz"], ["y"]),
    ]
    ws = np.array([0.01, 0.02, 0.03, 0.04], np.float32)
    inits = [init("xs", np.float32(0.1)), init("xz", np.uint8(128)), init("w", w),
             init("ws", ws), init("wz", np.zeros(4, np.int8)),
             init("b", np.array([10, -20, 30, -40], np.int32)),
             init("bs", np.float32(0.1) * ws), init("ys", np.float32(0.2)),
             init("yz", np.uint8(100))]
    m = helper.make_model(helper.make_graph(nodes, "g", [x], [y], inits),
                          opset_imports=[helper.make_opsetid("", 13)])
    print(from_onnx(m, fuse_qdq=fuse))


# CHECK-LABEL: TEST: fused_conv
# The uint8 input widened (sign-extend, mask 255), its zero point subtracted; the int8 weight
# folded at import; the product's bound is below 2^24, so it runs exactly on the float32
# convolution; the bias added, one multiply by the requantize multiplier, round half to even,
# the zero point, saturation, back to 8 bits.
# CHECK-NOT: graph.multiply
# CHECK: "graph.astype"(%arg0) {dtype = i32} : (tensor<1x2x5x5xi8>) -> tensor<1x2x5x5xi32>
# CHECK: "graph.bitwise_and"
# CHECK: "graph.subtract"
# CHECK: "graph.astype"({{.*}}) {dtype = f32} : (tensor<1x2x5x5xi32>) -> tensor<1x2x5x5xf32>
# CHECK: "graph.conv2d"({{.*}}) {{.*}} : (tensor<1x2x5x5xf32>, tensor<4x2x3x3xf32>) -> tensor<1x4x5x5xf32>
# CHECK: "graph.add"({{.*}}) : (tensor<1x4x5x5xf32>, tensor<1x4x1x1xf32>) -> tensor<1x4x5x5xf32>
# CHECK: "graph.multiply"
# CHECK: "graph.round"
# CHECK: "graph.clip"({{.*}}) {max = 2.550000e+02 : f64, min = 0.000000e+00 : f64}
# CHECK: "graph.astype"({{.*}}) {dtype = i32} : (tensor<1x4x5x5xf32>) -> tensor<1x4x5x5xi32>
# CHECK: "graph.astype"({{.*}}) {dtype = i8} : (tensor<1x4x5x5xi32>) -> tensor<1x4x5x5xi8>
# CHECK-NOT: "graph.conv2d"
@run
def fused_conv():
    qdq_conv(True)


# CHECK-LABEL: TEST: fused_conv_int32
# CHECK: "graph.conv2d"({{.*}}) {{.*}} : (tensor<1x64x5x5xi32>, tensor<4x64x3x3xi32>) -> tensor<1x4x5x5xi32>
# CHECK: "graph.add"({{.*}}) : (tensor<1x4x5x5xi32>, tensor<1x4x1x1xi32>) -> tensor<1x4x5x5xi32>
# CHECK: "graph.astype"({{.*}}) {dtype = f32} : (tensor<1x4x5x5xi32>) -> tensor<1x4x5x5xf32>
# CHECK: "graph.round"
@run
def fused_conv_int32():
    qdq_conv(True, channels=64, full_range=True)


# CHECK-LABEL: TEST: unfused_conv
# CHECK: "graph.conv2d"({{.*}}) {{.*}} : (tensor<1x2x5x5xf32>, tensor<4x2x3x3xf32>) -> tensor<1x4x5x5xf32>
# CHECK: "graph.divide"
@run
def unfused_conv():
    qdq_conv(False)
