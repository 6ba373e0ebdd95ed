# Schedule primitives: the transform IR they emit and the loops they produce.
# RUN: %PYTHON %s | FileCheck %s

import mlcir
from mlcir.testing import kernels

TEXT, _ = kernels.matmul(64, 64, 32)


def run(f):
    print(f"TEST: {f.__name__}")
    f()
    return f


# CHECK-LABEL: TEST: split_reorder_decompose
@run
def split_reorder_decompose():
    sch = mlcir.Schedule(TEXT)
    c = sch.get_block("C", func_name="main")
    i, j, k = sch.get_loops(c)
    j0, j1 = sch.split(j, factors=[None, 8])
    sch.reorder(i, j0, k, j1)
    sch.decompose_reduction(c, k)
    print(sch.as_transform())
    print(sch.mod)
    # CHECK: transform.named_sequence @__transform_main
    # CHECK: %[[F:.*]] = transform.structured.match ops{["func.func"]} attributes {sym_name = "main"}
    # CHECK: %[[C:.*]] = transform.structured.match attributes {loop.block = "C"} in %[[F]]
    # CHECK: %{{.*}}, %[[I:.*]] = transform.structured.tile_using_forall %[[C]] tile_sizes [1, 0, 0]
    # CHECK: transform.annotate %[[I]] "loop.serial"
    # CHECK: transform.structured.tile_using_forall %{{.*}} tile_sizes [0, 8, 0]
    # CHECK: %[[INIT:.*]] = transform.structured.match attributes {loop.block = "C_init"}
    # CHECK: transform.structured.fuse_into_containing_op %[[INIT]] into %[[I]]
    # CHECK: transform.structured.interchange %{{.*}} iterator_interchange = [0, 2, 1]
    # The loops: i (one row), j_0 (8 columns at a time), the fill inside j_0, then k outside j_1.
    # CHECK: func.func @main
    # CHECK: scf.forall (%{{.*}}) in (64)
    # CHECK: scf.forall (%{{.*}}) in (8)
    # CHECK: linalg.fill {loop.block = "C_init"}{{.*}}tensor<1x8xf32>
    # CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "reduction", "parallel"]
    # CHECK-SAME: loop.block = "C"
    # CHECK: {loop.name = "C.j_0", loop.serial}
    # CHECK: {loop.name = "C.i", loop.serial}


# CHECK-LABEL: TEST: parallel_vectorize_unroll
@run
def parallel_vectorize_unroll():
    sch = mlcir.Schedule(TEXT)
    c = sch.get_block("C")
    i, j, k = sch.get_loops(c)
    i0, i1 = sch.split(i, [None, 8])
    j0, j1 = sch.split(j, [None, 32])
    k0, k1 = sch.split(k, [None, 1])
    sch.reorder(i0, j0, k0, k1, i1, j1)
    sch.parallel(i0)
    sch.vectorize(i1)
    sch.unroll(k0, factor=4)
    print(sch.mod)
    # CHECK: scf.forall (%{{.*}}) in (8)
    # CHECK: scf.for
    # CHECK: vector.transfer_read {{.*}} : tensor<8x32xf32>, vector<8x32xf32>
    # The accumulators hoisted into the unrolled loop's iter_args (the multi-threaded case
    # whose loop handles used to be dropped: tests/test_default_schedules.py,
    # test_vectorized_reduction_is_unrolled_in_parallel_builds).
    # CHECK: scf.for {{.*}} step %c4 iter_args({{.*}}) -> ({{.*}}vector<8x32xf32>)
    # CHECK-COUNT-4: vector.contract
    # CHECK-NOT: vector.contract
    # CHECK: loop.name = "C.k_0"
    # CHECK: loop.name = "C.i_0"


# CHECK-LABEL: TEST: sampled_tiles_are_knobs
@run
def sampled_tiles_are_knobs():
    sch = mlcir.Schedule(TEXT, seed=0)
    i, j, k = sch.get_loops(sch.get_block("C"))
    sch.split(k, sch.sample_perfect_tile(k, n=3, max_innermost_factor=8, decision=[2, 4, 4]))
    print(sch.trace)
    print(sch.as_transform())
    # CHECK: v4, v5, v6 = sch.sample_perfect_tile(loop=l3, n=3, max_innermost_factor=8, decision=[2, 4, 4])
    # CHECK: l7, l8, l9 = sch.split(loop=l3, factors=[v4, v5, v6])
    # CHECK: %[[K0:.*]] = transform.tune.knob<"main.C.k_0"> = 16 : i64 from options = [1, 2, 4, 8, 16, 32] -> !transform.param<i64>
    # CHECK: transform.structured.tile_using_for %{{.*}} tile_sizes [0, 0, %[[K0]]]
    # CHECK: %[[K1:.*]] = transform.tune.knob<"main.C.k_1"> = 4 : i64 from options = [1, 2, 4, 8] -> !transform.param<i64>
    # CHECK: transform.structured.tile_using_for %{{.*}} tile_sizes [0, 0, %[[K1]]]


# CHECK-LABEL: TEST: fuse_coalesces
@run
def fuse_coalesces():
    sch = mlcir.Schedule(TEXT)
    i, j, k = sch.get_loops(sch.get_block("C"))
    sch.fuse(i, j)
    print(sch.mod)
    # CHECK: scf.for %[[IV:.*]] = %c0 to %c4096 step %c1
    # CHECK: affine.delinearize_index %[[IV]] into (64, 64)
    # CHECK: loop.name = "C.i_j_fused"
