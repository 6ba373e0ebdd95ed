"""``graph-fuse-ops``: group graph ops into fused primitive functions (TVM's FuseOps, in spirit).

Each op has a fusion ``pattern`` (``dialects/opdef.py``). Going through a graph function in
program order, an op joins the group of a producer when the rules allow it:

- an **anchor** (matmul, conv2d, pooling) starts a group and takes no producer;
- an **elementwise/broadcast** op joins the group of an anchor or reduction producer (its
  epilogue: bias add, relu…); failing that, it merges every light producer group
  (elementwise, broadcast, injective);
- an **injective** op (permute_dims, reshape…) merges light producer groups only, except a
  layout change (``layout_transform``), which stands alone: its kernel is a register
  transpose (the CPU default schedule's ``_channel_block_transpose``), which an elementwise
  chain in front of it (the epilogue of a Winograd convolution) would leave to scalar
  strided loops;
- a **padding** (``pad_window``) joins its producer's group, which writes its interior;
- a **reduction** (sum, softmax, layer_norm…) merges producer groups made only of
  elementwise/broadcast ops, and takes epilogues like an anchor;
- a group holds at most one anchor or reduction and ``max-ops`` ops; a producer joins only if
  its value has no other user, so nothing is computed twice. Upstream and ``opaque`` ops are
  never fused.

Each group of two ops or more becomes a private ``func.func`` marked ``graph.primitive``,
called in its place; ``graph-to-loop`` lowers it into one kernel (the FuseTIR step). Every
value a group reads is an argument, weights included, so identical groups share one function
and tuning workloads do not depend on weights (docs/graph-passes.md has the details).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from mlir import ir
from mlir.dialects import func

from mlcir.dialects import ALL_OPS, graph
from mlcir.dialects.loop import KERNEL_ATTR

from .graph_to_loop import functions
from .registry import ModulePass, register_pass

HEAVY = ("anchor", "reduction")
LIGHT = ("elementwise", "broadcast", "injective")
EPILOGUE = ("elementwise", "broadcast")
STANDALONE = ("graph.layout_transform",)  # takes no producer group (module docstring)
DEFAULT_MAX_OPS = 256  # TVM's max_fuse_depth
MAX_NAME_LENGTH = 64


def fusion_pattern(op: ir.Operation) -> str:
    """The fusion kind of ``op``: its declared ``pattern``; ``opaque`` for upstream ops."""
    opdef = ALL_OPS.get(op.name)
    return opdef.pattern if opdef is not None else "opaque"


@dataclass(eq=False)
class Group:
    """Ops fused together, in program order; ``heavy`` is its anchor or reduction, if any."""

    ops: list[ir.Operation]
    heavy: ir.Operation | None = None
    kinds: set[str] = field(default_factory=set)

    @property
    def tip(self) -> ir.Operation:
        """The op whose result leaves the group (the last one: all others feed it)."""
        return self.ops[-1]

    @property
    def name(self) -> str:
        return fused_name(self.ops)


def fused_name(ops: list[ir.Operation]) -> str:
    name = "fused"
    for op in ops:
        part = "_" + op.name.split(".", 1)[1]
        if len(name) + len(part) > MAX_NAME_LENGTH:
            break
        name += part
    return name


def _producer_groups(op: ir.Operation, group_of: dict[ir.Operation, Group]) -> list[Group]:
    """Groups ending in a producer of ``op`` whose result only ``op`` uses."""
    groups: list[Group] = []
    for value in op.operands:
        owner = value.owner
        if not isinstance(owner, (ir.Operation, ir.OpView)):
            continue
        producer = owner.operation
        group = group_of.get(producer)
        if group is None or any(group is g for g in groups) or len(producer.results) != 1:
            continue
        if all(use.owner.operation == op for use in producer.results[0].uses):
            groups.append(group)
    return groups


def _chosen(kind: str, candidates: list[Group]) -> list[Group]:
    """Which producer groups an op of fusion kind ``kind`` absorbs (the rules above)."""
    if kind in EPILOGUE:
        heavy = [g for g in candidates if g.heavy is not None]
        if heavy:
            return heavy[:1]
        return candidates
    if kind == "injective":
        return [g for g in candidates if g.heavy is None]
    if kind == "padding":
        return candidates[:1]
    if kind == "reduction":
        return [g for g in candidates if g.heavy is None and g.kinds <= set(EPILOGUE)]
    return []


def partition(block: ir.Block, *, max_ops: int = DEFAULT_MAX_OPS) -> list[Group]:
    """The fusion groups of the ops of ``block`` (every fusible op is in one group)."""
    position = {op.operation: i for i, op in enumerate(block.operations)}
    group_of: dict[ir.Operation, Group] = {}
    groups: list[Group] = []
    for view in block.operations:
        op = view.operation
        kind = fusion_pattern(op)
        if kind == "opaque":
            continue
        group = Group([op], op if kind in HEAVY else None, {kind})
        size = 1
        producers = [] if op.name in STANDALONE else _producer_groups(op, group_of)
        for producer in _chosen(kind, producers):
            if size + len(producer.ops) > max_ops:
                continue
            size += len(producer.ops)
            group.ops.extend(producer.ops)
            group.kinds |= producer.kinds
            group.heavy = group.heavy or producer.heavy
            groups = [g for g in groups if g is not producer]
        group.ops.sort(key=lambda o: position[o])
        for member in group.ops:
            group_of[member] = group
        groups.append(group)
    return groups


def _inputs(group: Group) -> list[ir.Value]:
    """Values the group reads from outside, in order of first use."""
    inside = group.ops
    inputs: list[ir.Value] = []
    for op in inside:
        for value in op.operands:
            owner = value.owner
            if isinstance(owner, (ir.Operation, ir.OpView)) and any(owner.operation == o for o in inside):
                continue
            if not any(value == v for v in inputs):
                inputs.append(value)
    return inputs


def _structure(group: Group, inputs: list[ir.Value]) -> tuple:
    """What makes two groups the same function: ops, operand wiring, attributes, types."""
    index = {op: i for i, op in enumerate(group.ops)}
    ops = []
    for op in group.ops:
        refs = []
        for value in op.operands:
            owner = value.owner
            if isinstance(owner, (ir.Operation, ir.OpView)) and owner.operation in index:
                refs.append(("op", index[owner.operation]))
            else:
                refs.append(("arg", next(i for i, v in enumerate(inputs) if v == value)))
        attrs = tuple(sorted((k, str(v)) for k, v in op.attributes.items()))
        ops.append((op.name, tuple(refs), attrs, tuple(str(r.type) for r in op.results)))
    return tuple(str(v.type) for v in inputs), tuple(ops)


class _Outliner:
    """Builds one primitive function per distinct group structure, and the calls to it."""

    def __init__(self, module: ir.Operation):
        self.module = module
        self.body = module.regions[0].blocks[0]
        self.symbols = {ir.StringAttr(op.attributes["sym_name"]).value
                        for op in self.body.operations if "sym_name" in op.attributes}
        self.by_structure: dict[tuple, str] = {}
        self.created: list[str] = []

    def outline(self, group: Group) -> str:
        inputs = _inputs(group)
        key = _structure(group, inputs)
        name = self.by_structure.get(key)
        if name is None:
            name = self._fresh(group.name)
            self._build(name, group, inputs)
            self.by_structure[key] = name
            self.created.append(name)
        tip = group.tip
        with ir.InsertionPoint(tip), tip.location:
            call = func.CallOp([tip.results[0].type], ir.FlatSymbolRefAttr.get(name), inputs)
        tip.results[0].replace_all_uses_with(call.results[0])
        for op in reversed(group.ops):
            op.erase()
        return name

    def _fresh(self, base: str) -> str:
        name, n = base, 0
        while name in self.symbols:
            n += 1
            name = f"{base}_{n}"
        self.symbols.add(name)
        return name

    def _build(self, name: str, group: Group, inputs: list[ir.Value]) -> None:
        tip = group.tip
        fn_type = ir.FunctionType.get([v.type for v in inputs], [tip.results[0].type])
        with ir.InsertionPoint(self.body), group.ops[0].location:
            fn = func.FuncOp(name, fn_type, visibility="private")
            fn.attributes[graph.PRIMITIVE_ATTR] = ir.UnitAttr.get()
            entry = fn.add_entry_block()
        mapped: list[tuple[ir.Value, ir.Value]] = list(zip(inputs, entry.arguments))

        def lookup(value: ir.Value) -> ir.Value:
            return next(new for old, new in mapped if old == value)

        with ir.InsertionPoint(entry):
            for op in group.ops:
                copy = ir.Operation.create(
                    op.name, results=[r.type for r in op.results],
                    operands=[lookup(v) for v in op.operands],
                    attributes=dict(op.attributes.items()), loc=op.location)
                mapped.extend(zip(op.results, copy.results))
            with tip.location:
                func.ReturnOp([lookup(tip.results[0])])


def _blocks(op: ir.Operation) -> list[ir.Block]:
    """The blocks of ``op``'s regions and of the ops nested in them (a loop's body in a graph
    function fuses like the function's own block)."""
    found = []
    for region in op.regions:
        for block in region.blocks:
            found.append(block)
            for inner in block.operations:
                found.extend(_blocks(inner.operation))
    return found


def fuse_ops(module: ir.Module | ir.Operation, *, max_ops: int = DEFAULT_MAX_OPS) -> list[str]:
    """Fuse the graph functions of ``module`` in place; returns the names of the primitive
    functions created (each may be called several times)."""
    root = module.operation if hasattr(module, "operation") else module
    outliner = _Outliner(root)
    for fn in functions(root):
        if (graph.PRIMITIVE_ATTR in fn.attributes or KERNEL_ATTR in fn.attributes
                or not fn.regions[0].blocks):
            continue
        for block in _blocks(fn.operation):
            for group in partition(block, max_ops=max_ops):
                if len(group.ops) > 1:
                    outliner.outline(group)
    return outliner.created


@register_pass
@dataclass
class FuseOps(ModulePass):
    name = "graph-fuse-ops"
    summary = "Fuse graph ops by their fusion patterns into private graph.primitive functions"
    max_ops: int = DEFAULT_MAX_OPS

    def run(self, module: ir.Operation) -> None:
        fuse_ops(module, max_ops=self.max_ops)
