// graph-dce: unused graph ops, constants, tensor.empty, pure upstream ops and calls of fused
// groups/kernels go (chains of them in one run); library calls and everything used stay;
// private functions no longer called are dropped (upstream symbol-dce).
// RUN: mlcir-opt %s --graph-dce | FileCheck %s

// CHECK-LABEL: func.func @main
// CHECK-SAME: (%[[X:.*]]: tensor<4xf32>)
// CHECK-NEXT: %[[K:.*]] = arith.constant dense<1.000000e+00> : tensor<4xf32>
// CHECK-NEXT: %[[A:.*]] = "graph.add"(%[[X]], %[[K]])
// CHECK-NEXT: %[[E:.*]] = tensor.empty() : tensor<4xf32>
// CHECK-NEXT: %{{.*}} = call @lib(%[[A]], %[[E]])
// CHECK-NEXT: return %[[A]]
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %k = arith.constant dense<1.0> : tensor<4xf32>
  %dead_k = arith.constant dense<2.0> : tensor<4xf32>
  %a = "graph.add"(%x, %k) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  // a dead chain: constant -> graph op -> upstream pure op -> graph op
  %d0 = "graph.multiply"(%a, %dead_k) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %d1 = tensor.expand_shape %d0 [[0, 1]] output_shape [1, 4] : tensor<4xf32> into tensor<1x4xf32>
  %d2 = "graph.relu"(%d1) : (tensor<1x4xf32>) -> tensor<1x4xf32>
  %e0 = tensor.empty() : tensor<4xf32>
  %f = call @fused(%x) : (tensor<4xf32>) -> tensor<4xf32>
  %kk = call @kernel(%x, %e0) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  // a library function may have effects of its own: kept although its result is unused
  %e1 = tensor.empty() : tensor<4xf32>
  %l = call @lib(%a, %e1) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %a : tensor<4xf32>
}

// CHECK-NOT: @fused
// CHECK-NOT: @kernel
// CHECK-NOT: @unused
// CHECK: func.func private @lib
// CHECK-NOT: @fused
// CHECK-NOT: @kernel
// CHECK-NOT: @unused
func.func private @fused(%x: tensor<4xf32>) -> tensor<4xf32> attributes {graph.primitive} {
  %0 = "graph.exp"(%x) : (tensor<4xf32>) -> tensor<4xf32>
  %1 = "graph.relu"(%0) : (tensor<4xf32>) -> tensor<4xf32>
  return %1 : tensor<4xf32>
}
func.func private @kernel(%x: tensor<4xf32>, %out: tensor<4xf32>) -> tensor<4xf32> attributes {loop.kernel} {
  %0 = linalg.copy ins(%x : tensor<4xf32>) outs(%out : tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
func.func private @unused(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}
func.func private @lib(tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32> attributes {graph.library = "env.relu"}
