"""Benchmark (issue 39): a tuned build against the untuned one in the whole model, with every
tuned record and with the records the confirmation kept (mlcir.confirm_in_model).

    mlcir tune model.onnx -o records.json --trials 400 --work-dir work    # confirms at the end
    cp -r work work_all && rm work_all/database/confirmations.json
    python bench/tuned_in_model.py model.onnx work_all work [--rounds 9] [--threads 1]

onnxruntime, the untuned build, the build with every record (``work_all``: the database with
its confirmations removed) and the build with the confirmed records (``work``), as called,
timed in turns in one process (mlcir.testing.timing.interleaved), medians of ``--rounds``.
Inputs: mlcir.testing.whole_models.model_inputs (seeded).
"""

from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import onnx  # noqa: E402

import mlcir  # noqa: E402
from mlcir.frontend import from_onnx  # noqa: E402
from mlcir.testing import timing, whole_models  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model")
    parser.add_argument("every_record", help="work dir (or records) with every tuned record")
    parser.add_argument("confirmed", help="work dir (or records) after the confirmation")
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args(argv)
    model = onnx.load(args.model)
    inputs = whole_models.model_inputs(model)
    target = f"llvm -threads={args.threads}"
    session = timing.onnxruntime_session(model, args.threads)
    calls = {"onnxruntime": lambda: session.run(None, inputs)}
    for name, records in (("untuned", None), ("tuned, every record", args.every_record),
                          ("tuned, confirmed", args.confirmed)):
        function = mlcir.build(from_onnx(model), target, records=records).main
        function(**inputs)
        calls[name] = (lambda f: lambda: f(**inputs))(function)
    seconds = timing.interleaved(calls, rounds=args.rounds, budget_s=0.0, threads=args.threads)
    for name, value in seconds.items():
        print(f"{name:22s} {value * 1e3:8.2f} ms  onnxruntime/this "
              f"{seconds['onnxruntime'] / value:.3f}  untuned/this {seconds['untuned'] / value:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
