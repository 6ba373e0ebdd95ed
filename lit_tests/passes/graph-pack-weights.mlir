// graph-pack-weights: a matmul with a constant 2-D right operand reads it packed in panels
// [N/n, K, n], folded into a constant at compile time; the elementwise chain after it (bias,
// activation, a residual add of an activation) stays in the blocked shape, its constants
// reshaped at compile time and its activations through a view; one reshape ends the chain.
// A weight with fewer than two panels, a non-constant operand and a module marked
// mlcir.layout = "none" are left alone.
// RUN: mlcir-opt %s --split-input-file --graph-pack-weights="panel=2" --graph-dce | FileCheck %s

// CHECK-LABEL: func.func @dense_bias_relu_residual
// CHECK-SAME: (%[[X:.*]]: tensor<3x2xf32>, %[[R:.*]]: tensor<3x4xf32>)
// The 2x4 weight [[1,2,3,4],[5,6,7,8]] as two panels of 2 columns.
// The original weight and bias are gone (graph-dce).
// CHECK-NEXT: %[[W:.*]] = arith.constant dense<{{\[\[\[}}1.000000e+00, 2.000000e+00], [5.000000e+00, 6.000000e+00]], {{\[\[}}3.000000e+00, 4.000000e+00], [7.000000e+00, 8.000000e+00]]]> : tensor<2x2x2xf32>
// CHECK-NEXT: %[[M:.*]] = "graph.matmul_packed"(%[[X]], %[[W]]) : (tensor<3x2xf32>, tensor<2x2x2xf32>) -> tensor<3x2x2xf32>
// CHECK-NEXT: %[[B:.*]] = arith.constant dense<{{\[\[}}1.000000e+00, 2.000000e+00], [3.000000e+00, 4.000000e+00]]> : tensor<2x2xf32>
// CHECK-NEXT: %[[A:.*]] = "graph.add"(%[[M]], %[[B]]) : (tensor<3x2x2xf32>, tensor<2x2xf32>) -> tensor<3x2x2xf32>
// CHECK-NEXT: %[[Y:.*]] = "graph.relu"(%[[A]]) : (tensor<3x2x2xf32>) -> tensor<3x2x2xf32>
// CHECK-NEXT: %[[RB:.*]] = "graph.reshape"(%[[R]]) {shape = array<i64: 3, 2, 2>}
// CHECK-NEXT: %[[S:.*]] = "graph.add"(%[[Y]], %[[RB]]) : (tensor<3x2x2xf32>, tensor<3x2x2xf32>) -> tensor<3x2x2xf32>
// CHECK-NEXT: %[[OUT:.*]] = "graph.reshape"(%[[S]]) {shape = array<i64: 3, 4>} : (tensor<3x2x2xf32>) -> tensor<3x4xf32>
// CHECK-NEXT: %[[SM:.*]] = "graph.softmax"(%[[OUT]])
// CHECK-NEXT: return %[[SM]]
func.func @dense_bias_relu_residual(%x: tensor<3x2xf32>, %r: tensor<3x4xf32>) -> tensor<3x4xf32> {
  %w = arith.constant dense<[[1.0, 2.0, 3.0, 4.0], [5.0, 6.0, 7.0, 8.0]]> : tensor<2x4xf32>
  %b = arith.constant dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>
  %m = "graph.matmul"(%x, %w) : (tensor<3x2xf32>, tensor<2x4xf32>) -> tensor<3x4xf32>
  %a = "graph.add"(%m, %b) : (tensor<3x4xf32>, tensor<4xf32>) -> tensor<3x4xf32>
  %y = "graph.relu"(%a) : (tensor<3x4xf32>) -> tensor<3x4xf32>
  %s = "graph.add"(%y, %r) : (tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
  %sm = "graph.softmax"(%s) {axis = 1 : i64} : (tensor<3x4xf32>) -> tensor<3x4xf32>
  return %sm : tensor<3x4xf32>
}

// -----

// CHECK-LABEL: func.func @left_alone
// CHECK-NOT: graph.matmul_packed
// CHECK: return
func.func @left_alone(%x: tensor<3x2xf32>, %v: tensor<2x4xf32>) -> (tensor<3x4xf32>, tensor<3x2xf32>) {
  %narrow = arith.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>
  %m = "graph.matmul"(%x, %v) : (tensor<3x2xf32>, tensor<2x4xf32>) -> tensor<3x4xf32>
  %n = "graph.matmul"(%x, %narrow) : (tensor<3x2xf32>, tensor<2x2xf32>) -> tensor<3x2xf32>
  return %m, %n : tensor<3x4xf32>, tensor<3x2xf32>
}

// -----

// CHECK-LABEL: func.func @disabled
// CHECK-NOT: graph.matmul_packed
// CHECK: return
module attributes {mlcir.layout = "none"} {
  func.func @disabled(%x: tensor<3x2xf32>) -> tensor<3x4xf32> {
    %w = arith.constant dense<[[1.0, 2.0, 3.0, 4.0], [5.0, 6.0, 7.0, 8.0]]> : tensor<2x4xf32>
    %m = "graph.matmul"(%x, %w) : (tensor<3x2xf32>, tensor<2x4xf32>) -> tensor<3x4xf32>
    return %m : tensor<3x4xf32>
  }
}
