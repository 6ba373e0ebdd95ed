"""The ``loop`` dialect: named compute blocks and loop annotations at the kernel level.

A loop-level kernel is a ``func.func`` (marked ``loop.kernel``) whose body is upstream linalg
on tensors. A *compute block* is one linalg op; the ``loop.block`` attribute gives it the name a
schedule finds it by (``sch.get_block("C")``). Its iterators are the linalg op's: a loop is
*spatial* when it indexes the output, *reduction* otherwise; ``loop.iterators`` states them
(``[#loop.iterator<"spatial">, …]``, set by the graph lowering, checked against the op). Annotations a schedule sets on the
loops it creates (``loop.parallel``, ``loop.vectorize``, ``loop.unroll``, ``loop.bind``, and any
``annotate``) are ``loop.*`` attributes on the resulting ``scf`` loops.

Why attributes on linalg and not IRDL ops of our own: IRDL (MLIR 22.1) cannot declare an op
whose operands are tensors of different types, nor a region ending with an IRDL terminator
(docs/decisions.md), and schedules are transform scripts over linalg anyway. The IRDL part of
this dialect declares the attribute *values* (``#loop.iterator<"spatial">``) and registers the
``loop`` namespace; :func:`verify` checks the rest at the op's location.

Naming rule for kernels written without ``loop.block`` (plain upstream linalg, as people write
for mlir-opt): each linalg op is named after its op (``linalg.matmul`` -> ``matmul``,
``linalg.generic`` -> ``generic``); a name that repeats in a function gets ``_1``, ``_2``… in
program order. ``linalg.fill`` ops that only initialise the output of the next named block are
named ``<block>_init``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterator

from mlir import ir
from mlir.dialects import linalg

DIALECT = "loop"
BLOCK_ATTR = "loop.block"
ITERATORS_ATTR = "loop.iterators"
SCHEDULED_ATTR = "loop.scheduled"  # on a func.func a schedule was applied to
KERNEL_ATTR = "loop.kernel"
SPATIAL, REDUCTION = "spatial", "reduction"

IRDL_TEXT = """irdl.dialect @loop {
  irdl.attribute @iterator {
    %kind = irdl.base "#builtin.string"
    irdl.parameters(kind: %kind)
  }
}
"""


def is_linalg(op: ir.Operation) -> bool:
    return op.name.startswith("linalg.") and op.name not in ("linalg.yield", "linalg.index")


def dps_inits(op: ir.Operation | ir.OpView) -> list[ir.Value]:
    """A linalg op's destinations (its last operands, one per result): ``outputs`` of a
    generic, ``init`` of ``linalg.transpose``, whatever the op's builder calls them."""
    op = op.operation
    return list(op.operands)[len(op.operands) - len(op.results):]


def dps_inputs(op: ir.Operation | ir.OpView) -> list[ir.Value]:
    """A linalg op's operands before its destinations."""
    op = op.operation
    return list(op.operands)[:len(op.operands) - len(op.results)]


def iterator_kinds(op: ir.Operation) -> list[str]:
    """``spatial``/``reduction`` for each loop of a linalg op (reduction = absent from outputs;
    a dim in an output expression, ``g * M + m``, is spatial)."""
    maps = [ir.AffineMapAttr(m).value for m in linalg.get_indexing_maps(op)]
    num_dims = maps[0].n_dims
    num_outputs = len(op.results) if op.results else 1
    used: set[int] = set()
    for amap in maps[len(maps) - num_outputs:]:
        for expr in amap.results:
            used |= dims_of(expr)
    return [SPATIAL if d in used else REDUCTION for d in range(num_dims)]


def dims_of(expr: ir.AffineExpr) -> set[int]:
    """The loop dims an affine expression reads."""
    if isinstance(expr, ir.AffineDimExpr):
        return {expr.position}
    if isinstance(expr, ir.AffineBinaryExpr):
        return dims_of(expr.lhs) | dims_of(expr.rhs)
    return set()


def loop_extents(op: ir.Operation) -> list[int | None]:
    """The static trip count of each loop of a linalg op (``None`` when dynamic)."""
    maps = [ir.AffineMapAttr(m).value for m in linalg.get_indexing_maps(op)]
    extents: list[int | None] = [None] * maps[0].n_dims
    for value, amap in zip(op.operands, maps):
        if not isinstance(value.type, ir.ShapedType):
            continue
        st = ir.ShapedType(value.type)
        for axis, expr in enumerate(amap.results):
            if isinstance(expr, ir.AffineDimExpr) and not st.is_dynamic_dim(axis):
                d = ir.AffineDimExpr(expr).position
                if extents[d] is None:
                    extents[d] = st.shape[axis]
    return extents


@dataclass
class Block:
    """A named compute block found in a kernel."""

    name: str
    op: ir.Operation
    func_name: str

    @property
    def iterators(self) -> list[str]:
        return iterator_kinds(self.op)

    @property
    def extents(self) -> list[int | None]:
        return loop_extents(self.op)


def _base_name(op: ir.Operation) -> str:
    return op.name.split(".", 1)[1]


