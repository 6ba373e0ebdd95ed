// An elementwise block on CUDA: one thread per element, the row on threadIdx.x (coalesced),
// the rows on blockIdx.y; math.exp becomes libdevice's __nv_expf, linked into the PTX (no
// unresolved call is left for the driver).
// RUN: mlcir-opt %s --mlcir-cuda-mapped | FileCheck %s --check-prefix=MAP
// RUN: mlcir-opt %s --mlcir-cuda-mapped | mlcir-opt --pass-pipeline="builtin.module(gpu-kernel-outlining, nvvm-attach-target{chip=sm_90}, gpu.module(convert-gpu-to-nvvm))" | FileCheck %s --check-prefix=NVVM
// RUN: %PYTHON -m mlcir.targets.cuda %s | FileCheck %s --check-prefix=PTX

// MAP-LABEL: func.func @main__device(
// MAP: gpu.launch blocks({{.*}}) in ({{.*}} = %c1{{.*}}, {{.*}} = %c64{{.*}}, {{.*}} = %c1{{.*}}) threads({{.*}}) in ({{.*}} = %c256{{.*}}, {{.*}} = %c1{{.*}}, {{.*}} = %c1{{.*}}) module(@main_Z) function(@main_Z)
// MAP: math.exp

// NVVM: gpu.module @main_Z
// NVVM: llvm.func @__nv_expf(f32) -> f32
// NVVM: llvm.call @__nv_expf

// PTX-LABEL: // gpu.binary @main_Z
// PTX: .target sm_90
// PTX: .visible .entry main_Z(
// PTX: .maxntid 256, 1, 1
// PTX-DAG: mov.u32 {{.*}}, %ctaid.y;
// PTX-DAG: mov.u32 {{.*}}, %tid.x;
// PTX: ld.global
// PTX: ex2.approx
// PTX: st.global
// PTX-NOT: __nv_expf
func.func @main(%X: tensor<64x256xf32>, %Y: tensor<64x256xf32>) -> tensor<64x256xf32> {
  %e = tensor.empty() : tensor<64x256xf32>
  %z = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>],
                       iterator_types = ["parallel", "parallel"], loop.block = "Z"}
       ins(%X, %Y : tensor<64x256xf32>, tensor<64x256xf32>) outs(%e : tensor<64x256xf32>) {
    ^bb0(%a: f32, %b: f32, %o: f32):
      %x = math.exp %a : f32
      %r = arith.mulf %x, %b : f32
      linalg.yield %r : f32
  } -> tensor<64x256xf32>
  return %z : tensor<64x256xf32>
}
