// mlcir-copies-to-loops: a memref.copy between strided views (a row of an NCHW tensor, the
// interior of a padded one) becomes a linalg.copy, which convert-linalg-to-loops makes loops
// that LLVM vectorizes, instead of a call of the runtime's element-by-element memrefCopy.
// A copy between contiguous buffers stays a memref.copy (one llvm.memcpy), and so does a
// single row, which the runtime copies faster than the loops.
// RUN: mlcir-opt %s --mlcir-copies-to-loops | FileCheck %s

// CHECK-LABEL: func.func @strided
// CHECK-SAME: (%[[A:.*]]: memref<1x64x112x112xf32>, %[[B:.*]]: memref<1x64x1x112xf32>)
// CHECK: %[[ROW:.*]] = memref.subview %[[A]][0, 0, 5, 0] [1, 64, 1, 112] [1, 1, 1, 1]
// CHECK-NEXT: linalg.copy {{.*}}ins(%[[ROW]] : memref<1x64x1x112xf32, strided<[802816, 12544, 112, 1], offset: 560>>) outs(%[[B]] : memref<1x64x1x112xf32>)
// CHECK-NOT: memref.copy
// CHECK: return
func.func @strided(%a: memref<1x64x112x112xf32>, %b: memref<1x64x1x112xf32>) {
  %row = memref.subview %a[0, 0, 5, 0] [1, 64, 1, 112] [1, 1, 1, 1]
      : memref<1x64x112x112xf32> to memref<1x64x1x112xf32, strided<[802816, 12544, 112, 1], offset: 560>>
  memref.copy %row, %b : memref<1x64x1x112xf32, strided<[802816, 12544, 112, 1], offset: 560>> to memref<1x64x1x112xf32>
  return
}

// CHECK-LABEL: func.func @contiguous
// CHECK-NEXT: memref.copy %{{.*}}, %{{.*}} : memref<4x8xf32> to memref<4x8xf32>
// CHECK-NOT: linalg.copy
func.func @contiguous(%a: memref<4x8xf32>, %b: memref<4x8xf32>) {
  memref.copy %a, %b : memref<4x8xf32> to memref<4x8xf32>
  return
}

// A single row of a strided view (a vector tile of a padded copy) stays a memref.copy.
// CHECK-LABEL: func.func @one_row
// CHECK-NEXT: %[[T:.*]] = memref.subview
// CHECK-NEXT: memref.copy %[[T]], %{{.*}} : memref<1x1x1x8xf32, strided<[802816, 12544, 112, 1], offset: 560>> to memref<1x1x1x8xf32>
// CHECK-NOT: linalg.copy
func.func @one_row(%a: memref<1x64x112x112xf32>, %b: memref<1x1x1x8xf32>) {
  %tile = memref.subview %a[0, 0, 5, 0] [1, 1, 1, 8] [1, 1, 1, 1]
      : memref<1x64x112x112xf32> to memref<1x1x1x8xf32, strided<[802816, 12544, 112, 1], offset: 560>>
  memref.copy %tile, %b : memref<1x1x1x8xf32, strided<[802816, 12544, 112, 1], offset: 560>> to memref<1x1x1x8xf32>
  return
}
