// graph-to-loop of scatter_rows: the data copied into the destination (a named block), then
// a loop over the updates in order and one over each row's elements; the row number is
// clamped into the data, the reduction combines the old element with the update.
// RUN: mlcir-opt %s --graph-to-loop | FileCheck %s

func.func @main(%data: tensor<6x4xf32>, %rows: tensor<?xi64>, %updates: tensor<?x4xf32>)
    -> (tensor<6x4xf32>, tensor<6x4xf32>) {
  %0 = "graph.scatter_rows"(%data, %rows, %updates) {reduction = "add"} : (tensor<6x4xf32>, tensor<?xi64>, tensor<?x4xf32>) -> tensor<6x4xf32>
  %1 = "graph.scatter_rows"(%data, %rows, %updates) {reduction = "none"} : (tensor<6x4xf32>, tensor<?xi64>, tensor<?x4xf32>) -> tensor<6x4xf32>
  return %0, %1 : tensor<6x4xf32>, tensor<6x4xf32>
}

// CHECK-LABEL: func.func @main(
// CHECK: call @scatter_rows(
// CHECK: call @scatter_rows_1(

// CHECK-LABEL: func.func private @scatter_rows(
// CHECK-SAME: %[[DATA:[^:]+]]: tensor<6x4xf32>, %[[ROWS:[^:]+]]: tensor<?xi64>, %[[UPD:[^:]+]]: tensor<?x4xf32>, %[[DEST:[^:]+]]: tensor<6x4xf32>
// CHECK: %[[INIT:.+]] = linalg.copy {{.*}}loop.block = "scatter_init"{{.*}} ins(%[[DATA]] : tensor<6x4xf32>) outs(%[[DEST]] : tensor<6x4xf32>)
// CHECK: %[[M:.+]] = tensor.dim %[[UPD]]
// CHECK: scf.for %[[I:.+]] = %{{.+}} to %[[M]] step %{{.+}} iter_args(%[[ACC:.+]] = %[[INIT]])
// CHECK: %[[RAW:.+]] = tensor.extract %[[ROWS]][%[[I]]]
// CHECK: %[[ROW:.+]] = arith.index_cast %[[RAW]]
// CHECK: %[[LOW:.+]] = arith.maxsi %[[ROW]]
// CHECK: %[[R:.+]] = arith.minsi %[[LOW]]
// CHECK: scf.for %[[K:.+]] = {{.*}} iter_args(%[[T:.+]] = %[[ACC]])
// CHECK: %[[U:.+]] = tensor.extract %[[UPD]][%[[I]], %[[K]]]
// CHECK: %[[OLD:.+]] = tensor.extract %[[T]][%[[R]], %[[K]]]
// CHECK: %[[NEW:.+]] = arith.addf %[[OLD]], %[[U]] : f32
// CHECK: tensor.insert %[[NEW]] into %[[T]][%[[R]], %[[K]]]

// CHECK-LABEL: func.func private @scatter_rows_1(
// CHECK: scf.for
// CHECK: scf.for
// CHECK: %[[U1:.+]] = tensor.extract
// CHECK-NOT: arith.addf
// CHECK: tensor.insert %[[U1]]
