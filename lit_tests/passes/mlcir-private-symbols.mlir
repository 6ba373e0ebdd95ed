// mlcir-private-symbols: defined private functions (kernels, fused groups, helpers) become
// mlcir.<name> with every use; public functions and bodiless declarations keep their names.
// RUN: mlcir-opt %s --mlcir-private-symbols | FileCheck %s

// CHECK-LABEL: func.func private @mlcir.exp(
// CHECK-LABEL: func.func private @env.lib(
// CHECK-LABEL: func.func @main(
// CHECK: call @mlcir.exp(
// CHECK: call @env.lib(
func.func private @exp(%x: tensor<4xf64>, %out: tensor<4xf64>) -> tensor<4xf64> {
  return %x : tensor<4xf64>
}
func.func private @env.lib(tensor<4xf64>, tensor<4xf64>) -> tensor<4xf64>
func.func @main(%x: tensor<4xf64>) -> tensor<4xf64> {
  %e = tensor.empty() : tensor<4xf64>
  %y = func.call @exp(%x, %e) : (tensor<4xf64>, tensor<4xf64>) -> tensor<4xf64>
  %z = func.call @env.lib(%y, %e) : (tensor<4xf64>, tensor<4xf64>) -> tensor<4xf64>
  return %z : tensor<4xf64>
}
