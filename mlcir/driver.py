"""``mlcir.build``: a module (graph level, loop level, or plain upstream MLIR) to an executable.

The driver is the top of the stack: it applies schedules from tuning records when given, then
compiles with the runtime (:mod:`mlcir.runtime.compile`: signatures, the target's codegen
pipeline, the JIT).
"""

from __future__ import annotations

from typing import Any

from mlcir.runtime import Executable
from mlcir.runtime.compile import as_module, compile_prepared, prepare
from mlcir.target import Target


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
    module = as_module(mod)
    work, sigs, libs = prepare(module)
    if records is not None:
        from mlcir.tune.apply import apply_records

        apply_records(work, records, target)
    return compile_prepared(work, sigs, libs, target, pipeline, keep=module)
