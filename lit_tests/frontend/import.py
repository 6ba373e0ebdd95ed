# The ONNX frontend: graph ops, named arguments/results, bound constants, node locations.
# RUN: %PYTHON %s | FileCheck %s

import numpy as np
from onnx import TensorProto, helper, numpy_helper

from mlcir.frontend import from_onnx

F32 = TensorProto.FLOAT


def run(f):
    print(f"TEST: {f.__name__}")
    f()
    return f


def model(nodes, inputs, outputs, initializers, opset=17):
    graph = helper.make_graph(nodes, "test", inputs, outputs, initializer=initializers)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


# CHECK-LABEL: TEST: conv_relu
@run
def conv_relu():
    w = numpy_helper.from_array(np.ones((8, 3, 3, 3), np.float32), "conv.weight")
    b = numpy_helper.from_array(np.arange(8, dtype=np.float32), "conv.bias")
    m = model([helper.make_node("Conv", ["image", "conv.weight", "conv.bias"], ["c"],
                                name="conv1", pads=[1, 1, 1, 1], strides=[2, 2]),
               helper.make_node("Relu", ["c"], ["features"], name="relu1")],
              [helper.make_tensor_value_info("image", F32, ["N", 3, 16, 16])],
              [helper.make_tensor_value_info("features", F32, ["N", 8, 8, 8])], [w, b])
    print(from_onnx(m, shape_dict={"image": [2, 3, 16, 16]}).operation.get_asm(
        enable_debug_info=True))
    # CHECK: func.func @main(%[[X:[^:]*]]: tensor<2x3x16x16xf32> {graph.name = "image"} loc("image"))
    # CHECK-SAME: -> (tensor<2x8x8x8xf32> {graph.name = "features"})
    # The weight (216 elements, under the blob threshold) is inline; the bias was reshaped to
    # [1, 8, 1, 1] at import. Every op carries the location of its ONNX node.
    # CHECK: %[[W:.*]] = arith.constant dense<1.000000e+00> : tensor<8x3x3x3xf32> loc(#[[CONV:.*]])
    # CHECK: %[[C:.*]] = "graph.conv2d"(%[[X]], %[[W]])
    # CHECK-SAME: dilation = array<i64: 1, 1>, groups = 1 : i64, padding = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>
    # CHECK-SAME: -> tensor<2x8x8x8xf32> loc(#[[CONV]])
    # CHECK: %[[B:.*]] = arith.constant dense<{{\[\[\[\[}}0.000000e+00]], {{.*}} : tensor<1x8x1x1xf32>
    # CHECK: %[[A:.*]] = "graph.add"(%[[C]], %[[B]]) {{.*}} loc(#[[CONV]])
    # CHECK: %[[R:.*]] = "graph.relu"(%[[A]]) {{.*}} loc(#[[RELU:.*]])
    # CHECK: return %[[R]]
    # CHECK: #[[CONV]] = loc("conv1")
    # CHECK: #[[RELU]] = loc("relu1")


# CHECK-LABEL: TEST: gemm
@run
def gemm():
    rng = np.random.default_rng(0)
    w = numpy_helper.from_array(rng.standard_normal((32, 16)).astype(np.float32), "fc.weight")
    b = numpy_helper.from_array(np.zeros(32, np.float32), "fc.bias")
    m = model([helper.make_node("Gemm", ["x", "fc.weight", "fc.bias"], ["y"], name="fc",
                                transB=1, alpha=2.0)],
              [helper.make_tensor_value_info("x", F32, ["batch", 16])],
              [helper.make_tensor_value_info("y", F32, ["batch", 32])], [w, b], opset=13)
    print(from_onnx(m))
    # A symbolic dim stays dynamic, its name kept on the argument; transB and alpha were folded
    # into the 16x32 weight, which is large enough (512 elements) to be a dense_resource blob.
    # CHECK: func.func @main(%[[X:[^:]*]]: tensor<?x16xf32> {graph.dims = ["batch", ""], graph.name = "x"}) -> (tensor<?x32xf32> {graph.name = "y"})
    # CHECK: %[[W:.*]] = arith.constant dense_resource<[[BLOB:.*]]> : tensor<16x32xf32>
    # CHECK: %[[M:.*]] = "graph.matmul"(%[[X]], %[[W]]) : (tensor<?x16xf32>, tensor<16x32xf32>) -> tensor<?x32xf32>
    # CHECK: %[[B:.*]] = arith.constant dense<0.000000e+00> : tensor<32xf32>
    # CHECK: %[[Y:.*]] = "graph.add"(%[[M]], %[[B]])
    # CHECK-NOT: graph.permute_dims
    # CHECK-NOT: graph.multiply
    # CHECK: return %[[Y]]
    # CHECK: [[BLOB]]: "0x40000000


# CHECK-LABEL: TEST: shape_folding
@run
def shape_folding():
    m = model([helper.make_node("Shape", ["x"], ["s"], name="shape"),
               helper.make_node("Reshape", ["x", "s2"], ["flat"], name="flatten"),
               helper.make_node("Concat", ["s", "s"], ["both"], name="concat", axis=0)],
              [helper.make_tensor_value_info("x", F32, [2, 3, 4])],
              [helper.make_tensor_value_info("flat", F32, [2, 12]),
               helper.make_tensor_value_info("both", TensorProto.INT64, [6])],
              [numpy_helper.from_array(np.array([2, -1], np.int64), "s2")])
    print(from_onnx(m))
    # Shape and the Concat of its results are constants; only the reshape is built.
    # CHECK: func.func @main(%[[X:[^:]*]]: tensor<2x3x4xf32> {graph.name = "x"}) -> (tensor<2x12xf32> {graph.name = "flat"}, tensor<6xi64> {graph.name = "both"})
    # CHECK-NEXT: %[[R:.*]] = "graph.reshape"(%[[X]]) {shape = array<i64: 2, 12>}
    # CHECK-NEXT: %[[S:.*]] = arith.constant dense<[2, 3, 4, 2, 3, 4]> : tensor<6xi64>
    # CHECK-NEXT: return %[[R]], %[[S]]
