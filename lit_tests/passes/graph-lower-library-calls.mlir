// Library calls become memref calls with a C interface; compiled kernels stay tensors.
// RUN: mlcir-opt %s --graph-lower-library-calls | FileCheck %s

// CHECK: func.func private @env.linear(memref<1x784xf32>, memref<128x784xf32>, memref<128xf32>, memref<1x128xf32>) attributes {graph.library = "env.linear", llvm.emit_c_interface}
func.func private @env.linear(tensor<1x784xf32>, tensor<128x784xf32>, tensor<128xf32>, tensor<1x128xf32>) -> tensor<1x128xf32> attributes {graph.library = "env.linear"}

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
