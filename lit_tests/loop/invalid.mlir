// RUN: mlcir-opt %s --split-input-file --verify-diagnostics

func.func @dup(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  %0 = linalg.add {loop.block = "A"} ins(%a, %b : tensor<4xf32>, tensor<4xf32>) outs(%a : tensor<4xf32>) -> tensor<4xf32>
  // expected-error @+1 {{'linalg.mul' op: block name 'A' is already used in this function}}
  %1 = linalg.mul {loop.block = "A"} ins(%0, %b : tensor<4xf32>, tensor<4xf32>) outs(%a : tensor<4xf32>) -> tensor<4xf32>
  return %1 : tensor<4xf32>
}

// -----

func.func @not_linalg(%a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'tensor.empty' op has 'loop.block' but only linalg ops can be compute blocks}}
  %0 = tensor.empty() {loop.block = "E"} : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @not_string(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'linalg.add' op: 'loop.block' must be a string, got 3 : i64}}
  %0 = linalg.add {loop.block = 3} ins(%a, %b : tensor<4xf32>, tensor<4xf32>) outs(%a : tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @iterators(%a: tensor<8x16xf32>, %b: tensor<16x4xf32>, %c: tensor<8x4xf32>) -> tensor<8x4xf32> {
  // expected-error @+1 {{'linalg.matmul' op: loop.iterators says [spatial, spatial, spatial] but the op's loops are [spatial, spatial, reduction]}}
  %r = linalg.matmul {loop.block = "C", loop.iterators = [#loop.iterator<"spatial">, #loop.iterator<"spatial">, #loop.iterator<"spatial">]}
       ins(%a, %b : tensor<8x16xf32>, tensor<16x4xf32>) outs(%c : tensor<8x4xf32>) -> tensor<8x4xf32>
  return %r : tensor<8x4xf32>
}
