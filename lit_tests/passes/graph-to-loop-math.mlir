// graph-to-loop of the ONNX elementwise math family: round is math.roundeven (halves to even),
// mod is the C remainder corrected to the divisor's sign, sign keeps a NaN.
// RUN: mlcir-opt %s --graph-to-loop | FileCheck %s

func.func @main(%x: tensor<8xf64>, %y: tensor<8xf64>, %i: tensor<8xi32>, %j: tensor<8xi32>)
    -> (tensor<8xf64>, tensor<8xi32>, tensor<8xf64>, tensor<8xi32>) {
  %r = "graph.round"(%x) : (tensor<8xf64>) -> tensor<8xf64>
  %m = "graph.mod"(%i, %j) : (tensor<8xi32>, tensor<8xi32>) -> tensor<8xi32>
  %s = "graph.sign"(%y) : (tensor<8xf64>) -> tensor<8xf64>
  %f = "graph.fmod"(%i, %j) : (tensor<8xi32>, tensor<8xi32>) -> tensor<8xi32>
  return %r, %m, %s, %f : tensor<8xf64>, tensor<8xi32>, tensor<8xf64>, tensor<8xi32>
}

// CHECK-LABEL: func.func private @round
// CHECK: math.roundeven %{{.*}} : f64

// CHECK-LABEL: func.func private @mod
// CHECK: %[[R:.*]] = arith.remsi %[[A:.*]], %[[B:.*]] : i32
// CHECK: arith.cmpi ne, %[[R]]
// CHECK: arith.xori
// CHECK: %[[SUM:.*]] = arith.addi %[[R]], %[[B]] : i32
// CHECK: arith.select %{{.*}}, %[[SUM]], %[[R]] : i32

// CHECK-LABEL: func.func private @sign
// CHECK: arith.cmpf olt
// CHECK: arith.select
// CHECK: arith.cmpf olt
// CHECK: arith.select

// CHECK-LABEL: func.func private @fmod
// CHECK: arith.remsi
// CHECK-NOT: arith.select
// CHECK: linalg.yield
