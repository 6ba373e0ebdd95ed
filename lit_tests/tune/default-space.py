# Golden design spaces: for a fixed seed, the default rules' sampled decisions (the whole
# trace) and the scheduled IR for matmul, conv2d and softmax. A change to the rules shows up
# here; regenerate the expected traces from this script's output when it is intended.
# RUN: %PYTHON %s | FileCheck %s

import mlcir
from mlcir.testing import kernels
from mlcir.tune.space import default_space


def show(name, text, target="llvm -threads=2", seed=0):
    print(f"TEST: {name}")
    sch = mlcir.Schedule(text, seed=seed)
    default_space(target)(sch)
    print(sch.trace)
    print(sch.mod)


# CHECK-LABEL: TEST: matmul
show("matmul", kernels.matmul(128, 128, 128)[0])
# CHECK: def apply_trace(sch: mlcir.Schedule) -> None:
# CHECK-NEXT: b0 = sch.get_block(name="C", func_name="main")
# CHECK-NEXT: l1, l2, l3 = sch.get_loops(block=b0)
# CHECK-NEXT: v4, v5, v6 = sch.sample_perfect_tile(loop=l1, n=3, max_innermost_factor=8, decision=[8, 2, 8])
# CHECK-NEXT: l7, l8, l9 = sch.split(loop=l1, factors=[v4, v5, v6])
# CHECK-NEXT: v10, v11, v12 = sch.sample_perfect_tile(loop=l2, n=3, max_innermost_factor=64, decision=[16, 2, 4])
# CHECK-NEXT: l13, l14, l15 = sch.split(loop=l2, factors=[v10, v11, v12])
# CHECK-NEXT: v16, v17 = sch.sample_perfect_tile(loop=l3, n=2, max_innermost_factor=1024, decision=[1, 128])
# CHECK-NEXT: l18, l19 = sch.split(loop=l3, factors=[v16, v17])
# CHECK-NEXT: sch.reorder(l7, l13, l8, l14, l18, l19, l9, l15)
# CHECK-NEXT: sch.vectorize(loop=l9)
# CHECK-NEXT: v20 = sch.sample_categorical(candidates=[1, 2, 4, 8], probs=[1.0, 1.0, 1.0, 1.0], decision=1)
# CHECK-NEXT: sch.unroll(loop=l19, factor=v20)
# CHECK-NEXT: l21 = sch.fuse(l7, l13)
# CHECK-NEXT: sch.parallel(loop=l21)
# CHECK-NEXT: b22 = sch.decompose_reduction(block=b0, loop=l18)
# CHECK: func.func @main
# CHECK: scf.forall
# CHECK: linalg.fill {loop.block = "C_init"
# CHECK: vector.contract
# CHECK: loop.name = "C.k_1"
# CHECK: loop.name = "C.i_0_j_0_fused"

# CHECK-LABEL: TEST: conv2d
show("conv2d", kernels.conv2d(1, 8, 16, 16, 16, 3, 3)[0])
# CHECK: def apply_trace(sch: mlcir.Schedule) -> None:
# CHECK-NEXT: b0 = sch.get_block(name="conv", func_name="main")
# CHECK-NEXT: l1, l2, l3, l4, l5, l6, l7 = sch.get_loops(block=b0)
# CHECK-NEXT: v8, v9 = sch.sample_perfect_tile(loop=l1, n=2, max_innermost_factor=16, decision=[1, 1])
# CHECK-NEXT: l10, l11 = sch.split(loop=l1, factors=[v8, v9])
# CHECK-NEXT: v12, v13, v14 = sch.sample_perfect_tile(loop=l2, n=3, max_innermost_factor=8, decision=[8, 2, 1])
# CHECK-NEXT: l15, l16, l17 = sch.split(loop=l2, factors=[v12, v13, v14])
# CHECK-NEXT: v18, v19 = sch.sample_perfect_tile(loop=l3, n=2, max_innermost_factor=16, decision=[14, 1])
# CHECK-NEXT: l20, l21 = sch.split(loop=l3, factors=[v18, v19])
# CHECK-NEXT: v22, v23, v24 = sch.sample_perfect_tile(loop=l4, n=3, max_innermost_factor=64, decision=[1, 1, 14])
# CHECK-NEXT: l25, l26, l27 = sch.split(loop=l4, factors=[v22, v23, v24])
# CHECK-NEXT: v28, v29 = sch.sample_perfect_tile(loop=l5, n=2, max_innermost_factor=1024, decision=[4, 2])
# CHECK-NEXT: l30, l31 = sch.split(loop=l5, factors=[v28, v29])
# CHECK-NEXT: v32, v33 = sch.sample_perfect_tile(loop=l6, n=2, max_innermost_factor=1024, decision=[3, 1])
# CHECK-NEXT: l34, l35 = sch.split(loop=l6, factors=[v32, v33])
# CHECK-NEXT: v36, v37 = sch.sample_perfect_tile(loop=l7, n=2, max_innermost_factor=1024, decision=[3, 1])
# CHECK-NEXT: l38, l39 = sch.split(loop=l7, factors=[v36, v37])
# CHECK-NEXT: sch.reorder(l10, l15, l20, l25, l30, l34, l38, l11, l16, l21, l26, l31, l35, l39, l17, l27)
# CHECK-NEXT: sch.vectorize(loop=l17)
# CHECK-NEXT: v40 = sch.sample_categorical(candidates=[1, 2, 4, 8], probs=[1.0, 1.0, 1.0, 1.0], decision=3)
# CHECK-NEXT: sch.unroll(loop=l39, factor=v40)
# CHECK-NEXT: l41 = sch.fuse(l10, l15, l20, l25)
# CHECK-NEXT: sch.parallel(loop=l41)
# CHECK-NEXT: b42 = sch.decompose_reduction(block=b0, loop=l30)
# CHECK: func.func @main
# CHECK: scf.forall
# CHECK: vector.contract
# CHECK: loop.name = "conv.i_0_j_0_k_0_l_0_fused"

