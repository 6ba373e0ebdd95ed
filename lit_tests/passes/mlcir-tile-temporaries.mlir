// mlcir-tile-temporaries: a slice of a tensor.empty is a tensor.empty of the slice's shape,
// so a temporary used one tile at a time is bufferized tile by tile (upstream's
// fold_tensor_empty patterns). Slices of tensors with contents are left alone.
// RUN: mlcir-opt %s --mlcir-tile-temporaries | FileCheck %s

// CHECK-LABEL: func.func @rows
// CHECK-SAME: (%[[X:.*]]: tensor<4x8xf32>, %[[DEST:.*]]: tensor<4x8xf32>)
// CHECK-NOT: tensor.empty() : tensor<4x8xf32>
// CHECK: scf.for {{.*}} iter_args(%[[OUT:.*]] = %[[DEST]])
// CHECK-NEXT: %[[TILE:.*]] = tensor.empty() : tensor<1x8xf32>
// CHECK-NEXT: linalg.fill {{.*}} outs(%[[TILE]] : tensor<1x8xf32>)
// CHECK-NEXT: tensor.extract_slice %[[X]]
// CHECK: tensor.extract_slice %[[OUT]]
func.func @rows(%x: tensor<4x8xf32>, %dest: tensor<4x8xf32>) -> tensor<4x8xf32> {
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
