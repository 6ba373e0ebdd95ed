// mlcir-cpu-bufferize on a kernel whose epilogue is computed at its convolution's row tile
// (reverse_compute_at): the accumulator is a slice of a whole-result tensor.empty, and the
// row loop carries the kernel's destination.
// - mlcir-tile-temporaries makes the slice a tensor.empty of its own: a row-sized buffer,
//   not a whole-result one filled and read back; buffer-loop-hoisting then allocates it once
//   before a serial loop, but inside a parallel one (each thread its own);
// - canonicalize right after bufferization folds the loop's unchanged buffer, so the kernel
//   writes straight into its destination: no copy of the whole result at the end.
// RUN: mlcir-opt %s --mlcir-cpu-bufferize | FileCheck %s

// CHECK-LABEL: func.func private @rows
// CHECK-SAME: (%[[X:.*]]: memref<4x8xf32>, %[[OUT:.*]]: memref<4x8xf32>) {
// CHECK-NOT: memref.alloc() {{.*}} : memref<4x8xf32>
// CHECK: %[[ROW:.*]] = memref.alloc() {{.*}} : memref<1x8xf32>
// CHECK: scf.for
// CHECK-NEXT: linalg.fill {{.*}} outs(%[[ROW]] : memref<1x8xf32>)
// CHECK: memref.subview %[[OUT]]
// CHECK-NOT: memref.copy
// CHECK: memref.dealloc %[[ROW]]
// CHECK: return
// CHECK-LABEL: func.func private @rows_parallel
// CHECK-SAME: (%[[X:.*]]: memref<4x8xf32>, %[[OUT:.*]]: memref<4x8xf32>) {
// CHECK-NEXT: %[[ZERO:.*]] = arith.constant
// CHECK-NEXT: scf.forall
// CHECK-NEXT: %[[ROW:.*]] = memref.alloc() {{.*}} : memref<1x8xf32>
// CHECK-NEXT: linalg.fill {{.*}} outs(%[[ROW]] : memref<1x8xf32>)
// CHECK-NOT: memref.copy
// CHECK: memref.dealloc %[[ROW]]
// CHECK: return
// CHECK-LABEL: func.func @main
// CHECK: call @rows(%{{.*}}, %{{.*}}) : (memref<4x8xf32>, memref<4x8xf32>) -> ()
func.func private @rows(%x: tensor<4x8xf32>, %dest: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %zero = arith.constant 0.0 : f32
  %acc = tensor.empty() : tensor<4x8xf32>
  %r = scf.for %i = %c0 to %c4 step %c1 iter_args(%out = %dest) -> (tensor<4x8xf32>) {
    %tile = tensor.extract_slice %acc[%i, 0] [1, 8] [1, 1] : tensor<4x8xf32> to tensor<1x8xf32>
    %init = linalg.fill ins(%zero : f32) outs(%tile : tensor<1x8xf32>) -> tensor<1x8xf32>
    %row = tensor.extract_slice %x[%i, 0] [1, 8] [1, 1] : tensor<4x8xf32> to tensor<1x8xf32>
    %sum = linalg.add ins(%init, %row : tensor<1x8xf32>, tensor<1x8xf32>) outs(%init : tensor<1x8xf32>) -> tensor<1x8xf32>
    %o = tensor.extract_slice %out[%i, 0] [1, 8] [1, 1] : tensor<4x8xf32> to tensor<1x8xf32>
    %relu = linalg.max ins(%sum, %init : tensor<1x8xf32>, tensor<1x8xf32>) outs(%o : tensor<1x8xf32>) -> tensor<1x8xf32>
    %next = tensor.insert_slice %relu into %out[%i, 0] [1, 8] [1, 1] : tensor<1x8xf32> into tensor<4x8xf32>
    scf.yield %next : tensor<4x8xf32>
  }
  return %r : tensor<4x8xf32>
}

func.func private @rows_parallel(%x: tensor<4x8xf32>, %dest: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %zero = arith.constant 0.0 : f32
  %acc = tensor.empty() : tensor<4x8xf32>
  %r = scf.forall (%i) in (4) shared_outs(%out = %dest) -> (tensor<4x8xf32>) {
    %tile = tensor.extract_slice %acc[%i, 0] [1, 8] [1, 1] : tensor<4x8xf32> to tensor<1x8xf32>
    %init = linalg.fill ins(%zero : f32) outs(%tile : tensor<1x8xf32>) -> tensor<1x8xf32>
    %row = tensor.extract_slice %x[%i, 0] [1, 8] [1, 1] : tensor<4x8xf32> to tensor<1x8xf32>
    %sum = linalg.add ins(%init, %row : tensor<1x8xf32>, tensor<1x8xf32>) outs(%init : tensor<1x8xf32>) -> tensor<1x8xf32>
    %o = tensor.extract_slice %out[%i, 0] [1, 8] [1, 1] : tensor<4x8xf32> to tensor<1x8xf32>
    %relu = linalg.max ins(%sum, %init : tensor<1x8xf32>, tensor<1x8xf32>) outs(%o : tensor<1x8xf32>) -> tensor<1x8xf32>
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %relu into %out[%i, 0] [1, 8] [1, 1] : tensor<1x8xf32> into tensor<4x8xf32>
    }
  }
  return %r : tensor<4x8xf32>
}

func.func @main(%x: tensor<4x8xf32>, %dest: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %r = func.call @rows(%x, %dest) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %p = func.call @rows_parallel(%x, %r) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return %p : tensor<4x8xf32>
}
