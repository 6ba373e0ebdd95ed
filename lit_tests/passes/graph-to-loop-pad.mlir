// graph-to-loop of pad (pads known only at run time): the destination is sized from the pads'
// values where the op is called; the kernel is one gather block whose body maps each result
// coordinate into the kept (cropped) part of x and picks the value outside it (constant).
// RUN: mlcir-opt %s --graph-to-loop | FileCheck %s

func.func @main(%x: tensor<3x5xf32>, %pads: tensor<4xi64>, %v: tensor<f32>) -> tensor<?x?xf32> {
  %0 = "graph.pad"(%x, %pads, %v) {mode = "constant"} : (tensor<3x5xf32>, tensor<4xi64>, tensor<f32>) -> tensor<?x?xf32>
  return %0 : tensor<?x?xf32>
}

// CHECK-LABEL: func.func @main(
// CHECK-SAME: %[[X:[^:]+]]: tensor<3x5xf32>, %[[PADS:[^:]+]]: tensor<4xi64>, %[[V:[^:]+]]: tensor<f32>
// CHECK: %[[B0:.+]] = tensor.extract %[[PADS]][%{{.+}}] : tensor<4xi64>
// CHECK: tensor.extract %[[PADS]]
// CHECK: %[[H:.+]] = arith.addi
// CHECK: tensor.extract %[[PADS]]
// CHECK: tensor.extract %[[PADS]]
// CHECK: %[[W:.+]] = arith.addi
// CHECK: %[[DEST:.+]] = tensor.empty(%[[H]], %[[W]]) : tensor<?x?xf32>
// CHECK: call @pad(%[[X]], %[[PADS]], %[[V]], %[[DEST]])

// CHECK-LABEL: func.func private @pad(
// CHECK: %[[FILL:.+]] = tensor.extract %{{.+}}[] : tensor<f32>
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "parallel"]{{.*}}loop.block = "pad"
// CHECK: linalg.index 0
// CHECK: %[[IN0:.+]] = arith.andi
// CHECK: linalg.index 1
// CHECK: %[[INSIDE:.+]] = arith.andi %[[IN0]], %{{.+}} : i1
// CHECK: %[[E:.+]] = tensor.extract %{{.+}}[%{{.+}}, %{{.+}}] : tensor<3x5xf32>
// CHECK: arith.select %[[INSIDE]], %[[E]], %[[FILL]] : f32
