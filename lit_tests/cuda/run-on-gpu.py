# Kernels run on the GPU against numpy: the default mapping, a bound schedule with shared
# memory, and a sampled trace of the default GPU space. Needs an NVIDIA GPU and its driver.
# REQUIRES: cuda
# RUN: %PYTHON %s | FileCheck %s

import numpy as np

import mlcir
from mlcir.testing import kernels
from mlcir.tune.space import default_space


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
check("shared memory", kernels.shared_memory_matmul_schedule(text).mod, ref, inputs)
for seed in range(3):
    sch = mlcir.Schedule(text, seed=seed)
    default_space("cuda")(sch)
    # CHECK: space seed {{[0-9]}}: ok
    check(f"space seed {seed}", sch.mod, ref, inputs)
text, ref = kernels.softmax(64, 256)
# CHECK: softmax: ok
check("softmax", text, ref, kernels.random_inputs(text))
