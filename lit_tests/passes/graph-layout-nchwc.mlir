// graph-layout-nchwc: a convolution chain runs in NCHW<c>c. The filter is packed at compile
// time ([O/co, C/ci, KH, KW, ci, co]; 8 input channels are one block of 8, 16 outputs one of
// 16), the bias follows as a constant rearranged to [1, 1, 1, 1, 16], the relu and the max
// pool run blocked, and the chain changes layout once at each end. A width stride keeps the
// filter as it is; the lowering makes one generic per phase, reading its columns through the
// view [.., W/2, 2, c] (no copy) and its taps as a strided view of the packed filter, each
// accumulating into the previous one. A module marked mlcir.layout = "none" is left alone.
// RUN: mlcir-opt %s --split-input-file --graph-layout-nchwc --graph-dce | FileCheck %s
// RUN: mlcir-opt %s --split-input-file --graph-layout-nchwc --graph-dce --graph-fuse-ops --graph-to-loop | FileCheck %s --check-prefix=LOOP

// CHECK-LABEL: func.func @conv_bias_relu_pool
// CHECK-SAME: (%[[X:.*]]: tensor<1x8x6x6xf32>)
// CHECK-NEXT: %[[XB:.*]] = "graph.layout_transform"(%[[X]]) {dst_layout = "NCHW8c", src_layout = "NCHW"} : (tensor<1x8x6x6xf32>) -> tensor<1x1x6x6x8xf32>
// CHECK-NEXT: %[[W:.*]] = arith.constant dense<1.000000e+00> : tensor<1x1x3x3x8x16xf32>
// CHECK-NEXT: %[[C:.*]] = "graph.conv2d_nchwc"(%[[XB]], %[[W]]) {dilation = array<i64: 1, 1>, groups = 1 : i64, padding = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<1x1x6x6x8xf32>, tensor<1x1x3x3x8x16xf32>) -> tensor<1x1x6x6x16xf32>
// CHECK-NEXT: %[[B:.*]] = arith.constant dense<5.000000e-01> : tensor<1x1x1x1x16xf32>
// CHECK-NEXT: %[[A:.*]] = "graph.add"(%[[C]], %[[B]]) : (tensor<1x1x6x6x16xf32>, tensor<1x1x1x1x16xf32>) -> tensor<1x1x6x6x16xf32>
// CHECK-NEXT: %[[R:.*]] = "graph.relu"(%[[A]]) : (tensor<1x1x6x6x16xf32>) -> tensor<1x1x6x6x16xf32>
// CHECK-NEXT: %[[P:.*]] = "graph.max_pool2d_nchwc"(%[[R]]) {{.*}} : (tensor<1x1x6x6x16xf32>) -> tensor<1x1x3x3x16xf32>
// CHECK-NEXT: %[[Y:.*]] = "graph.layout_transform"(%[[P]]) {dst_layout = "NCHW", src_layout = "NCHW16c"} : (tensor<1x1x3x3x16xf32>) -> tensor<1x16x3x3xf32>
// CHECK-NEXT: return %[[Y]]
// LOOP-LABEL: func.func private @max_pool2d_nchwc
// LOOP: linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "parallel"]
// LOOP: arith.maxnumf
func.func @conv_bias_relu_pool(%x: tensor<1x8x6x6xf32>) -> tensor<1x16x3x3xf32> {
  %w = arith.constant dense<1.0> : tensor<16x8x3x3xf32>
  %b = arith.constant dense<0.5> : tensor<16x1x1xf32>
  %c = "graph.conv2d"(%x, %w) {strides = array<i64: 1, 1>, padding = array<i64: 1, 1, 1, 1>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<1x8x6x6xf32>, tensor<16x8x3x3xf32>) -> tensor<1x16x6x6xf32>
  %a = "graph.add"(%c, %b) : (tensor<1x16x6x6xf32>, tensor<16x1x1xf32>) -> tensor<1x16x6x6xf32>
  %r = "graph.relu"(%a) : (tensor<1x16x6x6xf32>) -> tensor<1x16x6x6xf32>
  %p = "graph.max_pool2d"(%r) {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, padding = array<i64: 0, 0, 0, 0>, dilation = array<i64: 1, 1>, ceil_mode = 0 : i64} : (tensor<1x16x6x6xf32>) -> tensor<1x16x3x3xf32>
  return %p : tensor<1x16x3x3xf32>
}

// -----

