// Every graph op parses, verifies, prints and parses again (round trip); and the checked-in
// IRDL definition loads into upstream mlir-opt too.
// RUN: mlcir-opt %s | mlcir-opt | FileCheck %s
// RUN: mlir-opt --irdl-file=%irdl_dir/graph.irdl.mlir %s | FileCheck %s

// CHECK-LABEL: func.func @elementwise
func.func @elementwise(%a: tensor<4x8xf32>, %b: tensor<8xf32>, %c: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // CHECK: "graph.add"(%{{.*}}, %{{.*}}) : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %0 = "graph.add"(%a, %b) : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  // CHECK: "graph.multiply"
  %1 = "graph.multiply"(%0, %c) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  // CHECK: "graph.subtract"
  %2 = "graph.subtract"(%1, %b) : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  // CHECK: "graph.divide"
  %3 = "graph.divide"(%2, %c) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  // CHECK: "graph.power"
  %4 = "graph.power"(%3, %c) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  // CHECK: "graph.maximum"
  %5 = "graph.maximum"(%4, %c) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  // CHECK: "graph.minimum"
  %6 = "graph.minimum"(%5, %c) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  // CHECK: "graph.relu"(%{{.*}}) : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %7 = "graph.relu"(%6) : (tensor<4x8xf32>) -> tensor<4x8xf32>
  // CHECK: "graph.negative"
  %8 = "graph.negative"(%7) : (tensor<4x8xf32>) -> tensor<4x8xf32>
  // CHECK: "graph.exp"
  %9 = "graph.exp"(%8) : (tensor<4x8xf32>) -> tensor<4x8xf32>
  // CHECK: "graph.log"
  %10 = "graph.log"(%9) : (tensor<4x8xf32>) -> tensor<4x8xf32>
  // CHECK: "graph.sqrt"
  %11 = "graph.sqrt"(%10) : (tensor<4x8xf32>) -> tensor<4x8xf32>
  // CHECK: "graph.rsqrt"
  %12 = "graph.rsqrt"(%11) : (tensor<4x8xf32>) -> tensor<4x8xf32>
  // CHECK: "graph.tanh"
  %13 = "graph.tanh"(%12) : (tensor<4x8xf32>) -> tensor<4x8xf32>
  // CHECK: "graph.sigmoid"
  %14 = "graph.sigmoid"(%13) : (tensor<4x8xf32>) -> tensor<4x8xf32>
  // CHECK: "graph.erf"
  %15 = "graph.erf"(%14) : (tensor<4x8xf32>) -> tensor<4x8xf32>
  // CHECK: "graph.abs"
  %16 = "graph.abs"(%15) : (tensor<4x8xf32>) -> tensor<4x8xf32>
  // CHECK: "graph.ewise_fma"(%{{.*}}, %{{.*}}, %{{.*}}) : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %17 = "graph.ewise_fma"(%16, %c, %c) : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return %17 : tensor<4x8xf32>
}

// CHECK-LABEL: func.func @linear_algebra
func.func @linear_algebra(%x: tensor<2x3x4xf32>, %w: tensor<4x5xf32>, %v: tensor<4xf32>) -> (tensor<5x3x2xf32>, tensor<2x3xf32>) {
  // CHECK: "graph.matmul"(%{{.*}}, %{{.*}}) : (tensor<2x3x4xf32>, tensor<4x5xf32>) -> tensor<2x3x5xf32>
  %0 = "graph.matmul"(%x, %w) : (tensor<2x3x4xf32>, tensor<4x5xf32>) -> tensor<2x3x5xf32>
  // CHECK: "graph.permute_dims"(%{{.*}}) {axes = array<i64: 2, 1, 0>} : (tensor<2x3x5xf32>) -> tensor<5x3x2xf32>
  %1 = "graph.permute_dims"(%0) {axes = array<i64: 2, 1, 0>} : (tensor<2x3x5xf32>) -> tensor<5x3x2xf32>
  // A 1-D right operand is promoted and its dimension dropped again (numpy.matmul).
  // CHECK: "graph.matmul"(%{{.*}}, %{{.*}}) : (tensor<2x3x4xf32>, tensor<4xf32>) -> tensor<2x3xf32>
  %2 = "graph.matmul"(%x, %v) : (tensor<2x3x4xf32>, tensor<4xf32>) -> tensor<2x3xf32>
  return %1, %2 : tensor<5x3x2xf32>, tensor<2x3xf32>
}

// Symbolic (dynamic) dims parse and verify.
// CHECK-LABEL: func.func @symbolic
func.func @symbolic(%a: tensor<1x?xf32>, %w: tensor<?x16xf32>) -> tensor<1x16xf32> {
  // CHECK: "graph.matmul"(%{{.*}}, %{{.*}}) : (tensor<1x?xf32>, tensor<?x16xf32>) -> tensor<1x16xf32>
  %0 = "graph.matmul"(%a, %w) : (tensor<1x?xf32>, tensor<?x16xf32>) -> tensor<1x16xf32>
  return %0 : tensor<1x16xf32>
}

