// Library calls become memref calls with a C interface; compiled kernels stay tensors. Calls of
// external C functions (UMA backends, graph.extern: docs/uma.md) are lowered the same way.
// RUN: mlcir-opt %s --graph-lower-library-calls | FileCheck %s

// CHECK: func.func private @env.linear(memref<1x784xf32>, memref<128x784xf32>, memref<128xf32>, memref<1x128xf32>) attributes {graph.library = "env.linear", llvm.emit_c_interface}
func.func private @env.linear(tensor<1x784xf32>, tensor<128x784xf32>, tensor<128xf32>, tensor<1x128xf32>) -> tensor<1x128xf32> attributes {graph.library = "env.linear"}

// CHECK: func.func private @uma_vanilla_conv(memref<1x3x8x8xf32>, memref<4x3x3x3xf32>, memref<1x4x8x8xf32>) attributes {graph.extern = {backend = "vanilla", function = "conv", int_type = "int", ints = array<i64: 4, 8, 8, 3, 3, 3>, returns = "int"}, llvm.emit_c_interface}
func.func private @uma_vanilla_conv(tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>, tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32> attributes {graph.extern = {backend = "vanilla", function = "conv", int_type = "int", ints = array<i64: 4, 8, 8, 3, 3, 3>, returns = "int"}}

// CHECK-LABEL: func.func @main
func.func @main(%x: tensor<1x784xf32>, %w: tensor<128x784xf32>, %b: tensor<128xf32>) -> tensor<1x128xf32> {
  %e = tensor.empty() : tensor<1x128xf32>
  // CHECK: %[[X:.*]] = bufferization.to_buffer %{{.*}} read_only : tensor<1x784xf32> to memref<1x784xf32>
  // CHECK: %[[OUT:.*]] = memref.alloc() : memref<1x128xf32>
  // CHECK: call @env.linear(%[[X]], %{{.*}}, %{{.*}}, %[[OUT]]) : (memref<1x784xf32>, memref<128x784xf32>, memref<128xf32>, memref<1x128xf32>) -> ()
  // CHECK: %[[Y:.*]] = bufferization.to_tensor %[[OUT]] restrict writable : memref<1x128xf32> to tensor<1x128xf32>
  %y = func.call @env.linear(%x, %w, %b, %e) : (tensor<1x784xf32>, tensor<128x784xf32>, tensor<128xf32>, tensor<1x128xf32>) -> tensor<1x128xf32>
  // CHECK: return %[[Y]]
  return %y : tensor<1x128xf32>
}

// CHECK-LABEL: func.func @offloaded
func.func @offloaded(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<1x4x8x8xf32> {
  %e = tensor.empty() : tensor<1x4x8x8xf32>
  // CHECK: %[[OUT:.*]] = memref.alloc() : memref<1x4x8x8xf32>
  // CHECK: call @uma_vanilla_conv(%{{.*}}, %{{.*}}, %[[OUT]]) : (memref<1x3x8x8xf32>, memref<4x3x3x3xf32>, memref<1x4x8x8xf32>) -> ()
  %y = func.call @uma_vanilla_conv(%x, %w, %e) : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>, tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
  return %y : tensor<1x4x8x8xf32>
}
