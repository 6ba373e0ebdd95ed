"""The ``mlcir`` command line: ``compile``, ``run``, ``tune`` (TVM's ``tvmc``), ``report`` and
``config``.

A thin face over the Python API: ``compile`` imports a model (``mlcir.frontend.from_onnx`` or
MLIR text) and compiles it into a saved model file (``mlcir.compile``: for ``cuda`` without a
GPU or driver; for ``llvm`` the same as ``mlcir.build`` + ``Executable.save``); ``run`` loads a
saved model (``mlcir.load``; one built for another machine runs here under emulation,
:mod:`mlcir.targets.cross.remote`) and runs it on inputs from an ``.npz`` file; ``tune`` tunes
a model (``mlcir.tune.tune_module``) and exports the best records to one file that ``compile
--tuning-records`` reads; ``report`` turns tuning work dirs into CSV tables, plots and a page
(``mlcir.tune.report``); ``config`` prints where the C interface is (docs/deploy.md). Every
error a user can cause is printed as ``mlcir: error: ...`` with
exit status 1; usage errors are argparse's (exit status 2). docs/cli.md has example sessions.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import sys
import tempfile
import warnings
import zipfile
from pathlib import Path
from typing import Any, Sequence

import numpy as np

STAGES = ("graph", "kernels", "scheduled", "llvm")
FILL_MODES = ("random", "zeros", "ones")
# The largest input --fill-mode makes (a declared shape can be absurd: 3.5 PiB).
FILL_LIMIT_BYTES = 16 * 2**30


class CliError(Exception):
    """A problem with the command line's input, printed as ``mlcir: error: ...``."""


# -- argument helpers --------------------------------------------------------------------------

_SHAPE_ITEM = re.compile(r"\s*,?\s*([^\s,\[\]]+?):\[([^\]]*)\]\s*")


def _dim(text: str) -> int | None | tuple[int, int]:
    """One dim of ``--input-shapes``: ``784``, ``?``/``-1`` (dynamic) or ``1..64`` (a range)."""
    if text in ("?", "-1"):
        return None
    if ".." in text:
        low, high = (int(v) for v in text.split("..", 1))
        if not 1 <= low <= high:
            raise ValueError(text)
        return (low, high)
    return int(text)


def parse_input_shapes(text: str) -> dict[str, list[Any]]:
    """``"x:[1,784] mask:[1,?]"`` (entries separated by spaces or commas; ``?`` or ``-1`` for
    a dynamic dim, ``low..high`` for a range to tune over) → ``{"x": [1, 784], "mask": [1,
    None]}`` (a range as ``(low, high)``)."""
    shapes: dict[str, list[Any]] = {}
    pos = 0
    while pos < len(text):
        match = _SHAPE_ITEM.match(text, pos)
        if not match:
            raise CliError(f"--input-shapes: cannot read {text[pos:].strip()!r}; expected "
                           "entries like 'x:[1,784]' separated by spaces")
        name, dims = match.group(1), match.group(2)
        try:
            shapes[name] = [_dim(d.strip()) for d in dims.split(",") if d.strip()]
        except ValueError:
            raise CliError(f"--input-shapes: bad dimension in '{name}:[{dims}]' (integers, "
                           "'?' for a dynamic dim, or 'low..high' for a range to tune "
                           "over)") from None
        pos = match.end()
    if not shapes:
        raise CliError("--input-shapes is empty; expected entries like 'x:[1,784]'")
    return shapes


def parse_target(text: str) -> Any:
    from mlcir.target import Target

    try:
        return Target.parse(text)
    except ValueError as error:
        raise CliError(f"bad target {text!r}: {error}") from None


def _model_format(path: Path, given: str | None) -> str:
    if given:
        return given
    suffix = path.suffix.lower()
    if suffix == ".onnx":
        return "onnx"
    if suffix == ".mlir":
        return "mlir"
    raise CliError(f"{path}: cannot tell the model format from the extension "
                   f"'{path.suffix}' (.onnx or .mlir); pass --model-format")


