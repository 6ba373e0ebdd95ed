"""``mlcir.build``, ``mlcir.compile`` and ``mlcir.load``: a module (graph level, loop level, or
plain upstream MLIR) to an executable or straight to a saved model file, and a saved model
back to an executable.

The driver is the top of the stack: it parses the target, schedules each kernel (from tuning
records when given, else by the target's default schedule), prepares the module (:mod:`mlcir.runtime.compile`: signatures, library
declarations) and hands it to the target's backend (:func:`mlcir.targets.backend_for`), which
compiles, writes or loads it.
"""

from __future__ import annotations

import functools
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


from mlcir.errors import BuildError
from mlcir.runtime import Executable
from mlcir.runtime.compile import PreparedModule, as_module, prepare
from mlcir.runtime.model_file import SavedModel, model_target, read_library
from mlcir.target import Target
from mlcir.targets import backend_for


SCHEDULES = ("default", "none")
LAYOUTS = ("packed", "direct", "none")


def _prepare(mod: Any, target: Target, records: Any, schedule: str,
             layout: str = "packed", profile: "_ProfileInfo | None" = None
             ) -> tuple[Any, PreparedModule]:
    """The source module and a verified copy with its signatures and library declarations,
    each kernel scheduled from ``records`` (with the static specialisations they tuned), else
    by the target's default schedule (unless ``schedule`` is ``"none"``). ``layout="none"``
    keeps constant weights and activations in their original layout (``graph-pack-weights``
    and ``graph-layout-nchwc`` leave the module alone); ``layout="direct"`` and CUDA targets
    keep convolutions direct (``graph-winograd`` leaves them)."""
    if schedule not in SCHEDULES:
        raise ValueError(f"schedule must be one of {', '.join(SCHEDULES)}, got {schedule!r}")
    if layout not in LAYOUTS:
        raise ValueError(f"layout must be one of {', '.join(LAYOUTS)}, got {layout!r}")
    module = as_module(mod)
    if records is None:
        prepared = prepare(module)
    else:
        from mlcir.tune.apply import with_specializations

        prepared = prepare(with_specializations(module, records))
    from mlcir.passes.layout_chains import set_module_layout
    from mlcir.passes.winograd import target_layout

    layout = target_layout(layout, target.kind)
    if layout != "packed":
        set_module_layout(prepared.work, layout)
    if records is not None or schedule == "default":
        from mlcir.tune.apply import schedule_kernels

        sources = schedule_kernels(prepared.work, target, records,
                                   defaults=schedule == "default",
                                   flops_by_kernel=None if profile is None else profile.flops)
        if profile is not None:
            profile.sources.update(sources)
    return module, prepared


@dataclass
class _ProfileInfo:
    """What a profiling build learns while scheduling: each kernel's operations and where its
    schedule came from."""

    flops: dict[str, float] = field(default_factory=dict)
    sources: dict[str, str] = field(default_factory=dict)

    def sites(self, lowered: Any, schedule: str) -> dict[str, list[dict[str, Any]]]:
        """The call sites ``mlcir-profile-hooks`` recorded, with operations and schedules."""
        from mlir import ir

        from mlcir.passes.profile_hooks import PROFILE_ATTR

        table = json.loads(ir.StringAttr(lowered.operation.attributes[PROFILE_ATTR]).value)
        for sites in table.values():
            for site in sites:
                name = site["callee"]
                site["flops"] = self.flops.get(name, 0.0)
                site["schedule"] = "library" if site.pop("library") else self.sources.get(
                    name, "none" if schedule == "none" else "pipeline")
        return table