# CHECK-LABEL: TEST: softmax
show("softmax", kernels.softmax(256, 128)[0])  # big enough to run parallel
# exp is inlined into its consumers (the sum reduction and the normalisation).
# CHECK: def apply_trace(sch: mlcir.Schedule) -> None:
# CHECK-NEXT: b0 = sch.get_block(name="exp", func_name="main")
# CHECK-NEXT: sch.compute_inline(block=b0)
# CHECK-NEXT: b1 = sch.get_block(name="max", func_name="main")
# CHECK-NEXT: l2, l3 = sch.get_loops(block=b1)
# CHECK-NEXT: v4, v5, v6 = sch.sample_perfect_tile(loop=l2, n=3, max_innermost_factor=64, decision=[8, 8, 4])
# CHECK-NEXT: l7, l8, l9 = sch.split(loop=l2, factors=[v4, v5, v6])
# CHECK-NEXT: v10, v11 = sch.sample_perfect_tile(loop=l3, n=2, max_innermost_factor=1024, decision=[64, 2])
# CHECK-NEXT: l12, l13 = sch.split(loop=l3, factors=[v10, v11])
# CHECK-NEXT: sch.reorder(l7, l12, l8, l13, l9)
# CHECK-NEXT: sch.vectorize(loop=l9)
# CHECK-NEXT: v14 = sch.sample_categorical(candidates=[1, 2, 4, 8], probs=[1.0, 1.0, 1.0, 1.0], decision=0)
# CHECK-NEXT: sch.parallel(loop=l7)
# CHECK-NEXT: b15 = sch.decompose_reduction(block=b1, loop=l12)
# CHECK-NEXT: b16 = sch.get_block(name="norm", func_name="main")
# CHECK-NEXT: b17 = sch.get_block(name="sum", func_name="main")
# CHECK-NEXT: l18, l19 = sch.get_loops(block=b17)
# CHECK-NEXT: v20, v21, v22 = sch.sample_perfect_tile(loop=l18, n=3, max_innermost_factor=64, decision=[32, 1, 8])
# CHECK-NEXT: l23, l24, l25 = sch.split(loop=l18, factors=[v20, v21, v22])
# CHECK-NEXT: v26, v27 = sch.sample_perfect_tile(loop=l19, n=2, max_innermost_factor=1024, decision=[128, 1])
# CHECK-NEXT: l28, l29 = sch.split(loop=l19, factors=[v26, v27])
# CHECK-NEXT: sch.reorder(l23, l28, l24, l29, l25)
# CHECK-NEXT: sch.vectorize(loop=l25)
# CHECK-NEXT: v30 = sch.sample_categorical(candidates=[1, 2, 4, 8], probs=[1.0, 1.0, 1.0, 1.0], decision=1)
# CHECK-NEXT: sch.unroll(loop=l29, factor=v30)
# CHECK-NEXT: sch.parallel(loop=l23)
# CHECK-NEXT: b31 = sch.decompose_reduction(block=b17, loop=l28)
# CHECK-NEXT: b32 = sch.get_block(name="norm", func_name="main")
# CHECK-NEXT: sch.reverse_compute_at(block=b32, loop=l23)
# CHECK-NEXT: l33, l34, l35 = sch.get_loops(block=b32)
# CHECK-NEXT: sch.vectorize(loop=l35)
# CHECK: func.func @main
# CHECK: math.exp
# CHECK: vector.transfer_read
# CHECK: loop.name = "sum.i_0"
