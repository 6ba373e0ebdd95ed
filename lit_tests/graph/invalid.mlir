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

// -----

func.func @leaky_relu_int(%a: tensor<4xi32>) -> tensor<4xi32> {
  // expected-error @+1 {{'graph.leaky_relu' op x must have a floating-point element type, got i32}}
  %0 = "graph.leaky_relu"(%a) {alpha = 0.1 : f64} : (tensor<4xi32>) -> tensor<4xi32>
  return %0 : tensor<4xi32>
}

// -----

func.func @gelu_mode(%a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'graph.gelu' op approximate must be "none" or "tanh", got "fast"}}
  %0 = "graph.gelu"(%a) {approximate = "fast"} : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @clip_attr_kind(%a: tensor<4xf32>) -> tensor<4xf32> {
  // IRDL checks the attribute kinds (its message does not name the op).
  // expected-error @+1 {{expected base attribute 'builtin.float' but got 'builtin.integer'}}
  %0 = "graph.clip"(%a) {min = 0 : i64, max = 1.0 : f64} : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @astype_result(%a: tensor<4xf32>) -> tensor<4xi32> {
  // expected-error @+1 {{'graph.astype' op result #0 has type 'tensor<4xi32>' but the operands give 'tensor<4xi64>'}}
  %0 = "graph.astype"(%a) {dtype = i64} : (tensor<4xf32>) -> tensor<4xi32>
  return %0 : tensor<4xi32>
}

// -----

func.func @sum_axes(%a: tensor<4x3xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'graph.sum' op axes [1, 1] must be sorted and unique}}
  %0 = "graph.sum"(%a) {axes = array<i64: 1, 1>, keepdims = 0 : i64} : (tensor<4x3xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @mean_keepdims(%a: tensor<4x3xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'graph.mean' op result #0 has type 'tensor<4xf32>' but the operands give 'tensor<4x1xf32>'}}
  %0 = "graph.mean"(%a) {axes = array<i64: 1>, keepdims = 1 : i64} : (tensor<4x3xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @softmax_axis(%a: tensor<4x3xf32>) -> tensor<4x3xf32> {
  // expected-error @+1 {{'graph.softmax' op axis 2 is out of range for rank 2 (must be in [0, 2))}}
  %0 = "graph.softmax"(%a) {axis = 2 : i64} : (tensor<4x3xf32>) -> tensor<4x3xf32>
  return %0 : tensor<4x3xf32>
}

// -----

func.func @layer_norm_gamma(%a: tensor<4x3xf32>, %g: tensor<4xf32>) -> tensor<4x3xf32> {
  // expected-error @+1 {{'graph.layer_norm' op gamma has shape [4] but the normalized dims of x [4, 3] are [3]}}
  %0 = "graph.layer_norm"(%a, %g, %g) {axes = array<i64: 1>, epsilon = 1.0e-5 : f64} : (tensor<4x3xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<4x3xf32>
  return %0 : tensor<4x3xf32>
}

// -----

func.func @conv_channels(%x: tensor<1x4x8x8xf32>, %w: tensor<8x3x3x3xf32>) -> tensor<1x8x6x6xf32> {
  // expected-error @+1 {{'graph.conv2d' op w [8, 3, 3, 3] expects 3 channels per group (3 with groups=1) but x [1, 4, 8, 8] has 4}}
  %0 = "graph.conv2d"(%x, %w) {strides = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<1x4x8x8xf32>, tensor<8x3x3x3xf32>) -> tensor<1x8x6x6xf32>
  return %0 : tensor<1x8x6x6xf32>
}

// -----

func.func @conv_missing_attr(%x: tensor<1x4x8x8xf32>, %w: tensor<8x4x3x3xf32>) -> tensor<1x8x6x6xf32> {
  // expected-error @+1 {{'graph.conv2d' op attribute "groups" is expected but not provided}}
  %0 = "graph.conv2d"(%x, %w) {strides = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>, dilation = array<i64: 1, 1>} : (tensor<1x4x8x8xf32>, tensor<8x4x3x3xf32>) -> tensor<1x8x6x6xf32>
  return %0 : tensor<1x8x6x6xf32>
}

// -----

func.func @max_pool_padding(%x: tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32> {
  // expected-error @+1 {{'graph.max_pool2d' op padding [0, 3, 0, 0] must be smaller than the (dilated) window [3, 3] so that no window lies entirely in the padding}}
  %0 = "graph.max_pool2d"(%x) {kernel = array<i64: 3, 3>, strides = array<i64: 1, 1>, padding = array<i64: 0, 3, 0, 0>, dilation = array<i64: 1, 1>, ceil_mode = 0 : i64} : (tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
  return %0 : tensor<1x4x8x8xf32>
}

// -----

func.func @avg_pool_ceil_mode(%x: tensor<1x4x9x9xf32>) -> tensor<1x4x4x4xf32> {
  // expected-error @+1 {{'graph.avg_pool2d' op result #0 has type 'tensor<1x4x4x4xf32>' but the operands give 'tensor<1x4x5x5xf32>'}}
  %0 = "graph.avg_pool2d"(%x) {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, padding = array<i64: 0, 0, 0, 0>, dilation = array<i64: 1, 1>, ceil_mode = 1 : i64, count_include_pad = 0 : i64} : (tensor<1x4x9x9xf32>) -> tensor<1x4x4x4xf32>
  return %0 : tensor<1x4x4x4xf32>
}

// -----

func.func @reshape_count(%a: tensor<4x3xf32>) -> tensor<13xf32> {
  // expected-error @+1 {{'graph.reshape' op cannot reshape [4, 3] (12 elements) to [13] (13 elements)}}
  %0 = "graph.reshape"(%a) {shape = array<i64: 13>} : (tensor<4x3xf32>) -> tensor<13xf32>
  return %0 : tensor<13xf32>
}

// -----

func.func @broadcast_to_mismatch(%a: tensor<4x3xf32>) -> tensor<2x4x4xf32> {
  // expected-error @+1 {{'graph.broadcast_to' op cannot broadcast [4, 3] to [2, 4, 4] (dimension 1 is 3, the target's is 4)}}
  %0 = "graph.broadcast_to"(%a) {shape = array<i64: 2, 4, 4>} : (tensor<4x3xf32>) -> tensor<2x4x4xf32>
  return %0 : tensor<2x4x4xf32>
}

// -----

func.func @strided_slice_stride(%a: tensor<4x3xf32>) -> tensor<4x3xf32> {
  // expected-error @+1 {{'graph.strided_slice' op strides [1, 0]: the stride of axis 1 is 0}}
  %0 = "graph.strided_slice"(%a) {begin = array<i64: 0, 0>, end = array<i64: 4, 3>, strides = array<i64: 1, 0>} : (tensor<4x3xf32>) -> tensor<4x3xf32>
  return %0 : tensor<4x3xf32>
}

// -----

func.func @take_indices(%a: tensor<4x3xf32>, %i: tensor<2xf32>) -> tensor<2x3xf32> {
  // expected-error @+1 {{'graph.take' op indices must be i32 or i64, got f32}}
  %0 = "graph.take"(%a, %i) {axis = 0 : i64} : (tensor<4x3xf32>, tensor<2xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}