def build(mod: Any, target: "str | Target" = "llvm", *, records: Any = None,
          schedule: str = "default", pipeline: str | None = None,
          layout: str = "packed", profile: bool = False) -> Executable:
    """Compile ``mod`` for ``target`` and return an :class:`~mlcir.runtime.Executable`.

    ``mod`` may be a graph-level module, loop-level kernels, or plain upstream MLIR (functions
    on tensors returning results, or on memrefs in destination-passing style). Each kernel gets
    the best schedule ``records`` (a tuning database, its work_dir, or a records file from
    ``mlcir tune -o``) holds for it measured on the same target, else the target's default
    schedule (:func:`mlcir.tune.default_schedule`); ``schedule="none"`` leaves kernels without
    a record unscheduled (the naive baseline). ``pipeline`` replaces the target's default
    codegen pipeline. ``layout="none"`` keeps constant matmul weights as they are instead of
    packing them into the register tile's panels at compile time (``graph-pack-weights``) and
    convolution chains in NCHW instead of the blocked NCHW<c>c (``graph-layout-nchwc``,
    docs/graph-passes.md), for experiments; ``layout="direct"`` keeps both but computes 3x3
    convolutions directly instead of as Winograd F(4x4, 3x3) (``graph-winograd``), as CUDA
    builds always do. ``profile=True`` builds the profiling twin (timing hooks around every
    kernel call; :meth:`Executable.profile` builds it by itself when first asked).
    """
    target = Target.parse(target)
    profiling = _check_profile(target, pipeline) if profile else None
    module, prepared = _prepare(mod, target, records, schedule, layout, profiling)
    if profiling is not None:
        pipeline = f"mlcir-cpu{{threads={target.threads} profile=1}}"
    executable = backend_for(target).compile(prepared, target, pipeline=pipeline, keep=module)
    if profiling is not None:
        executable.profile_sites = profiling.sites(executable.lowered, schedule)
    if target.kind == "llvm" and not target.names_cpu and pipeline is None:
        executable.profile_builder = functools.partial(
            build, mod, target, records=records, schedule=schedule, layout=layout,
            profile=True)
    if target.kind == "llvm" and not target.names_cpu:
        executable.peak_gflops = functools.partial(_peak, target)
    return executable


def _check_profile(target: Target, pipeline: str | None) -> _ProfileInfo:
    if target.kind != "llvm" or target.names_cpu:
        raise BuildError(f"profiling builds are for the host CPU (target 'llvm'), not "
                         f"'{target}'")
    if pipeline is not None:
        raise BuildError("profile=True builds with the target's pipeline (and its timing "
                         "hooks); it cannot take pipeline=")
    return _ProfileInfo()


def _peak(target: Target) -> float:
    from mlcir.peak import peak_gflops

    return peak_gflops(target.threads if target.threads > 0 else (os.cpu_count() or 1))


def compile(mod: Any, target: "str | Target", path: "str | os.PathLike[str]", *,
            records: Any = None, schedule: str = "default",
            pipeline: str | None = None, layout: str = "packed",
            profile: bool = False) -> SavedModel:
    """Compile ``mod`` for ``target`` straight into the saved model ``path`` (what ``mlcir
    compile`` does); :func:`load` runs the file, in this process or another, later.

    For ``cuda`` nothing is run or JIT-compiled: the kernels become PTX/cubin and the host code
    a shared library, so this works on a machine without a GPU or the NVIDIA driver, and the
    file runs on one that has both (docs/cuda.md). For ``llvm`` it is :func:`build` followed by
    :meth:`Executable.save`. ``records``, ``schedule``, ``pipeline``, ``layout`` and
    ``profile`` are :func:`build`'s (a profiling build is saved with its call table).
    Returns what was written (path, metadata, signatures, the lowered module).
    """
    target = Target.parse(target)
    if profile:  # the profiling build, saved: ``mlcir run --profile`` reads its counters
        executable = build(mod, target, records=records, schedule=schedule,
                           pipeline=pipeline, layout=layout, profile=True)
        executable.save(path)
        meta, _ = read_library(Path(path))
        return SavedModel(Path(path), meta, executable.signatures, executable.lowered)
    _, prepared = _prepare(mod, target, records, schedule, layout)
    return backend_for(target).compile_to_file(prepared, target, Path(path), pipeline=pipeline)


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