// CHECK-LABEL: func.func @activations
func.func @activations(%x: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xi64>) {
  // CHECK: "graph.leaky_relu"(%{{.*}}) {alpha = 1.000000e-01 : f64} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %0 = "graph.leaky_relu"(%x) {alpha = 0.1 : f64} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  // CHECK: "graph.clip"(%{{.*}}) {max = 6.000000e+00 : f64, min = 0xFFF0000000000000 : f64}
  %1 = "graph.clip"(%0) {min = 0xFFF0000000000000 : f64, max = 6.0 : f64} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  // CHECK: "graph.gelu"(%{{.*}}) {approximate = "tanh"}
  %2 = "graph.gelu"(%1) {approximate = "tanh"} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  // CHECK: "graph.astype"(%{{.*}}) {dtype = i64} : (tensor<4x8xf32>) -> tensor<4x8xi64>
  %3 = "graph.astype"(%2) {dtype = i64} : (tensor<4x8xf32>) -> tensor<4x8xi64>
  return %2, %3 : tensor<4x8xf32>, tensor<4x8xi64>
}

// CHECK-LABEL: func.func @reductions
func.func @reductions(%x: tensor<2x3x4xf32>, %g: tensor<4xf32>, %b: tensor<4xf32>) -> (tensor<3xf32>, tensor<2x1x1xf32>, tensor<2x4xf32>, tensor<f32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>) {
  // CHECK: "graph.sum"(%{{.*}}) {axes = array<i64: 0, 2>, keepdims = 0 : i64} : (tensor<2x3x4xf32>) -> tensor<3xf32>
  %0 = "graph.sum"(%x) {axes = array<i64: 0, 2>, keepdims = 0 : i64} : (tensor<2x3x4xf32>) -> tensor<3xf32>
  // CHECK: "graph.mean"(%{{.*}}) {axes = array<i64: 1, 2>, keepdims = 1 : i64} : (tensor<2x3x4xf32>) -> tensor<2x1x1xf32>
  %1 = "graph.mean"(%x) {axes = array<i64: 1, 2>, keepdims = 1 : i64} : (tensor<2x3x4xf32>) -> tensor<2x1x1xf32>
  // CHECK: "graph.max"(%{{.*}}) {axes = array<i64: 1>, keepdims = 0 : i64} : (tensor<2x3x4xf32>) -> tensor<2x4xf32>
  %2 = "graph.max"(%x) {axes = array<i64: 1>, keepdims = 0 : i64} : (tensor<2x3x4xf32>) -> tensor<2x4xf32>
  // CHECK: "graph.min"(%{{.*}}) {axes = array<i64: 0, 1, 2>, keepdims = 0 : i64} : (tensor<2x3x4xf32>) -> tensor<f32>
  %3 = "graph.min"(%x) {axes = array<i64: 0, 1, 2>, keepdims = 0 : i64} : (tensor<2x3x4xf32>) -> tensor<f32>
  // CHECK: "graph.prod"(%{{.*}}) {axes = array<i64: 2>, keepdims = 1 : i64} : (tensor<2x3x4xf32>) -> tensor<2x3x1xf32>
  %7 = "graph.prod"(%x) {axes = array<i64: 2>, keepdims = 1 : i64} : (tensor<2x3x4xf32>) -> tensor<2x3x1xf32>
  // CHECK: "graph.softmax"(%{{.*}}) {axis = 1 : i64}
  %4 = "graph.softmax"(%x) {axis = 1 : i64} : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  // CHECK: "graph.log_softmax"(%{{.*}}) {axis = 2 : i64}
  %6 = "graph.log_softmax"(%x) {axis = 2 : i64} : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  // CHECK: "graph.layer_norm"(%{{.*}}, %{{.*}}, %{{.*}}) {axes = array<i64: 2>, epsilon = 9.9999999999999995E-7 : f64} : (tensor<2x3x4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<2x3x4xf32>
  %5 = "graph.layer_norm"(%x, %g, %b) {axes = array<i64: 2>, epsilon = 1.0e-6 : f64} : (tensor<2x3x4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<2x3x4xf32>
  return %0, %1, %2, %3, %4, %5, %6 : tensor<3xf32>, tensor<2x1x1xf32>, tensor<2x4xf32>, tensor<f32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>
}

// CHECK-LABEL: func.func @nn
func.func @nn(%x: tensor<1x4x9x9xf32>, %w: tensor<8x2x3x3xf32>) -> (tensor<1x8x5x5xf32>, tensor<1x4x5x5xf32>, tensor<1x4x5x5xf32>) {
  // CHECK: "graph.conv2d"(%{{.*}}, %{{.*}}) {dilation = array<i64: 1, 1>, groups = 2 : i64, padding = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (tensor<1x4x9x9xf32>, tensor<8x2x3x3xf32>) -> tensor<1x8x5x5xf32>
  %0 = "graph.conv2d"(%x, %w) {strides = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>, dilation = array<i64: 1, 1>, groups = 2 : i64} : (tensor<1x4x9x9xf32>, tensor<8x2x3x3xf32>) -> tensor<1x8x5x5xf32>
  // Ceil mode: (9 + 2 - 3) / 2 rounded up, + 1 = 5 (the last window starts inside the input).
  // CHECK: "graph.max_pool2d"(%{{.*}}) {ceil_mode = 1 : i64, dilation = array<i64: 1, 1>, kernel = array<i64: 3, 3>, padding = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (tensor<1x4x9x9xf32>) -> tensor<1x4x5x5xf32>
  %1 = "graph.max_pool2d"(%x) {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>, dilation = array<i64: 1, 1>, ceil_mode = 1 : i64} : (tensor<1x4x9x9xf32>) -> tensor<1x4x5x5xf32>
  // CHECK: "graph.avg_pool2d"(%{{.*}}) {ceil_mode = 1 : i64, count_include_pad = 0 : i64, {{.*}}} : (tensor<1x4x9x9xf32>) -> tensor<1x4x5x5xf32>
  %2 = "graph.avg_pool2d"(%x) {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, padding = array<i64: 0, 0, 0, 0>, dilation = array<i64: 1, 1>, ceil_mode = 1 : i64, count_include_pad = 0 : i64} : (tensor<1x4x9x9xf32>) -> tensor<1x4x5x5xf32>
  return %0, %1, %2 : tensor<1x8x5x5xf32>, tensor<1x4x5x5xf32>, tensor<1x4x5x5xf32>
}

// CHECK-LABEL: func.func @shapes
func.func @shapes(%x: tensor<2x3x4xf32>, %i: tensor<5xi64>, %v: tensor<3x1xf32>) -> (tensor<6x4xf32>, tensor<2x3x5xf32>, tensor<2x2x2xf32>, tensor<2x5x4xf32>) {
  // CHECK: "graph.reshape"(%{{.*}}) {shape = array<i64: 6, 4>} : (tensor<2x3x4xf32>) -> tensor<6x4xf32>
  %0 = "graph.reshape"(%x) {shape = array<i64: 6, 4>} : (tensor<2x3x4xf32>) -> tensor<6x4xf32>
  // CHECK: "graph.broadcast_to"(%{{.*}}) {shape = array<i64: 2, 3, 5>} : (tensor<3x1xf32>) -> tensor<2x3x5xf32>
  %1 = "graph.broadcast_to"(%v) {shape = array<i64: 2, 3, 5>} : (tensor<3x1xf32>) -> tensor<2x3x5xf32>
  // A negative stride walks backwards; end -1 with it means "through index 0".
  // CHECK: "graph.strided_slice"(%{{.*}}) {begin = array<i64: 1, 2, 0>, end = array<i64: -1, 0, 4>, strides = array<i64: -1, -1, 2>} : (tensor<2x3x4xf32>) -> tensor<2x2x2xf32>
  %2 = "graph.strided_slice"(%x) {begin = array<i64: 1, 2, 0>, end = array<i64: -1, 0, 4>, strides = array<i64: -1, -1, 2>} : (tensor<2x3x4xf32>) -> tensor<2x2x2xf32>
  // CHECK: "graph.take"(%{{.*}}, %{{.*}}) {axis = 1 : i64} : (tensor<2x3x4xf32>, tensor<5xi64>) -> tensor<2x5x4xf32>
  %3 = "graph.take"(%x, %i) {axis = 1 : i64} : (tensor<2x3x4xf32>, tensor<5xi64>) -> tensor<2x5x4xf32>
  return %0, %1, %2, %3 : tensor<6x4xf32>, tensor<2x3x5xf32>, tensor<2x2x2xf32>, tensor<2x5x4xf32>
}

// Symbolic dims parse and verify for the new ops too.
// CHECK-LABEL: func.func @symbolic_nn
func.func @symbolic_nn(%x: tensor<?x4x9x9xf32>, %w: tensor<8x4x3x3xf32>, %y: tensor<?x?xf32>, %i: tensor<?xi32>) -> (tensor<?x8x7x7xf32>, tensor<?xf32>, tensor<?x?xf32>) {
  // CHECK: "graph.conv2d"(%{{.*}}, %{{.*}}) {{.*}} : (tensor<?x4x9x9xf32>, tensor<8x4x3x3xf32>) -> tensor<?x8x7x7xf32>
  %0 = "graph.conv2d"(%x, %w) {strides = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<?x4x9x9xf32>, tensor<8x4x3x3xf32>) -> tensor<?x8x7x7xf32>
  // CHECK: "graph.sum"(%{{.*}}) {{.*}} : (tensor<?x?xf32>) -> tensor<?xf32>
  %1 = "graph.sum"(%y) {axes = array<i64: 1>, keepdims = 0 : i64} : (tensor<?x?xf32>) -> tensor<?xf32>
  // CHECK: "graph.take"(%{{.*}}, %{{.*}}) {axis = 0 : i64} : (tensor<?x?xf32>, tensor<?xi32>) -> tensor<?x?xf32>
  %2 = "graph.take"(%y, %i) {axis = 0 : i64} : (tensor<?x?xf32>, tensor<?xi32>) -> tensor<?x?xf32>
  return %0, %1, %2 : tensor<?x8x7x7xf32>, tensor<?xf32>, tensor<?x?xf32>
}
