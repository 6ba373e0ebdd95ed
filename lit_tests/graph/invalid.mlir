// Ops that do not verify are rejected at their location.
// RUN: mlcir-opt %s --split-input-file --verify-diagnostics

func.func @matmul_k(%a: tensor<4x8xf32>, %b: tensor<9x16xf32>) -> tensor<4x16xf32> {
  // expected-error @+1 {{'graph.matmul' op contracting dimensions differ: lhs [4, 8] has K=8, rhs [9, 16] has K=9}}
  %0 = "graph.matmul"(%a, %b) : (tensor<4x8xf32>, tensor<9x16xf32>) -> tensor<4x16xf32>
  return %0 : tensor<4x16xf32>
}

// -----

func.func @operand_count(%a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'graph.relu' op expects exactly 1 operands, but got 2}}
  %0 = "graph.relu"(%a, %a) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @element_types(%a: tensor<4xf32>, %b: tensor<4xf16>) -> tensor<4xf32> {
  // expected-error @+1 {{'graph.add' op operands have different element types: f16, f32}}
  %0 = "graph.add"(%a, %b) : (tensor<4xf32>, tensor<4xf16>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @broadcast(%a: tensor<4x3xf32>, %b: tensor<5xf32>) -> tensor<4x3xf32> {
  // expected-error @+1 {{'graph.add' op shapes [4, 3] and [5] do not broadcast}}
  %0 = "graph.add"(%a, %b) : (tensor<4x3xf32>, tensor<5xf32>) -> tensor<4x3xf32>
  return %0 : tensor<4x3xf32>
}

// -----

func.func @wrong_result(%a: tensor<4x3xf32>) -> tensor<4x4xf32> {
  // expected-error @+1 {{'graph.relu' op result #0 has type 'tensor<4x4xf32>' but the operands give 'tensor<4x3xf32>'}}
  %0 = "graph.relu"(%a) : (tensor<4x3xf32>) -> tensor<4x4xf32>
  return %0 : tensor<4x4xf32>
}

// -----

func.func @missing_attr(%a: tensor<4x3xf32>) -> tensor<3x4xf32> {
  // expected-error @+1 {{'graph.permute_dims' op attribute "axes" is expected but not provided}}
  %0 = "graph.permute_dims"(%a) : (tensor<4x3xf32>) -> tensor<3x4xf32>
  return %0 : tensor<3x4xf32>
}

// -----

func.func @bad_perm(%a: tensor<4x3xf32>) -> tensor<3x4xf32> {
  // expected-error @+1 {{'graph.permute_dims' op axes [1, 1] are not a permutation of the 2 dimensions of [4, 3]}}
  %0 = "graph.permute_dims"(%a) {axes = array<i64: 1, 1>} : (tensor<4x3xf32>) -> tensor<3x4xf32>
  return %0 : tensor<3x4xf32>
}

// -----

func.func @fma_shapes(%a: tensor<4xf32>, %b: tensor<1xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'graph.ewise_fma' op operands must have the same shape, got [4] and [1] and [4]}}
  %0 = "graph.ewise_fma"(%a, %b, %a) : (tensor<4xf32>, tensor<1xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @not_a_tensor(%a: f32) -> f32 {
  // expected-error @+1 {{'graph.relu' op expected a ranked tensor, got 'f32'}}
  %0 = "graph.relu"(%a) : (f32) -> f32
  return %0 : f32
}