def import_model(path: str, model_format: str | None, input_shapes: str | None):
    """An ``ir.Module`` from an ONNX file (``mlcir.frontend.from_onnx``) or MLIR text (graph or
    loop level, or plain upstream MLIR)."""
    source = Path(path)
    if not source.is_file():
        raise CliError(f"{path}: no such file")
    fmt = _model_format(source, model_format)
    shapes = parse_input_shapes(input_shapes) if input_shapes else None
    if shapes and any(isinstance(d, tuple) for dims in shapes.values() for d in dims):
        raise CliError("--input-shapes: a range ('low..high') is for `mlcir tune` (tuning the "
                       "dynamic kernels over it); here give sizes or '?'")
    if fmt == "onnx":
        from mlcir.frontend import from_onnx

        return from_onnx(str(source), shape_dict=shapes)
    if shapes:
        raise CliError("--input-shapes applies to ONNX models; an MLIR module has its shapes")
    from mlcir.ir import make_context, parse

    try:
        text = source.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise CliError(f"{path}: not MLIR text (not UTF-8)") from None
    with make_context():
        return parse(text, source_name=str(source))


def _write_text(destination: str, text: str) -> None:
    if destination == "-":
        sys.stdout.write(text if text.endswith("\n") else text + "\n")
    else:
        Path(destination).write_text(text, encoding="utf-8")


def _asm(module: Any) -> str:
    return module.operation.get_asm(assume_verified=True)


# -- compile ---------------------------------------------------------------------------------

def cmd_compile(args: argparse.Namespace) -> int:
    import mlcir
    from mlcir.driver import split_composite

    target_text, backend = split_composite(args.target, args.backend)
    target = parse_target(target_text)
    schedule = "none" if args.no_default_schedule else "default"
    records = _records(args.tuning_records)
    if records is not None:
        keys = sorted({r.target for r in records.records()})
        if target.key not in keys:
            warnings.warn(f"--tuning-records {args.tuning_records}: no record for target "
                          f"'{target.key}' (records for: {', '.join(keys) or 'none'}); the "
                          "default schedules are used", stacklevel=2)
    module = import_model(args.model, args.model_format, args.input_shapes)
    dumps = dict((stage, path) for stage, path in (args.dump_mlir or []))
    unknown = sorted(set(dumps) - set(STAGES))
    if unknown:
        raise CliError(f"--dump-mlir: unknown stage(s) {', '.join(unknown)}; the stages are "
                       f"{', '.join(STAGES)}")

    def dump(stage: str, staged: Any) -> None:  # every stage of the build, as it passes
        stage = "llvm" if stage == "lowered" else stage
        if stage in dumps:
            _write_text(dumps[stage], _asm(staged))

    output = args.output or Path(args.model).with_suffix(".mlcir").name
    saved = mlcir.compile(module, target, output, records=records, schedule=schedule,
                          pipeline=args.pipeline, layout=args.layout, profile=args.profile,
                          on_stage=dump, backend=backend)
    if not args.quiet:
        functions = ", ".join(f"<mlcir.Function {sig.describe()}>"
                              for sig in saved.signatures.values())
        print(f"mlcir: compiled {args.model} for '{target}'{_cuda_note(saved.metadata)} into "
              f"{output}: {functions}", file=sys.stderr)
    return 0


def _cuda_note(meta: dict[str, Any]) -> str:
    """`` (PTX for sm_80; it runs on a machine with an NVIDIA GPU and its driver)`` for a cuda
    model, nothing for a CPU one."""
    cuda = meta.get("cuda")
    if not cuda:
        return ""
    kinds = {"isa": "PTX", "bin": "cubin", "fatbin": "fat binary"}
    kind = kinds.get(cuda.get("binary_format"), cuda.get("binary_format") or "no kernels")
    return f" ({kind} for {cuda['arch']}; it runs on a machine with an NVIDIA GPU and its driver)"


def _records(path: str | None) -> Any:
    if path is None:
        return None
    from mlcir.tune.apply import as_database
    from mlcir.tune.database import DatabaseError

    try:
        return as_database(path)
    except DatabaseError as error:
        raise CliError(f"--tuning-records: {error}") from None


