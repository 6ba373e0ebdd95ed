// graph-fuse-ewise-fma (the pattern API's example): add(multiply(a, b), c) of same-shaped
// tensors becomes ewise_fma(a, b, c), in either operand order of the add; a broadcasting
// multiply-add and a product used elsewhere too are left alone.
// RUN: mlcir-opt %s --graph-fuse-ewise-fma | FileCheck %s

// CHECK-LABEL: func.func @main
// CHECK-SAME: (%[[A:.*]]: tensor<4xf32>, %[[B:.*]]: tensor<4xf32>, %[[C:.*]]: tensor<4xf32>, %[[S:.*]]: tensor<f32>)
func.func @main(%a: tensor<4xf32>, %b: tensor<4xf32>, %c: tensor<4xf32>, %s: tensor<f32>)
    -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
  // CHECK-NEXT: %[[F0:.*]] = "graph.ewise_fma"(%[[A]], %[[B]], %[[C]])
  %0 = "graph.multiply"(%a, %b) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %1 = "graph.add"(%c, %0) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  // CHECK-NEXT: %[[F1:.*]] = "graph.ewise_fma"(%[[F0]], %[[F0]], %[[C]])
  %2 = "graph.multiply"(%1, %1) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %3 = "graph.add"(%2, %c) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  // CHECK-NEXT: %[[M:.*]] = "graph.multiply"(%[[A]], %[[S]])
  // CHECK-NEXT: "graph.add"(%[[M]], %[[C]])
  %4 = "graph.multiply"(%a, %s) : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  %5 = "graph.add"(%4, %c) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  // CHECK-NEXT: %[[P:.*]] = "graph.multiply"(%[[A]], %[[C]])
  // CHECK-NEXT: %[[Q:.*]] = "graph.add"(%[[P]], %[[B]])
  // CHECK-NEXT: "graph.add"(%[[P]], %[[Q]])
  %6 = "graph.multiply"(%a, %c) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %7 = "graph.add"(%6, %b) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %8 = "graph.add"(%6, %7) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  // CHECK-NOT: graph.multiply
  return %3, %5, %8 : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}
