"""TVM's guide, "Compiling and optimizing a model with the Python interface (AutoTVM)", in mlcir.

    python examples/autotvm_model.py [--model resnet_block|resnet50_v2|path.onnx]
                                     [--trials 16] [--early-stopping 8] [--tasks N]
                                     [--tuner xgb|ga|random|grid] [--log model-autotvm.log]

The model (default: a ResNet basic block, 64 channels at 56x56; ``resnet50_v2`` is the guide's
whole ResNet-50, random weights; or any ONNX file) is imported, built without tuning and
timed; its kernels are extracted as AutoTVM tasks (each kernel's default design space seen as
a config space), each task is tuned with its own tuner, the records go to one log, and the
model is built again inside ``apply_history_best`` — with each kernel's best record — checked
against the untuned build and timed. docs/autotvm.md is the guide.
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

import mlcir
from mlcir import autotvm
from mlcir.frontend import from_onnx
from mlcir.testing import onnx_models, whole_models

TARGET = "llvm -threads=1"
TUNERS = {"xgb": lambda t: autotvm.tuner.XGBTuner(t, plan_size=8, loss_type="rank"),
          "ga": lambda t: autotvm.tuner.GATuner(t, pop_size=8),
          "random": autotvm.tuner.RandomTuner, "grid": autotvm.tuner.GridSearchTuner}


def load(name: str) -> tuple[object, dict[str, np.ndarray]]:
    """The model and its inputs."""
    if name == "resnet_block":
        return (onnx_models.resnet_block(channels=64, hw=56),
                onnx_models.resnet_block_inputs(channels=64, hw=56))
    if name == "resnet50_v2":
        model = whole_models.resnet50_v2()
        return model, whole_models.model_inputs(model)
    import onnx

    model = onnx.load(name)
    rng = np.random.default_rng(0)
    inputs = {}
    for value in model.graph.input:
        dims = [d.dim_value or 1 for d in value.type.tensor_type.shape.dim]
        inputs[value.name] = rng.standard_normal(dims).astype(np.float32)
    return model, inputs


def median_ms(ex: mlcir.Executable, inputs: dict[str, np.ndarray], runs: int = 10) -> float:
    args = list(inputs.values())
    ex.main(*args)
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        ex.main(*args)
        times.append(time.perf_counter() - start)
    return float(np.median(times)) * 1e3


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="resnet_block")
    parser.add_argument("--trials", type=int, default=16, help="trials per task")
    parser.add_argument("--early-stopping", type=int, default=8)
    parser.add_argument("--tasks", type=int, default=None, help="tune only the N heaviest")
    parser.add_argument("--tuner", choices=sorted(TUNERS), default="xgb")
    parser.add_argument("--log", default="model-autotvm.log")
    args = parser.parse_args(argv)

    onnx_model, inputs = load(args.model)
    model = from_onnx(onnx_model)
    untuned = mlcir.build(model, target=TARGET)
    print(f"untuned: {median_ms(untuned, inputs):.3f} ms")

    tasks = autotvm.task.extract_from_program(model, target=TARGET)[:args.tasks]
    if os.path.exists(args.log):
        os.remove(args.log)
    option = autotvm.measure_option(builder=autotvm.LocalBuilder(timeout=60),
                                    runner=autotvm.LocalRunner(number=3, repeat=3, timeout=60))
    for i, task in enumerate(tasks):
        prefix = f"[Task {i + 1:2d}/{len(tasks):2d} {task.label}] "
        tuner = TUNERS[args.tuner](task)
        trials = min(args.trials, len(task.config_space))
        tuner.tune(n_trial=trials, early_stopping=args.early_stopping, measure_option=option,
                   callbacks=[autotvm.callback.progress_bar(trials, prefix=prefix),
                              autotvm.callback.log_to_file(args.log)])

    with autotvm.apply_history_best(args.log):
        tuned = mlcir.build(model, target=TARGET)
    got = tuned.main(*inputs.values())
    want = untuned.main(*inputs.values())
    np.testing.assert_allclose(got, want, rtol=1e-3, atol=1e-4)
    print(f"tuned:   {median_ms(tuned, inputs):.3f} ms (outputs checked against the untuned "
          "build)")


if __name__ == "__main__":
    main()
