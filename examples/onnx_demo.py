"""The main demo: a trained ONNX model imported, compiled, tuned briefly, run and timed.

    python examples/onnx_demo.py [--trials N] [--work-dir DIR]

The model is ``examples/models/digits_mlp.onnx`` (an MLP trained on scikit-learn's 8x8 digits,
see ``examples/models/train_digits_mlp.py``); the 360 held-out images are
``examples/models/digits_test.npz``. The demo

1. imports the ONNX file into the graph dialect (``mlcir.frontend.from_onnx``),
2. compiles it untuned for the host CPU and checks every output against onnxruntime,
3. tunes its kernels briefly (``mlcir.tune.tune_module``, a small trial budget),
4. compiles again with the tuning records, saves the executable and loads it back,
5. prints predictions, the accuracy on the test images, and the latency of one image next to
   onnxruntime's (single thread, timed in turns in the same process): as a user calls each,
   ``ex.main(x)`` against ``session.run(None, feeds)``, and, labelled apart, the compiled code
   alone (a prepared call against ``run_with_iobinding`` on pre-bound buffers).
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

for _name in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE"):  # before numpy loads (MLIR notes)
    os.environ.pop(_name, None)

import numpy as np  # noqa: E402

import mlcir  # noqa: E402
from mlcir.frontend import from_onnx  # noqa: E402
from mlcir.testing import timing  # noqa: E402

MODELS = Path(__file__).resolve().parent / "models"


def classify(run, images: np.ndarray) -> np.ndarray:
    """Probabilities for every image, one call per image (the model's batch is 1)."""
    return np.concatenate([run(image[None, :]) for image in images])


def tune_save_and_load(module, work_dir: Path, trials: int):
    """Tune into ``work_dir``, build with the records, save and load back: the loaded model and
    the tuning time. The temporary folder of a run without ``--work-dir`` goes away after."""
    start = time.perf_counter()
    print(f"tuning {trials} trials into {work_dir} ...")
    records = mlcir.tune.tune_module(module, target="llvm", work_dir=work_dir,
                                     max_trials_global=trials, num_trials_per_iter=8, verbose=0)
    tune_s = time.perf_counter() - start
    tuned = mlcir.build(module, target="llvm", records=records)
    saved = work_dir / "digits_mlp.mlcir"
    tuned.save(saved)
    return mlcir.load(saved), tune_s


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--trials", type=int, default=48, help="tuning trials in all")
    parser.add_argument("--work-dir", type=Path, default=None,
                        help="tuning database folder (default: a temporary folder)")
    args = parser.parse_args()

    model_path = MODELS / "digits_mlp.onnx"
    data = np.load(MODELS / "digits_test.npz")
    images, labels = data["images"], data["labels"]
    print(f"model: {model_path.name}; {len(images)} test images of 8x8 digits")

    start = time.perf_counter()
    module = from_onnx(model_path)
    import_s = time.perf_counter() - start
    with module.context:
        ops = [op.name for op in module.body.operations[-1].regions[0].blocks[0].operations]
    print(f"imported in {import_s:.2f} s: {', '.join(ops)}")

    session = timing.onnxruntime_session(model_path, threads=1)
    ort_run = lambda x: session.run(None, {"image": x})[0]  # noqa: E731
    expected = classify(ort_run, images)

    start = time.perf_counter()
    untuned = mlcir.build(module, target="llvm")
    build_s = time.perf_counter() - start
    print(f"compiled (untuned) in {build_s:.2f} s")
    got = classify(lambda x: untuned.main(x), images)
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-6)

    with tempfile.TemporaryDirectory(prefix="mlcir-demo-") as scratch:
        loaded, tune_s = tune_save_and_load(module, args.work_dir or Path(scratch), args.trials)
    print(f"tuned in {tune_s:.1f} s; saved and loaded back")

    probabilities = classify(lambda x: loaded.main(x), images)
    np.testing.assert_allclose(probabilities, expected, rtol=1e-4, atol=1e-6)
    predictions = probabilities.argmax(axis=1)
    accuracy = float((predictions == labels).mean())
    print(f"first 12 predictions: {' '.join(map(str, predictions[:12]))}")
    print(f"first 12 labels:      {' '.join(map(str, labels[:12]))}")
    print(f"accuracy on {len(images)} test images: {accuracy:.1%} "
          f"(onnxruntime: {float((expected.argmax(1) == labels).mean()):.1%})")

    x = images[:1]
    loaded.set_num_threads(1)
    ort_run, ort_bound = timing.onnxruntime_calls(session, {"image": x})
    calls = {"onnxruntime": (ort_run, ort_bound)}
    for name, ex in (("mlcir untuned", untuned), ("mlcir tuned (saved, loaded)", loaded)):
        calls[name] = timing.mlcir_calls(ex["main"], x)
    as_called = timing.interleaved({name: pair[0] for name, pair in calls.items()}, rounds=7)
    compiled = timing.interleaved({name: pair[1] for name, pair in calls.items()}, rounds=7)
    print("\nlatency of one image, 1 thread, median us ('x': onnxruntime time / this one)")
    print(f"{'':<30} {'as called':>18} {'compiled code':>22}")
    for name in calls:
        print(f"{name:<30} {as_called[name] * 1e6:>9.1f} "
              f"{as_called['onnxruntime'] / as_called[name]:>7.2f}x "
              f"{compiled[name] * 1e6:>13.1f} {compiled['onnxruntime'] / compiled[name]:>7.2f}x")
    print("as called: ex.main(x) against session.run(None, feeds); compiled code: a prepared "
          "call (arguments packed once, output reused) against run_with_iobinding on pre-bound "
          "buffers")


if __name__ == "__main__":
    main()
