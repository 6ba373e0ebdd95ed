// mlcir-bool-storage: boolean (i1) tensors become byte (i8) tensors everywhere (signatures,
// calls, views, constants, empty tensors); a linalg payload reads a stored byte through
// arith.trunci and writes an i1 through arith.extui, and likewise tensor.extract/insert.
// RUN: mlcir-opt %s --mlcir-bool-storage --split-input-file | FileCheck %s

// CHECK-LABEL: func.func private @less(
// CHECK-SAME: %{{.*}}: tensor<4xf32>, %{{.*}}: tensor<4xf32>, %{{.*}}: tensor<4xi8>) -> tensor<4xi8>
// CHECK: linalg.generic
// CHECK: ^bb0(%[[A:.*]]: f32, %[[B:.*]]: f32, %[[O:.*]]: i8):
// CHECK: %[[C:.*]] = arith.cmpf olt, %[[A]], %[[B]] : f32
// CHECK: %[[E:.*]] = arith.extui %[[C]] : i1 to i8
// CHECK: linalg.yield %[[E]] : i8
// CHECK-LABEL: func.func @main(
// CHECK-SAME: -> (tensor<4xi8>, tensor<4xf32>)
// CHECK: arith.constant dense<[1, 0, 1, 1]> : tensor<4xi8>
// CHECK: tensor.empty() : tensor<4xi8>
// CHECK: call @less({{.*}}) : (tensor<4xf32>, tensor<4xf32>, tensor<4xi8>) -> tensor<4xi8>
// CHECK: linalg.generic
// CHECK: ^bb0(%[[M:.*]]: i8, %[[K:.*]]: i8, %[[X:.*]]: f32, %{{.*}}: f32):
// CHECK-DAG: %[[MB:.*]] = arith.trunci %[[M]] : i8 to i1
// CHECK-DAG: %[[KB:.*]] = arith.trunci %[[K]] : i8 to i1
// CHECK: %[[BOTH:.*]] = arith.andi %[[MB]], %[[KB]] : i1
// CHECK: arith.select %[[BOTH]], %[[X]]
// CHECK-NOT: i1>
func.func private @less(%a: tensor<4xf32>, %b: tensor<4xf32>, %o: tensor<4xi1>) -> tensor<4xi1> {
  %r = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>,
                                        affine_map<(i) -> (i)>], iterator_types = ["parallel"]}
      ins(%a, %b : tensor<4xf32>, tensor<4xf32>) outs(%o : tensor<4xi1>) {
  ^bb0(%x: f32, %y: f32, %out: i1):
    %c = arith.cmpf olt, %x, %y : f32
    linalg.yield %c : i1
  } -> tensor<4xi1>
  return %r : tensor<4xi1>
}
func.func @main(%a: tensor<4xf32>, %b: tensor<4xf32>) -> (tensor<4xi1>, tensor<4xf32>) {
  %keep = arith.constant dense<[true, false, true, true]> : tensor<4xi1>
  %e = tensor.empty() : tensor<4xi1>
  %m = func.call @less(%a, %b, %e) : (tensor<4xf32>, tensor<4xf32>, tensor<4xi1>) -> tensor<4xi1>
  %f = tensor.empty() : tensor<4xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>,
                                        affine_map<(i) -> (i)>, affine_map<(i) -> (i)>],
                       iterator_types = ["parallel"]}
      ins(%m, %keep, %a : tensor<4xi1>, tensor<4xi1>, tensor<4xf32>) outs(%f : tensor<4xf32>) {
  ^bb0(%x: i1, %k: i1, %v: f32, %out: f32):
    %both = arith.andi %x, %k : i1
    %z = arith.constant 0.0 : f32
    %s = arith.select %both, %v, %z : f32
    linalg.yield %s : f32
  } -> tensor<4xf32>
  return %m, %r : tensor<4xi1>, tensor<4xf32>
}

// -----

// A gather reads an element with tensor.extract: the byte read is truncated to i1.
// CHECK-LABEL: func.func @extract(
// CHECK-SAME: %[[T:.*]]: tensor<4xi8>, %{{.*}}: index) -> i1
// CHECK: %[[V:.*]] = tensor.extract %[[T]]
// CHECK-SAME: tensor<4xi8>
// CHECK: %[[B:.*]] = arith.trunci %[[V]] : i8 to i1
// CHECK: return %[[B]] : i1
func.func @extract(%t: tensor<4xi1>, %i: index) -> i1 {
  %v = tensor.extract %t[%i] : tensor<4xi1>
  return %v : i1
}

// -----

// Modules without boolean tensors are unchanged.
// CHECK-LABEL: func.func @floats(
// CHECK-NEXT: return %{{.*}} : tensor<4xf32>
func.func @floats(%a: tensor<4xf32>) -> tensor<4xf32> {
  return %a : tensor<4xf32>
}
