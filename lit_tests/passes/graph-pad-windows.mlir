// graph-pad-windows: a blocked window op whose input is made by a graph op that fuses (and read
// by it alone) reads a graph.pad_window of that input with no padding of its own: 0 for a
// convolution, -inf for a max pool. graph-fuse-ops puts the pad_window in its producer's group,
// and the lowering fills the border strips of the kernel's destination and copies the producer's
// result into its interior: bufferized, eliminate-empty-tensors has the producer write there
// and the copy is gone. An input read twice, or a function argument, keeps the op's padding.
// RUN: mlcir-opt %s --split-input-file --graph-pad-windows | FileCheck %s
// RUN: mlcir-opt %s --split-input-file --graph-pad-windows --graph-fuse-ops --graph-to-loop | FileCheck %s --check-prefix=LOOP
// RUN: mlcir-opt %s --split-input-file --graph-pad-windows --graph-fuse-ops --graph-to-loop --mlcir-cpu-bufferize | FileCheck %s --check-prefix=BUF

// CHECK-LABEL: func.func @relu_depthwise_pool
// CHECK: %[[R:.*]] = "graph.relu"
// CHECK-NEXT: %[[P:.*]] = "graph.pad_window"(%[[R]]) {padding = array<i64: 1, 1, 1, 1>, value = 0.000000e+00 : f64} : (tensor<1x1x6x6x16xf32>) -> tensor<1x1x8x8x16xf32>
// CHECK-NEXT: %[[C:.*]] = "graph.conv2d_nchwc"(%[[P]], %{{.*}}) {dilation = array<i64: 1, 1>, groups = 16 : i64, padding = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x1x8x8x16xf32>, tensor<1x1x3x3x1x16xf32>) -> tensor<1x1x6x6x16xf32>
// CHECK-NEXT: %[[Q:.*]] = "graph.pad_window"(%[[C]]) {padding = array<i64: 1, 1, 1, 1>, value = 0xFFF0000000000000 : f64} : (tensor<1x1x6x6x16xf32>) -> tensor<1x1x8x8x16xf32>
// CHECK-NEXT: "graph.max_pool2d_nchwc"(%[[Q]]) {{{.*}}padding = array<i64: 0, 0, 0, 0>{{.*}}} : (tensor<1x1x8x8x16xf32>) -> tensor<1x1x3x3x16xf32>
// LOOP-LABEL: func.func private @fused_relu_pad_window(
// LOOP-SAME: %[[X:.*]]: tensor<1x1x6x6x16xf32>, %[[D:.*]]: tensor<1x1x8x8x16xf32>)
// LOOP: %[[E:.*]] = tensor.empty() : tensor<1x1x6x6x16xf32>
// LOOP: %[[R:.*]] = linalg.generic {{.*}} outs(%[[E]] : tensor<1x1x6x6x16xf32>) {{.*}}loop.block = "relu"
// LOOP: tensor.extract_slice %[[D]][0, 0, 0, 0, 0] [1, 1, 1, 8, 16]
// LOOP: linalg.fill {loop.block = "pad_init"
// LOOP-COUNT-3: linalg.fill {loop.block = "pad_init_
// LOOP: %[[I:.*]] = tensor.extract_slice %{{.*}}[0, 0, 1, 1, 0] [1, 1, 6, 6, 16]
// LOOP: linalg.copy {{.*}}loop.block = "pad"{{.*}} ins(%[[R]] : {{.*}}) outs(%[[I]] :
// LOOP: return
// LOOP-LABEL: func.func private @fused_conv2d_nchwc_pad_window(
// LOOP: arith.constant 0xFF800000 : f32
// Bufferized, the relu writes into the padded destination's interior, a view of it:
// BUF-LABEL: func.func private @fused_relu_pad_window(
// BUF-SAME: %[[X:.*]]: memref<1x1x6x6x16xf32>, %[[D:.*]]: memref<1x1x8x8x16xf32>)
// BUF-NOT: memref.alloc
// BUF: %[[V:.*]] = memref.subview %[[D]][0, 0, 1, 1, 0] [1, 1, 6, 6, 16]
// BUF-NEXT: linalg.generic {{.*}} ins(%[[X]] : memref<1x1x6x6x16xf32>) outs(%[[V]] : {{.*}}) {{.*}}loop.block = "relu"
// BUF-NOT: memref.alloc
// BUF-NOT: copy
// BUF: return
func.func @relu_depthwise_pool(%x: tensor<1x1x6x6x16xf32>) -> tensor<1x1x3x3x16xf32> {
  %w = arith.constant dense<1.0> : tensor<1x1x3x3x1x16xf32>
  %r = "graph.relu"(%x) : (tensor<1x1x6x6x16xf32>) -> tensor<1x1x6x6x16xf32>
  %c = "graph.conv2d_nchwc"(%r, %w) {strides = array<i64: 1, 1>, padding = array<i64: 1, 1, 1, 1>, dilation = array<i64: 1, 1>, groups = 16 : i64} : (tensor<1x1x6x6x16xf32>, tensor<1x1x3x3x1x16xf32>) -> tensor<1x1x6x6x16xf32>
  %p = "graph.max_pool2d_nchwc"(%c) {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>, dilation = array<i64: 1, 1>, ceil_mode = 0 : i64} : (tensor<1x1x6x6x16xf32>) -> tensor<1x1x3x3x16xf32>
  return %p : tensor<1x1x3x3x16xf32>
}

// -----

// CHECK-LABEL: func.func @read_twice_or_an_argument
// CHECK-NOT: graph.pad_window
// CHECK: "graph.conv2d_nchwc"(%arg0, %{{.*}}) {{{.*}}padding = array<i64: 1, 1, 1, 1>
// CHECK: "graph.conv2d_nchwc"(%[[R:.*]], %{{.*}}) {{{.*}}padding = array<i64: 1, 1, 1, 1>
// CHECK-NOT: graph.pad_window
func.func @read_twice_or_an_argument(%x: tensor<1x1x6x6x16xf32>) -> tensor<1x1x6x6x16xf32> {
  %w = arith.constant dense<1.0> : tensor<1x1x3x3x1x16xf32>
  %c = "graph.conv2d_nchwc"(%x, %w) {strides = array<i64: 1, 1>, padding = array<i64: 1, 1, 1, 1>, dilation = array<i64: 1, 1>, groups = 16 : i64} : (tensor<1x1x6x6x16xf32>, tensor<1x1x3x3x1x16xf32>) -> tensor<1x1x6x6x16xf32>
  %r = "graph.relu"(%c) : (tensor<1x1x6x6x16xf32>) -> tensor<1x1x6x6x16xf32>
  %d = "graph.conv2d_nchwc"(%r, %w) {strides = array<i64: 1, 1>, padding = array<i64: 1, 1, 1, 1>, dilation = array<i64: 1, 1>, groups = 16 : i64} : (tensor<1x1x6x6x16xf32>, tensor<1x1x3x3x1x16xf32>) -> tensor<1x1x6x6x16xf32>
  %s = "graph.add"(%d, %r) : (tensor<1x1x6x6x16xf32>, tensor<1x1x6x6x16xf32>) -> tensor<1x1x6x6x16xf32>
  return %s : tensor<1x1x6x6x16xf32>
}
