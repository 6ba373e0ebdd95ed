// mlcir-cpu-bufferize first hoists loop-invariant subsets (upstream's
// loop-invariant-subset-hoisting): a register tile's accumulator, read and written at the
// same place in every step of its reduction loop, becomes a vector the loop carries. Left in
// memory, LLVM promoted it to registers only in a serial loop: in an OpenMP-outlined parallel
// loop it stayed a load and a store per step, and parallel kernels ran twice as slow per
// thread (2 threads were no faster than 1).
// RUN: mlcir-opt %s --mlcir-cpu-bufferize | FileCheck %s

// CHECK-LABEL: func.func @tile
// CHECK: scf.forall
// CHECK: %[[ACC:.*]] = vector.load
// CHECK-NEXT: %[[SUM:.*]] = scf.for {{.*}} iter_args(%[[V:.*]] = %[[ACC]]) -> (vector<8xf32>)
// CHECK-NEXT: vector.load
// CHECK-NEXT: arith.addf %[[V]]
// CHECK-NEXT: scf.yield
// CHECK-NEXT: }
// CHECK-NEXT: vector.store %[[SUM]]
func.func @tile(%x: tensor<4x64x8xf32>, %init: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %pad = arith.constant 0.0 : f32
  %r = scf.forall (%i) in (4) shared_outs(%out = %init) -> (tensor<4x8xf32>) {
    %row = tensor.extract_slice %out[%i, 0] [1, 8] [1, 1] : tensor<4x8xf32> to tensor<1x8xf32>
    %acc = scf.for %k = %c0 to %c64 step %c1 iter_args(%t = %row) -> (tensor<1x8xf32>) {
      %a = vector.transfer_read %x[%i, %k, %c0], %pad {in_bounds = [true]} : tensor<4x64x8xf32>, vector<8xf32>
      %s = vector.transfer_read %t[%c0, %c0], %pad {in_bounds = [true]} : tensor<1x8xf32>, vector<8xf32>
      %n = arith.addf %s, %a : vector<8xf32>
      %w = vector.transfer_write %n, %t[%c0, %c0] {in_bounds = [true]} : vector<8xf32>, tensor<1x8xf32>
      scf.yield %w : tensor<1x8xf32>
    }
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %acc into %out[%i, 0] [1, 8] [1, 1] : tensor<1x8xf32> into tensor<4x8xf32>
    }
  }
  return %r : tensor<4x8xf32>
}