def derived_names(fn: ir.Operation) -> dict[int, str]:
    """Names for the linalg ops of ``fn`` that have no ``loop.block``, by the documented rule.

    Keys are positions in the walk order of the function's linalg ops.
    """
    ops = list(linalg_ops(fn))
    taken = {ir.StringAttr(o.attributes[BLOCK_ATTR]).value for o in ops if BLOCK_ATTR in o.attributes}
    names: dict[int, str] = {}
    counts: dict[str, int] = {}

    def fresh(base: str) -> str:
        n = counts.get(base, 0)
        while True:
            name = base if n == 0 else f"{base}_{n}"
            n += 1
            if name not in taken:
                counts[base] = n
                taken.add(name)
                return name

    pending_fills: list[int] = []
    for i, op in enumerate(ops):
        if BLOCK_ATTR in op.attributes:
            continue
        if op.name == "linalg.fill" and _fills_next_block(op):
            pending_fills.append(i)
            continue
        names[i] = fresh(_base_name(op))
    # A fill feeding a named block is that block's initialisation.
    for i in pending_fills:
        consumer = _consumer(ops[i])
        j = ops.index(consumer) if consumer in ops else None
        owner = names.get(j) if j is not None else None
        if owner is None and consumer is not None and BLOCK_ATTR in consumer.attributes:
            owner = ir.StringAttr(consumer.attributes[BLOCK_ATTR]).value
        names[i] = fresh(f"{owner}_init" if owner else "fill")
    return names


def _consumer(op: ir.Operation) -> ir.Operation | None:
    uses = list(op.results[0].uses)
    if len(uses) != 1:
        return None
    return uses[0].owner


def _fills_next_block(op: ir.Operation) -> bool:
    consumer = _consumer(op)
    return consumer is not None and is_linalg(consumer.operation if hasattr(consumer, "operation") else consumer)


def linalg_ops(fn: ir.Operation) -> Iterator[ir.Operation]:
    """The linalg ops of ``fn`` in program order (nested regions included)."""
    found: list[ir.Operation] = []

    def visit(op: ir.Operation) -> ir.WalkResult:
        if is_linalg(op):
            found.append(op)
            return ir.WalkResult.SKIP
        return ir.WalkResult.ADVANCE

    fn.walk(visit, ir.WalkOrder.PRE_ORDER)
    return iter(found)


def name_blocks(fn: ir.Operation) -> list[Block]:
    """Set ``loop.block`` on every linalg op of ``fn`` (derived names where missing) and
    return the blocks in program order."""
    fn_name = ir.StringAttr(fn.attributes["sym_name"]).value
    names = derived_names(fn)
    blocks = []
    for i, op in enumerate(linalg_ops(fn)):
        if BLOCK_ATTR not in op.attributes:
            op.attributes[BLOCK_ATTR] = ir.StringAttr.get(names[i])
        blocks.append(Block(ir.StringAttr(op.attributes[BLOCK_ATTR]).value, op, fn_name))
    return blocks


def iterators_attr(kinds: list[str]) -> ir.ArrayAttr:
    return ir.ArrayAttr.get([ir.Attribute.parse(f'#loop.iterator<"{k}">') for k in kinds])


def tag_block(op: ir.Operation, name: str | ir.StringAttr) -> None:
    """Make the linalg ``op`` a compute block: its name and its iterator kinds."""
    op.attributes[BLOCK_ATTR] = name if isinstance(name, ir.StringAttr) else ir.StringAttr.get(name)
    op.attributes[ITERATORS_ATTR] = iterators_attr(iterator_kinds(op))


def _declared_iterators(attr: ir.Attribute) -> list[str] | None:
    if not isinstance(attr, ir.ArrayAttr):
        return None
    kinds = []
    for item in attr:
        match = re.fullmatch(r'#loop\.iterator<"(\w+)">', str(item))
        if not match or match.group(1) not in (SPATIAL, REDUCTION):
            return None
        kinds.append(match.group(1))
    return kinds


def verify(root: ir.Operation) -> list[tuple[ir.Location, str]]:
    """Problems with ``loop.*`` attributes under ``root``: a ``loop.block`` on something that is
    not a linalg op or not a string, or two blocks of one unscheduled function with the same
    name (a function marked ``loop.scheduled`` holds copies of a block made by unrolling or
    peeling, which share its name)."""
    problems: list[tuple[ir.Location, str]] = []

    def visit_fn(fn: ir.Operation) -> None:
        seen: dict[str, ir.Operation] = {}
        scheduled = SCHEDULED_ATTR in fn.attributes

        def visit(op: ir.Operation) -> ir.WalkResult:
            if BLOCK_ATTR in op.attributes:
                attr = op.attributes[BLOCK_ATTR]
                if not is_linalg(op):
                    problems.append((op.location, f"'{op.name}' op has '{BLOCK_ATTR}' but only "
                                     "linalg ops can be compute blocks"))
                elif not isinstance(attr, ir.StringAttr):
                    problems.append((op.location, f"'{op.name}' op: '{BLOCK_ATTR}' must be a "
                                     f"string, got {attr}"))
                else:
                    name = ir.StringAttr(attr).value
                    if name in seen and not scheduled:
                        problems.append((op.location, f"'{op.name}' op: block name '{name}' is "
                                         "already used in this function"))
                    seen[name] = op
            if ITERATORS_ATTR in op.attributes and is_linalg(op):
                declared = _declared_iterators(op.attributes[ITERATORS_ATTR])
                actual = iterator_kinds(op)
                if declared is None:
                    problems.append((op.location, f"'{op.name}' op: '{ITERATORS_ATTR}' must be an "
                                     "array of #loop.iterator<\"spatial\"|\"reduction\">"))
                elif declared != actual:
                    problems.append((op.location, f"'{op.name}' op: {ITERATORS_ATTR} says "
                                     f"[{', '.join(declared)}] but the op's loops are "
                                     f"[{', '.join(actual)}]"))
            return ir.WalkResult.ADVANCE

        fn.walk(visit)

    def visit_top(op: ir.Operation) -> ir.WalkResult:
        if op.name == "func.func":
            visit_fn(op)
            return ir.WalkResult.SKIP
        return ir.WalkResult.ADVANCE

    root.walk(visit_top, ir.WalkOrder.PRE_ORDER)
    return problems
