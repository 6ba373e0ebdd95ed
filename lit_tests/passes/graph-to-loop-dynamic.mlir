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

// 0 in a reshape's shape keeps the input's dim at that position (-2 - j: its dim j), so two dynamic dims stay
// dynamic: each kept dim a group of its own and the dims between them regrouped (one dynamic dim at most per
// expand group: expand-strided-metadata asserts on more).
// CHECK-LABEL: func.func @split_heads
// CHECK: %[[N:.*]] = tensor.dim %[[X:.*]], %c0
// CHECK: %[[S:.*]] = tensor.dim %[[X]], %c1
// CHECK: tensor.expand_shape %[[X]] {{\[\[}}0], [1], [2, 3]] output_shape [%[[N]], %[[S]], 4, 8]
// CHECK: tensor.collapse_shape %{{.*}} {{\[\[}}0], [1], [2, 3]] : tensor<?x?x4x8xf32> into tensor<?x?x32xf32>
func.func @split_heads(%x: tensor<?x?x32xf32>) -> tensor<?x?x32xf32> {
  %0 = "graph.reshape"(%x) {shape = array<i64: 0, 0, 4, 8>} : (tensor<?x?x32xf32>) -> tensor<?x?x4x8xf32>
  %1 = "graph.reshape"(%0) {shape = array<i64: 0, 0, -1>} : (tensor<?x?x4x8xf32>) -> tensor<?x?x32xf32>
  return %1 : tensor<?x?x32xf32>
}

// iota: a block writing its index, its length a dim of the operand (read at the call site).
// CHECK-LABEL: func.func @positions
// CHECK: %[[L:.*]] = tensor.dim %{{.*}}, %c1{{.*}} : tensor<2x?xf32>
// CHECK: tensor.empty(%[[L]]) : tensor<?xi64>
// CHECK: call @iota
// CHECK-LABEL: func.func private @iota
// CHECK: linalg.generic
// CHECK-SAME: loop.block = "iota"
// CHECK: %[[I:.*]] = linalg.index 0 : index
// CHECK: arith.index_cast %[[I]] : index to i64
func.func @positions(%x: tensor<2x?xf32>) -> tensor<?xi64> {
  %0 = "graph.iota"(%x) {axis = 1 : i64} : (tensor<2x?xf32>) -> tensor<?xi64>
  return %0 : tensor<?xi64>
}
