"""``mlcir.build``, ``mlcir.compile`` and ``mlcir.load``: a module (graph level, loop level, or
plain upstream MLIR) to an executable or straight to a saved model file, and a saved model
back to an executable.

The driver is the top of the stack: it parses the target, asks its backend for the build plan,
carries the module through the plan's stages (:mod:`mlcir.targets.stages`: graph, kernels,
scheduled from tuning records or by default, lowered) and hands the result to the backend
(:func:`mlcir.targets.backend_for`), which compiles, writes or loads it.
"""

from __future__ import annotations

import functools
import json
import os
from pathlib import Path
from typing import Any


from mlcir.errors import BuildError
from mlcir.runtime import Executable
from mlcir.runtime.compile import as_module
from mlcir.runtime.model_file import SavedModel, model_target, read_library
from mlcir.target import Target
from mlcir.targets import backend_for, build_plan
from mlcir.targets.stages import Staged, StageHook, run_stages


def split_composite(target: "str | Target", backend: Any = None) -> tuple[Any, Any]:
    """TVM's composite target ``"vanilla_accelerator, llvm"``: a UMA backend's name, then the
    target that builds the rest; returns ``(target, backend)``."""
    if not isinstance(target, str) or "," not in target:
        return target, backend
    *names, rest = [part.strip() for part in target.split(",")]
    if len(names) != 1 or backend is not None:
        raise BuildError(f"target '{target}': a composite target names one UMA backend then "
                         "the target ('vanilla_accelerator, llvm'), and no backend= besides")
    return rest, names[0]


def staged_module(mod: Any, target: "str | Target", *, records: Any = None,
                  schedule: str = "default", layout: str | None = None,
                  pipeline: str | None = None, profile: bool = False, until: str = "lowered",
                  on_stage: StageHook | None = None, backend: Any = None) -> Staged:
    """``mod`` carried through ``target``'s build plan up to stage ``until``
    (:func:`mlcir.targets.stages.run_stages`): what :func:`build` and :func:`compile` compile
    and ``mlcir compile --dump-mlir`` prints. ``layout`` None: the module's ``mlcir.layout``
    attribute, else ``"packed"``. ``backend`` (a UMA backend or its name, docs/uma.md)
    partitions the graph stage first."""
    from mlcir.passes.layout_chains import module_layout

    target, backend = split_composite(target, backend)
    target = Target.parse(target)
    module = as_module(mod)
    plan = build_plan(target, layout or module_layout(module), profile)
    from mlcir.tune.apply import record_source, record_source_in_scope

    # records given, else those of an enclosing `with autotvm.apply_history_best(...)`
    source = record_source(records) if records is not None else record_source_in_scope()
    partition = None
    if backend is not None:
        from mlcir.uma import get_backend

        if target.kind != "llvm":
            raise BuildError(f"target '{target}': UMA backends' C functions run on the CPU; "
                             "build for 'llvm' (or a cross 'llvm -mtriple=...')")
        partition = get_backend(backend).partition
    return run_stages(module, plan, records=source, schedule=schedule, until=until,
                      pipeline=pipeline, on_stage=on_stage, partition=partition)


def _profile_sites(staged: Staged, schedule: str) -> dict[str, list[dict[str, Any]]]:
    """The call sites ``mlcir-profile-hooks`` recorded, with each kernel's operations and
    where its schedule came from."""
    from mlir import ir

    from mlcir.passes.profile_hooks import PROFILE_ATTR

    lowered = staged.prepared.work
    table = json.loads(ir.StringAttr(lowered.operation.attributes[PROFILE_ATTR]).value)
    # External C functions (UMA backends; their symbol names the backend): not kernels.
    externs = {c.symbol: c for c in staged.prepared.externs.calls}
    for sites in table.values():
        for site in sites:
            name = site["callee"]
            site["flops"] = staged.kernel_flops.get(name, 0.0)
            library = site.pop("library")
            if name in externs:
                site["schedule"] = "external"
                site["flops"] = externs[name].flops
            else:
                site["schedule"] = "library" if library else staged.schedule_sources.get(
                    name, "none" if schedule == "none" else "pipeline")
    return table


def build(mod: Any, target: "str | Target" = "llvm", *, records: Any = None,
          schedule: str = "default", pipeline: str | None = None,
          layout: str | None = None, profile: bool = False, backend: Any = None) -> Executable:
    """Compile ``mod`` for ``target`` and return an :class:`~mlcir.runtime.Executable`.

    ``mod`` may be a graph-level module, loop-level kernels, or plain upstream MLIR (functions
    on tensors returning results, or on memrefs in destination-passing style). Each kernel gets
    the best schedule ``records`` (a tuning database, its work_dir, or a records file from
    ``mlcir tune -o``) holds for it measured on the same target, else the target's default
    schedule (:func:`mlcir.tune.default_schedule`); ``schedule="none"`` leaves kernels without
    a record unscheduled (the naive baseline). ``pipeline`` replaces the target's default
    codegen pipeline (from loop-level kernels). ``layout="none"`` keeps constant matmul weights as they are instead of
    packing them into the register tile's panels at compile time (``graph-pack-weights``) and
    convolution chains in NCHW instead of the blocked NCHW<c>c (``graph-layout-nchwc``,
    docs/graph-passes.md), for experiments; ``layout="direct"`` keeps both but computes 3x3
    convolutions directly instead of as Winograd F(4x4, 3x3) (``graph-winograd``), as CUDA
    builds always do; None (the default) takes the module's ``mlcir.layout`` attribute, else
    ``"packed"``. Channel blocks and weight panels are sized for the target's vectors
    (``mlcir.targets.cpu.facts``). ``profile=True`` builds the profiling twin (timing hooks around every
    kernel call; :meth:`Executable.profile` builds it by itself when first asked).
    ``backend`` (a :class:`mlcir.uma.UMABackend` or a registered name such as ``"blas"``)
    offloads its patterns' matches to its C functions; the rest is built as usual
    (docs/uma.md); ``executable.partition_report`` says what was offloaded and refused. A
    composite ``target`` ``"NAME, llvm"`` names the backend too.
    """
    return _build(mod, target, records, schedule, pipeline, layout, profile, backend)


