// mlcir-gpu-mark-outputs records each public function's result count (its out-parameters
// after bufferization); private functions and declarations are left alone.
// RUN: mlcir-opt %s --mlcir-gpu-mark-outputs | FileCheck %s

// CHECK-LABEL: func.func @two
// CHECK-SAME: attributes {mlcir.gpu.outputs = 2 : i64}
// CHECK-LABEL: func.func @none
// CHECK-SAME: attributes {mlcir.gpu.outputs = 0 : i64}
// CHECK-LABEL: func.func private @helper
// CHECK-NOT: mlcir.gpu.outputs
func.func @two(%a: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  return %a, %a : tensor<4xf32>, tensor<4xf32>
}
func.func @none(%a: memref<4xf32>) {
  return
}
func.func private @helper(%a: tensor<4xf32>) -> tensor<4xf32> {
  return %a : tensor<4xf32>
}
