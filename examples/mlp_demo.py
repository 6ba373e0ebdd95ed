"""The MLC course's MLP in mlcir: built three ways, run, and timed next to numpy.

    python examples/mlp_demo.py

Builds x[1,784] -> linear 128 -> relu -> linear 10 from the graph dialect as (1) compiled
kernels, (2) library calls (Python functions `env.linear`/`env.relu`), (3) the course's
mixture (a hand-written loop-level kernel plus library calls); also (4) compiled with the
weights bound as constants. Prints each variant's prediction and latency next to numpy.
"""

from __future__ import annotations

import time

import numpy as np

import mlcir
from mlcir.passes.bind_params import bind_params
from mlcir.testing import mlp


def main() -> None:
    mlp.register_library()
    params = mlp.random_params(seed=0)
    x = np.random.default_rng(1).standard_normal((1, 784)).astype(np.float32)
    ref = mlp.reference(x, params)
    weights = (params["w0"], params["b0"], params["w1"], params["b1"])
    numpy_time = mlcir.runtime.time_calls(lambda: mlp.reference(x, params), number=200, repeat=5)
    print(f"numpy reference: prediction {int(ref.argmax())}, "
          f"{numpy_time.median * 1e6:8.1f} us per call")
    print(f"{'variant':<16} {'prediction':>10} {'max rel err':>12} {'build (s)':>10} "
          f"{'latency (us)':>13} {'vs numpy':>9}")
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
        t = ex.time_evaluator("main", number=200, repeat=5, warmup=5)(*args)
        print(f"{variant:<16} {int(y.argmax()):>10} {err:>12.2e} {build_s:>10.2f} "
              f"{t.median * 1e6:>13.1f} {numpy_time.median / t.median:>8.2f}x")
        assert err < 1e-5, f"{variant} differs from numpy"


if __name__ == "__main__":
    main()
