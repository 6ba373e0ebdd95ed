"""Benchmark (issue 14): the machine's peak f32 FMA rate, the yardstick of the GFLOPS columns.

    python bench/peak.py [--threads 1,2]

The measurement itself is :mod:`mlcir.peak` (the profiler's % of peak uses it too).

One kernel of independent vector FMAs, compiled by mlcir for the host (``llvm``): a loop
whose body updates ``ACCUMULATORS`` accumulators of the target's vector width
(:func:`mlcir.targets.cpu.facts.target_facts`: 16 f32 lanes on AVX-512, 8 on AVX2), each
``acc = fma(acc, a, b)`` with ``a``, ``b`` loop invariants, so nothing but the FMA units limits
it (enough independent chains to cover their latency). With ``threads`` > 1 the same loop runs
once per thread in an ``scf.forall``. Peak GFLOPS = 2 x lanes x accumulators x iterations x
threads / seconds, the minimum of several timings. bench/models.py and bench/windows.py divide
their models' and ops' GFLOPS by it.
"""

from __future__ import annotations

import argparse
import os
import sys


sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

# peak_gflops is imported from this module by the other benchmarks.
from mlcir.peak import ACCUMULATORS, peak_gflops  # noqa: E402
from mlcir.targets.cpu.facts import target_facts  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--threads", default="1,2", help="comma-separated thread counts")
    args = parser.parse_args()
    lanes = target_facts("llvm").lanes(4)
    for threads in (int(t) for t in args.threads.split(",")):
        print(f"{threads} thread(s): peak {peak_gflops(threads):.1f} GFLOPS "
              f"(f32 FMAs, {lanes} lanes, {ACCUMULATORS} accumulators)")


if __name__ == "__main__":
    main()
