"""Benchmark: a packed matmul against a hand-written C micro-kernel of the same shape.

    python bench/c_microkernel.py [--rows 64] [--rounds 3]

How far is mlcir's packed matmul (``M x 768 x 3072``, the weight packed into panels of 32
columns, bench/layouts.py's case) from the best this micro-kernel structure gives on the
machine? The same loop nest written in C with AVX-512 intrinsics — for each panel, for each
8-row tile, 16 accumulators (8 rows x 2 vectors) over the whole K, one broadcast of the left
operand per row and ``k`` — compiled by the system's ``cc -O3 -march=native`` and called
through ctypes, timed in turns in this process with mlcir's prepared call (compiled code),
onnxruntime's bound call and bench/peak.py's FMA peak. Needs ``cc`` and an AVX-512 CPU; says
so and stops otherwise.
"""

from __future__ import annotations

import argparse
import ctypes
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np
from onnx import numpy_helper

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import layouts  # noqa: E402
import peak  # noqa: E402

import mlcir  # noqa: E402
from mlcir.frontend import from_onnx  # noqa: E402
from mlcir.runtime.memref import aligned_array, aligned_empty  # noqa: E402
from mlcir.targets.cpu.facts import target_facts  # noqa: E402
from mlcir.testing import timing  # noqa: E402

K, N, PANEL = 768, 3072, 32

SOURCE = r"""
#include <immintrin.h>
void packed_matmul(const float *a, const float *b, float *c, int m) {
  for (int p = 0; p < %(N)d / 32; p++) {
    const float *panel = b + (long)p * %(K)d * 32;
    for (int i = 0; i < m; i += 8) {
      __m512 acc[8][2];
      for (int r = 0; r < 8; r++) acc[r][0] = acc[r][1] = _mm512_setzero_ps();
      const float *rows = a + (long)i * %(K)d;
      for (int k = 0; k < %(K)d; k++) {
        __m512 b0 = _mm512_load_ps(panel + k * 32), b1 = _mm512_load_ps(panel + k * 32 + 16);
        #pragma GCC unroll 8
        for (int r = 0; r < 8; r++) {
          __m512 x = _mm512_set1_ps(rows[r * %(K)d + k]);
          acc[r][0] = _mm512_fmadd_ps(x, b0, acc[r][0]);
          acc[r][1] = _mm512_fmadd_ps(x, b1, acc[r][1]);
        }
      }
      for (int r = 0; r < 8; r++) {
        _mm512_storeu_ps(c + (long)(i + r) * %(N)d + p * 32, acc[r][0]);
        _mm512_storeu_ps(c + (long)(i + r) * %(N)d + p * 32 + 16, acc[r][1]);
      }
    }
  }
}
""" % {"K": K, "N": N}


def compile_kernel(directory: str) -> ctypes.CDLL:
    """The C kernel as a shared library (``cc -O3 -march=native``)."""
    source = os.path.join(directory, "packed_matmul.c")
    library = os.path.join(directory, "packed_matmul.so")
    with open(source, "w") as f:
        f.write(SOURCE)
    subprocess.run(["cc", "-O3", "-march=native", "-shared", "-fPIC", "-o", library, source],
                   check=True)
    return ctypes.CDLL(library)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=64, help="M, a multiple of 8")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved timing runs")
    args = parser.parse_args()
    if shutil.which("cc") is None or target_facts("llvm").isa != "avx512":
        sys.exit("needs a C compiler (cc) and an AVX-512 CPU")
    model, inputs = layouts.matmul(args.rows, K, N)
    weight = numpy_helper.to_array(model.graph.initializer[0])
    x = aligned_array(inputs["x"])
    panels = aligned_array(weight.reshape(K, N // PANEL, PANEL).transpose(1, 0, 2))
    out = aligned_empty((args.rows, N), np.float32)
    with tempfile.TemporaryDirectory() as directory:
        lib = compile_kernel(directory)
        pointers = [arr.ctypes.data_as(ctypes.c_void_p) for arr in (x, panels, out)]

        def c_call() -> None:
            lib.packed_matmul(*pointers, ctypes.c_int(args.rows))

        c_call()
        np.testing.assert_allclose(out, x @ weight, rtol=1e-3, atol=1e-3)
        ex = mlcir.build(from_onnx(model), "llvm -threads=1")
        np.testing.assert_allclose(ex.main(**inputs), x @ weight, rtol=1e-3, atol=1e-3)
        _, prepared = timing.mlcir_calls(ex["main"], inputs["x"])
        _, bound = timing.onnxruntime_calls(timing.onnxruntime_session(model, 1), inputs)
        flops = 2.0 * args.rows * K * N
        top = peak.peak_gflops(1)
        print(f"matmul {args.rows} x {K} x {N}, one thread; FMA peak {top:.1f} GFLOPS")
        print("| run | C kernel us | mlcir us | onnxruntime us | C %peak | mlcir %peak | "
              "ort %peak |")
        print("|---|---|---|---|---|---|---|")
        for run in range(args.rounds):
            s = timing.interleaved({"c": c_call, "mlcir": prepared, "ort": bound}, rounds=7)
            pct = {k: 100 * flops / v / 1e9 / top for k, v in s.items()}
            print(f"| {run + 1} | {s['c'] * 1e6:.0f} | {s['mlcir'] * 1e6:.0f} | "
                  f"{s['ort'] * 1e6:.0f} | {pct['c']:.0f}% | {pct['mlcir']:.0f}% | "
                  f"{pct['ort']:.0f}% |", flush=True)


if __name__ == "__main__":
    main()
