"""``mlcir.build`` and ``mlcir.compile``: a module (graph level, loop level, or plain upstream
MLIR) to an executable, or straight to a saved model file.

The driver is the top of the stack: it applies schedules from tuning records when given, then
compiles with the runtime (:mod:`mlcir.runtime.compile`: signatures, the target's codegen
pipeline, the JIT; :mod:`mlcir.runtime.saved` for the file).
"""

from __future__ import annotations

import os
from typing import Any

from mlcir.runtime import Executable
from mlcir.runtime.compile import as_module, compile_prepared, prepare
from mlcir.runtime.saved import SavedModel, compile_prepared_to_file
from mlcir.target import Target


def _prepare(mod: Any, target: Target, records: Any) -> tuple[Any, Any, dict, dict]:
    """The source module and a verified copy with its signatures and library declarations,
    scheduled from ``records`` when given."""
    module = as_module(mod)
    work, sigs, libs = prepare(module)
    if records is not None:
        from mlcir.tune.apply import apply_records

        apply_records(work, records, target)
    return module, work, sigs, libs


def build(mod: Any, target: "str | Target" = "llvm", *, records: Any = None,
          pipeline: str | None = None) -> Executable:
    """Compile ``mod`` for ``target`` and return an :class:`~mlcir.runtime.Executable`.

    ``mod`` may be a graph-level module, loop-level kernels, or plain upstream MLIR (functions
    on tensors returning results, or on memrefs in destination-passing style). ``records``
    (a tuning database, its work_dir, or a records file from ``mlcir tune -o``) applies the best
    recorded schedule of each kernel measured on the same target. ``pipeline`` replaces the
    target's default codegen pipeline.
    """
    target = Target.parse(target)
    module, work, sigs, libs = _prepare(mod, target, records)
    return compile_prepared(work, sigs, libs, target, pipeline, keep=module)


def compile(mod: Any, target: "str | Target", path: "str | os.PathLike[str]", *,
            records: Any = None, pipeline: str | None = None) -> SavedModel:
    """Compile ``mod`` for ``target`` straight into the saved model ``path`` (what ``mlcir
    compile`` does); :func:`mlcir.load` runs the file, in this process or another, later.

    For ``cuda`` nothing is run or JIT-compiled: the kernels become PTX/cubin and the host code
    a shared library, so this works on a machine without a GPU or the NVIDIA driver, and the
    file runs on one that has both (docs/cuda.md). For ``llvm`` it is :func:`build` followed by
    :meth:`Executable.save`. ``records`` and ``pipeline`` are :func:`build`'s. Returns what was
    written (path, metadata, signatures, the lowered module).
    """
    target = Target.parse(target)
    module, work, sigs, libs = _prepare(mod, target, records)
    return compile_prepared_to_file(work, sigs, libs, target, path, pipeline, keep=module)
