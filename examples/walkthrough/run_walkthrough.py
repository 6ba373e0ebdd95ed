"""TVM's "Compiling and Optimizing a Model with TVMC", step by step with mlcir
(docs/walkthrough.md): compile, run, read the predictions, tune, compile with the records,
and compare the latency before and after.

    python examples/walkthrough/run_walkthrough.py [resnet50-v2-7.onnx] [--trials 100]
        [--size 224] [--work-dir walkthrough] [--profile]

Without a model it builds a small ResNet v2 in the zoo's style (opset 7, IR version 3, input
``data``; ``mlcir.testing.onnx_models.zoo_resnet_v2``) so the whole walk runs in about a
minute. Every step is the ``mlcir`` command a user types, printed before it runs.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def mlcir_command() -> list[str]:
    """The ``mlcir`` command of this Python (its script beside the interpreter)."""
    script = Path(sys.executable).with_name("mlcir")
    if script.exists():
        return [str(script)]
    found = shutil.which("mlcir")
    if found:
        return [found]
    return [sys.executable, "-c", "import sys; from mlcir.cli import main; sys.exit(main())"]


def step(title: str, args: list[str], cwd: Path) -> str:
    """Run one command as the guide shows it; its output is printed and returned."""
    shown = " ".join(Path(a).name if i == 0 else str(a) for i, a in enumerate(args))
    print(f"\n== {title}\n$ {shown}", flush=True)
    result = subprocess.run(args, cwd=cwd, capture_output=True, text=True)
    output = result.stdout + result.stderr
    print(output.rstrip())
    if result.returncode != 0:
        raise SystemExit(f"walkthrough: step '{title}' failed (exit {result.returncode})")
    return output


def median_ms(output: str) -> float:
    """The median of `mlcir run --print-time`'s summary table, in milliseconds."""
    lines = output.splitlines()
    for i, line in enumerate(lines[:-1]):
        columns = re.findall(r"(\w+) \((\w+)\)", line)
        if any(name == "median" for name, _ in columns):
            values = lines[i + 1].split()
            k = [name for name, _ in columns].index("median")
            unit = columns[k][1]
            return float(values[k]) * {"s": 1e3, "ms": 1.0, "us": 1e-3}[unit]
    raise SystemExit("walkthrough: no timing in the output of `mlcir run --print-time`")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("model", nargs="?", help="an ONNX model (default: a small zoo-style "
                                                 "ResNet v2 at opset 7)")
    parser.add_argument("--image", help="an image for preprocess.py (needs Pillow)")
    parser.add_argument("--size", type=int, default=224, help="the input image's side")
    parser.add_argument("--trials", type=int, default=100)
    parser.add_argument("--work-dir", default="walkthrough")
    parser.add_argument("--labels", help="class labels, one a line (the zoo's synset.txt)")
    parser.add_argument("--profile", action="store_true",
                        help="also compile a profiling build and print where the time goes")
    args = parser.parse_args(argv)
    work = Path(args.work_dir).resolve()
    work.mkdir(parents=True, exist_ok=True)
    if args.model:
        model = Path(args.model).resolve()
    else:
        import onnx

        from mlcir.testing.onnx_models import zoo_resnet_v2

        model = work / "resnet_v2_zoo_style-7.onnx"
        onnx.save(zoo_resnet_v2(opset=7, hw=args.size, classes=100), model)
        print(f"walkthrough: no model given; wrote a zoo-style ResNet v2 to {model}")
    mlcir = mlcir_command()
    py = [sys.executable]
    step("preprocess: the input as the model wants it",
         py + [str(HERE / "preprocess.py"), *([args.image] if args.image else []),
               "-o", "imagenet_cat.npz", "--size", str(args.size)], work)
    step("compile", mlcir + ["compile", str(model), "-o", "model.mlcir"], work)
    before = step("run", mlcir + ["run", "model.mlcir", "--inputs", "imagenet_cat.npz",
                                  "--outputs", "predictions.npz", "--print-time"], work)
    labels = ["--labels", str(Path(args.labels).resolve())] if args.labels else []
    step("postprocess: the top-5 classes", py + [str(HERE / "postprocess.py"),
                                                 "predictions.npz", *labels], work)
    step("tune", mlcir + ["tune", str(model), "--trials", str(args.trials), "-o",
                          "records.json", "--work-dir", "tuning"], work)
    step("compile with the tuning records",
         mlcir + ["compile", str(model), "-o", "model_tuned.mlcir", "--tuning-records",
                  "records.json"], work)
    after = step("run the tuned model", mlcir + ["run", "model_tuned.mlcir", "--inputs",
                                                 "imagenet_cat.npz", "--outputs",
                                                 "predictions_tuned.npz", "--print-time"], work)
    step("postprocess the tuned model's predictions",
         py + [str(HERE / "postprocess.py"), "predictions_tuned.npz", *labels], work)
    if args.profile:
        step("compile a profiling build", mlcir + ["compile", str(model), "-o",
                                                   "model_profile.mlcir", "--tuning-records",
                                                   "records.json", "--profile"], work)
        step("where the time goes", mlcir + ["run", "model_profile.mlcir", "--inputs",
                                             "imagenet_cat.npz", "--profile", "trace.json"],
             work)
    untuned, tuned = median_ms(before), median_ms(after)
    print(f"\nlatency (median): untuned {untuned:.3f} ms, tuned {tuned:.3f} ms "
          f"({untuned / tuned:.2f}x)")
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(main())