// CHECK-LABEL: func.func @strided
// CHECK: "graph.conv2d_nchwc"({{.*}}) {dilation = array<i64: 1, 1>, groups = 1 : i64, padding = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (tensor<1x1x8x8x16xf32>, tensor<1x1x3x3x16x16xf32>) -> tensor<1x1x4x4x16xf32>
// The layout changes transpose each channel block's [16, H*W] plane (H and W merged in views
// of both tensors).
// LOOP-LABEL: func.func @strided(
// LOOP-LABEL: func.func private @layout_transform(
// LOOP-SAME: %[[IN:[^:]*]]: tensor<1x16x8x8xf32>, %[[DEST:[^:]*]]: tensor<1x1x8x8x16xf32>
// LOOP: %[[HW:.*]] = tensor.collapse_shape %[[IN]] {{\[}}[0], [1], [2, 3]] : tensor<1x16x8x8xf32> into tensor<1x16x64xf32>
// LOOP: %[[PLANES:.*]] = tensor.expand_shape %[[HW]] {{\[}}[0], [1, 2], [3]] output_shape [1, 1, 16, 64]
// LOOP: %[[ROWS:.*]] = tensor.collapse_shape %[[DEST]] {{\[}}[0], [1], [2, 3], [4]] : tensor<1x1x8x8x16xf32> into tensor<1x1x64x16xf32>
// LOOP: %[[T:.*]] = linalg.transpose ins(%[[PLANES]] : tensor<1x1x16x64xf32>) outs(%[[ROWS]] : tensor<1x1x64x16xf32>) permutation = [0, 1, 3, 2] {{.*}}loop.block = "layout_transform"
// LOOP: tensor.expand_shape %[[T]] {{\[}}[0], [1], [2, 3], [4]] output_shape [1, 1, 8, 8, 16]
// LOOP-LABEL: func.func private @conv2d_nchwc
// LOOP: %[[V:.*]] = tensor.expand_shape {{.*}} output_shape [1, 1, 10, 5, 2, 16] : tensor<1x1x10x10x16xf32> into tensor<1x1x10x5x2x16xf32>
// LOOP: %[[P0:.*]] = tensor.extract_slice %[[V]][0, 0, 0, 0, 0, 0] [1, 1, 10, 5, 1, 16] [1, 1, 1, 1, 1, 1] : tensor<1x1x10x5x2x16xf32> to tensor<1x1x10x5x16xf32>
// LOOP: %[[P1:.*]] = tensor.extract_slice %[[V]][0, 0, 0, 0, 1, 0] [1, 1, 10, 4, 1, 16] [1, 1, 1, 1, 1, 1] : tensor<1x1x10x5x2x16xf32> to tensor<1x1x10x4x16xf32>
// LOOP: %[[W0:.*]] = tensor.extract_slice %{{.*}}[0, 0, 0, 0, 0, 0] [1, 1, 3, 2, 16, 16] [1, 1, 1, 2, 1, 1] : tensor<1x1x3x3x16x16xf32> to tensor<1x1x3x2x16x16xf32>
// LOOP: %[[C0:.*]] = linalg.generic {{.*}} ins(%[[P0]], %[[W0]] : {{.*}}) outs({{.*}}) {{.*}}loop.block = "conv2d_nchwc"
// LOOP: %[[W1:.*]] = tensor.extract_slice %{{.*}}[0, 0, 0, 1, 0, 0] [1, 1, 3, 1, 16, 16] [1, 1, 1, 2, 1, 1] : tensor<1x1x3x3x16x16xf32> to tensor<1x1x3x1x16x16xf32>
// LOOP: linalg.generic {{.*}} ins(%[[P1]], %[[W1]] : {{.*}}) outs(%[[C0]] : {{.*}}) {{.*}}loop.block = "conv2d_nchwc_1"
// LOOP-LABEL: func.func private @layout_transform_1(
// LOOP: linalg.transpose ins(%{{.*}} : tensor<1x1x16x16xf32>) outs(%{{.*}} : tensor<1x1x16x16xf32>) permutation = [0, 1, 3, 2]
func.func @strided(%x: tensor<1x16x8x8xf32>) -> tensor<1x16x4x4xf32> {
  %w = arith.constant dense<1.0> : tensor<16x16x3x3xf32>
  %c = "graph.conv2d"(%x, %w) {strides = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<1x16x8x8xf32>, tensor<16x16x3x3xf32>) -> tensor<1x16x4x4xf32>
  return %c : tensor<1x16x4x4xf32>
}

// -----

// CHECK-LABEL: func.func @left_alone
// CHECK-NOT: nchwc
// CHECK: "graph.conv2d"
module attributes {mlcir.layout = "none"} {
  func.func @left_alone(%x: tensor<1x16x8x8xf32>) -> tensor<1x16x8x8xf32> {
    %w = arith.constant dense<1.0> : tensor<16x16x1x1xf32>
    %c = "graph.conv2d"(%x, %w) {strides = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<1x16x8x8xf32>, tensor<16x16x1x1xf32>) -> tensor<1x16x8x8xf32>
    return %c : tensor<1x16x8x8xf32>
  }
}

// -----

// Every chain runs blocked, a lone 1x1 convolution too (measured 1.25x against NCHW with its
// two layout changes, bench/nchwc_chains.py); two 1x1 convolutions change layout once each way.
// CHECK-LABEL: func.func @lone_pointwise
// CHECK: "graph.layout_transform"
// CHECK: "graph.conv2d_nchwc"
// CHECK: "graph.layout_transform"
// CHECK-LABEL: func.func @two_pointwise
// CHECK: "graph.layout_transform"
// CHECK-COUNT-2: "graph.conv2d_nchwc"
// CHECK: "graph.layout_transform"
func.func @lone_pointwise(%x: tensor<1x16x6x6xf32>) -> tensor<1x32x6x6xf32> {
  %w = arith.constant dense<1.0> : tensor<32x16x1x1xf32>
  %c = "graph.conv2d"(%x, %w) {strides = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<1x16x6x6xf32>, tensor<32x16x1x1xf32>) -> tensor<1x32x6x6xf32>
  return %c : tensor<1x32x6x6xf32>
}
func.func @two_pointwise(%x: tensor<1x16x6x6xf32>) -> tensor<1x16x6x6xf32> {
  %w = arith.constant dense<1.0> : tensor<32x16x1x1xf32>
  %v = arith.constant dense<1.0> : tensor<16x32x1x1xf32>
  %c = "graph.conv2d"(%x, %w) {strides = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<1x16x6x6xf32>, tensor<32x16x1x1xf32>) -> tensor<1x32x6x6xf32>
  %d = "graph.conv2d"(%c, %v) {strides = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<1x32x6x6xf32>, tensor<16x32x1x1xf32>) -> tensor<1x16x6x6xf32>
  return %d : tensor<1x16x6x6xf32>
}
