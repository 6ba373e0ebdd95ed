// Symbolic dims lower where the lowering allows: destinations are sized from the operands.
// RUN: mlcir-opt %s --graph-to-loop | FileCheck %s

// CHECK-LABEL: func.func @dyn
func.func @dyn(%a: tensor<1x?xf32>, %b: tensor<?x16xf32>) -> (tensor<1x?xf32>, tensor<1x16xf32>, tensor<?x1xf32>) {
  // CHECK: %[[D:.*]] = tensor.dim %{{.*}}, %{{.*}} : tensor<1x?xf32>
  // CHECK: tensor.empty(%[[D]]) : tensor<1x?xf32>
  // CHECK: call @relu
  %0 = "graph.relu"(%a) : (tensor<1x?xf32>) -> tensor<1x?xf32>
  // CHECK: call @matmul
  %1 = "graph.matmul"(%a, %b) : (tensor<1x?xf32>, tensor<?x16xf32>) -> tensor<1x16xf32>
  // CHECK: tensor.dim
  // CHECK: call @permute_dims
  %2 = "graph.permute_dims"(%a) {axes = array<i64: 1, 0>} : (tensor<1x?xf32>) -> tensor<?x1xf32>
  return %0, %1, %2 : tensor<1x?xf32>, tensor<1x16xf32>, tensor<?x1xf32>
}
