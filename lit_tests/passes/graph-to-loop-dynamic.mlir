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

// A fused group with dynamic shapes is destination-passing too: the caller sizes the
// destination from the call's operands (here through the group's reshape, -1 being the
// dynamic dim), and the reshape at the group's end is copied into it.
// CHECK-LABEL: func.func @fused_dyn
// CHECK: %[[DIM:.*]] = tensor.dim %[[X:.*]], %{{.*}} : tensor<?x4x3xf32>
// CHECK: %[[E:.*]] = tensor.empty(%{{.*}}) : tensor<?x12xf32>
// CHECK: call @fused(%[[X]], %[[E]]) : (tensor<?x4x3xf32>, tensor<?x12xf32>) -> tensor<?x12xf32>
// CHECK-LABEL: func.func private @fused
// CHECK-SAME: (%{{.*}}: tensor<?x4x3xf32>, %[[DEST:.*]]: tensor<?x12xf32>)
// CHECK: tensor.expand_shape
// CHECK: linalg.copy {{.*}} outs(%[[DEST]] : tensor<?x12xf32>)
func.func @fused_dyn(%x: tensor<?x4x3xf32>) -> tensor<?x12xf32> {
  %0 = call @fused(%x) : (tensor<?x4x3xf32>) -> tensor<?x12xf32>
  return %0 : tensor<?x12xf32>
}
func.func private @fused(%x: tensor<?x4x3xf32>) -> tensor<?x12xf32> attributes {graph.primitive} {
  %0 = "graph.relu"(%x) : (tensor<?x4x3xf32>) -> tensor<?x4x3xf32>
  %1 = "graph.reshape"(%0) {shape = array<i64: -1, 12>} : (tensor<?x4x3xf32>) -> tensor<?x12xf32>
  return %1 : tensor<?x12xf32>
}
