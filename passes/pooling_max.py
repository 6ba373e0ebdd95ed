"""``mlcir-pooling-max``: the pooling max (``arith.maxnumf``) is x86's ``maxps``.

The pooling lowerings combine a window with ``arith.maxnumf`` (graph-ops.md): mlcir emits it
for pooling only (the ``max`` op, ReduceMax and ReLU take ``maximumf``). Its exact semantics,
"a NaN operand is skipped", cost a compare and a blend beside every ``vmaxps`` (LLVM cannot
know that the running max is never NaN), and vectorization rebuilds the combiner of a
reduction without the flags the lowering gave it. With ``nnan`` each is one ``vmaxps``, the
instruction onnxruntime's pooling kernels use, NaN inputs giving what it gives (unspecified;
measured: docs/measurements/layouts.md#fifth-round-padding-written-by-the-producer).
"""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir

from .registry import ModulePass, register_pass

NO_NANS = "#arith.fastmath<nnan>"


def _with_nnan(flags: str | None) -> str:
    """``flags`` (an ``#arith.fastmath<..>`` attribute, or None) with ``nnan`` added."""
    inner = flags[flags.index("<") + 1:-1] if flags else "none"
    kept = [f for f in inner.split(",") if f.strip() and f.strip() != "none"]
    if "nnan" in kept or "fast" in kept:
        return flags or NO_NANS
    return f"#arith.fastmath<{','.join(['nnan'] + kept)}>"


@register_pass
@dataclass
class PoolingMax(ModulePass):
    name = "mlcir-pooling-max"
    summary = "arith.maxnumf (the pooling max) gets fastmath<nnan>: one vmaxps each"

    def run(self, module: ir.Operation) -> None:
        def visit(op: ir.Operation) -> ir.WalkResult:
            if op.name == "arith.maxnumf":
                op.attributes["fastmath"] = ir.Attribute.parse(_with_nnan(
                    str(op.attributes["fastmath"]) if "fastmath" in op.attributes else None))
            return ir.WalkResult.ADVANCE

        module.walk(visit)
