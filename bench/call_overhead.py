"""Benchmark (issue 15): what one call from Python costs, next to onnxruntime and numpy.

    python bench/call_overhead.py [--op Add] [--size 4] [--trials 0]

1. **Call overhead**: a one-op ONNX model (``Add`` of two float32 vectors of ``--size``
   elements, or ``Relu`` of one) compiled by mlcir, called as a user calls it,
   ``ex.main(*inputs)``, against onnxruntime's ``session.run(None, feeds)`` on the same model
   and the numpy ufunc; ``ex.main(*inputs, out=...)`` and the prepared call (compiled code
   only) beside them. The work is a few nanoseconds, so the times are the call paths' own
   cost. Target: mlcir's call at most 0.6x onnxruntime's.
2. **The MLP at batch 1** (mlcir.testing.onnx_models.mlp), untuned (what build gives), or tuned with
   ``--trials`` > 0: ``ex.main(x)`` against ``session.run``, one thread each.

Everything is timed in turns in this one process (mlcir.testing.timing.interleaved, median of
rounds); outputs are checked against onnxruntime first. Run it alone: other processes distort
the timings.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile

for _name in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE"):  # before numpy loads (MLIR notes)
    os.environ.pop(_name, None)

import numpy as np  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import mlcir  # noqa: E402
from mlcir.frontend import from_onnx  # noqa: E402
from mlcir.testing import onnx_models as models, timing  # noqa: E402

UFUNCS = {"Add": np.add, "Relu": lambda x: np.maximum(x, 0)}


def compare(labelled: dict[str, float], baseline: str) -> None:
    base = labelled[baseline]
    for name, seconds in labelled.items():
        print(f"  {name:<28} {seconds * 1e6:>9.2f} us   {seconds / base:>6.2f}x {baseline}")


def one_op(op: str, size: int) -> None:
    arity = 2 if op == "Add" else 1
    model = models.single_op(op, [[size]] * arity)
    inputs = models.single_op_inputs(model)
    args = list(inputs.values())
    expected = models.reference(model, inputs)["y"]
    ex = mlcir.build(from_onnx(model))
    main = ex["main"]
    np.testing.assert_allclose(ex.main(*args), expected, rtol=1e-6)
    out = np.empty_like(expected)
    ort_run, ort_bound = timing.onnxruntime_calls(timing.onnxruntime_session(model), inputs)
    _, prepared = timing.mlcir_calls(main, *args)
    ufunc = UFUNCS[op]
    seconds = timing.interleaved({
        "onnxruntime session.run": ort_run,
        "mlcir ex.main(*inputs)": lambda: ex.main(*args),
        "mlcir ex.main(..., out=)": lambda: ex.main(*args, out=out),
        f"numpy {op.lower()}": lambda: ufunc(*args),
        "mlcir prepared call": prepared,
        "onnxruntime iobinding": ort_bound,
    }, rounds=7, budget_s=0.05)
    print(f"{op} of float32[{size}] (as called; compiled-code time last, labelled):")
    compare(seconds, "onnxruntime session.run")
    ratio = seconds["mlcir ex.main(*inputs)"] / seconds["onnxruntime session.run"]
    print(f"  call overhead ratio mlcir/onnxruntime: {ratio:.2f} (target <= 0.6)")


def mlp(trials: int) -> None:
    model, inputs = models.mlp(batch=1), models.mlp_inputs(batch=1)
    module = from_onnx(model)
    records, work = None, None
    if trials > 0:
        work = tempfile.mkdtemp(prefix="mlcir-bench-calls-")
        records = mlcir.tune.tune_module(module, target="llvm -threads=1", work_dir=work,
                                         max_trials_global=trials, num_trials_per_iter=8,
                                         verbose=0)
    try:
        ex = mlcir.build(module, target="llvm -threads=1", records=records)
    finally:
        if work:
            shutil.rmtree(work, ignore_errors=True)
    args = [inputs[a.name] for a in ex["main"].signature.args]
    expected = models.reference(model, inputs)
    np.testing.assert_allclose(ex.main(*args), next(iter(expected.values())), rtol=1e-4,
                               atol=1e-5)
    ort_run, ort_bound = timing.onnxruntime_calls(timing.onnxruntime_session(model), inputs)
    main, prepared = timing.mlcir_calls(ex["main"], *args)
    seconds = timing.interleaved({
        "onnxruntime session.run": ort_run, "mlcir ex.main(x)": main,
        "mlcir prepared call": prepared, "onnxruntime iobinding": ort_bound,
    }, rounds=7, budget_s=0.05)
    kind = f"tuned, {trials} trials" if trials > 0 else "untuned"
    print(f"MLP at batch 1 ({kind}), one thread:")
    compare(seconds, "onnxruntime session.run")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--op", default="Add", choices=sorted(UFUNCS))
    parser.add_argument("--size", type=int, default=4)
    parser.add_argument("--trials", type=int, default=0,
                        help="tuning trials for the MLP (0: untuned)")
    args = parser.parse_args()
    one_op(args.op, args.size)
    mlp(args.trials)


if __name__ == "__main__":
    main()
