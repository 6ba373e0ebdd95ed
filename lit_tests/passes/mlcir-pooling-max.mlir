// mlcir-pooling-max: the pooling max (arith.maxnumf, scalar or vector) gets fastmath<nnan>,
// keeping the flags it had; other max ops (maximumf: the max op, ReduceMax, ReLU) keep theirs.
// RUN: mlcir-opt %s --mlcir-pooling-max | FileCheck %s

// CHECK-LABEL: func.func @pool_max(
// CHECK: arith.maxnumf %{{.*}}, %{{.*}} fastmath<nnan> : f32
// CHECK: arith.maxnumf %{{.*}}, %{{.*}} fastmath<nnan> : vector<8xf32>
// CHECK: arith.maxnumf %{{.*}}, %{{.*}} fastmath<reassoc,nnan> : f32
// CHECK: arith.maximumf %{{.*}}, %{{.*}} : f32
// CHECK-NOT: nnan
func.func @pool_max(%a: f32, %b: f32, %v: vector<8xf32>, %w: vector<8xf32>) -> (f32, vector<8xf32>, f32, f32) {
  %0 = arith.maxnumf %a, %b : f32
  %1 = arith.maxnumf %v, %w : vector<8xf32>
  %2 = arith.maxnumf %a, %b fastmath<reassoc> : f32
  %3 = arith.maximumf %a, %b : f32
  return %0, %1, %2, %3 : f32, vector<8xf32>, f32, f32
}
