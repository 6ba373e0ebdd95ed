"""``mlcir-serial-foralls``: foralls a schedule made only to fuse into become ``scf.for``.

Producers that initialise a loop's destination (a reduction's ``linalg.fill``) can be fused
into ``scf.forall`` but not into ``scf.for`` (measured: "could not find next producer"), so a
schedule materialises those loops as foralls marked ``loop.serial``. ``forall_to_for`` only
works on buffers, hence this pass runs after bufferization.
"""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir
from mlir.dialects import transform
from mlir.dialects.transform import loop as tloop

from mlcir.ir import find_first
from mlcir.transform import apply, match_attr, new_script

from .registry import ModulePass, register_pass

SERIAL_ATTR = "loop.serial"


@register_pass
@dataclass
class SerialForalls(ModulePass):
    name = "mlcir-serial-foralls"
    summary = "Turn scf.forall loops marked loop.serial into scf.for (after bufferization)"

    def run(self, module: ir.Operation) -> None:
        if not find_first(module, lambda op: op.name == "scf.forall" and SERIAL_ATTR in op.attributes):
            return

        def build(root: ir.Value) -> None:
            foralls = match_attr(root, SERIAL_ATTR, op_names=["scf.forall"])
            each = transform.ForeachOp([], [foralls])
            with ir.InsertionPoint(each.body):
                tloop.ForallToForOp([transform.AnyOpType.get()], each.body.arguments[0])
                transform.YieldOp([])

        apply(module, new_script(build))
