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

// A strided pooling's tile reduces pairs (its window read through the view [.., W/2, 2]): the
// pairs are read as one vector<16> (the two innermost dims collapsed), the tap mask's row is
// repeated by a shuffle, and a deinterleave splits the even and odd columns, combined in
// upstream's order (the accumulator, then the even, then the odd ones).
// CHECK-LABEL: func.func @pool_pairs
// CHECK-SAME: (%[[X:.*]]: memref<2x9x2xf32>, %[[MASK:.*]]: memref<2xi8>, %[[ACC:.*]]: vector<8xf32>, %[[I:.*]]: index)
// CHECK-NOT: vector.multi_reduction
// CHECK: %[[ROW:.*]] = vector.load %[[MASK]]
// CHECK: vector.shuffle %[[ROW]], %[[ROW]] [0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1] : vector<2xi8>, vector<2xi8>
// CHECK: %[[FLAT:.*]] = memref.collapse_shape %[[X]] {{\[\[}}0], [1, 2]] : memref<2x9x2xf32> into memref<2x18xf32>
// CHECK: %[[V:.*]] = vector.load %[[FLAT]][%[[I]], %{{.*}}] : memref<2x18xf32>, vector<16xf32>
// CHECK: %[[S:.*]] = arith.select %{{.*}}, %[[V]], %{{.*}} : vector<16xi1>, vector<16xf32>
// CHECK: %[[EVEN:.*]], %[[ODD:.*]] = vector.deinterleave %[[S]] : vector<16xf32> -> vector<8xf32>
// CHECK: %[[M:.*]] = arith.maxnumf %[[ACC]], %[[EVEN]] : vector<8xf32>
// CHECK: %[[R:.*]] = arith.maxnumf %[[M]], %[[ODD]] : vector<8xf32>
// CHECK: return %[[R]]
func.func @pool_pairs(%x: memref<2x9x2xf32>, %mask: memref<2xi8>, %acc: vector<8xf32>, %i: index) -> vector<8xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %pad = arith.constant 0.0 : f32
  %lowest = arith.constant dense<0xFF800000> : vector<8x2xf32>
  %zero = arith.constant dense<0> : vector<8x2xi8>
  %p8 = arith.constant 0 : i8
  %v = vector.transfer_read %x[%i, %c1, %c0], %pad {in_bounds = [true, true]} : memref<2x9x2xf32>, vector<8x2xf32>
  %row = vector.transfer_read %mask[%c0], %p8 {in_bounds = [true]} : memref<2xi8>, vector<2xi8>
  %taps = vector.broadcast %row : vector<2xi8> to vector<8x2xi8>
  %on = arith.cmpi ne, %taps, %zero : vector<8x2xi8>
  %s = arith.select %on, %v, %lowest : vector<8x2xi1>, vector<8x2xf32>
  %r = vector.multi_reduction <maxnumf>, %s, %acc [1] : vector<8x2xf32> to vector<8xf32>
  return %r : vector<8xf32>
}

// A register tile with a masked partial last row written into a packed panel (a map that
// skips the panel's unit dim): one masked store per row, each with its row of the mask
// (upstream's permutation patterns first built a store whose mask had the tile's shape).
// CHECK-LABEL: func.func @masked_panel_write
// CHECK: %[[MASK:.*]] = vector.create_mask %{{.*}}, %{{.*}} : vector<2x4xi1>
// CHECK: %[[ROW0:.*]] = vector.extract %[[MASK]][0] : vector<4xi1> from vector<2x4xi1>
// CHECK: vector.maskedstore %{{.*}}[%{{.*}}, %{{.*}}, %{{.*}}], %[[ROW0]], %{{.*}} : memref<?x1x4xf32>, vector<4xi1>, vector<4xf32>
// CHECK: %[[ROW1:.*]] = vector.extract %[[MASK]][1] : vector<4xi1> from vector<2x4xi1>
// CHECK: vector.maskedstore %{{.*}}, %[[ROW1]], %{{.*}} : memref<?x1x4xf32>, vector<4xi1>, vector<4xf32>
// CHECK-NOT: mlcir.unroll_first
func.func @masked_panel_write(%m: memref<?x1x4xf32>, %v: vector<2x4xf32>, %rows: index) {
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : index
  %mask = vector.create_mask %rows, %c4 : vector<2x4xi1>
  vector.transfer_write %v, %m[%c0, %c0, %c0], %mask {in_bounds = [true, true], permutation_map = affine_map<(d0, d1, d2) -> (d0, d2)>} : vector<2x4xf32>, memref<?x1x4xf32>
  return
}
