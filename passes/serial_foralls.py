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

from mlcir.transform import apply, match_attr, new_script

from .registry import ModulePass, register_pass

SERIAL_ATTR = "loop.serial"


@register_pass
@dataclass
class SerialForalls(ModulePass):
    name = "mlcir-serial-foralls"
    summary = "Turn scf.forall loops marked loop.serial into scf.for (after bufferization)"

    def run(self, module: ir.Operation) -> None:
        # A forall of n induction variables becomes n loops, a count the transform op must
        # know: each is marked with its count, and each count converted on its own.
        ranks: set[int] = set()

        def mark(op: ir.Operation) -> ir.WalkResult:
            if op.name == "scf.forall" and SERIAL_ATTR in op.attributes:
                rank = len(ir.DenseI64ArrayAttr(op.attributes["staticUpperBound"]))
                op.attributes[SERIAL_ATTR] = ir.IntegerAttr.get(ir.IntegerType.get_signless(64),
                                                                rank)
                ranks.add(rank)
            return ir.WalkResult.ADVANCE

        with module.context:
            module.walk(mark)
        if not ranks:
            return

        def build(root: ir.Value) -> None:
            for rank in sorted(ranks):
                value = ir.IntegerAttr.get(ir.IntegerType.get_signless(64), rank)
                foralls = match_attr(root, SERIAL_ATTR, value, op_names=["scf.forall"])
                each = transform.ForeachOp([], [foralls])
                with ir.InsertionPoint(each.body):
                    tloop.ForallToForOp([transform.AnyOpType.get()] * rank,
                                        each.body.arguments[0])
                    transform.YieldOp([])

        apply(module, new_script(build))
