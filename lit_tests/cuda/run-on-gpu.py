# Kernels run on the GPU against numpy: the default mapping, a bound schedule with shared
# memory, and a sampled trace of the default GPU space. Needs an NVIDIA GPU and its driver.
# REQUIRES: cuda
# RUN: %PYTHON %s | FileCheck %s

import numpy as np

import mlcir
from mlcir.testing import kernels
from mlcir.tune.space import default_space


def shared_schedule(text: str, tile: int = 16) -> mlcir.Schedule:
    sch = mlcir.Schedule(text)
    c = sch.get_block("C")
    i, j, k = sch.get_loops(c)
    i0, i1 = sch.split(i, [None, tile])
    j0, j1 = sch.split(j, [None, tile])
    k0, k1 = sch.split(k, [None, tile])
    sch.reorder(i0, j0, k0, i1, j1, k1)
    sch.bind(i0, "blockIdx.y")
    sch.bind(j0, "blockIdx.x")
    for index in (0, 1):
        sch.compute_at(sch.cache_read(c, index, "shared"), k0)
    sch.bind(i1, "threadIdx.y")
    sch.bind(j1, "threadIdx.x")
    return sch


def check(name, mod, reference, inputs, target="cuda"):
    got = mlcir.build(mod, target=target).main(*inputs)
    want = reference(*[x.astype(np.float64) for x in inputs])
    error = float(np.abs(got - want).max() / max(np.abs(want).max(), 1e-6))
    print(f"{name}: {'ok' if error < 1e-4 else f'WRONG (max relative error {error:.3g})'}")


text, ref = kernels.matmul(512, 512, 256)
inputs = kernels.random_inputs(text)
# CHECK: default mapping: ok
check("default mapping", text, ref, inputs)
# CHECK: default mapping sm_80 cubin/PTX: ok
check("default mapping sm_80 cubin/PTX", text, ref, inputs, target="cuda -arch=sm_80")
# CHECK: shared memory: ok
check("shared memory", shared_schedule(text).mod, ref, inputs)
for seed in range(3):
    sch = mlcir.Schedule(text, seed=seed)
    default_space("cuda")(sch)
    # CHECK: space seed {{[0-9]}}: ok
    check(f"space seed {seed}", sch.mod, ref, inputs)
text, ref = kernels.softmax(64, 256)
# CHECK: softmax: ok
check("softmax", text, ref, kernels.random_inputs(text))