# -- run ---------------------------------------------------------------------------------------

def _fill(spec: Any, mode: str, rng: np.random.Generator) -> np.ndarray:
    if any(d is None for d in spec.shape):
        raise CliError(f"input '{spec.name}' has the dynamic shape {spec.describe()}: give it "
                       "in --inputs (--fill-mode cannot choose its size)")
    size = int(np.prod(spec.shape, dtype=object)) * spec.dtype.itemsize
    if size > FILL_LIMIT_BYTES:
        raise CliError(f"input '{spec.name}' ({spec.describe()}) is {_bytes(size)}, more than "
                       f"--fill-mode makes (at most {_bytes(FILL_LIMIT_BYTES)}); give it in "
                       "--inputs")
    if mode == "zeros":
        return np.zeros(spec.shape, spec.dtype)
    if mode == "ones":
        return np.ones(spec.shape, spec.dtype)
    if spec.dtype.kind == "f":
        return rng.standard_normal(spec.shape).astype(spec.dtype)
    if spec.dtype.kind == "b":
        return rng.integers(0, 2, spec.shape).astype(spec.dtype)
    return rng.integers(0, 10, spec.shape).astype(spec.dtype)


def _bytes(size: int) -> str:
    for unit in ("bytes", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if size < 1024 or unit == "PiB":
            return f"{size:.4g} {unit}" if unit != "bytes" else f"{size} bytes"
        size /= 1024
    raise AssertionError("unreachable")


def _inputs(signature: Any, path: str | None, fill_mode: str | None,
            seed: int) -> list[np.ndarray]:
    given: dict[str, np.ndarray] = {}
    if path is not None:
        try:
            with open(path, "rb") as f:
                is_zip = f.read(4) == b"PK\x03\x04"
            data = np.load(path, allow_pickle=False) if is_zip else None
        except (OSError, ValueError, EOFError, zipfile.BadZipFile) as error:
            raise CliError(f"--inputs {path}: cannot read it ({error})") from None
        if not isinstance(data, np.lib.npyio.NpzFile):
            raise CliError(f"--inputs {path}: not an .npz archive of named arrays "
                           "(np.savez(path, name=array, ...))")
        with data:
            for name in data.files:
                try:
                    given[name] = data[name]
                except (OSError, ValueError) as error:
                    raise CliError(f"--inputs {path}: cannot read input '{name}' ({error}); "
                                   "inputs are plain numeric or bool arrays") from None
    names = [a.name for a in signature.args]
    unknown = sorted(set(given) - set(names))
    if unknown:
        raise CliError(f"--inputs {path}: unknown input(s) {', '.join(unknown)}; "
                       f"{signature.name}() takes {', '.join(names)}")
    missing = [n for n in names if n not in given]
    if missing and fill_mode is None:
        where = f"--inputs {path}" if path else "no --inputs given"
        raise CliError(f"{where}: missing input(s) {', '.join(missing)} (expected "
                       + ", ".join(f"{a.name}: {a.describe()}" for a in signature.args)
                       + "); pass --fill-mode random|zeros|ones to fill them")
    rng = np.random.default_rng(seed)
    return [given[a.name] if a.name in given else _fill(a, fill_mode, rng)
            for a in signature.args]


def _function(executable: Any, name: str | None) -> Any:
    names = executable.function_names
    if name is None:
        if "main" in names or len(names) != 1:
            name = "main"
        else:
            name = names[0]
    if name not in names:
        raise CliError(f"the model has no function '{name}' (functions: {', '.join(names)}); "
                       "choose one with --function")
    return executable[name]


def summarize(name: str, array: np.ndarray, top: int) -> str:
    """One output: name, dtype and shape, min/max/mean, and the top entries of a [1, N] or [N]
    output (index and value, largest first)."""
    dims = ", ".join(map(str, array.shape))
    text = f"{name}: {array.dtype.name}[{dims}]"
    if array.size and array.dtype.kind in "biuf":
        values = array.astype(np.float64)
        text += f"  min {values.min():.6g}  max {values.max():.6g}  mean {values.mean():.6g}"
        flat = array.reshape(-1) if (array.ndim == 1 or (array.ndim == 2 and array.shape[0] == 1)) \
            else None
        if top > 0 and flat is not None and flat.dtype.kind in "iuf" and flat.size > 1:
            order = np.argsort(-flat.astype(np.float64), kind="stable")[:top]
            text += f"\n  top-{len(order)}: " + ", ".join(f"{i} ({flat[i]:.6g})" for i in order)
    return text


def _check_counts(args: argparse.Namespace, minimums: dict[str, int]) -> None:
    """Refuse an option below its minimum (``--repeat 0``, ``--builders 0``) before any work."""
    for name, minimum in minimums.items():
        value = getattr(args, name)
        if value is not None and value < minimum:
            option = "--" + name.replace("_", "-")
            raise CliError(f"{option} must be at least {minimum}, got {value}")


def cmd_run(args: argparse.Namespace) -> int:
    import mlcir
    from mlcir.targets.cross.remote import foreign_model

    _check_counts(args, {"repeat": 1, "number": 1, "print_top": 0, "seed": 0, "threads": 1})

    foreign = foreign_model(args.model)
    if foreign is not None:
        return _run_foreign(args, foreign)
    executable = mlcir.load(args.model)
    if args.threads is not None:
        executable.set_num_threads(args.threads)
    function = _function(executable, args.function)
    sig = function.signature
    inputs = _inputs(sig, args.inputs, args.fill_mode, args.seed)
    result = function(*inputs)
    results = [] if result is None else [result] if not isinstance(result, tuple) else list(result)
    outputs = {spec.name: array for spec, array in zip(sig.results, results)}
    # Arguments the function writes in place (destination passing) are outputs too.
    outputs.update({spec.name: array.copy() for spec, array in zip(sig.args, inputs)
                    if spec.kind == "inout"})
    if args.print_time:
        timing = executable.time_evaluator(function.signature.name, number=args.number,
                                           repeat=args.repeat)(*inputs)
        print(timing)
    if args.profile:
        _print_profile(args, executable, function, inputs)
    for name, array in outputs.items():
        print(summarize(name, array, args.print_top))
    if args.outputs:
        np.savez(args.outputs, **outputs)
    return 0


def _print_profile(args: argparse.Namespace, executable: Any, function: Any,
                   inputs: list[Any]) -> None:
    """``--profile [TRACE]``: the per-kernel table, and the Chrome/Perfetto trace."""
    if executable.profile_sites is None:
        raise CliError(f"--profile: {args.model} has no timing hooks; compile it with "
                       "`mlcir compile ... --profile` (a separate build: the normal one stays "
                       "hook-free)")
    from mlcir.peak import peak_gflops

    threads = args.threads or max(executable.target.threads, 0) or (os.cpu_count() or 1)
    executable.peak_gflops = lambda: peak_gflops(threads)
    profile = executable.profile(*inputs, function=function.signature.name,
                                 repeat=args.repeat)
    print(profile.table())
    if isinstance(args.profile, str):
        profile.write_chrome_trace(args.profile)
        print(f"mlcir: wrote the trace {args.profile} ({len(profile.kernels)} kernels x "
              f"{profile.calls} calls; open it in Perfetto or chrome://tracing)",
              file=sys.stderr)


def _run_foreign(args: argparse.Namespace, model: Any) -> int:
    """A model built for another machine, run by the C runner on a runner for that machine
    (here: QEMU emulation, whose timings mean nothing and are never printed)."""
    from mlcir.targets.cross.remote import run_foreign, runner_for

    runner = runner_for(model.target)
    if args.print_time:
        raise CliError(f"--print-time: {args.model} is built for {model.target.triple}; here "
                       f"it runs {runner.describe()}, whose timings mean nothing")
    if args.threads is not None:
        raise CliError(f"--threads: {args.model} is built for {model.target.triple}, "
                       "single-threaded")
    names = list(model.signatures)
    name = args.function or ("main" if "main" in names or len(names) != 1 else names[0])
    if name not in names:
        raise CliError(f"the model has no function '{name}' (functions: {', '.join(names)}); "
                       "choose one with --function")
    inputs = _inputs(model.signatures[name], args.inputs, args.fill_mode, args.seed)
    note = "; timings under emulation are not reported" if runner.emulated else ""
    print(f"mlcir: running {args.model} ({model.target.triple}) {runner.describe()}{note}",
          file=sys.stderr)
    outputs = run_foreign(model, name, inputs, runner)
    for output, array in outputs.items():
        print(summarize(output, array, args.print_top))
    if args.outputs:
        np.savez(args.outputs, **outputs)
    return 0


# -- config ------------------------------------------------------------------------------------

def cmd_config(args: argparse.Namespace) -> int:
    from mlcir.runtime.c_interface import c_runner_source, include_dir

    print(include_dir() if args.includedir else c_runner_source())
    return 0


# -- tune --------------------------------------------------------------------------------------

def cmd_tune(args: argparse.Namespace) -> int:
    import mlcir
    from mlcir.targets import backend_for
    from mlcir.tune.records_file import export_best_records

    _check_counts(args, {"trials": 1, "trials_per_task": 1, "trials_per_round": 1,
                         "builders": 1, "seed": 0})
    target = parse_target(args.target)
    # Without the hardware to measure on, fail now rather than record each candidate as failed.
    backend_for(target).require_runner(target)
    sizes = parse_input_sizes(args.input_shapes) if args.input_shapes else []
    ranges = _ranges(sizes)
    if ranges is not None:  # the dynamic kernels tuned over the ranges
        module = import_model(args.model, args.model_format, None)
        sizes = []
    elif len(sizes) > 1:  # specialisations of the dynamic model
        module = import_model(args.model, args.model_format, None)
        if any(None in shape for size in sizes for shape in size.values()):
            raise CliError("--input-shapes: a size to specialise has every dim given ('?' "
                           "keeps a dim dynamic only when one size fixes the shapes)")
    else:
        module = import_model(args.model, args.model_format,
                              " ".join(args.input_shapes) if args.input_shapes else None)
    work_dir = Path(args.work_dir) if args.work_dir else Path(tempfile.mkdtemp(prefix="mlcir-tune-"))
    runner = (mlcir.tune.RayRunner(address=args.ray_address, target=target)
              if args.ray_address else "local")
    try:
        db = mlcir.tune.tune_module(
            module, target=target, work_dir=work_dir, max_trials_global=args.trials,
            max_trials_per_task=args.trials_per_task, strategy=args.strategy,
            num_trials_per_iter=args.trials_per_round, seed=args.seed,
            cost_model=args.cost_model, verbose=0 if args.quiet else 2 if args.verbose else 1,
            task_scheduler=args.task_scheduler, builders=args.builders, runner=runner,
            input_shapes=sizes if len(sizes) > 1 else None, input_ranges=ranges)
        if args.confirm and len(sizes) <= 1 and ranges is None and target.kind == "llvm" and not target.names_cpu:
            from mlcir.confirm import confirm_in_model

            confirmation = confirm_in_model(module, db, target)
            if not args.quiet and confirmation.verdicts:
                print("confirmation in the model (docs/tuning.md):\n" + confirmation.table(),
                      file=sys.stderr)
        workloads, records = export_best_records(db, args.output)
    finally:
        if not isinstance(runner, str):
            runner.close()
        if not args.work_dir:
            shutil.rmtree(work_dir, ignore_errors=True)
    if not args.quiet:
        kept = f" (database kept in {work_dir})" if args.work_dir else ""
        print(f"mlcir: wrote the best records of {workloads} kernel(s) for '{target.key}' to "
              f"{args.output}{kept}", file=sys.stderr)
    return 0


# -- report ------------------------------------------------------------------------------------

def cmd_report(args: argparse.Namespace) -> int:
    from mlcir.tune.report import report

    page = report(args.work_dirs, args.output)
    print(f"mlcir: wrote the report of {len(args.work_dirs)} run(s) to {page}", file=sys.stderr)
    return 0


# -- the parser --------------------------------------------------------------------------------

def _add_model_options(p: argparse.ArgumentParser, sizes: bool = False) -> None:
    p.add_argument("model", help="the model: an ONNX file (.onnx) or MLIR text (.mlir: graph "
                                 "or loop level, or plain upstream MLIR)")
    p.add_argument("--model-format", choices=("onnx", "mlir"),
                   help="the model's format when its extension does not say")
    if sizes:
        p.add_argument("--input-shapes", metavar="SHAPES", nargs="+",
                       help="one size: fix the ONNX inputs' shapes, e.g. 'x:[1,784]'; several "
                            "sizes (an input named again starts the next one), e.g. "
                            "'x:[1,784]' 'x:[64,784]': keep the symbolic dims and tune a "
                            "static specialisation for each size, which the compiled model "
                            "runs for inputs of that size")
    else:
        p.add_argument("--input-shapes", metavar="SHAPES",
                       help="fix the ONNX inputs' shapes, e.g. 'x:[1,784] mask:[1,?]' "
                            "(symbolic dims stay dynamic otherwise)")
    p.add_argument("--target", default="llvm",
                   help="the target, e.g. 'llvm', 'llvm -threads=2', 'llvm -opt-level=2', "
                        "'cuda', 'cuda -arch=sm_80 -format=isa' (default: llvm; compiling for "
                        "cuda needs no GPU, running does)")


def _ranges(sizes: list[dict[str, list[Any]]]) -> dict[str, list[Any]] | None:
    """The ranges to tune over when ``--input-shapes`` gives one (``x:[1..64,784]``), else
    None."""
    if not any(isinstance(d, tuple) for size in sizes for dims in size.values() for d in dims):
        return None
    if len(sizes) > 1:
        raise CliError("--input-shapes: ranges ('low..high') tune one dynamic build; give one "
                       "entry per input, not several sizes")
    if any(d is None for dims in sizes[0].values() for d in dims):
        raise CliError("--input-shapes: with ranges, give every dynamic dim a range "
                       "('low..high') or a size, not '?'")
    return sizes[0]


def parse_input_sizes(entries: list[str]) -> list[dict[str, list[int | None]]]:
    """``["x:[1,784]", "x:[64,784]"]`` → one shape dict per size; an input named again
    starts the next size (``"x:[1,784] m:[1,4]" "x:[8,784] m:[8,4]"`` is two sizes)."""
    sizes: list[dict[str, list[int | None]]] = [{}]
    for entry in entries:
        for name, shape in parse_input_shapes(entry).items():
            if name in sizes[-1]:
                sizes.append({})
            sizes[-1][name] = shape
    return sizes


def make_parser() -> argparse.ArgumentParser:
    from mlcir import __version__

    parser = argparse.ArgumentParser(
        prog="mlcir", description="Compile, run and tune machine-learning models with mlcir "
                                  "(ONNX or MLIR in, a saved compiled model out).")
    parser.add_argument("--version", action="version", version=f"mlcir {__version__} "
                                                               f"(MLIR {_mlir_version()})")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser("compile", help="compile a model into a saved model file",
                       description="Import a model, compile it (each kernel scheduled by its "
                                   "tuning record when given, else by the target's default "
                                   "schedule) and save the compiled model to one file that "
                                   "`mlcir run` and mlcir.load() read without recompiling. "
                                   "A cuda model compiles without a GPU or the NVIDIA driver "
                                   "and runs on a machine with both.")
    _add_model_options(p)
    p.add_argument("-o", "--output", metavar="PATH",
                   help="the saved model (default: the model's name with .mlcir, here)")
    p.add_argument("--tuning-records", metavar="PATH",
                   help="apply the best schedules from a records file written by `mlcir tune "
                        "-o` or a tuning work_dir")
    p.add_argument("--layout", choices=("packed", "direct", "none"), default=None,
                   help="packed (default): constant matmul weights are packed into the register "
                        "tile's panels at compile time, convolution chains blocked (both sized "
                        "for the target's vectors), 3x3 convolutions Winograd; direct: the same "
                        "with direct convolutions; none: weights and layouts kept as they are "
                        "(experiments)")
    p.add_argument("--no-default-schedule", action="store_true",
                   help="leave kernels without a tuning record unscheduled (the naive "
                        "baseline) instead of giving them the target's default schedule")
    p.add_argument("--dump-mlir", nargs=2, action="append", metavar=("STAGE", "PATH"),
                   help="write the module at STAGE of the build (graph: as imported and "
                        "verified; kernels: loop-level kernels; scheduled: each kernel scheduled "
                        "by its record or its default; llvm: the LLVM dialect that is compiled, "
                        "for cuda the host code and the gpu.binary kernels) to PATH ('-': "
                        "standard output); repeatable")
    p.add_argument("--pipeline", metavar="PIPELINE",
                   help="replace the target's codegen pipeline (a pass pipeline string)")
    p.add_argument("--profile", action="store_true",
                   help="a profiling build: timing hooks around every kernel call, for "
                        "`mlcir run --profile` (docs/cli.md#profiling)")
    p.add_argument("--backend", metavar="NAME",
                   help="a UMA backend offloading its patterns to its C functions, compiled "
                        "into the model: a registered name (blas) or module:Class / "
                        "file.py:Class (docs/uma.md)")
    p.add_argument("-q", "--quiet", action="store_true", help="print nothing on success")
    p.set_defaults(handler=cmd_compile)

    p = sub.add_parser("run", help="run a saved model on inputs from an .npz file",
                       description="Load a saved model, run one of its functions on named "
                                   "inputs, print a summary of each output and optionally the "
                                   "execution time, and write the outputs.")
    p.add_argument("model", help="a saved model (.mlcir) written by `mlcir compile` (a cuda "
                                 "model needs an NVIDIA GPU and its driver)")
    p.add_argument("--inputs", metavar="NPZ",
                   help="the inputs, one array per input name (numpy .npz)")
    p.add_argument("--outputs", metavar="NPZ",
                   help="write the outputs here, one array per output name (numpy .npz)")
    p.add_argument("--fill-mode", choices=FILL_MODES,
                   help="fill inputs missing from --inputs with random (standard normal), zero "
                        "or one values of the right shape and dtype")
    p.add_argument("--seed", type=int, default=0,
                   help="seed of --fill-mode random (default: 0)")
    p.add_argument("--function", metavar="NAME",
                   help="the function to run (default: main, or the only function)")
    p.add_argument("--print-time", action="store_true",
                   help="time the function and print mean/median/max/min/std over --repeat "
                        "measurements")
    p.add_argument("--repeat", type=int, default=10,
                   help="measurements for --print-time (default: 10)")
    p.add_argument("--number", type=int, default=1,
                   help="calls averaged in each measurement (default: 1)")
    p.add_argument("--print-top", type=int, default=5, metavar="N",
                   help="print the N largest entries of each [1, N] or [N] output (default: 5; "
                        "0: none)")
    p.add_argument("--threads", type=int, metavar="N",
                   help="threads for parallel loops of models built with no fixed thread count")
    p.add_argument("--profile", nargs="?", const=True, default=False, metavar="TRACE.json",
                   help="time every kernel and library call (medians of at least --repeat "
                        "calls) and print a table sorted by time; with a path, also write a "
                        "Chrome/Perfetto trace there (the model must be compiled with "
                        "`mlcir compile --profile`)")
    p.set_defaults(handler=cmd_run)

    p = sub.add_parser("config", help="print where the C interface (mlcir.h) and the C runner "
                                      "are", description="Print a path of the C interface of "
                                      "compiled models, as llvm-config does (docs/deploy.md).")
    which = p.add_mutually_exclusive_group(required=True)
    which.add_argument("--includedir", action="store_true",
                       help="the folder of mlcir.h (for cc -I)")
    which.add_argument("--c-runner", action="store_true",
                       help="the reference C runner's source, run_model.c")
    p.set_defaults(handler=cmd_config)

    p = sub.add_parser("tune", help="tune a model's kernels and write the best records",
                       description="Search schedules for every kernel of a model (measured on "
                                   "this machine) and write the best record of each kernel to "
                                   "one file for `mlcir compile --tuning-records`.")
    _add_model_options(p, sizes=True)
    p.add_argument("-o", "--output", metavar="PATH", required=True,
                   help="the records file to write (JSON lines)")
    p.add_argument("--trials", type=int, default=200,
                   help="measured candidates in all, over all kernels (default: 200)")
    p.add_argument("--trials-per-task", type=int, metavar="N",
                   help="at most N candidates per kernel (default: no limit but --trials)")
    p.add_argument("--trials-per-round", type=int, default=16, metavar="N",
                   help="candidates proposed per search round (default: 16)")
    p.add_argument("--work-dir", metavar="DIR",
                   help="keep the tuning database and logs here; re-running with the same "
                        "directory resumes (default: a temporary directory, removed)")
    p.add_argument("--strategy", choices=("evolutionary", "random"), default="evolutionary",
                   help="search strategy (default: evolutionary)")
    p.add_argument("--cost-model", choices=("xgb", "random"), default="xgb",
                   help="cost model ranking candidates (default: xgb)")
    p.add_argument("--task-scheduler", choices=("gradient", "round-robin"), default="gradient",
                   help="how trials are shared between kernels (default: gradient)")
    p.add_argument("--builders", type=int, default=1, metavar="N",
                   help="builder processes (default: 1)")
    p.add_argument("--ray-address", metavar="HOST:PORT",
                   help="build and measure on the Ray cluster whose head is at HOST:PORT, on "
                        "the nodes with this machine's hardware fingerprint (docs/tuning.md)")
    p.add_argument("--seed", type=int, default=0, help="seed of the search (default: 0)")
    p.add_argument("--no-confirm", dest="confirm", action="store_false",
                   help="skip the confirmation: by default each tuned kernel is timed against "
                        "its default schedule inside the whole model, in turns, and kept only "
                        "where it is faster there (mlcir.confirm_in_model)")
    p.add_argument("-v", "--verbose", action="store_true",
                   help="print the task table after every round and every measured candidate "
                        "(default: a live progress line, the table at the end)")
    p.add_argument("-q", "--quiet", action="store_true",
                   help="no progress bar or task table")
    p.set_defaults(handler=cmd_tune)

    p = sub.add_parser("report", help="tables, plots and a page from tuning work dirs",
                       description="Write trials.csv (one row per measured candidate, in "
                                   "proposal order), features.csv, PNG plots (best latency so "
                                   "far against trials and time, per kernel and for the whole "
                                   "model; the cost model's predictions against measurements) "
                                   "and index.html from the work dirs of `mlcir tune "
                                   "--work-dir`. Several work dirs overlay their curves. "
                                   "The plots need matplotlib: pip install 'mlcir[report]'.")
    p.add_argument("work_dirs", nargs="+", metavar="WORK_DIR",
                   help="a tuning work dir (its database/ and run.json)")
    p.add_argument("-o", "--output", metavar="OUT_DIR", required=True,
                   help="the folder to write the report to (created if missing)")
    p.set_defaults(handler=cmd_report)
    return parser


def _mlir_version() -> str:
    try:
        from importlib.metadata import version

        return version("xtc-mlir-python-bindings")
    except Exception:  # noqa: BLE001 - informative only
        return "unknown"


def _show_warning(message: Any, *_where: Any) -> None:
    """``warnings.showwarning``: the message alone (category, file and line are not news to a
    command-line user)."""
    print(f"mlcir: warning: {message}", file=sys.stderr)


def main(argv: Sequence[str] | None = None) -> int:
    parser = make_parser()
    args = parser.parse_args(argv)
    from mlcir.errors import MlcirError
    from mlcir.tune.database import DatabaseError

    try:
        with warnings.catch_warnings():
            warnings.showwarning = _show_warning
            return args.handler(args)
    except (CliError, MlcirError, DatabaseError, OSError) as error:
        message = str(error) if not isinstance(error, OSError) or not error.filename else \
            f"{error.filename}: {error.strerror}"
        print(f"mlcir: error: {message}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("mlcir: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
