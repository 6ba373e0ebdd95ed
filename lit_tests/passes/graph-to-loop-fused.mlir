// A fused group (graph.primitive) becomes one destination-passing kernel: one argument per
// result, written by the block that computes it; the caller passes tensor.empty. Lowering
// an already lowered module again changes nothing (a lowered group keeps graph.primitive).
// RUN: mlcir-opt %s --graph-fuse-ops --graph-to-loop | FileCheck %s
// RUN: mlcir-opt %s --graph-fuse-ops --graph-to-loop --graph-to-loop | FileCheck %s

// CHECK-LABEL: func.func @main
// CHECK-SAME: (%[[X:.*]]: tensor<4x8xf32>, %[[W:.*]]: tensor<8x16xf32>, %[[B:.*]]: tensor<16xf32>) -> tensor<4x16xf32>
// CHECK: %[[DEST:.*]] = tensor.empty() : tensor<4x16xf32>
// CHECK: %[[R:.*]] = call @fused_matmul_add_relu(%[[X]], %[[W]], %[[B]], %[[DEST]])
// CHECK: return %[[R]]
// CHECK-LABEL: func.func private @fused_matmul_add_relu
// CHECK-SAME: (%{{.*}}: tensor<4x8xf32>, %{{.*}}: tensor<8x16xf32>, %{{.*}}: tensor<16xf32>, %[[OUT:[^:]*]]: tensor<4x16xf32>) -> tensor<4x16xf32>
// CHECK-SAME: graph.primitive
// CHECK-SAME: loop.kernel
// CHECK: linalg.matmul {loop.block = "matmul"
// CHECK: linalg.generic {{.*}} outs(%[[OUT]] : tensor<4x16xf32>) attrs = {loop.block = "relu"
func.func @main(%x: tensor<4x8xf32>, %w: tensor<8x16xf32>, %b: tensor<16xf32>) -> tensor<4x16xf32> {
  %0 = "graph.matmul"(%x, %w) : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %1 = "graph.add"(%0, %b) : (tensor<4x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  %2 = "graph.relu"(%1) : (tensor<4x16xf32>) -> tensor<4x16xf32>
  return %2 : tensor<4x16xf32>
}
