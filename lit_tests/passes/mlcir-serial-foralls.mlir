// mlcir-serial-foralls: an scf.forall marked loop.serial (made by a schedule only so that a
// producer could fuse into it) becomes an scf.for over the same range, after bufferization;
// unmarked foralls stay parallel. A module without marked foralls is unchanged.
// RUN: mlcir-opt %s --mlcir-serial-foralls --split-input-file | FileCheck %s

// CHECK-LABEL: func.func @marked
// CHECK-SAME: (%[[A:.*]]: memref<8xf32>, %[[B:.*]]: memref<8xf32>)
// CHECK-DAG: %[[C0:.*]] = arith.constant 0 : index
// CHECK-DAG: %[[C8:.*]] = arith.constant 8 : index
// CHECK-DAG: %[[C1:.*]] = arith.constant 1 : index
// CHECK: scf.for %[[I:.*]] = %[[C0]] to %[[C8]] step %[[C1]] {
// CHECK-NEXT: %[[V:.*]] = memref.load %[[A]][%[[I]]]
// CHECK-NEXT: memref.store %[[V]], %[[B]][%[[I]]]
// CHECK: scf.forall (%[[J:.*]]) in (4) {
// CHECK-NEXT: memref.load %[[A]][%[[J]]]
// CHECK-NOT: loop.serial
func.func @marked(%a: memref<8xf32>, %b: memref<8xf32>) {
  scf.forall (%i) in (8) {
    %v = memref.load %a[%i] : memref<8xf32>
    memref.store %v, %b[%i] : memref<8xf32>
  } {loop.serial}
  scf.forall (%j) in (4) {
    %v = memref.load %a[%j] : memref<8xf32>
    memref.store %v, %a[%j] : memref<8xf32>
  }
  return
}

// -----

// CHECK-LABEL: func.func @unmarked
// CHECK-NEXT: scf.forall (%{{.*}}) in (8) {
// CHECK-NOT: scf.for
func.func @unmarked(%a: memref<8xf32>) {
  scf.forall (%i) in (8) {
    %v = memref.load %a[%i] : memref<8xf32>
    memref.store %v, %a[%i] : memref<8xf32>
  }
  return
}
