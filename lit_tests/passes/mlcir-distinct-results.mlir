// mlcir-distinct-results: a computed tensor returned more than once is copied for every
// repeat; arguments and constants returned twice are left to bufferization.
// RUN: mlcir-opt %s --mlcir-distinct-results | FileCheck %s

// CHECK-LABEL: func.func @main
// CHECK: %[[Y:.*]] = "graph.relu"
// CHECK: %[[C:.*]] = bufferization.alloc_tensor() copy(%[[Y]]) : tensor<4xf32>
// CHECK: return %[[Y]], %arg0, %[[C]], %arg0, %[[K:.*]], %[[K]] :
func.func @main(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
  %y = "graph.relu"(%x) : (tensor<4xf32>) -> tensor<4xf32>
  %k = arith.constant dense<1.0> : tensor<4xf32>
  return %y, %x, %y, %x, %k, %k : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}
