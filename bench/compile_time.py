"""Benchmark (issue 21 item 5): how long a whole model takes to compile, and how much memory.

    python bench/compile_time.py [--models resnet50,bert_base] [--bert-layers 4]
                                 [--target llvm] [--profile PATH] [--pass-timing] [--no-check]

Models, built with :mod:`onnx.helper` (random weights, fixed seed; no torch needed):

- ``resnet50``: torchvision's ResNet-50 as ``torch.onnx.export`` writes it in eval mode
  (batch normalisation folded into the convolutions' weights and biases, 1x3x224x224 in,
  1000 logits out, opset 17, 25.6 M parameters);
- ``bert_base``: a BERT-base-sized stack of post-LayerNorm encoder layers (hidden 768,
  12 heads, intermediate 3072, exact-Erf GELU, 1x128 tokens, an attention mask),
  ``--bert-layers`` of them;

both from mlcir/testing/whole_models.py.

For each model, in separate child processes so that each peak is its own:

- ``mlcir compile model.onnx -o model.mlcir`` exactly as a user runs it: wall time, CPU time
  (user + system, the child and everything it waited for: the linker) and peak resident
  memory (``os.wait4``'s ``ru_maxrss``);
- ``mlcir.build(from_onnx(model))`` until its function is looked up (the engine compiles
  then), with the same three figures;
- the command's steps one by one in one process (ONNX import, graph passes: fold, fuse, lower
  to kernels; scheduling: default schedules applied; lowering to the LLVM dialect; LLVM code
  generation; link and write), each with its wall and CPU time and the peak memory so far (``--profile PATH`` writes a cProfile of it for ``python -m pstats``,
  ``--pass-timing`` prints MLIR's time per pass of the lowering);
- the saved model's outputs against onnxruntime (unless ``--no-check``).

The ONNX files go to a temporary folder. Wall times on a loaded machine are inflated; CPU
time and peak memory are the figures that load affects least.
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import importlib.util
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Iterator

import numpy as np
import onnx

ROOT = Path(__file__).resolve().parent.parent


def _whole_models() -> Any:
    """mlcir/testing/whole_models.py (numpy and onnx only) loaded by its path: importing it as
    ``mlcir.testing...`` would import mlcir, whose start-up the phases time."""
    spec = importlib.util.spec_from_file_location(
        "whole_models", ROOT / "mlcir" / "testing" / "whole_models.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_MODELS = _whole_models()
resnet50_v1, bert_base, model_inputs = (_MODELS.resnet50_v1, _MODELS.bert_base,
                                        _MODELS.model_inputs)
# -- measuring ---------------------------------------------------------------------------------

def run_measured(cmd: list[str]) -> tuple[dict[str, float], str]:
    """Run ``cmd``; its wall time, CPU time (user + system, with the processes it waited for:
    the linker) and peak resident memory in MB (``os.wait4``: this child alone), and its
    stdout."""
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=out, stderr=err, text=True)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        if proc.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd)} failed ({proc.returncode}):\n"
                               f"{err.read()[-3000:]}")
        return {"wall": wall, "cpu": usage.ru_utime + usage.ru_stime,
                "rss": usage.ru_maxrss / 1024}, out.read()


class _Phases:
    """Wall time, CPU time and the peak resident memory so far, per phase of one process."""

    def __init__(self) -> None:
        self.rows: list[dict[str, Any]] = []

    @contextlib.contextmanager
    def __call__(self, name: str) -> Iterator[None]:
        wall, cpu = time.perf_counter(), time.process_time()
        yield
        self.rows.append({"phase": name, "wall": time.perf_counter() - wall,
                          "cpu": time.process_time() - cpu,
                          "rss": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024})


def compile_in_phases(onnx_path: str, out_path: str, target_text: str,
                      pass_timing: bool) -> dict[str, Any]:
    """What ``mlcir compile`` does (``mlcir.driver.compile`` with the ``llvm`` backend's
    ``compile_to_file``), step by step with a timer around each."""
    timer = _Phases()
    with timer("start-up (import mlcir)"):
        from mlcir.driver import staged_module
        from mlcir.frontend import from_onnx
        from mlcir.passes import run_pipeline
        from mlcir.runtime.model_file import metadata, write_model
        from mlcir.target import Target
        from mlcir.targets import backend_for, build_plan
        from mlcir.targets.kernels import kernel_functions
    target = Target.parse(target_text)
    with timer("import ONNX"):
        module = from_onnx(onnx_path)
    # The build's own stages (mlcir/targets/stages.py), timed as they pass.
    phases = {"kernels": "graph passes (fold, fuse, to kernels)",
              "scheduled": "scheduling (default schedules)"}
    started = [time.perf_counter(), time.process_time()]

    def passed(stage: str, _module: Any) -> None:
        if stage in phases:
            timer.rows.append({"phase": phases[stage], "wall": time.perf_counter() - started[0],
                               "cpu": time.process_time() - started[1],
                               "rss": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024})
        started[:] = [time.perf_counter(), time.process_time()]

    staged = staged_module(module, target, until="scheduled", on_stage=passed)
    prepared, work = staged.prepared, staged.prepared.work
    kernels = len(kernel_functions(work))
    with timer("lowering to the LLVM dialect"), work.context:
        run_pipeline(work, build_plan(target).codegen, timing=pass_timing)
    backend = backend_for(target)
    with timer("LLVM code generation"):
        executable = backend.compile(prepared, target)
        executable[next(iter(prepared.signatures))]
    with timer("link and write the model file"):
        library = backend.saved_library(executable)
        write_model(Path(out_path), metadata(prepared.signatures, prepared.libraries, target,
                                             library), library.data)
    return {"kernels": kernels, "phases": timer.rows}


def build_and_look_up(onnx_path: str, target_text: str) -> None:
    """``mlcir.build`` until the model can be called (the engine compiles on first lookup)."""
    import mlcir
    from mlcir.frontend import from_onnx

    executable = mlcir.build(from_onnx(onnx_path), target_text)
    executable[next(iter(executable.signatures))]


def check(onnx_path: str, model_path: str) -> str:
    """The saved model's largest error against onnxruntime, relative to the largest output."""
    try:
        import onnxruntime
    except ImportError:
        return "not checked (no onnxruntime)"
    import mlcir

    inputs = model_inputs(onnx.load(onnx_path, load_external_data=False))
    session = onnxruntime.InferenceSession(onnx_path, providers=["CPUExecutionProvider"])
    expected = session.run(None, inputs)
    got = mlcir.load(model_path).main(**inputs)
    got = got if isinstance(got, (tuple, list)) else [got]
    worst = max(float(np.abs(g - e).max() / max(np.abs(e).max(), 1e-30))
                for g, e in zip(got, expected))
    return f"max |error| / max |expected| = {worst:.1e} against onnxruntime"


