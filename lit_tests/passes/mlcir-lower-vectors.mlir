// mlcir-lower-vectors: after bufferization, a vectorized matmul tile (2-D transfers and a
// vector.contract) becomes 1-D loads, one broadcast + vector.fma per k step with the
// accumulator kept in a register, and one store: the micro-kernel shape. Functions without
// vector ops are left alone.
// RUN: mlcir-opt %s --mlcir-lower-vectors | FileCheck %s

// CHECK-LABEL: func.func @tile
// CHECK-SAME: (%[[A:.*]]: memref<1x4xf32>, %[[B:.*]]: memref<4x16xf32>, %[[C:.*]]: memref<1x16xf32>)
// CHECK-NOT: vector.transfer_read
// CHECK-NOT: vector.contract
// CHECK: %[[ROW:.*]] = vector.load %[[A]]{{.*}} : memref<1x4xf32>, vector<4xf32>
// CHECK: %[[B0:.*]] = vector.load %[[B]]{{.*}} : memref<4x16xf32>, vector<16xf32>
// CHECK: %[[ACC:.*]] = vector.load %[[C]]{{.*}} : memref<1x16xf32>, vector<16xf32>
// CHECK: %[[A0:.*]] = vector.extract %[[ROW]][0] : f32 from vector<4xf32>
// CHECK: %[[S0:.*]] = vector.broadcast %[[A0]] : f32 to vector<16xf32>
// CHECK: %[[F0:.*]] = vector.fma %[[S0]], %[[B0]], %[[ACC]] : vector<16xf32>
// CHECK: %[[F1:.*]] = vector.fma %{{.*}}, %{{.*}}, %[[F0]] : vector<16xf32>
// CHECK: %[[F2:.*]] = vector.fma %{{.*}}, %{{.*}}, %[[F1]] : vector<16xf32>
// CHECK: %[[F3:.*]] = vector.fma %{{.*}}, %{{.*}}, %[[F2]] : vector<16xf32>
// CHECK-NOT: vector.fma
// CHECK: vector.store %[[F3]], %[[C]]{{.*}} : memref<1x16xf32>, vector<16xf32>
// CHECK-NOT: vector.transfer_write
func.func @tile(%a: memref<1x4xf32>, %b: memref<4x16xf32>, %c: memref<1x16xf32>) {
  %c0 = arith.constant 0 : index
  %p = ub.poison : f32
  %va = vector.transfer_read %a[%c0, %c0], %p {in_bounds = [true, true]} : memref<1x4xf32>, vector<1x4xf32>
  %vb = vector.transfer_read %b[%c0, %c0], %p {in_bounds = [true, true]} : memref<4x16xf32>, vector<4x16xf32>
  %vc = vector.transfer_read %c[%c0, %c0], %p {in_bounds = [true, true]} : memref<1x16xf32>, vector<1x16xf32>
  %r = vector.contract {indexing_maps = [affine_map<(i, j, k) -> (i, k)>, affine_map<(i, j, k) -> (k, j)>, affine_map<(i, j, k) -> (i, j)>],
                        iterator_types = ["parallel", "parallel", "reduction"], kind = #vector.kind<add>}
       %va, %vb, %vc : vector<1x4xf32>, vector<4x16xf32> into vector<1x16xf32>
  vector.transfer_write %r, %c[%c0, %c0] {in_bounds = [true, true]} : vector<1x16xf32>, memref<1x16xf32>
  return
}

// CHECK-LABEL: func.func @scalar
// CHECK-NEXT: %[[C0:.*]] = arith.constant 0 : index
// CHECK-NEXT: %[[V:.*]] = memref.load %{{.*}}[%[[C0]]] : memref<4xf32>
// CHECK-NEXT: memref.store %[[V]], %{{.*}}[%[[C0]]] : memref<4xf32>
// CHECK-NEXT: return
func.func @scalar(%a: memref<4xf32>) {
  %c0 = arith.constant 0 : index
  %v = memref.load %a[%c0] : memref<4xf32>
  memref.store %v, %a[%c0] : memref<4xf32>
  return
}

// A 16 x 16 transpose (a layout change's register tile) is upstream's AVX-512 sequence: 64
// two-source shuffles of 16-lane rows, not one shuffle of the flattened 256 lanes, which LLVM
// turned into a permute per element.
// CHECK-LABEL: func.func @transpose16
// CHECK-NOT: vector<256xf32>
// CHECK-COUNT-64: vector.shuffle {{.*}} : vector<16xf32>, vector<16xf32>
// CHECK-NOT: vector.shuffle
// CHECK-NOT: vector.transpose
func.func @transpose16(%a: memref<16x16xf32>, %b: memref<16x16xf32>) {
  %c0 = arith.constant 0 : index
  %p = ub.poison : f32
  %v = vector.transfer_read %a[%c0, %c0], %p {in_bounds = [true, true]} : memref<16x16xf32>, vector<16x16xf32>
  %t = vector.transpose %v, [1, 0] : vector<16x16xf32> to vector<16x16xf32>
  vector.transfer_write %t, %b[%c0, %c0] {in_bounds = [true, true]} : vector<16x16xf32>, memref<16x16xf32>
  return
}
