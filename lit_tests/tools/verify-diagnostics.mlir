// --verify-diagnostics fails on a missing or an unexpected diagnostic, and errors carry
// file:line:col of the op (line numbers count across --split-input-file chunks).
// RUN: not mlcir-opt %s --split-input-file --verify-diagnostics 2>&1 | FileCheck %s
// RUN: not mlcir-opt %s --split-input-file 2>&1 | FileCheck %s --check-prefix=PLAIN

// CHECK: verify-diagnostics.mlir:[[# @LINE + 3]]:1: error: expected error "this message is not produced" was not produced
func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = "graph.relu"(%a) : (tensor<4xf32>) -> tensor<4xf32>
  // expected-error @above {{this message is not produced}}
  return %0 : tensor<4xf32>
}

// -----

func.func @g(%a: tensor<4xf32>) -> tensor<5xf32> {
  // CHECK: verify-diagnostics.mlir:[[# @LINE + 2]]:8: error: unexpected error: 'graph.relu' op result #0
  // PLAIN: verify-diagnostics.mlir:[[# @LINE + 1]]:8: error: 'graph.relu' op result #0 has type 'tensor<5xf32>' but the operands give 'tensor<4xf32>'
  %0 = "graph.relu"(%a) : (tensor<4xf32>) -> tensor<5xf32>
  return %0 : tensor<5xf32>
}
