// mlcir-gpu-map: the default mapping tiles each unscheduled linalg op with a forall over
// blocks and one over threads (innermost parallel dim on x, one element per thread, reductions
// serial), an op with nothing parallel runs on one thread, memref.copy becomes a mapped
// linalg.copy; then every block forall becomes a gpu.launch named after its block.
// RUN: mlcir-opt %s --pass-pipeline="builtin.module(mlcir-gpu-map{launch=0 threads=32})" | FileCheck %s --check-prefix=TILE
// RUN: mlcir-opt %s --pass-pipeline="builtin.module(mlcir-gpu-map{threads=32})" | FileCheck %s --check-prefix=LAUNCH

// TILE-LABEL: func.func @main
// TILE: scf.forall ({{.*}}) in (64, 2) {
// TILE: scf.forall ({{.*}}) in (1, 32) {
// TILE: linalg.matmul {loop.block = "C"} ins({{.*}} : memref<1x32xf32, {{.*}}>, memref<32x1xf32, {{.*}}>) outs({{.*}} : memref<1x1xf32, {{.*}}>)
// TILE: } {mapping = [#gpu.thread<y>, #gpu.thread<x>]}
// TILE: } {mapping = [#gpu.block<y>, #gpu.block<x>]}
// TILE-LABEL: func.func @sum
// TILE: scf.forall ({{.*}}) in (1) {
// TILE: scf.forall ({{.*}}) in (1) {
// TILE: linalg.reduce
// TILE: } {mapping = [#gpu.thread<x>]}
// TILE: } {mapping = [#gpu.block<x>]}
// TILE-LABEL: func.func @copy
// TILE: scf.forall ({{.*}}) in (4, 1) {
// TILE: scf.forall ({{.*}}) in (2, 16) {
// TILE: linalg.copy
// TILE-NOT: memref.copy

// LAUNCH-LABEL: func.func @main
// LAUNCH: gpu.launch blocks({{.*}}) in ({{.*}} = %c2{{.*}}, {{.*}} = %c64{{.*}}, {{.*}} = %c1{{.*}}) threads({{.*}}) in ({{.*}} = %c32{{.*}}, {{.*}} = %c1{{.*}}, {{.*}} = %c1{{.*}}) module(@main_C) function(@main_C)
// LAUNCH: gpu.thread_id x
// LAUNCH: gpu.barrier
// LAUNCH-LABEL: func.func @sum
// LAUNCH: gpu.launch {{.*}} module(@sum_reduce) function(@sum_reduce)
// LAUNCH-LABEL: func.func @copy
// LAUNCH: gpu.launch blocks({{.*}}) in ({{.*}} = %c1{{.*}}, {{.*}} = %c4{{.*}}, {{.*}} = %c1{{.*}}) threads({{.*}}) in ({{.*}} = %c16{{.*}}, {{.*}} = %c2{{.*}}, {{.*}} = %c1{{.*}}) module(@copy_copy)
// LAUNCH-NOT: scf.forall
func.func @main(%a: memref<64x32xf32>, %b: memref<32x64xf32>, %c: memref<64x64xf32>) {
  linalg.matmul {loop.block = "C"} ins(%a, %b : memref<64x32xf32>, memref<32x64xf32>) outs(%c : memref<64x64xf32>)
  return
}
func.func @sum(%x: memref<128xf32>, %s: memref<f32>) {
  linalg.reduce ins(%x : memref<128xf32>) outs(%s : memref<f32>) dimensions = [0]
    (%in: f32, %acc: f32) {
      %0 = arith.addf %in, %acc : f32
      linalg.yield %0 : f32
    }
  return
}
func.func @copy(%x: memref<8x16xf32>, %y: memref<8x16xf32>) {
  memref.copy %x, %y : memref<8x16xf32> to memref<8x16xf32>
  return
}