def _build(mod: Any, target: "str | Target", records: Any, schedule: str, pipeline: str | None,
           layout: str | None, profile: bool, backend: Any,
           on_stage: StageHook | None = None) -> Executable:
    """:func:`build`, with ``on_stage`` (a profiling :func:`compile` dumps its stages)."""
    target, backend = split_composite(target, backend)
    target = Target.parse(target)
    if profile:
        _check_profile(target, pipeline)
    module = as_module(mod)
    staged = staged_module(module, target, records=records, schedule=schedule, layout=layout,
                           pipeline=pipeline, profile=profile, backend=backend,
                           on_stage=on_stage)
    executable = backend_for(target).compile(staged.prepared, target, keep=module)
    executable.partition_report = staged.partition_report
    if profile:
        executable.profile_sites = _profile_sites(staged, schedule)
    if target.kind == "llvm" and not target.names_cpu and pipeline is None:
        executable.profile_builder = functools.partial(
            build, mod, target, records=records, schedule=schedule, layout=layout,
            profile=True, backend=backend)
    if target.kind == "llvm" and not target.names_cpu:
        executable.peak_gflops = functools.partial(_peak, target)
    return executable


def _check_profile(target: Target, pipeline: str | None) -> None:
    if target.kind != "llvm" or target.names_cpu:
        raise BuildError(f"profiling builds are for the host CPU (target 'llvm'), not "
                         f"'{target}'")
    if pipeline is not None:
        raise BuildError("profile=True builds with the target's pipeline (and its timing "
                         "hooks); it cannot take pipeline=")


def _peak(target: Target) -> float:
    from mlcir.peak import peak_gflops

    return peak_gflops(target.threads if target.threads > 0 else (os.cpu_count() or 1))


def compile(mod: Any, target: "str | Target", path: "str | os.PathLike[str]", *,
            records: Any = None, schedule: str = "default",
            pipeline: str | None = None, layout: str | None = None,
            profile: bool = False, on_stage: StageHook | None = None,
            backend: Any = None) -> SavedModel:
    """Compile ``mod`` for ``target`` straight into the saved model ``path`` (what ``mlcir
    compile`` does); :func:`load` runs the file, in this process or another, later.

    For ``cuda`` nothing is run or JIT-compiled: the kernels become PTX/cubin and the host code
    a shared library, so this works on a machine without a GPU or the NVIDIA driver, and the
    file runs on one that has both (docs/cuda.md). For ``llvm`` it is :func:`build` followed by
    :meth:`Executable.save`. ``records``, ``schedule``, ``pipeline``, ``layout`` and
    ``profile`` are :func:`build`'s (a profiling build is saved with its call table);
    ``on_stage(stage, module)`` sees each stage of the build (``mlcir compile --dump-mlir``);
    ``backend`` is :func:`build`'s (a UMA backend, its C code linked into the file).
    Returns what was written (path, metadata, signatures, the lowered module).
    """
    target, backend = split_composite(target, backend)
    target = Target.parse(target)
    if profile:  # the profiling build, saved: ``mlcir run --profile`` reads its counters
        executable = _build(mod, target, records, schedule, pipeline, layout, True, backend,
                            on_stage)
        executable.save(path)
        meta, _ = read_library(Path(path))
        return SavedModel(Path(path), meta, executable.signatures, executable.lowered)
    staged = staged_module(mod, target, records=records, schedule=schedule, layout=layout,
                           pipeline=pipeline, on_stage=on_stage, backend=backend)
    return backend_for(target).compile_to_file(staged.prepared, target, Path(path))


def load(path: "str | os.PathLike[str]") -> Executable:
    """Load a model written by :meth:`Executable.save` or :func:`compile`; its functions run at
    once.

    The file is checked before anything is loaded from it; every problem is a
    :class:`~mlcir.errors.LoadError` naming the file and the problem (a ``cuda`` model on a
    machine without the NVIDIA driver: :class:`~mlcir.errors.CudaDriverError`). No MLIR, no
    source model and no compilation are involved; library functions must be registered in the
    loading process (``mlcir.register_func``) first. docs/cli.md documents the format.
    """
    path = Path(path)
    meta, library = read_library(path)
    target = model_target(path, meta)
    return backend_for(target).load(path, target, meta, library)
