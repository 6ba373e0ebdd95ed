# A convolution scheduled like the matmul micro-kernel: an 8 (output channels) x 24 (output
# width) register tile, the reduction (input channel, kernel row, kernel column) stepped one at a
# time around it. The tile is split into power-of-two lane parts (16 + 8), each decomposed to a
# 1-D convolution and vectorized; the contraction is 2-D (the 1-D convolution's unit batch dim
# cast away) and its accumulators are carried by the reduction loops, with no copy of the tile.
# RUN: %PYTHON %s | FileCheck %s

import mlcir
from mlcir.passes import run_pipeline
from mlcir.testing import kernels

TEXT, _ = kernels.conv2d(1, 8, 10, 26, 16, 3, 3)  # output 1x16x8x24
sch = mlcir.Schedule(TEXT)
conv = sch.get_block("conv")
n, f, oh, ow, c, kh, kw = sch.get_loops(conv)
f0, f1 = sch.split(f, [None, 8])
oh0, oh1 = sch.split(oh, [None, 1])
c0, c1 = sch.split(c, [None, 1])
sch.reorder(n, f0, oh0, c0, kh, kw, oh1, c1, f1, ow)
sch.vectorize(f1)
sch.decompose_reduction(conv, c0)

print("TEST: transform")
print(sch.as_transform())
# CHECK-LABEL: TEST: transform
# CHECK: %[[PARTS:.*]] = transform.structured.split %{{.*}} after 16 {dimension = 3 : i64}
# CHECK: %[[LOW:.*]]:2 = transform.split_handle %[[PARTS]]
# CHECK: %[[BOTH:.*]] = transform.merge_handles %[[LOW]]#0, %[[LOW]]#1
# CHECK: %[[CONV1D:.*]] = transform.structured.decompose %[[BOTH]]
# CHECK: transform.structured.vectorize %[[CONV1D]]
# CHECK: transform.apply_patterns.vector.reduction_to_contract
# CHECK: transform.apply_patterns.vector.cast_away_vector_leading_one_dim
# CHECK-NEXT: transform.apply_patterns.tensor.fold_tensor_subset_ops_into_vector_transfers
# CHECK-NEXT: transform.apply_patterns.tensor.merge_consecutive_insert_extract_slice
# CHECK: transform.loop.hoist_loop_invariant_subsets

print("TEST: scheduled")
module = sch.mod
print(module)
# CHECK-LABEL: TEST: scheduled
# CHECK: vector.transfer_read {{.*}} vector<8x16xf32>
# CHECK: vector.transfer_read {{.*}} vector<8x8xf32>
# CHECK: scf.for {{.*}} -> (tensor<1x8x1x24xf32>, vector<8x16xf32>, vector<8x8xf32>)
# CHECK: vector.contract {{.*}} : vector<1x16xf32>, vector<1x8xf32> into vector<8x16xf32>
# CHECK: vector.contract {{.*}} : vector<1x8xf32>, vector<1x8xf32> into vector<8x8xf32>
# CHECK: vector.transfer_write {{.*}} vector<8x8xf32>
# CHECK: vector.transfer_write {{.*}} vector<8x16xf32>

print("TEST: bufferized")
with module.context:
    run_pipeline(module, "mlcir-cpu-bufferize")
print(module)
# One broadcast weight times an input row per accumulator row; nothing allocated in the nest.
# CHECK-LABEL: TEST: bufferized
# CHECK-NOT: memref.alloc
# CHECK: scf.for {{.*}} -> (vector<8x16xf32>, vector<8x8xf32>)
# CHECK-NOT: memref.alloc
# CHECK-NOT: memref.copy
# CHECK-COUNT-8: vector.fma {{.*}} : vector<16xf32>
# CHECK-COUNT-8: vector.fma {{.*}} : vector<8xf32>
# CHECK-NOT: memref.copy
# CHECK: return
