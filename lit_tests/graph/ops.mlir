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
