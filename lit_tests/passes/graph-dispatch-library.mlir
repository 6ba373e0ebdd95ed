// graph-dispatch-library: registered dispatch rules replace their patterns by calls of Python
// library functions (the course's MyModuleMixture): env.linear is x @ w.T + b written as
// add(matmul(x, permute_dims(w)), b), env.relu is relu. Rules are named in the option.
// RUN: mlcir-opt %s --graph-dispatch-library="rules=env.linear,env.relu" | FileCheck %s
// RUN: mlcir-opt %s --graph-dispatch-library="rules=env.relu" | FileCheck %s --check-prefix=RELU
// RUN: not mlcir-opt %s --graph-dispatch-library="rules=env.nope" 2>&1 | FileCheck %s --check-prefix=ERR

// CHECK-DAG: func.func private @env.linear(tensor<1x784xf32>, tensor<128x784xf32>, tensor<128xf32>, tensor<1x128xf32>) -> tensor<1x128xf32> attributes {graph.library = "env.linear"}
// CHECK-DAG: func.func private @env.linear_1(tensor<1x128xf32>, tensor<10x128xf32>, tensor<10xf32>, tensor<1x10xf32>) -> tensor<1x10xf32> attributes {graph.library = "env.linear"}
// CHECK-DAG: func.func private @env.relu(tensor<1x128xf32>, tensor<1x128xf32>) -> tensor<1x128xf32> attributes {graph.library = "env.relu"}
// CHECK-LABEL: func.func @main
// CHECK-SAME: (%[[X:.*]]: tensor<1x784xf32>, %[[W0:.*]]: tensor<128x784xf32>, %[[B0:.*]]: tensor<128xf32>, %[[W1:.*]]: tensor<10x128xf32>, %[[B1:.*]]: tensor<10xf32>)
// CHECK-NEXT: %[[E0:.*]] = tensor.empty() : tensor<1x128xf32>
// CHECK-NEXT: %[[H:.*]] = call @env.linear(%[[X]], %[[W0]], %[[B0]], %[[E0]])
// CHECK-NEXT: %[[E1:.*]] = tensor.empty() : tensor<1x128xf32>
// CHECK-NEXT: %[[R:.*]] = call @env.relu(%[[H]], %[[E1]])
// CHECK-NEXT: %[[E2:.*]] = tensor.empty() : tensor<1x10xf32>
// CHECK-NEXT: %[[Y:.*]] = call @env.linear_1(%[[R]], %[[W1]], %[[B1]], %[[E2]])
// CHECK-NEXT: return %[[Y]]

// RELU-LABEL: func.func @main
// RELU: "graph.matmul"
// RELU: call @env.relu(
// RELU: "graph.matmul"
// RELU-NOT: call

// ERR: error: graph-dispatch-library: no dispatch rule named 'env.nope' (registered: env.linear, env.relu)
func.func @main(%x: tensor<1x784xf32>, %w0: tensor<128x784xf32>, %b0: tensor<128xf32>,
                %w1: tensor<10x128xf32>, %b1: tensor<10xf32>) -> tensor<1x10xf32> {
  %t0 = "graph.permute_dims"(%w0) {axes = array<i64: 1, 0>} : (tensor<128x784xf32>) -> tensor<784x128xf32>
  %m0 = "graph.matmul"(%x, %t0) : (tensor<1x784xf32>, tensor<784x128xf32>) -> tensor<1x128xf32>
  %a0 = "graph.add"(%m0, %b0) : (tensor<1x128xf32>, tensor<128xf32>) -> tensor<1x128xf32>
  %h = "graph.relu"(%a0) : (tensor<1x128xf32>) -> tensor<1x128xf32>
  %t1 = "graph.permute_dims"(%w1) {axes = array<i64: 1, 0>} : (tensor<10x128xf32>) -> tensor<128x10xf32>
  %m1 = "graph.matmul"(%h, %t1) : (tensor<1x128xf32>, tensor<128x10xf32>) -> tensor<1x10xf32>
  %a1 = "graph.add"(%m1, %b1) : (tensor<1x10xf32>, tensor<10xf32>) -> tensor<1x10xf32>
  return %a1 : tensor<1x10xf32>
}
