// mlcir-gpu-lower-vectors lowers the n-D vector ops convert-gpu-to-nvvm does not take (a
// broadcast adding a unit dim, a shape cast, a 2-D contraction) inside gpu.func kernels; code
// outside kernels is left alone.
// RUN: mlcir-opt %s --mlcir-gpu-lower-vectors | FileCheck %s
// RUN: mlcir-opt %s --mlcir-gpu-lower-vectors | mlcir-opt --pass-pipeline="builtin.module(gpu.module(convert-gpu-to-nvvm, reconcile-unrealized-casts))" | FileCheck %s --check-prefix=NVVM

// CHECK-LABEL: gpu.func @kernel
// CHECK-NOT: vector.broadcast {{.*}} to vector<1x4xf32>
// CHECK-NOT: vector.shape_cast
// CHECK-NOT: vector.contract
// CHECK-NOT: vector.transfer_read {{.*}} vector<4x4xf32>
// CHECK: vector.fma
// CHECK-LABEL: func.func @host
// CHECK: vector.broadcast {{.*}} : vector<4xf32> to vector<1x4xf32>

// NVVM: llvm.func @kernel
// NVVM-NOT: vector.
// NVVM: llvm.intr.fmuladd({{.*}}) : (vector<4xf32>, vector<4xf32>, vector<4xf32>) -> vector<4xf32>
module attributes {gpu.container_module} {
  gpu.module @k {
    gpu.func @kernel(%a: memref<4xf32>, %b: memref<4x4xf32>, %c: memref<4xf32>) kernel {
      %c0 = arith.constant 0 : index
      %p = ub.poison : f32
      %va = vector.transfer_read %a[%c0], %p {in_bounds = [true]} : memref<4xf32>, vector<4xf32>
      %vb = vector.transfer_read %b[%c0, %c0], %p {in_bounds = [true, true]} : memref<4x4xf32>, vector<4x4xf32>
      %vc = vector.transfer_read %c[%c0], %p {in_bounds = [true]} : memref<4xf32>, vector<4xf32>
      %row = vector.broadcast %va : vector<4xf32> to vector<1x4xf32>
      %acc = vector.broadcast %vc : vector<4xf32> to vector<1x4xf32>
      %r = vector.contract {indexing_maps = [affine_map<(i, j, k) -> (i, k)>, affine_map<(i, j, k) -> (k, j)>, affine_map<(i, j, k) -> (i, j)>],
                            iterator_types = ["parallel", "parallel", "reduction"], kind = #vector.kind<add>}
           %row, %vb, %acc : vector<1x4xf32>, vector<4x4xf32> into vector<1x4xf32>
      %flat = vector.shape_cast %r : vector<1x4xf32> to vector<4xf32>
      vector.transfer_write %flat, %c[%c0] {in_bounds = [true]} : vector<4xf32>, memref<4xf32>
      gpu.return
    }
  }
  func.func @host(%v: vector<4xf32>) -> vector<1x4xf32> {
    %r = vector.broadcast %v : vector<4xf32> to vector<1x4xf32>
    return %r : vector<1x4xf32>
  }
}
