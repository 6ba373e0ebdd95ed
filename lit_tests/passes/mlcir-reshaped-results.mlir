// mlcir-reshaped-results: a result computed in a reshaped temporary and copied into the
// out-parameter is computed in a view of the out-parameter instead (no alloc, no copy); the
// inverse of a chain of reshapes is undone last-first. Where anything else could tell the
// difference, nothing changes.
// RUN: mlcir-opt %s --split-input-file --mlcir-reshaped-results | FileCheck %s

// CHECK-LABEL: func.func @transposed(
// CHECK-SAME: %[[X:[^:]*]]: memref<4x6xf32>, %[[OUT:[^:]*]]: memref<2x3x4xf32>)
// CHECK-NOT: memref.alloc
// CHECK: %[[VIEW:.*]] = memref.collapse_shape %[[OUT]] {{\[}}[0, 1], [2]] : memref<2x3x4xf32> into memref<6x4xf32>
// CHECK: linalg.transpose ins(%[[X]] : memref<4x6xf32>) outs(%[[VIEW]] : memref<6x4xf32>)
// CHECK-NOT: memref.copy
// CHECK-NOT: memref.dealloc
// CHECK: return
func.func @transposed(%x: memref<4x6xf32>, %out: memref<2x3x4xf32>) {
  %tmp = memref.alloc() {alignment = 64 : i64} : memref<6x4xf32>
  linalg.transpose ins(%x : memref<4x6xf32>) outs(%tmp : memref<6x4xf32>) permutation = [1, 0]
  %view = memref.expand_shape %tmp [[0, 1], [2]] output_shape [2, 3, 4] : memref<6x4xf32> into memref<2x3x4xf32>
  memref.copy %view, %out : memref<2x3x4xf32> to memref<2x3x4xf32>
  memref.dealloc %tmp : memref<6x4xf32>
  return
}

// -----

// Two reshapes (collapse, then expand): the view is their inverses, expand then collapse.
// CHECK-LABEL: func.func @two_reshapes(
// CHECK-SAME: %[[OUT:[^:]*]]: memref<8x3x2xf32>)
// CHECK: %[[A:.*]] = memref.collapse_shape %[[OUT]] {{\[}}[0], [1, 2]] : memref<8x3x2xf32> into memref<8x6xf32>
// CHECK: %[[B:.*]] = memref.expand_shape %[[A]] {{\[}}[0, 1], [2]] output_shape [2, 4, 6] : memref<8x6xf32> into memref<2x4x6xf32>
// CHECK: linalg.fill ins(%{{.*}} : f32) outs(%[[B]] : memref<2x4x6xf32>)
// CHECK-NOT: memref.copy
func.func @two_reshapes(%v: f32, %out: memref<8x3x2xf32>) {
  %tmp = memref.alloc() : memref<2x4x6xf32>
  linalg.fill ins(%v : f32) outs(%tmp : memref<2x4x6xf32>)
  %flat = memref.collapse_shape %tmp [[0, 1], [2]] : memref<2x4x6xf32> into memref<8x6xf32>
  %view = memref.expand_shape %flat [[0], [1, 2]] output_shape [8, 3, 2] : memref<8x6xf32> into memref<8x3x2xf32>
  memref.copy %view, %out : memref<8x3x2xf32> to memref<8x3x2xf32>
  return
}

// -----

// The out-parameter is read before the copy: writing it early would change what is read.
// CHECK-LABEL: func.func @out_read_before(
// CHECK: memref.alloc
// CHECK: memref.copy
func.func @out_read_before(%v: f32, %out: memref<2x3xf32>) -> f32 {
  %c0 = arith.constant 0 : index
  %old = memref.load %out[%c0, %c0] : memref<2x3xf32>
  %tmp = memref.alloc() : memref<6xf32>
  linalg.fill ins(%v : f32) outs(%tmp : memref<6xf32>)
  %view = memref.expand_shape %tmp [[0, 1]] output_shape [2, 3] : memref<6xf32> into memref<2x3xf32>
  memref.copy %view, %out : memref<2x3xf32> to memref<2x3xf32>
  return %old : f32
}

// -----

// Not a reshape of a temporary (a subview), or a target that is not an argument: unchanged.
// CHECK-LABEL: func.func @not_a_reshape(
// CHECK: memref.alloc
// CHECK: memref.copy
// CHECK-LABEL: func.func @not_an_argument(
// CHECK: memref.copy
func.func @not_a_reshape(%v: f32, %out: memref<2x3xf32>) {
  %tmp = memref.alloc() : memref<4x3xf32>
  linalg.fill ins(%v : f32) outs(%tmp : memref<4x3xf32>)
  %view = memref.subview %tmp[0, 0] [2, 3] [1, 1] : memref<4x3xf32> to memref<2x3xf32, strided<[3, 1]>>
  memref.copy %view, %out : memref<2x3xf32, strided<[3, 1]>> to memref<2x3xf32>
  return
}
func.func @not_an_argument(%v: f32) -> memref<2x3xf32> {
  %tmp = memref.alloc() : memref<6xf32>
  linalg.fill ins(%v : f32) outs(%tmp : memref<6xf32>)
  %view = memref.expand_shape %tmp [[0, 1]] output_shape [2, 3] : memref<6xf32> into memref<2x3xf32>
  %out = memref.alloc() : memref<2x3xf32>
  memref.copy %view, %out : memref<2x3xf32> to memref<2x3xf32>
  return %out : memref<2x3xf32>
}
