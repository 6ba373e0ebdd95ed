// Named compute blocks (loop.block on linalg ops) and loop-dialect attributes round-trip.
// RUN: mlcir-opt %s | mlcir-opt | FileCheck %s

// CHECK-LABEL: func.func @mm
// CHECK-SAME: attributes {loop.kernel}
func.func @mm(%a: tensor<8x16xf32>, %b: tensor<16x4xf32>, %c: tensor<8x4xf32>) -> tensor<8x4xf32> attributes {loop.kernel} {
  %zero = arith.constant 0.0 : f32
  // CHECK: linalg.fill {loop.block = "C_init"}
  %init = linalg.fill {loop.block = "C_init"} ins(%zero : f32) outs(%c : tensor<8x4xf32>) -> tensor<8x4xf32>
  // CHECK: linalg.matmul {loop.block = "C", loop.iterators = [#loop.iterator<"spatial">, #loop.iterator<"spatial">, #loop.iterator<"reduction">]}
  %r = linalg.matmul {loop.block = "C", loop.iterators = [#loop.iterator<"spatial">, #loop.iterator<"spatial">, #loop.iterator<"reduction">]}
       ins(%a, %b : tensor<8x16xf32>, tensor<16x4xf32>) outs(%init : tensor<8x4xf32>) -> tensor<8x4xf32>
  return %r : tensor<8x4xf32>
}
