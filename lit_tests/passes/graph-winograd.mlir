// graph-winograd: a 3x3 stride-1 NCHW<c>c convolution with a constant filter becomes
// winograd_input (the 6x6 input tiles as B^T d B), one batched matmul with the filter
// transformed at compile time ([36, C, K]) and winograd_output (A^T m A per tile). The
// transforms lower to vector code over the channel block in an scf.forall whose iterations each
// own a slice of the destination, so bufferized they write it in place (no allocation, no copy).
// A strided convolution stays direct.
// RUN: mlcir-opt %s --split-input-file --graph-winograd | FileCheck %s
// RUN: mlcir-opt %s --split-input-file --graph-winograd --graph-fuse-ops --graph-to-loop | FileCheck %s --check-prefix=LOOP
// RUN: mlcir-opt %s --split-input-file --graph-winograd --graph-fuse-ops --graph-to-loop --mlcir-cpu-bufferize | FileCheck %s --check-prefix=BUF

// CHECK-LABEL: func.func @conv3x3
// CHECK: %[[U:.*]] = arith.constant dense_resource<{{.*}}> : tensor<36x32x32xf32>
// CHECK: %[[V:.*]] = "graph.winograd_input"(%arg0) {padding = array<i64: 1, 1, 1, 1>} : (tensor<1x2x8x8x16xf32>) -> tensor<36x4x32xf32>
// CHECK-NEXT: %[[M:.*]] = "graph.matmul"(%[[V]], %[[U]]) : (tensor<36x4x32xf32>, tensor<36x32x32xf32>) -> tensor<36x4x32xf32>
// CHECK-NEXT: %[[Y:.*]] = "graph.winograd_output"(%[[M]]) {block = 16 : i64, tiles = array<i64: 2, 2>} : (tensor<36x4x32xf32>) -> tensor<1x2x8x8x16xf32>
// CHECK-NEXT: return %[[Y]]
// CHECK-NOT: graph.conv2d_nchwc
// LOOP-LABEL: func.func private @winograd_input(
// LOOP: linalg.copy {{.*}}loop.block = "pad"
// LOOP: scf.forall (%{{.*}}, %{{.*}}) in (1, 2) shared_outs(%{{.*}} = %{{.*}}) -> (tensor<6x6x1x2x2x32xf32>)
// LOOP: scf.for
// LOOP: scf.for
// LOOP: vector.transfer_read {{.*}} : tensor<1x2x10x10x16xf32>, vector<6x6x16xf32>
// LOOP: vector.transpose {{.*}} [1, 0, 2] : vector<6x6x16xf32> to vector<6x6x16xf32>
// LOOP: vector.transfer_write {{.*}} : vector<6x6x16xf32>, tensor<6x6x1x1x2x32xf32>
// LOOP: scf.forall.in_parallel
// LOOP-NEXT: tensor.parallel_insert_slice
// LOOP-LABEL: func.func private @winograd_output(
// LOOP: scf.forall (%{{.*}}, %{{.*}}, %{{.*}}) in (1, 2, 2)
// LOOP: vector.transfer_read {{.*}} : tensor<6x6x1x2x2x32xf32>, vector<6x6x16xf32>
// LOOP: vector.transfer_write {{.*}} : vector<4x4x16xf32>, tensor<1x1x4x8x16xf32>
// BUF-LABEL: func.func private @winograd_output(
// BUF-SAME: %[[M:.*]]: memref<36x4x32xf32>, %[[D:.*]]: memref<1x2x8x8x16xf32>)
// BUF-NOT: memref.alloc
// BUF-NOT: memref.copy
// BUF: scf.forall
// BUF: vector.load %{{.*}} : memref<6x6x1x2x2x32xf32>, vector<16xf32>
// BUF: vector.store %{{.*}}, %{{.*}} : memref<1x1x4x8x16xf32, strided<{{.*}}>>, vector<16xf32>
// BUF-NOT: memref.alloc
// BUF-NOT: memref.copy
// BUF: return
func.func @conv3x3(%x: tensor<1x2x8x8x16xf32>) -> tensor<1x2x8x8x16xf32> {
  %w = arith.constant dense<0.5> : tensor<2x2x3x3x16x16xf32>
  %y = "graph.conv2d_nchwc"(%x, %w) {dilation = array<i64: 1, 1>, groups = 1 : i64, padding = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<1x2x8x8x16xf32>, tensor<2x2x3x3x16x16xf32>) -> tensor<1x2x8x8x16xf32>
  return %y : tensor<1x2x8x8x16xf32>
}

// -----

// CHECK-LABEL: func.func @strided
// CHECK: "graph.conv2d_nchwc"
// CHECK-NOT: graph.winograd
func.func @strided(%x: tensor<1x2x8x8x16xf32>) -> tensor<1x2x4x4x16xf32> {
  %w = arith.constant dense<0.5> : tensor<2x2x3x3x16x16xf32>
  %y = "graph.conv2d_nchwc"(%x, %w) {dilation = array<i64: 1, 1>, groups = 1 : i64, padding = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (tensor<1x2x8x8x16xf32>, tensor<2x2x3x3x16x16xf32>) -> tensor<1x2x4x4x16xf32>
  return %y : tensor<1x2x4x4x16xf32>
}
