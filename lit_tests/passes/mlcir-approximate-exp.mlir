// mlcir-approximate-exp: an f32 math.exp, scalar or vector, becomes inline arithmetic (clamp,
// n = floor(x log2e + 1/2), r = x - n ln2 in two FMAs, a polynomial in FMAs, 2^n built in the
// exponent bits), so it vectorizes instead of calling libm's expf per element. f64 is left.
// RUN: mlcir-opt %s --mlcir-approximate-exp | FileCheck %s

// CHECK-LABEL: func.func @vector
// CHECK-NOT: math.exp
// CHECK: arith.maximumf %{{.*}} : vector<16xf32>
// CHECK: arith.minimumf %{{.*}} : vector<16xf32>
// CHECK: math.floor %{{.*}} : vector<16xf32>
// CHECK-COUNT-7: math.fma %{{.*}} : vector<16xf32>
// CHECK: arith.fptosi %{{.*}} : vector<16xf32> to vector<16xi32>
// CHECK: arith.shli %{{.*}} : vector<16xi32>
// CHECK: arith.bitcast %{{.*}} : vector<16xi32> to vector<16xf32>
// CHECK: %[[R:.*]] = arith.mulf %{{.*}} : vector<16xf32>
// CHECK: return %[[R]]
func.func @vector(%x: vector<16xf32>) -> vector<16xf32> {
  %0 = math.exp %x : vector<16xf32>
  return %0 : vector<16xf32>
}

// CHECK-LABEL: func.func @scalar_and_f64
// CHECK-NOT: math.exp %{{.*}} : f32
// CHECK: math.floor %{{.*}} : f32
// CHECK: math.exp %{{.*}} : f64
func.func @scalar_and_f64(%x: f32, %y: f64) -> (f32, f64) {
  %0 = math.exp %x : f32
  %1 = math.exp %y : f64
  return %0, %1 : f32, f64
}
