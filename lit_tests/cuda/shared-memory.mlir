// A recorded GPU schedule applied by mlcir-opt (no Python schedule code): the matmul's output
// tiles on blockIdx.y/x, one element per thread on threadIdx.y/x, and the A and B tiles of each
// k step staged in shared memory (cache_read(..., "shared")). The stage becomes workgroup
// attributions of the launch, then PTX .shared arrays, with barriers between the copies and
// the compute.
// RUN: mlcir-opt %S/Inputs/matmul128.mlir --transform-script=%S/Inputs/shared_matmul_schedule.mlir | FileCheck %s --check-prefix=SCHED
// RUN: mlcir-opt %S/Inputs/matmul128.mlir --transform-script=%S/Inputs/shared_matmul_schedule.mlir --mlcir-cuda-mapped | FileCheck %s --check-prefix=MAP
// RUN: mlcir-opt %S/Inputs/matmul128.mlir --transform-script=%S/Inputs/shared_matmul_schedule.mlir --mlcir-cuda-mapped | mlcir-opt --pass-pipeline="builtin.module(gpu-kernel-outlining, nvvm-attach-target{chip=sm_90}, gpu.module(convert-gpu-to-nvvm))" | FileCheck %s --check-prefix=NVVM
// RUN: mlcir-opt %S/Inputs/matmul128.mlir --transform-script=%S/Inputs/shared_matmul_schedule.mlir | %PYTHON -m mlcir.targets.cuda - | FileCheck %s --check-prefix=PTX

// SCHED: scf.forall ({{.*}}) in (8, 8)
// SCHED: scf.for
// SCHED: bufferization.alloc_tensor() {memory_space = #gpu.address_space<workgroup>} : tensor<16x16xf32>
// SCHED: bufferization.alloc_tensor() {memory_space = #gpu.address_space<workgroup>} : tensor<16x16xf32>
// SCHED: scf.forall ({{.*}}) in (16, 16)
// SCHED: linalg.matmul {loop.block = "C"}
// SCHED: {loop.name = "C.i_1+j_1", mapping = [#gpu.thread<y>, #gpu.thread<x>]}
// SCHED: {loop.name = "C.i_0+j_0", mapping = [#gpu.block<y>, #gpu.block<x>]}

// MAP: gpu.launch blocks({{.*}}) in ({{.*}} = %c8{{.*}}, {{.*}} = %c8{{.*}}, {{.*}} = %c1{{.*}}) threads({{.*}}) in ({{.*}} = %c16{{.*}}, {{.*}} = %c16{{.*}}, {{.*}} = %c1{{.*}}) module(@main_C) function(@main_C) workgroup(%[[AS:.*]] : memref<16x16xf32, #gpu.address_space<workgroup>>, %[[BS:.*]] : memref<16x16xf32, #gpu.address_space<workgroup>>)
// MAP: scf.for
// MAP: memref.subview %[[AS]][%thread_id_y, %thread_id_x]
// MAP: memref.store
// MAP-NEXT: gpu.barrier
// MAP: memref.subview %[[BS]][%thread_id_y, %thread_id_x]
// MAP: memref.store
// MAP-NEXT: gpu.barrier
// MAP: scf.for
// MAP: memref.load
// MAP-SAME: #gpu.address_space<workgroup>
// MAP: gpu.barrier
// MAP-NEXT: } {loop.name = "C.k_0"}
// MAP-NOT: memref.alloc
// MAP-NOT: memref.dealloc

// NVVM: gpu.module @main_C
// NVVM-DAG: llvm.mlir.global internal @__wg_main_C_0() {addr_space = 3 : i32} : !llvm.array<256 x f32>
// NVVM-DAG: llvm.mlir.global internal @__wg_main_C_1() {addr_space = 3 : i32} : !llvm.array<256 x f32>
// NVVM: nvvm.barrier0

// PTX-LABEL: // gpu.binary @main_C
// PTX: .visible .entry main_C(
// PTX: .maxntid 16, 16, 1
// PTX-DAG: .shared .align 4 .b8 __wg_main_C_0[1024];
// PTX-DAG: .shared .align 4 .b8 __wg_main_C_1[1024];
// PTX: st.shared.b32
// PTX: bar.sync 0;
// PTX: ld.shared.b32
// PTX: mul.rn.f32
// PTX-NEXT: add.rn.f32
