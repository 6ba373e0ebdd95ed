"""The machine's peak f32 FMA rate: the yardstick of % of peak (the profiler, bench/).

One kernel of independent vector FMAs, compiled by mlcir for the host (``llvm``): a loop
whose body updates ``ACCUMULATORS`` accumulators of the target's vector width
(:func:`mlcir.targets.cpu.facts.target_facts`), each ``acc = fma(acc, a, b)`` with ``a``, ``b``
loop invariants, so nothing but the FMA units limits it. With ``threads`` > 1 the same loop
runs once per thread in an ``scf.forall``. Peak GFLOPS = 2 x lanes x accumulators x
iterations x threads / seconds, the minimum of several timings (about 0.1 s, once per
process).
"""

from __future__ import annotations

import functools
import time

import numpy as np

from mlcir.targets.cpu.facts import target_facts

ACCUMULATORS = 12
ITERATIONS = 1 << 20


def _kernel(lanes: int, threads: int) -> str:
    """MLIR of the FMA loop, one copy per thread, each writing its sum to ``out[thread]``."""
    vec = f"vector<{lanes}xf32>"
    accs = ", ".join(f"%a{i} = %x" for i in range(ACCUMULATORS))
    types = ", ".join([vec] * ACCUMULATORS)
    body = "\n".join(f"      %n{i} = vector.fma %a{i}, %y, %z : {vec}" for i in range(ACCUMULATORS))
    yields = ", ".join(f"%n{i}" for i in range(ACCUMULATORS))
    total = "%r0"
    adds = []
    for i in range(1, ACCUMULATORS):
        adds.append(f"    %s{i} = arith.addf {total}, %r{i} : {vec}")
        total = f"%s{i}"
    results = ", ".join(f"%r{i}" for i in range(ACCUMULATORS))
    adds_text = "\n".join(adds)
    return f"""
func.func @main(%seed: memref<{lanes}xf32>, %out: memref<{threads}x{lanes}xf32>) {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = arith.constant {ITERATIONS} : index
  %x = vector.load %seed[%c0] : memref<{lanes}xf32>, {vec}
  %y = arith.constant dense<0.999> : {vec}
  %z = arith.constant dense<0.001> : {vec}
  scf.forall (%t) in ({threads}) {{
    {results} = scf.for %i = %c0 to %n step %c1 iter_args({accs}) -> ({types}) {{
{body}
      scf.yield {yields} : {types}
    }}
{adds_text}
    vector.store {total}, %out[%t, %c0] : memref<{threads}x{lanes}xf32>, {vec}
  }}
  return
}}
"""


@functools.cache
def peak_gflops(threads: int = 1) -> float:
    """Peak f32 GFLOPS of ``threads`` cores (measured once per process)."""
    lanes = target_facts("llvm").lanes(4)
    from mlcir.targets import compile_module

    ex = compile_module(_kernel(lanes, threads), target=f"llvm -threads={threads}")
    seed = np.full(lanes, 0.5, np.float32)
    out = np.zeros((threads, lanes), np.float32)
    ex.main(seed, out)
    best = float("inf")
    for _ in range(7):
        start = time.perf_counter()
        ex.main(seed, out)
        best = min(best, time.perf_counter() - start)
    return 2.0 * lanes * ACCUMULATORS * ITERATIONS * threads / best / 1e9


