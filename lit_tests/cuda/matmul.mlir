// The CUDA pipeline on an unscheduled matmul: the default mapping (one output element per
// thread, 64 x 4 threads per block, the innermost dim on x), device buffers and copies, NVVM
// kernels, the host code calling the MLIR CUDA runtime, PTX for sm_90 and sm_80.
// RUN: mlcir-opt %s --mlcir-cuda-mapped | FileCheck %s --check-prefix=MAP
// RUN: mlcir-opt %s --mlcir-cuda-mapped | mlcir-opt --pass-pipeline="builtin.module(gpu-kernel-outlining, nvvm-attach-target{chip=sm_90}, gpu.module(convert-gpu-to-nvvm))" | FileCheck %s --check-prefix=NVVM
// RUN: mlcir-opt %s --pass-pipeline="builtin.module(mlcir-cuda{chip=sm_80})" | FileCheck %s --check-prefix=HOST
// RUN: %PYTHON -m mlcir.targets.cuda %s | FileCheck %s --check-prefix=PTX
// RUN: %PYTHON -m mlcir.targets.cuda %s --arch sm_80 | FileCheck %s --check-prefix=SM80

// MAP-LABEL: func.func @main(
// MAP-SAME: %[[A:.*]]: memref<64x32xf32>, %[[B:.*]]: memref<32x64xf32>, %[[C:.*]]: memref<64x64xf32>)
// MAP-SAME: llvm.emit_c_interface
// MAP: %[[DA:.*]] = gpu.alloc () : memref<64x32xf32>
// MAP: gpu.memcpy %[[DA]], %[[A]]
// MAP: %[[DB:.*]] = gpu.alloc () : memref<32x64xf32>
// MAP: gpu.memcpy %[[DB]], %[[B]]
// MAP: %[[DC:.*]] = gpu.alloc () : memref<64x64xf32>
// MAP-NOT: gpu.memcpy %[[DC]]
// MAP: call @main__device(%[[DA]], %[[DB]], %[[DC]])
// MAP: gpu.memcpy %[[C]], %[[DC]]
// MAP-LABEL: func.func @main__device(
// MAP: gpu.launch blocks({{.*}}) in ({{.*}} = %c1{{.*}}, {{.*}} = %c16{{.*}}, {{.*}} = %c1{{.*}}) threads({{.*}}) in ({{.*}} = %c64{{.*}}, {{.*}} = %c4{{.*}}, {{.*}} = %c1{{.*}}) module(@main_C_init) function(@main_C_init)
// MAP: gpu.thread_id x
// MAP: memref.store
// MAP: gpu.launch {{.*}} module(@main_C) function(@main_C)
// MAP: gpu.block_id x
// MAP: gpu.block_id y
// MAP: gpu.thread_id x
// MAP: gpu.thread_id y
// MAP: scf.for
// MAP: arith.mulf
// MAP-NOT: linalg.

// NVVM: gpu.launch_func @main_C_init::@main_C_init
// NVVM: gpu.launch_func @main_C::@main_C
// NVVM: gpu.module @main_C_init [#nvvm.target<chip = "sm_90">]
// NVVM: gpu.module @main_C [#nvvm.target<chip = "sm_90">]
// NVVM: llvm.func @main_C({{.*}}) attributes {gpu.kernel, gpu.known_block_size = array<i32: 64, 4, 1>, gpu.known_grid_size = array<i32: 1, 16, 1>, nvvm.kernel, nvvm.maxntid = array<i32: 64, 4, 1>}
// NVVM-DAG: nvvm.read.ptx.sreg.ctaid.y
// NVVM-DAG: nvvm.read.ptx.sreg.tid.x
// NVVM-DAG: nvvm.read.ptx.sreg.tid.y
// NVVM: llvm.fmul

// HOST-LABEL: llvm.func @main(
// HOST: llvm.call @mgpuMemAlloc
// HOST: llvm.call @mgpuMemcpy
// HOST: llvm.call @main__device(
// HOST-LABEL: llvm.func @_mlir_ciface_main(
// HOST-LABEL: llvm.func @main__device(
// HOST: gpu.launch_func <%{{.*}} : !llvm.ptr> @main_C_init::@main_C_init
// HOST: gpu.launch_func <%{{.*}} : !llvm.ptr> @main_C::@main_C
// HOST: llvm.call @mgpuStreamSynchronize
// HOST-LABEL: llvm.func @_mlir_ciface_main__device(
// HOST: gpu.binary @main_C_init [#gpu.object<#nvvm.target<O = 3, chip = "sm_80">, {{.*}}assembly = "{{.*}}.target sm_80
// HOST: gpu.binary @main_C [#gpu.object<#nvvm.target<O = 3, chip = "sm_80">
// HOST-NOT: memref<

// PTX-LABEL: // gpu.binary @main_C_init
// PTX: .target sm_90
// PTX: .visible .entry main_C_init(
// PTX: .maxntid 64, 4, 1
// PTX-LABEL: // gpu.binary @main_C
// PTX: .target sm_90
// PTX: .visible .entry main_C(
// PTX-DAG: mov.u32 {{.*}}, %ctaid.y;
// PTX-DAG: mov.u32 {{.*}}, %tid.x;
// PTX-DAG: mov.u32 {{.*}}, %tid.y;
// PTX: ld.global
// PTX: st.global

// SM80: .target sm_80
// SM80: .visible .entry main_C_init(
// SM80: .target sm_80
// SM80: .visible .entry main_C(
func.func @main(%A: tensor<64x32xf32>, %B: tensor<32x64xf32>) -> tensor<64x64xf32> {
  %e = tensor.empty() : tensor<64x64xf32>
  %z = arith.constant 0.0 : f32
  %f = linalg.fill {loop.block = "C_init"} ins(%z : f32) outs(%e : tensor<64x64xf32>) -> tensor<64x64xf32>
  %r = linalg.matmul {loop.block = "C"} ins(%A, %B : tensor<64x32xf32>, tensor<32x64xf32>) outs(%f : tensor<64x64xf32>) -> tensor<64x64xf32>
  return %r : tensor<64x64xf32>
}
