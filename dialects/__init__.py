"""mlcir's dialects: ``graph`` (tensor operators) and ``loop`` (named compute blocks).

Both are IRDL definitions loaded into every context at run time (no C++ build); the IRDL text
of ``graph`` is generated from the op declarations in :mod:`mlcir.dialects.graph` and also
checked in as ``graph.irdl.mlir`` so ``mlir-opt --irdl-file=`` can load it (a test keeps the two
in sync).
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from mlir import ir

from . import graph, loop
from .opdef import OpDef

HERE = Path(__file__).resolve().parent

#: Every op mlcir declares, by full name (``graph.matmul``).
ALL_OPS: dict[str, OpDef] = {op.full_name: op for op in graph.OPS.values()}


@lru_cache(maxsize=None)
def irdl_sources() -> str:
    """The IRDL text of all mlcir dialects, as loaded into every context."""
    return graph.irdl_text() + loop.IRDL_TEXT


def write_irdl_files(directory: Path = HERE) -> list[Path]:
    """Regenerate the checked-in ``*.irdl.mlir`` files (run after changing a declaration)."""
    header = "// Generated from the op declarations in dialects/{}.py; do not edit.\n"
    paths = []
    for name, text in (("graph", graph.irdl_text()), ("loop", loop.IRDL_TEXT)):
        path = directory / f"{name}.irdl.mlir"
        path.write_text(header.format(name) + text)
        paths.append(path)
    return paths


def verify_dialect_ops(root: ir.Operation) -> list[tuple[ir.Location, str]]:
    """Run the Python verifiers of mlcir's ops and attributes under ``root``.

    Returns ``(location, message)`` pairs, with messages in MLIR's ``'op.name' op …`` form.
    """
    problems: list[tuple[ir.Location, str]] = []

    def visit(op: ir.Operation) -> ir.WalkResult:
        opdef = ALL_OPS.get(op.name)
        if opdef is not None:
            reason = opdef.verify(op)
            if reason:
                problems.append((op.location, f"'{op.name}' op {reason}"))
        return ir.WalkResult.ADVANCE

    root.walk(visit)
    problems.extend(loop.verify(root))
    return problems
