# Golden GPU design space: for a fixed seed, the default CUDA rules' sampled trace of a matmul,
# an elementwise block and a softmax, and the kernels they compile to. A change to the rules
# (mlcir/targets/cuda/space.py) shows up here; regenerate the expected traces from this script's
# output when it is intended.
# RUN: %PYTHON %s | FileCheck %s

import mlcir
from mlcir.target import Target
from mlcir.targets import cuda
from mlcir.testing import kernels
from mlcir.tune.space import default_space

ELEMENTWISE = """
func.func @main(%X: tensor<64x256xf32>, %Y: tensor<64x256xf32>) -> tensor<64x256xf32> {
  %e = tensor.empty() : tensor<64x256xf32>
  %z = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>],
                       iterator_types = ["parallel", "parallel"], loop.block = "Z"}
       ins(%X, %Y : tensor<64x256xf32>, tensor<64x256xf32>) outs(%e : tensor<64x256xf32>) {
    ^bb0(%a: f32, %b: f32, %o: f32):
      %x = math.exp %a : f32
      %r = arith.mulf %x, %b : f32
      linalg.yield %r : f32
  } -> tensor<64x256xf32>
  return %z : tensor<64x256xf32>
}"""


def show(name, text, seed=0):
    print(f"TEST: {name}")
    sch = mlcir.Schedule(text, seed=seed)
    default_space("cuda")(sch)
    print(sch.trace)
    module = sch.mod
    with module.context:
        cuda.compile_cuda(module, Target.parse("cuda -format=isa"))
        for kernel, ptx in cuda.ptx_of(module).items():
            maxntid = next(line for line in ptx.splitlines() if line.startswith(".maxntid"))
            print(f"kernel {kernel}: {maxntid}, shared: {'.shared' in ptx}")


# CHECK-LABEL: TEST: matmul
show("matmul", kernels.matmul(256, 256, 128)[0])
# CHECK-NEXT: def apply_trace(sch: mlcir.Schedule) -> None:
# CHECK-NEXT: b0 = sch.get_block(name="C", func_name="main")
# CHECK-NEXT: l1, l2, l3 = sch.get_loops(block=b0)
# CHECK-NEXT: v4 = sch.sample_categorical(candidates=[1, 2, 4], probs=[1.0, 1.0, 1.0], decision=2)
# CHECK-NEXT: v5 = sch.sample_categorical(candidates=[8, 16, 32, 64], probs=[1.0, 1.0, 1.0, 1.0], decision=3)
# CHECK-NEXT: l6, l7, l8 = sch.split(loop=l2, factors=[None, v5, v4])
# CHECK-NEXT: v9 = sch.sample_categorical(candidates=[1, 2, 4], probs=[1.0, 1.0, 1.0], decision=1)
# CHECK-NEXT: v10 = sch.sample_categorical(candidates=[1, 2, 4, 8, 16], probs=[1.0, 1.0, 1.0, 1.0, 1.0], decision=1)
# CHECK-NEXT: l11, l12, l13 = sch.split(loop=l1, factors=[None, v10, v9])
# CHECK-NEXT: v14, v15 = sch.sample_perfect_tile(loop=l3, n=2, max_innermost_factor=32, decision=[64, 2])
# CHECK-NEXT: l16, l17 = sch.split(loop=l3, factors=[v14, v15])
# CHECK-NEXT: v18 = sch.sample_categorical(candidates=[0, 1], probs=[1.0, 1.0], decision=0)
# CHECK-NEXT: sch.reorder(l11, l6, l12, l7, l16, l17, l13, l8)
# CHECK-NEXT: sch.bind(loop=l6, thread_axis="blockIdx.x")
# CHECK-NEXT: sch.bind(loop=l11, thread_axis="blockIdx.y")
# CHECK-NEXT: sch.bind(loop=l7, thread_axis="threadIdx.x")
# CHECK-NEXT: sch.bind(loop=l12, thread_axis="threadIdx.y")
# CHECK-NEXT: v19 = sch.sample_categorical(candidates=[0, 1], probs=[1.0, 1.0], decision=1)
# CHECK-NEXT: sch.vectorize(loop=l13)
# CHECK-NEXT: v20 = sch.sample_categorical(candidates=[1, 2, 4, 8], probs=[1.0, 1.0, 1.0, 1.0], decision=3)
# CHECK-NEXT: sch.unroll(loop=l17, factor=v20)
# CHECK-NEXT: kernel main_C_init: .maxntid 256, 1, 1, shared: False
# CHECK-NEXT: kernel main_C: .maxntid 64, 2, 1, shared: False

# CHECK-LABEL: TEST: elementwise
show("elementwise", ELEMENTWISE)
# CHECK-NEXT: def apply_trace(sch: mlcir.Schedule) -> None:
# CHECK-NEXT: b0 = sch.get_block(name="Z", func_name="main")
# CHECK-NEXT: l1, l2 = sch.get_loops(block=b0)
# CHECK-NEXT: v3 = sch.sample_categorical(candidates=[1, 2, 4], probs=[1.0, 1.0, 1.0], decision=2)
# CHECK-NEXT: v4 = sch.sample_categorical(candidates=[32, 64], probs=[1.0, 1.0], decision=1)
# CHECK-NEXT: l5, l6, l7 = sch.split(loop=l2, factors=[None, v4, v3])
# CHECK-NEXT: sch.reorder(l1, l5, l6, l7)
# CHECK-NEXT: sch.bind(loop=l5, thread_axis="blockIdx.x")
# CHECK-NEXT: sch.bind(loop=l1, thread_axis="blockIdx.y")
# CHECK-NEXT: sch.bind(loop=l6, thread_axis="threadIdx.x")
# CHECK-NEXT: sch.vectorize(loop=l7)
# CHECK-NEXT: kernel main_Z: .maxntid 64, 1, 1, shared: False

# CHECK-LABEL: TEST: softmax
show("softmax", kernels.softmax(32, 128)[0], seed=4)
# CHECK-NEXT: def apply_trace(sch: mlcir.Schedule) -> None:
# CHECK-NEXT: b0 = sch.get_block(name="exp", func_name="main")
# CHECK-NEXT: sch.compute_inline(block=b0)
# CHECK: sch.bind(loop={{l[0-9]+}}, thread_axis="threadIdx.x")
# CHECK: kernel main_max:
# CHECK-NOT: kernel main_exp
# CHECK: kernel main_sum:
# CHECK: kernel main_norm:

# CHECK-LABEL: TEST: matmul with shared memory
print("TEST: matmul with shared memory")
for seed in range(8):
    sch = mlcir.Schedule(kernels.matmul(256, 256, 128)[0], seed=seed)
    default_space("cuda")(sch)
    if "shared" in sch.trace.as_python():
        show(f"matmul seed {seed}", kernels.matmul(256, 256, 128)[0], seed=seed)
        break
# CHECK: sch.cache_read(block=b0, read_buffer_index=0, storage_scope="shared")
# CHECK-NEXT: sch.compute_at(block={{b[0-9]+}}, loop=[[RO:l[0-9]+]])
# CHECK-NEXT: {{b[0-9]+}} = sch.cache_read(block=b0, read_buffer_index=1, storage_scope="shared")
# CHECK-NEXT: sch.compute_at(block={{b[0-9]+}}, loop=[[RO]])
# CHECK: kernel main_C: .maxntid {{.*}}, shared: True
