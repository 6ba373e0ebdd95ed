// graph-fold-constants: graph ops (and tensor.concat/reshapes) whose operands are all constants
// are evaluated in numpy and replaced by constants; chains fold in program order; constants a
// fold leaves unused are erased; a fold that would grow a constant past max-elements is skipped.
// RUN: mlcir-opt %s --split-input-file --graph-fold-constants | FileCheck %s
// RUN: mlcir-opt %s --split-input-file --graph-fold-constants="max-elements=32" | FileCheck %s --check-prefix=LIMIT

// CHECK-LABEL: func.func @chain
// CHECK-SAME: (%[[X:.*]]: tensor<2x3xf32>)
// (w^T) * 2: permute_dims then multiply by a scalar, both folded.
// CHECK-NEXT: %[[W:.*]] = arith.constant dense<{{\[\[}}2.000000e+00, 6.000000e+00, 1.000000e+01], [4.000000e+00, 8.000000e+00, 1.200000e+01]]> : tensor<2x3xf32>
// CHECK-NEXT: %[[R:.*]] = "graph.add"(%[[W]], %[[X]])
// CHECK-NEXT: return %[[R]]
func.func @chain(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %w = arith.constant dense<[[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]> : tensor<3x2xf32>
  %two = arith.constant dense<2.0> : tensor<f32>
  %t = "graph.permute_dims"(%w) {axes = array<i64: 1, 0>} : (tensor<3x2xf32>) -> tensor<2x3xf32>
  %m = "graph.multiply"(%t, %two) : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
  %r = "graph.add"(%m, %x) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  return %r : tensor<2x3xf32>
}

// -----

// A weight bound as a dense_resource blob folds like an inline one.
// CHECK-LABEL: func.func @resource
// CHECK-NEXT: %[[T:.*]] = arith.constant dense<{{\[\[}}1.000000e+00, 3.000000e+00], [2.000000e+00, 4.000000e+00]]> : tensor<2x2xf32>
// CHECK-NEXT: return %[[T]]
func.func @resource() -> tensor<2x2xf32> {
  %w = arith.constant dense_resource<w> : tensor<2x2xf32>
  %t = "graph.permute_dims"(%w) {axes = array<i64: 1, 0>} : (tensor<2x2xf32>) -> tensor<2x2xf32>
  return %t : tensor<2x2xf32>
}
{-#
  dialect_resources: {
    builtin: {
      w: "0x040000000000803F000000400000404000008040"
    }
  }
#-}

// -----

// Integers, and upstream tensor.concat / expand_shape of constants.
// CHECK-LABEL: func.func @ints_and_upstream
// CHECK-NEXT: %[[I:.*]] = arith.constant dense<[11, 22, 33]> : tensor<3xi32>
// CHECK-NEXT: %[[C:.*]] = arith.constant dense<{{\[\[}}1, 2], [10, 20], [30, 40]]> : tensor<3x2xi64>
// CHECK-NEXT: return %[[I]], %[[C]]
func.func @ints_and_upstream() -> (tensor<3xi32>, tensor<3x2xi64>) {
  %a = arith.constant dense<[1, 2, 3]> : tensor<3xi32>
  %b = arith.constant dense<[10, 20, 30]> : tensor<3xi32>
  %s = "graph.add"(%a, %b) : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
  %p = arith.constant dense<[1, 2]> : tensor<2xi64>
  %q = arith.constant dense<[[10, 20], [30, 40]]> : tensor<2x2xi64>
  %p2 = tensor.expand_shape %p [[0, 1]] output_shape [1, 2] : tensor<2xi64> into tensor<1x2xi64>
  %c = tensor.concat dim(0) %p2, %q : (tensor<1x2xi64>, tensor<2x2xi64>) -> tensor<3x2xi64>
  return %s, %c : tensor<3xi32>, tensor<3x2xi64>
}

// -----

// An 8x1 + 1x8 broadcast materialises 64 elements out of 16: folded by default, kept with
// max-elements=32. Ops that read a non-constant are never folded.
// CHECK-LABEL: func.func @growth
// CHECK-NEXT: arith.constant dense<{{\[\[}}0.000000e+00, 1.000000e+01, 2.000000e+01, 3.000000e+01, 4.000000e+01, 5.000000e+01, 6.000000e+01, 7.000000e+01], [1.000000e+00, 1.100000e+01
// CHECK-SAME: : tensor<8x8xf32>
// CHECK-NOT: "graph.add"
// CHECK: "graph.relu"
// LIMIT-LABEL: func.func @growth
// LIMIT: "graph.add"
// LIMIT: "graph.relu"
func.func @growth(%x: tensor<8x8xf32>) -> (tensor<8x8xf32>, tensor<8x8xf32>) {
  %col = arith.constant dense<[[0.0], [1.0], [2.0], [3.0], [4.0], [5.0], [6.0], [7.0]]> : tensor<8x1xf32>
  %row = arith.constant dense<[[0.0, 10.0, 20.0, 30.0, 40.0, 50.0, 60.0, 70.0]]> : tensor<1x8xf32>
  %grid = "graph.add"(%col, %row) : (tensor<8x1xf32>, tensor<1x8xf32>) -> tensor<8x8xf32>
  %r = "graph.relu"(%x) : (tensor<8x8xf32>) -> tensor<8x8xf32>
  return %grid, %r : tensor<8x8xf32>, tensor<8x8xf32>
}
