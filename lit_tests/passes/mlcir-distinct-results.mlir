// mlcir-distinct-results: a computed tensor or buffer returned more than once is copied for every
// repeat; arguments and constants returned twice are left to bufferization.
// RUN: mlcir-opt %s --split-input-file --mlcir-distinct-results | FileCheck %s

// CHECK-LABEL: func.func @main
// CHECK: %[[Y:.*]] = "graph.relu"
// CHECK: %[[C:.*]] = bufferization.alloc_tensor() copy(%[[Y]]) : tensor<4xf32>
// CHECK: return %[[Y]], %arg0, %[[C]], %arg0, %[[K:.*]], %[[K]] :
func.func @main(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
  %y = "graph.relu"(%x) : (tensor<4xf32>) -> tensor<4xf32>
  %k = arith.constant dense<1.0> : tensor<4xf32>
  return %y, %x, %y, %x, %k, %k : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}

// -----
// On memrefs (after bufferization found a kernel whose result is its input): a new buffer
// and a copy, dynamic sizes read from the source.
// CHECK-LABEL: func.func @buffers
// CHECK: %[[D:.*]] = memref.dim %[[B:.*]], %{{.*}} : memref<?x4xf32>
// CHECK: %[[N:.*]] = memref.alloc(%[[D]]) : memref<?x4xf32>
// CHECK: memref.copy %[[B]], %[[N]]
// CHECK: return %[[B]], %[[N]], %arg0, %arg0 :
func.func @buffers(%a: memref<?x4xf32>, %n: index) -> (memref<?x4xf32>, memref<?x4xf32>, memref<?x4xf32>, memref<?x4xf32>) {
  %b = memref.alloc(%n) : memref<?x4xf32>
  return %b, %b, %a, %a : memref<?x4xf32>, memref<?x4xf32>, memref<?x4xf32>, memref<?x4xf32>
}
