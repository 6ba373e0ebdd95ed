// mlcir-approximate-math: an f32 math.exp or math.erf, scalar or vector, becomes inline
// arithmetic, so it vectorizes instead of calling libm per element. exp: clamp,
// n = floor(x log2e + 1/2), r = x - n ln2 in two FMAs, a polynomial in FMAs, 2^n built in the
// exponent bits. erf: x * N(x^2) / D(x^2) on x clamped to [-4, 4]. f64 is left alone.
// RUN: mlcir-opt %s --mlcir-approximate-math | FileCheck %s

// CHECK-LABEL: func.func @exp_vector
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
func.func @exp_vector(%x: vector<16xf32>) -> vector<16xf32> {
  %0 = math.exp %x : vector<16xf32>
  return %0 : vector<16xf32>
}

// CHECK-LABEL: func.func @erf_vector
// CHECK-NOT: math.erf
// CHECK: arith.maximumf %{{.*}} : vector<8xf32>
// CHECK: arith.minimumf %{{.*}} : vector<8xf32>
// CHECK-COUNT-10: math.fma %{{.*}} : vector<8xf32>
// CHECK: %[[R:.*]] = arith.divf %{{.*}} : vector<8xf32>
// CHECK: return %[[R]]
func.func @erf_vector(%x: vector<8xf32>) -> vector<8xf32> {
  %0 = math.erf %x : vector<8xf32>
  return %0 : vector<8xf32>
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
