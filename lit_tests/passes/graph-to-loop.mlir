// graph-to-loop: each graph op becomes a destination-passing call of a loop.kernel function
// whose body is named linalg blocks; identical ops share one kernel.
// RUN: mlcir-opt %s --graph-to-loop | FileCheck %s

// CHECK-LABEL: func.func @main
// CHECK-SAME: (%[[X:.*]]: tensor<1x784xf32>, %[[W:.*]]: tensor<784x128xf32>, %[[B:.*]]: tensor<128xf32>)
func.func @main(%x: tensor<1x784xf32>, %w: tensor<784x128xf32>, %b: tensor<128xf32>) -> tensor<1x128xf32> {
  // CHECK: %[[E0:.*]] = tensor.empty() : tensor<1x128xf32>
  // CHECK: %[[MM:.*]] = call @matmul(%[[X]], %[[W]], %[[E0]])
  %0 = "graph.matmul"(%x, %w) : (tensor<1x784xf32>, tensor<784x128xf32>) -> tensor<1x128xf32>
  // CHECK: %[[E1:.*]] = tensor.empty() : tensor<1x128xf32>
  // CHECK: %[[ADD:.*]] = call @add(%[[MM]], %[[B]], %[[E1]])
  %1 = "graph.add"(%0, %b) : (tensor<1x128xf32>, tensor<128xf32>) -> tensor<1x128xf32>
  // CHECK: call @relu(
  %2 = "graph.relu"(%1) : (tensor<1x128xf32>) -> tensor<1x128xf32>
  // The same op on the same types reuses the kernel.
  // CHECK: call @relu(
  %3 = "graph.relu"(%2) : (tensor<1x128xf32>) -> tensor<1x128xf32>
  // CHECK-NOT: graph.
  return %3 : tensor<1x128xf32>
}

// CHECK-LABEL: func.func private @matmul
// CHECK-SAME: (%{{.*}}: tensor<1x784xf32>, %{{.*}}: tensor<784x128xf32>, %[[OUT:.*]]: tensor<1x128xf32>) -> tensor<1x128xf32> attributes {loop.kernel}
// CHECK: %[[INIT:.*]] = linalg.fill {loop.block = "matmul_init", loop.iterators = [#loop.iterator<"spatial">, #loop.iterator<"spatial">]} ins(%{{.*}} : f32) outs(%[[OUT]] : tensor<1x128xf32>)
// CHECK: linalg.matmul {loop.block = "matmul", loop.iterators = [#loop.iterator<"spatial">, #loop.iterator<"spatial">, #loop.iterator<"reduction">]} ins({{.*}}) outs(%[[INIT]] : tensor<1x128xf32>)

// CHECK-LABEL: func.func private @add
// CHECK: linalg.generic {indexing_maps = [#{{.*}}, #[[BCAST:.*]], #{{.*}}], iterator_types = ["parallel", "parallel"]}
// CHECK-SAME: loop.block = "add"
// CHECK: arith.addf

// CHECK-LABEL: func.func private @relu
// CHECK: arith.maximumf
// CHECK-NOT: func.func private @relu_1