# -- the command -------------------------------------------------------------------------------

MODELS = ("resnet50", "bert_base")


def _row(name: str, m: dict[str, float]) -> str:
    return f"  {name:<40} {m['wall']:8.1f} {m['cpu']:8.1f} {m['rss']:9.0f}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", default=",".join(MODELS),
                        help=f"comma-separated, of {', '.join(MODELS)}")
    parser.add_argument("--bert-layers", type=int, default=4)
    parser.add_argument("--target", default="llvm")
    parser.add_argument("--profile", metavar="PATH",
                        help="write a cProfile of the phased compile to PATH.<model>.prof")
    parser.add_argument("--pass-timing", action="store_true",
                        help="print MLIR's pass timing of the lowering")
    parser.add_argument("--no-check", action="store_true",
                        help="skip comparing the compiled model with onnxruntime")
    # What the child processes do: the parent stays small, because a child's peak memory
    # (ru_maxrss) starts from its parent's at the fork.
    parser.add_argument("--write", nargs=2, metavar=("MODEL", "ONNX"), help=argparse.SUPPRESS)
    parser.add_argument("--phases", nargs=2, metavar=("ONNX", "OUT"), help=argparse.SUPPRESS)
    parser.add_argument("--build", metavar="ONNX", help=argparse.SUPPRESS)
    parser.add_argument("--check", nargs=2, metavar=("ONNX", "OUT"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.write:
        name, path = args.write
        model = resnet50_v1() if name == "resnet50" else bert_base(args.bert_layers)
        onnx.save(model, path)
        print(sum(int(np.prod(t.dims)) for t in model.graph.initializer))
        return 0
    if args.check:
        print(check(*args.check))
        return 0
    if args.phases:
        profiler = cProfile.Profile() if args.profile else None
        if profiler:
            profiler.enable()
        result = compile_in_phases(*args.phases, args.target, args.pass_timing)
        if profiler:
            profiler.disable()
            profiler.dump_stats(args.profile)
        print(json.dumps(result))
        return 0
    if args.build:
        build_and_look_up(args.build, args.target)
        return 0

    mlcir_cli = Path(sys.executable).with_name("mlcir")
    cli = [str(mlcir_cli)] if mlcir_cli.exists() else [sys.executable, "-m", "mlcir.cli"]
    me = [sys.executable, str(Path(__file__).resolve())]
    print(f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} (wall times grow with "
          "load; CPU time and peak memory much less)")
    with tempfile.TemporaryDirectory(prefix="mlcir-compile-time-") as tmp:
        for name in args.models.split(","):
            if name not in MODELS:
                parser.error(f"unknown model {name!r}; one of {', '.join(MODELS)}")
            onnx_path, out_path = Path(tmp) / f"{name}.onnx", Path(tmp) / f"{name}.mlcir"
            _, out = run_measured(me + ["--write", name, str(onnx_path),
                                        "--bert-layers", str(args.bert_layers)])
            params = int(out)
            label = name + (f" ({args.bert_layers} layers)" if name == "bert_base" else "")
            compiled, _ = run_measured(cli + ["compile", str(onnx_path), "-o", str(out_path),
                                              "--target", args.target, "--quiet"])
            built, _ = run_measured(me + ["--build", str(onnx_path), "--target", args.target])
            extra = ["--profile", f"{args.profile}.{name}.prof"] if args.profile else []
            extra += ["--pass-timing"] if args.pass_timing else []
            phased, out = run_measured(me + ["--phases", str(onnx_path), str(out_path) + ".2",
                                             "--target", args.target] + extra)
            detail = json.loads(out)
            print(f"\n{label}: {params / 1e6:.1f} M parameters, {detail['kernels']} distinct "
                  f"kernels, target {args.target}")
            print(f"  {'':<40} {'wall s':>8} {'CPU s':>8} {'peak MB':>9}")
            print(_row("mlcir compile (the command)", compiled))
            print(_row("mlcir.build + first lookup", built))
            print(_row("the command's steps, timed one by one", phased))
            for row in detail["phases"]:
                print(f"    {row['phase']:<38} {row['wall']:8.2f} {row['cpu']:8.2f} "
                      f"{row['rss']:9.0f}")
            if not args.no_check:
                _, out = run_measured(me + ["--check", str(onnx_path), str(out_path)])
                print(f"  {out.strip()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
