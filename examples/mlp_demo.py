"""The MLC course's MLP in mlcir: built three ways, run, and timed next to numpy.

    python examples/mlp_demo.py

Builds x[1,784] -> linear 128 -> relu -> linear 10 from the graph dialect as (1) compiled
kernels, (2) library calls (Python functions `env.linear`/`env.relu`), (3) the course's
mixture (a hand-written loop-level kernel plus library calls); also (4) compiled with the
weights bound as constants. Prints each variant's prediction and latency next to numpy's,
timed in turns in this process: ``ex.main(...)`` against the numpy function (both as a user
calls them), and beside it the compiled code alone (a prepared call: arguments packed once,
output reused). numpy runs with its best BLAS kernel, printed first.
"""

from __future__ import annotations

import os
import time

for _name in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE"):  # before numpy loads (MLIR notes)
    os.environ.pop(_name, None)

import numpy as np  # noqa: E402

import mlcir  # noqa: E402
from mlcir.passes.bind_params import bind_params  # noqa: E402
from mlcir.testing import blas, mlp, timing  # noqa: E402


def main() -> None:
    mlp.register_library()
    params = mlp.random_params(seed=0)
    x = np.random.default_rng(1).standard_normal((1, 784)).astype(np.float32)
    ref = mlp.reference(x, params)
    weights = (params["w0"], params["b0"], params["w1"], params["b1"])
    print(f"numpy BLAS: {blas.describe()}")
    print(f"numpy reference: prediction {int(ref.argmax())}")
    print(f"{'variant':<16} {'prediction':>10} {'max rel err':>12} {'build (s)':>10} "
          f"{'numpy us':>9} {'main us':>8} {'vs numpy':>9} {'compiled code us':>17}")
    for variant in (*mlp.VARIANTS, "bound-params"):
        start = time.perf_counter()
        module = mlp.build_module("compiled" if variant == "bound-params" else variant)
        args: tuple = (x, *weights)
        if variant == "bound-params":
            with module.context:
                bind_params(module, params)
            args = (x,)
        ex = mlcir.build(module)
        build_s = time.perf_counter() - start
        y = ex.main(*args)
        err = float(np.abs(y - ref).max() / np.abs(ref).max())
        call, prepared = timing.mlcir_calls(ex["main"], *args)
        t = timing.interleaved({"numpy": lambda: mlp.reference(x, params), "main": call,
                                "prepared": prepared}, rounds=7)
        print(f"{variant:<16} {int(y.argmax()):>10} {err:>12.2e} {build_s:>10.2f} "
              f"{t['numpy'] * 1e6:>9.1f} {t['main'] * 1e6:>8.1f} {t['numpy'] / t['main']:>8.2f}x "
              f"{t['prepared'] * 1e6:>17.1f}")
        assert err < 1e-5, f"{variant} differs from numpy"
    print("vs numpy: numpy's time / ex.main's (above 1: mlcir is faster), timed in turns; "
          "compiled code: the prepared call, which skips argument checks and output allocation")


if __name__ == "__main__":
    main()
