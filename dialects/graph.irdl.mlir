// Generated from the op declarations in dialects/graph.py; do not edit.
irdl.dialect @graph {
  irdl.operation @relu {
    %o0 = irdl.any
    irdl.operands(x: %o0)
    %r0 = irdl.any
    irdl.results(result: %r0)
  }
  irdl.operation @negative {
    %o0 = irdl.any
    irdl.operands(x: %o0)
    %r0 = irdl.any
    irdl.results(result: %r0)
  }
  irdl.operation @exp {
    %o0 = irdl.any
    irdl.operands(x: %o0)
    %r0 = irdl.any
    irdl.results(result: %r0)
  }
  irdl.operation @log {
    %o0 = irdl.any
    irdl.operands(x: %o0)
    %r0 = irdl.any
    irdl.results(result: %r0)
  }
  irdl.operation @sqrt {
    %o0 = irdl.any
    irdl.operands(x: %o0)
    %r0 = irdl.any
    irdl.results(result: %r0)
  }
  irdl.operation @rsqrt {
    %o0 = irdl.any
    irdl.operands(x: %o0)
    %r0 = irdl.any
    irdl.results(result: %r0)
  }
  irdl.operation @tanh {
    %o0 = irdl.any
    irdl.operands(x: %o0)
    %r0 = irdl.any
    irdl.results(result: %r0)
  }
  irdl.operation @sigmoid {
    %o0 = irdl.any
    irdl.operands(x: %o0)
    %r0 = irdl.any
    irdl.results(result: %r0)
  }
  irdl.operation @erf {
    %o0 = irdl.any
    irdl.operands(x: %o0)
    %r0 = irdl.any
    irdl.results(result: %r0)
  }
  irdl.operation @abs {
    %o0 = irdl.any
    irdl.operands(x: %o0)
    %r0 = irdl.any
    irdl.results(result: %r0)
  }
  irdl.operation @add {
    %o0 = irdl.any
    %o1 = irdl.any
    irdl.operands(lhs: %o0, rhs: %o1)
    %r0 = irdl.any
    irdl.results(result: %r0)
  }
  irdl.operation @subtract {
    %o0 = irdl.any
    %o1 = irdl.any
    irdl.operands(lhs: %o0, rhs: %o1)
    %r0 = irdl.any
    irdl.results(result: %r0)
  }
  irdl.operation @multiply {
    %o0 = irdl.any
    %o1 = irdl.any
    irdl.operands(lhs: %o0, rhs: %o1)
    %r0 = irdl.any
    irdl.results(result: %r0)
  }
  irdl.operation @divide {
    %o0 = irdl.any
    %o1 = irdl.any
    irdl.operands(lhs: %o0, rhs: %o1)
    %r0 = irdl.any
    irdl.results(result: %r0)
  }
  irdl.operation @power {
    %o0 = irdl.any
    %o1 = irdl.any
    irdl.operands(lhs: %o0, rhs: %o1)
    %r0 = irdl.any
    irdl.results(result: %r0)
  }
  irdl.operation @maximum {
    %o0 = irdl.any
    %o1 = irdl.any
    irdl.operands(lhs: %o0, rhs: %o1)
    %r0 = irdl.any
    irdl.results(result: %r0)
  }
  irdl.operation @minimum {
    %o0 = irdl.any
    %o1 = irdl.any
    irdl.operands(lhs: %o0, rhs: %o1)
    %r0 = irdl.any
    irdl.results(result: %r0)
  }
  irdl.operation @ewise_fma {
    %o0 = irdl.any
    %o1 = irdl.any
    %o2 = irdl.any
    irdl.operands(a: %o0, b: %o1, c: %o2)
    %r0 = irdl.any
    irdl.results(result: %r0)
  }
  irdl.operation @matmul {
    %o0 = irdl.any
    %o1 = irdl.any
    irdl.operands(lhs: %o0, rhs: %o1)
    %r0 = irdl.any
    irdl.results(result: %r0)
  }
  irdl.operation @matmul_packed {
    %o0 = irdl.any
    %o1 = irdl.any
    irdl.operands(lhs: %o0, packed: %o1)
    %r0 = irdl.any
    irdl.results(result: %r0)
  }
  irdl.operation @permute_dims {
    %o0 = irdl.any
    irdl.operands(x: %o0)
    %r0 = irdl.any
    irdl.results(result: %r0)
    %a0 = irdl.base "#builtin.dense_array"
    irdl.attributes {"axes" = %a0}
  }
  irdl.operation @sum {
    %o0 = irdl.any
    irdl.operands(x: %o0)
    %r0 = irdl.any
    irdl.results(result: %r0)
    %a0 = irdl.base "#builtin.dense_array"
    %a1 = irdl.base "#builtin.integer"
    irdl.attributes {"axes" = %a0, "keepdims" = %a1}
  }
  irdl.operation @mean {
    %o0 = irdl.any
    irdl.operands(x: %o0)
    %r0 = irdl.any
    irdl.results(result: %r0)
    %a0 = irdl.base "#builtin.dense_array"
    %a1 = irdl.base "#builtin.integer"
    irdl.attributes {"axes" = %a0, "keepdims" = %a1}
  }
  irdl.operation @max {
    %o0 = irdl.any
    irdl.operands(x: %o0)
    %r0 = irdl.any
    irdl.results(result: %r0)
    %a0 = irdl.base "#builtin.dense_array"
    %a1 = irdl.base "#builtin.integer"
    irdl.attributes {"axes" = %a0, "keepdims" = %a1}
  }
  irdl.operation @min {
    %o0 = irdl.any
    irdl.operands(x: %o0)
    %r0 = irdl.any
    irdl.results(result: %r0)
    %a0 = irdl.base "#builtin.dense_array"
    %a1 = irdl.base "#builtin.integer"
    irdl.attributes {"axes" = %a0, "keepdims" = %a1}
  }
  irdl.operation @prod {
    %o0 = irdl.any
    irdl.operands(x: %o0)
    %r0 = irdl.any
    irdl.results(result: %r0)
    %a0 = irdl.base "#builtin.dense_array"
    %a1 = irdl.base "#builtin.integer"
    irdl.attributes {"axes" = %a0, "keepdims" = %a1}
  }
  irdl.operation @leaky_relu {
    %o0 = irdl.any
    irdl.operands(x: %o0)
    %r0 = irdl.any
    irdl.results(result: %r0)
    %a0 = irdl.base "#builtin.float"
    irdl.attributes {"alpha" = %a0}
  }
  irdl.operation @clip {
    %o0 = irdl.any
    irdl.operands(x: %o0)
    %r0 = irdl.any
    irdl.results(result: %r0)
    %a0 = irdl.base "#builtin.float"
    %a1 = irdl.base "#builtin.float"
    irdl.attributes {"min" = %a0, "max" = %a1}
  }
  irdl.operation @gelu {
    %o0 = irdl.any
    irdl.operands(x: %o0)
    %r0 = irdl.any
    irdl.results(result: %r0)
    %a0 = irdl.base "#builtin.string"
    irdl.attributes {"approximate" = %a0}
  }
  irdl.operation @astype {
    %o0 = irdl.any
    irdl.operands(x: %o0)
    %r0 = irdl.any
    irdl.results(result: %r0)
    %a0 = irdl.base "#builtin.type"
    irdl.attributes {"dtype" = %a0}
  }
  irdl.operation @softmax {
    %o0 = irdl.any
    irdl.operands(x: %o0)
    %r0 = irdl.any
    irdl.results(result: %r0)
    %a0 = irdl.base "#builtin.integer"
    irdl.attributes {"axis" = %a0}
  }
  irdl.operation @log_softmax {
    %o0 = irdl.any
    irdl.operands(x: %o0)
    %r0 = irdl.any
    irdl.results(result: %r0)
    %a0 = irdl.base "#builtin.integer"
    irdl.attributes {"axis" = %a0}
  }
  irdl.operation @layer_norm {
    %o0 = irdl.any
    %o1 = irdl.any
    %o2 = irdl.any
    irdl.operands(x: %o0, gamma: %o1, beta: %o2)
    %r0 = irdl.any
    irdl.results(result: %r0)
    %a0 = irdl.base "#builtin.dense_array"
    %a1 = irdl.base "#builtin.float"
    irdl.attributes {"axes" = %a0, "epsilon" = %a1}
  }
  irdl.operation @conv2d {
    %o0 = irdl.any
    %o1 = irdl.any
    irdl.operands(x: %o0, w: %o1)
    %r0 = irdl.any
    irdl.results(result: %r0)
    %a0 = irdl.base "#builtin.dense_array"
    %a1 = irdl.base "#builtin.dense_array"
    %a2 = irdl.base "#builtin.dense_array"
    %a3 = irdl.base "#builtin.integer"
    irdl.attributes {"strides" = %a0, "padding" = %a1, "dilation" = %a2, "groups" = %a3}
  }
  irdl.operation @max_pool2d {
    %o0 = irdl.any
    irdl.operands(x: %o0)
    %r0 = irdl.any
    irdl.results(result: %r0)
    %a0 = irdl.base "#builtin.dense_array"
    %a1 = irdl.base "#builtin.dense_array"
    %a2 = irdl.base "#builtin.dense_array"
    %a3 = irdl.base "#builtin.dense_array"
    %a4 = irdl.base "#builtin.integer"
    irdl.attributes {"kernel" = %a0, "strides" = %a1, "padding" = %a2, "dilation" = %a3, "ceil_mode" = %a4}
  }
  irdl.operation @avg_pool2d {
    %o0 = irdl.any
    irdl.operands(x: %o0)
    %r0 = irdl.any
    irdl.results(result: %r0)
    %a0 = irdl.base "#builtin.dense_array"
    %a1 = irdl.base "#builtin.dense_array"
    %a2 = irdl.base "#builtin.dense_array"
    %a3 = irdl.base "#builtin.dense_array"
    %a4 = irdl.base "#builtin.integer"
    %a5 = irdl.base "#builtin.integer"
    irdl.attributes {"kernel" = %a0, "strides" = %a1, "padding" = %a2, "dilation" = %a3, "ceil_mode" = %a4, "count_include_pad" = %a5}
  }
  irdl.operation @layout_transform {
    %o0 = irdl.any
    irdl.operands(x: %o0)
    %r0 = irdl.any
    irdl.results(result: %r0)
    %a0 = irdl.base "#builtin.string"
    %a1 = irdl.base "#builtin.string"
    irdl.attributes {"src_layout" = %a0, "dst_layout" = %a1}
  }
  irdl.operation @conv2d_nchwc {
    %o0 = irdl.any
    %o1 = irdl.any
    irdl.operands(x: %o0, w: %o1)
    %r0 = irdl.any
    irdl.results(result: %r0)
    %a0 = irdl.base "#builtin.dense_array"
    %a1 = irdl.base "#builtin.dense_array"
    %a2 = irdl.base "#builtin.dense_array"
    %a3 = irdl.base "#builtin.integer"
    irdl.attributes {"strides" = %a0, "padding" = %a1, "dilation" = %a2, "groups" = %a3}
  }
  irdl.operation @pad_window {
    %o0 = irdl.any
    irdl.operands(x: %o0)
    %r0 = irdl.any
    irdl.results(result: %r0)
    %a0 = irdl.base "#builtin.dense_array"
    %a1 = irdl.base "#builtin.float"
    irdl.attributes {"padding" = %a0, "value" = %a1}
  }
  irdl.operation @winograd_input {
    %o0 = irdl.any
    irdl.operands(x: %o0)
    %r0 = irdl.any
    irdl.results(result: %r0)
    %a0 = irdl.base "#builtin.dense_array"
    irdl.attributes {"padding" = %a0}
  }
  irdl.operation @winograd_output {
    %o0 = irdl.any
    irdl.operands(m: %o0)
    %r0 = irdl.any
    irdl.results(result: %r0)
    %a0 = irdl.base "#builtin.dense_array"
    %a1 = irdl.base "#builtin.integer"
    irdl.attributes {"tiles" = %a0, "block" = %a1}
  }
  irdl.operation @max_pool2d_nchwc {
    %o0 = irdl.any
    irdl.operands(x: %o0)
    %r0 = irdl.any
    irdl.results(result: %r0)
    %a0 = irdl.base "#builtin.dense_array"
    %a1 = irdl.base "#builtin.dense_array"
    %a2 = irdl.base "#builtin.dense_array"
    %a3 = irdl.base "#builtin.dense_array"
    %a4 = irdl.base "#builtin.integer"
    irdl.attributes {"kernel" = %a0, "strides" = %a1, "padding" = %a2, "dilation" = %a3, "ceil_mode" = %a4}
  }
  irdl.operation @reshape {
    %o0 = irdl.any
    irdl.operands(x: %o0)
    %r0 = irdl.any
    irdl.results(result: %r0)
    %a0 = irdl.base "#builtin.dense_array"
    irdl.attributes {"shape" = %a0}
  }
  irdl.operation @iota {
    %o0 = irdl.any
    irdl.operands(x: %o0)
    %r0 = irdl.any
    irdl.results(result: %r0)
    %a0 = irdl.base "#builtin.integer"
    irdl.attributes {"axis" = %a0}
  }
  irdl.operation @broadcast_to {
    %o0 = irdl.any
    irdl.operands(x: %o0)
    %r0 = irdl.any
    irdl.results(result: %r0)
    %a0 = irdl.base "#builtin.dense_array"
    irdl.attributes {"shape" = %a0}
  }
  irdl.operation @strided_slice {
    %o0 = irdl.any
    irdl.operands(x: %o0)
    %r0 = irdl.any
    irdl.results(result: %r0)
    %a0 = irdl.base "#builtin.dense_array"
    %a1 = irdl.base "#builtin.dense_array"
    %a2 = irdl.base "#builtin.dense_array"
    irdl.attributes {"begin" = %a0, "end" = %a1, "strides" = %a2}
  }
  irdl.operation @take {
    %o0 = irdl.any
    %o1 = irdl.any
    irdl.operands(x: %o0, indices: %o1)
    %r0 = irdl.any
    irdl.results(result: %r0)
    %a0 = irdl.base "#builtin.integer"
    irdl.attributes {"axis" = %a0}
  }
  irdl.operation @gather_elements {
    %o0 = irdl.any
    %o1 = irdl.any
    irdl.operands(x: %o0, indices: %o1)
    %r0 = irdl.any
    irdl.results(result: %r0)
    %a0 = irdl.base "#builtin.integer"
    irdl.attributes {"axis" = %a0}
  }
  irdl.operation @pad {
    %o0 = irdl.any
    %o1 = irdl.any
    %o2 = irdl.any
    irdl.operands(x: %o0, pads: %o1, value: %o2)
    %r0 = irdl.any
    irdl.results(result: %r0)
    %a0 = irdl.base "#builtin.string"
    irdl.attributes {"mode" = %a0}
  }
  irdl.operation @scatter_rows {
    %o0 = irdl.any
    %o1 = irdl.any
    %o2 = irdl.any
    irdl.operands(data: %o0, rows: %o1, updates: %o2)
    %r0 = irdl.any
    irdl.results(result: %r0)
    %a0 = irdl.base "#builtin.string"
    irdl.attributes {"reduction" = %a0}
  }
  irdl.operation @sin {
    %o0 = irdl.any
    irdl.operands(x: %o0)
    %r0 = irdl.any
    irdl.results(result: %r0)
  }
  irdl.operation @cos {
    %o0 = irdl.any
    irdl.operands(x: %o0)
    %r0 = irdl.any
    irdl.results(result: %r0)
  }
  irdl.operation @tan {
    %o0 = irdl.any
    irdl.operands(x: %o0)
    %r0 = irdl.any
    irdl.results(result: %r0)
  }
  irdl.operation @asin {
    %o0 = irdl.any
    irdl.operands(x: %o0)
    %r0 = irdl.any
    irdl.results(result: %r0)
  }
  irdl.operation @acos {
    %o0 = irdl.any
    irdl.operands(x: %o0)
    %r0 = irdl.any
    irdl.results(result: %r0)
  }
  irdl.operation @atan {
    %o0 = irdl.any
    irdl.operands(x: %o0)
    %r0 = irdl.any
    irdl.results(result: %r0)
  }
  irdl.operation @sinh {
    %o0 = irdl.any
    irdl.operands(x: %o0)
    %r0 = irdl.any
    irdl.results(result: %r0)
  }
  irdl.operation @cosh {
    %o0 = irdl.any
    irdl.operands(x: %o0)
    %r0 = irdl.any
    irdl.results(result: %r0)
  }
  irdl.operation @asinh {
    %o0 = irdl.any
    irdl.operands(x: %o0)
    %r0 = irdl.any
    irdl.results(result: %r0)
  }
  irdl.operation @acosh {
    %o0 = irdl.any
    irdl.operands(x: %o0)
    %r0 = irdl.any
    irdl.results(result: %r0)
  }
  irdl.operation @atanh {
    %o0 = irdl.any
    irdl.operands(x: %o0)
    %r0 = irdl.any
    irdl.results(result: %r0)
  }
  irdl.operation @floor {
    %o0 = irdl.any
    irdl.operands(x: %o0)
    %r0 = irdl.any
    irdl.results(result: %r0)
  }
  irdl.operation @ceil {
    %o0 = irdl.any
    irdl.operands(x: %o0)
    %r0 = irdl.any
    irdl.results(result: %r0)
  }
  irdl.operation @round {
    %o0 = irdl.any
    irdl.operands(x: %o0)
    %r0 = irdl.any
    irdl.results(result: %r0)
  }
  irdl.operation @sign {
    %o0 = irdl.any
    irdl.operands(x: %o0)
    %r0 = irdl.any
    irdl.results(result: %r0)
  }
  irdl.operation @bitwise_not {
    %o0 = irdl.any
    irdl.operands(x: %o0)
    %r0 = irdl.any
    irdl.results(result: %r0)
  }
  irdl.operation @bitwise_and {
    %o0 = irdl.any
    %o1 = irdl.any
    irdl.operands(lhs: %o0, rhs: %o1)
    %r0 = irdl.any
    irdl.results(result: %r0)
  }
  irdl.operation @bitwise_or {
    %o0 = irdl.any
    %o1 = irdl.any
    irdl.operands(lhs: %o0, rhs: %o1)
    %r0 = irdl.any
    irdl.results(result: %r0)
  }
  irdl.operation @bitwise_xor {
    %o0 = irdl.any
    %o1 = irdl.any
    irdl.operands(lhs: %o0, rhs: %o1)
    %r0 = irdl.any
    irdl.results(result: %r0)
  }
  irdl.operation @mod {
    %o0 = irdl.any
    %o1 = irdl.any
    irdl.operands(lhs: %o0, rhs: %o1)
    %r0 = irdl.any
    irdl.results(result: %r0)
  }
  irdl.operation @fmod {
    %o0 = irdl.any
    %o1 = irdl.any
    irdl.operands(lhs: %o0, rhs: %o1)
    %r0 = irdl.any
    irdl.results(result: %r0)
  }
  irdl.operation @thresholded_relu {
    %o0 = irdl.any
    irdl.operands(x: %o0)
    %r0 = irdl.any
    irdl.results(result: %r0)
    %a0 = irdl.base "#builtin.float"
    irdl.attributes {"alpha" = %a0}
  }
  irdl.operation @shrink {
    %o0 = irdl.any
    irdl.operands(x: %o0)
    %r0 = irdl.any
    irdl.results(result: %r0)
    %a0 = irdl.base "#builtin.float"
    %a1 = irdl.base "#builtin.float"
    irdl.attributes {"lambd" = %a0, "bias" = %a1}
  }
  irdl.operation @equal {
    %o0 = irdl.any
    %o1 = irdl.any
    irdl.operands(lhs: %o0, rhs: %o1)
    %r0 = irdl.any
    irdl.results(result: %r0)
  }
  irdl.operation @less {
    %o0 = irdl.any
    %o1 = irdl.any
    irdl.operands(lhs: %o0, rhs: %o1)
    %r0 = irdl.any
    irdl.results(result: %r0)
  }
  irdl.operation @less_equal {
    %o0 = irdl.any
    %o1 = irdl.any
    irdl.operands(lhs: %o0, rhs: %o1)
    %r0 = irdl.any
    irdl.results(result: %r0)
  }
  irdl.operation @greater {
    %o0 = irdl.any
    %o1 = irdl.any
    irdl.operands(lhs: %o0, rhs: %o1)
    %r0 = irdl.any
    irdl.results(result: %r0)
  }
  irdl.operation @greater_equal {
    %o0 = irdl.any
    %o1 = irdl.any
    irdl.operands(lhs: %o0, rhs: %o1)
    %r0 = irdl.any
    irdl.results(result: %r0)
  }
  irdl.operation @logical_and {
    %o0 = irdl.any
    %o1 = irdl.any
    irdl.operands(lhs: %o0, rhs: %o1)
    %r0 = irdl.any
    irdl.results(result: %r0)
  }
  irdl.operation @logical_or {
    %o0 = irdl.any
    %o1 = irdl.any
    irdl.operands(lhs: %o0, rhs: %o1)
    %r0 = irdl.any
    irdl.results(result: %r0)
  }
  irdl.operation @logical_xor {
    %o0 = irdl.any
    %o1 = irdl.any
    irdl.operands(lhs: %o0, rhs: %o1)
    %r0 = irdl.any
    irdl.results(result: %r0)
  }
  irdl.operation @logical_not {
    %o0 = irdl.any
    irdl.operands(x: %o0)
    %r0 = irdl.any
    irdl.results(result: %r0)
  }
  irdl.operation @where {
    %o0 = irdl.any
    %o1 = irdl.any
    %o2 = irdl.any
    irdl.operands(condition: %o0, x: %o1, y: %o2)
    %r0 = irdl.any
    irdl.results(result: %r0)
  }
  irdl.operation @isnan {
    %o0 = irdl.any
    irdl.operands(x: %o0)
    %r0 = irdl.any
    irdl.results(result: %r0)
  }
  irdl.operation @isinf {
    %o0 = irdl.any
    irdl.operands(x: %o0)
    %r0 = irdl.any
    irdl.results(result: %r0)
    %a0 = irdl.base "#builtin.integer"
    %a1 = irdl.base "#builtin.integer"
    irdl.attributes {"detect_positive" = %a0, "detect_negative" = %a1}
  }
  irdl.operation @shift_left {
    %o0 = irdl.any
    %o1 = irdl.any
    irdl.operands(lhs: %o0, rhs: %o1)
    %r0 = irdl.any
    irdl.results(result: %r0)
  }
  irdl.operation @shift_right_logical {
    %o0 = irdl.any
    %o1 = irdl.any
    irdl.operands(lhs: %o0, rhs: %o1)
    %r0 = irdl.any
    irdl.results(result: %r0)
  }
}
