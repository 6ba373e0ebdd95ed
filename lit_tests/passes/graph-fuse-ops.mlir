// graph-fuse-ops: groups become private graph.primitive functions called from the graph.
// An anchor takes its elementwise/broadcast epilogues; light ops merge with light producers;
// a value with several users ends its group; constants are arguments, not captured; identical
// groups share one function, a group with other types gets its own (_1); a loop body fuses too.
// RUN: mlcir-opt %s --split-input-file --graph-fuse-ops | FileCheck %s

// CHECK-LABEL: func.func @layers
// CHECK-SAME: (%[[X:.*]]: tensor<4x16xf32>, %[[W:.*]]: tensor<16x16xf32>, %[[B:.*]]: tensor<16xf32>)
// CHECK-NEXT: %[[K:.*]] = arith.constant dense<5.000000e-01> : tensor<16x16xf32>
// CHECK-NEXT: %[[H0:.*]] = call @fused_matmul_add_relu(%[[X]], %[[W]], %[[B]])
// CHECK-NEXT: %[[H1:.*]] = call @fused_matmul_add_relu(%[[H0]], %[[K]], %[[B]])
// CHECK-NEXT: %[[T:.*]] = call @fused_matmul_add_relu_1(%[[H1]], %[[W]], %[[B]])
// CHECK-NEXT: return %[[T]]
func.func @layers(%x: tensor<4x16xf32>, %w: tensor<16x16xf32>, %b: tensor<16xf32>) -> tensor<4x16xf32> {
  %k = arith.constant dense<0.5> : tensor<16x16xf32>
  %0 = "graph.matmul"(%x, %w) : (tensor<4x16xf32>, tensor<16x16xf32>) -> tensor<4x16xf32>
  %1 = "graph.add"(%0, %b) : (tensor<4x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  %2 = "graph.relu"(%1) : (tensor<4x16xf32>) -> tensor<4x16xf32>
  %3 = "graph.matmul"(%2, %k) : (tensor<4x16xf32>, tensor<16x16xf32>) -> tensor<4x16xf32>
  %4 = "graph.add"(%3, %b) : (tensor<4x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  %5 = "graph.relu"(%4) : (tensor<4x16xf32>) -> tensor<4x16xf32>
  // the same ops with the bias added first: another function
  %6 = "graph.matmul"(%5, %w) : (tensor<4x16xf32>, tensor<16x16xf32>) -> tensor<4x16xf32>
  %7 = "graph.add"(%b, %6) : (tensor<16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
  %8 = "graph.relu"(%7) : (tensor<4x16xf32>) -> tensor<4x16xf32>
  return %8 : tensor<4x16xf32>
}
// CHECK-LABEL: func.func private @fused_matmul_add_relu
// CHECK-SAME: (%[[A0:.*]]: tensor<4x16xf32>, %[[A1:.*]]: tensor<16x16xf32>, %[[A2:.*]]: tensor<16xf32>) -> tensor<4x16xf32> attributes {graph.primitive}
// CHECK-NEXT: %[[M:.*]] = "graph.matmul"(%[[A0]], %[[A1]])
// CHECK-NEXT: %[[S:.*]] = "graph.add"(%[[M]], %[[A2]])
// CHECK-NEXT: %[[R:.*]] = "graph.relu"(%[[S]])
// CHECK-NEXT: return %[[R]]
// CHECK-LABEL: func.func private @fused_matmul_add_relu_1
// CHECK: "graph.add"(%{{.*}}, %{{.*}}) : (tensor<16xf32>, tensor<4x16xf32>)
// CHECK-NOT: func.func private

// -----

// CHECK-LABEL: func.func @boundaries
// CHECK-SAME: (%[[X:.*]]: tensor<8x8xf32>, %[[Y:.*]]: tensor<8x8xf32>)
// relu feeds an anchor: anchors take no producers; exp+relu are one light group.
// CHECK-NEXT: %[[L:.*]] = call @fused_exp_relu(%[[X]])
// The matmul's result has two users: its group ends there.
// CHECK-NEXT: %[[M:.*]] = "graph.matmul"(%[[L]], %[[Y]])
// Two anchors: the add takes the first as its epilogue; the second stays alone.
// CHECK-NEXT: %[[N:.*]] = "graph.matmul"(%[[Y]], %[[Y]])
// CHECK-NEXT: %[[E:.*]] = call @fused_matmul_add(%[[M]], %[[X]], %[[N]])
// An injective op merges with its light consumer.
// CHECK-NEXT: %[[T:.*]] = call @fused_permute_dims_subtract_negative(%[[E]], %[[M]])
// CHECK-NEXT: return %[[T]]
func.func @boundaries(%x: tensor<8x8xf32>, %y: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %0 = "graph.exp"(%x) : (tensor<8x8xf32>) -> tensor<8x8xf32>
  %1 = "graph.relu"(%0) : (tensor<8x8xf32>) -> tensor<8x8xf32>
  %2 = "graph.matmul"(%1, %y) : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
  %3 = "graph.matmul"(%y, %y) : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
  %4 = "graph.matmul"(%2, %x) : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
  %5 = "graph.add"(%4, %3) : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
  %6 = "graph.permute_dims"(%5) {axes = array<i64: 1, 0>} : (tensor<8x8xf32>) -> tensor<8x8xf32>
  %7 = "graph.subtract"(%6, %2) : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
  %8 = "graph.negative"(%7) : (tensor<8x8xf32>) -> tensor<8x8xf32>
  return %8 : tensor<8x8xf32>
}
// CHECK-LABEL: func.func private @fused_exp_relu
// CHECK-LABEL: func.func private @fused_matmul_add
// CHECK-SAME: (%[[A0:.*]]: tensor<8x8xf32>, %[[A1:.*]]: tensor<8x8xf32>, %[[A2:.*]]: tensor<8x8xf32>)
// CHECK-NEXT: %[[MM:.*]] = "graph.matmul"(%[[A0]], %[[A1]])
// CHECK-NEXT: "graph.add"(%[[MM]], %[[A2]])
// CHECK-LABEL: func.func private @fused_permute_dims_subtract_negative

// -----

// Groups with dynamic shapes fuse like static ones (graph-to-loop makes the kernel
// destination-passing, its destination sized at the call site).
// CHECK-LABEL: func.func @dynamic
// CHECK-NEXT: call @fused_exp_relu(%{{.*}}) : (tensor<?x4xf32>) -> tensor<?x4xf32>
// CHECK-LABEL: func.func private @fused_exp_relu
// CHECK-NEXT: "graph.exp"
// CHECK-NEXT: "graph.relu"
func.func @dynamic(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
  %0 = "graph.exp"(%x) : (tensor<?x4xf32>) -> tensor<?x4xf32>
  %1 = "graph.relu"(%0) : (tensor<?x4xf32>) -> tensor<?x4xf32>
  return %1 : tensor<?x4xf32>
}

// -----

// The body of a loop in a graph function (a recurrent network's steps) fuses like the
// function's own block; a value from outside the loop is an argument of the group.
// CHECK-LABEL: func.func @steps
// CHECK: scf.for
// CHECK: %[[ROW:.*]] = tensor.extract_slice
// CHECK-NEXT: call @fused_add_tanh(%{{.*}}, %[[ROW]]) : (tensor<1x8xf32>, tensor<1x8xf32>) -> tensor<1x8xf32>
// CHECK-LABEL: func.func private @fused_add_tanh
func.func @steps(%x: tensor<4x8xf32>, %h0: tensor<1x8xf32>) -> tensor<1x8xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %r = scf.for %i = %c0 to %c4 step %c1 iter_args(%h = %h0) -> (tensor<1x8xf32>) {
    %row = tensor.extract_slice %x[%i, 0] [1, 8] [1, 1] : tensor<4x8xf32> to tensor<1x8xf32>
    %s = "graph.add"(%h, %row) : (tensor<1x8xf32>, tensor<1x8xf32>) -> tensor<1x8xf32>
    %t = "graph.tanh"(%s) : (tensor<1x8xf32>) -> tensor<1x8xf32>
    scf.yield %t : tensor<1x8xf32>
  }
  return %r : tensor<1x8xf32>
}
