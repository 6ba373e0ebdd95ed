"""``graph-to-loop``: lower graph ops to loop-level kernels (Relax's LowerToTensorIR/legalize).

Each graph op in a graph function becomes a destination-passing call
``func.call @kernel(inputs..., tensor.empty...)`` to a private kernel function (marked
``loop.kernel``) whose body is the op's linalg compute blocks. Identical ops (same op, operand
and result types, attributes) share one kernel, so a model's distinct kernels are its tuning
tasks. A function marked ``graph.primitive`` (a fused group) becomes one kernel as a whole:
its graph ops are lowered in place, intermediates become ``tensor.empty`` destinations that
bufferization turns into buffers (the FuseTIR step).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

from mlir import ir
from mlir.dialects import arith, func, linalg, tensor

from mlcir.dialects import ALL_OPS, graph
from mlcir.dialects.loop import KERNEL_ATTR, tag_block
from mlcir.errors import LoweringError
from mlcir.ir import located

from .lowerings import LoweringContext, Rule, load_all
from .lowerings import builders as b
from .pipelines import STANDALONE_LANES
from .registry import ModulePass, register_pass


def graph_ops(fn: ir.Operation) -> list[ir.Operation]:
    found: list[ir.Operation] = []

    def visit(op: ir.Operation) -> ir.WalkResult:
        if op.name.startswith(graph.DIALECT + "."):
            found.append(op)
        return ir.WalkResult.ADVANCE

    fn.walk(visit)
    return found


def functions(module: ir.Operation) -> list[func.FuncOp]:
    return [op for op in module.regions[0].blocks[0].operations if isinstance(op, func.FuncOp)]


def _rule_for(op: ir.Operation, rules: dict[str, Rule]) -> Rule:
    short = op.name.split(".", 1)[1]
    rule = rules.get(short)
    if rule is None:
        raise LoweringError(located(op.location, f"'{op.name}' op has no lowering to "
                                    "loop-level kernels"))
    return rule


def _attrs(op: ir.Operation) -> dict[str, Any]:
    return ALL_OPS[op.name].read_attrs(op)


def dest_values(op: ir.Operation, inputs: Sequence[ir.Value], rule: Rule) -> list[ir.Value]:
    """``tensor.empty`` destinations for ``op``'s results, dynamic dims read from the inputs."""
    dests = []
    attrs = _attrs(op)
    for index, result in enumerate(op.results):
        shape = b.shape_of(result)
        elem = b.element_type(result)
        if all(d is not None for d in shape):
            dests.append(b.empty(shape, elem))
            continue
        if rule.dest_dims is not None:
            dims = rule.dest_dims(inputs, attrs, index)
        else:
            dims = _elementwise_dims(inputs, shape)
        dyn = [d for d, s in zip(dims, shape) if s is None]
        if len(dyn) != sum(s is None for s in shape) or any(d is None for d in dyn):
            raise LoweringError(located(op.location, f"'{op.name}' op cannot size its dynamic "
                                        f"result {result.type} from its operands"))
        dests.append(b.empty(shape, elem, dynamic=dyn))
    return dests


def _elementwise_dims(inputs: Sequence[ir.Value],
                      shape: list[int | None]) -> list[ir.Value | None]:
    dims: list[ir.Value | None] = []
    rank = len(shape)
    for axis, size in enumerate(shape):
        if size is not None:
            dims.append(None)
            continue
        found = None
        for v in inputs:
            vs = b.shape_of(v)
            a = axis - rank + len(vs)
            if a >= 0 and vs[a] is None:
                found = tensor.dim(v, arith.ConstantOp(ir.IndexType.get(), a).result)
                break
        dims.append(found)
    return dims


def emit_blocks(op: ir.Operation, inputs: Sequence[ir.Value], dests: Sequence[ir.Value],
                used_names: set[str], rules: dict[str, Rule],
                readers: tuple[str, ...] = (), lanes: int = STANDALONE_LANES) -> list[ir.Value]:
    """Build ``op``'s compute blocks at the current insertion point; return its results.
    ``readers``: the ops of the same kernel that read them (``LoweringContext.readers``);
    ``lanes``: f32 lanes of the target's vectors."""
    rule = _rule_for(op, rules)
    cx = LoweringContext(op.name.split(".", 1)[1], list(inputs), list(dests), _attrs(op),
                         op.location, used_names, readers, lanes)
    try:
        results = rule.lower(cx)
    except LoweringError as error:
        if str(error).split(": error: ", 1)[0].count(":") >= 2:
            raise  # already located
        raise LoweringError(located(op.location, str(error))) from None
    if [str(r.type) for r in results] != [str(r.type) for r in op.results]:
        raise LoweringError(located(op.location, f"lowering of '{op.name}' produced "
                                    f"{[str(r.type) for r in results]}, expected "
                                    f"{[str(r.type) for r in op.results]}"))
    return results


@register_pass
@dataclass
class GraphToLoop(ModulePass):
    name = "graph-to-loop"
    summary = "Lower graph ops to destination-passing calls of loop-level kernels"
    lanes: int = STANDALONE_LANES  # f32 lanes of the target's vectors (window lowerings)

    def run(self, module: ir.Operation) -> None:
        rules = load_all()
        body = module.regions[0].blocks[0]
        symbols = {ir.StringAttr(op.attributes["sym_name"]).value
                   for op in body.operations if "sym_name" in op.attributes}
        kernels: dict[tuple, str] = {}
        for fn in functions(module):
            if KERNEL_ATTR in fn.attributes:
                continue  # already loop level (a lowered group keeps graph.primitive)
            if graph.PRIMITIVE_ATTR in fn.attributes:
                self._lower_primitive(module, fn, rules)
                continue
            for op in graph_ops(fn.operation):
                self._lower_to_call(module, op, rules, kernels, symbols)

    def _lower_to_call(self, module: ir.Operation, op: ir.Operation, rules: dict[str, Rule],
                       kernels: dict[tuple, str], symbols: set[str]) -> None:
        rule = _rule_for(op, rules)
        if rule.view:  # a view stays in the graph function: no kernel, no destination
            self._lower_in_place(op, rules, set())
            return
        key = (op.name, tuple(str(v.type) for v in op.operands),
               tuple(str(r.type) for r in op.results),
               tuple(sorted((k, str(v)) for k, v in op.attributes.items())))
        kernel = kernels.get(key)
        if kernel is None:
            kernel = self._fresh(op.name.split(".", 1)[1], symbols)
            self._build_kernel(module, kernel, op, rules)
            kernels[key] = kernel
        with ir.InsertionPoint(op), op.location:
            inputs = list(op.operands)
            dests = dest_values(op, inputs, rule)
            call = func.CallOp([r.type for r in op.results], ir.FlatSymbolRefAttr.get(kernel),
                               inputs + dests)
        for old, new in zip(op.results, call.results):
            old.replace_all_uses_with(new)
        op.erase()

    @staticmethod
    def _fresh(base: str, symbols: set[str]) -> str:
        name, n = base, 0
        while name in symbols:
            n += 1
            name = f"{base}_{n}"
        symbols.add(name)
        return name

    def _build_kernel(self, module: ir.Operation, name: str, op: ir.Operation,
                      rules: dict[str, Rule]) -> None:
        in_types = [v.type for v in op.operands]
        out_types = [r.type for r in op.results]
        with ir.InsertionPoint(module.regions[0].blocks[0]), op.location:
            kernel = func.FuncOp(name, ir.FunctionType.get(in_types + out_types, out_types),
                                 visibility="private")
            kernel.attributes[KERNEL_ATTR] = ir.UnitAttr.get()
            entry = kernel.add_entry_block()
            with ir.InsertionPoint(entry):
                args = list(entry.arguments)
                results = emit_blocks(op, args[:len(in_types)], args[len(in_types):], set(), rules,
                                      lanes=self.lanes)
                func.ReturnOp(results)

    def _lower_in_place(self, op: ir.Operation, rules: dict[str, Rule], used: set[str]) -> None:
        """Replace ``op`` by its blocks (or view) where it stands."""
        rule = _rule_for(op, rules)
        readers = tuple(sorted({use.owner.operation.name for r in op.results for use in r.uses}))
        with ir.InsertionPoint(op), op.location:
            inputs = list(op.operands)
            dests = [] if rule.view else dest_values(op, inputs, rule)
            results = emit_blocks(op, inputs, dests, used, rules, readers, self.lanes)
        for old, new in zip(op.results, results):
            old.replace_all_uses_with(new)
        op.erase()

    def _lower_primitive(self, module: ir.Operation, fn: func.FuncOp,
                         rules: dict[str, Rule]) -> None:
        """Lower a fused group in place: one kernel with one block per graph op, made
        destination-passing like the per-op kernels."""
        used: set[str] = set()
        for op in graph_ops(fn.operation):
            self._lower_in_place(op, rules, used)
        fn.attributes[KERNEL_ATTR] = ir.UnitAttr.get()
        _pass_destinations(module, fn)


def _destination_of(value: ir.Value) -> ir.Operation | None:
    """The ``tensor.empty`` that ``value`` is computed into through a chain of destination-
    passing linalg ops (a fill, then the block that accumulates into it) and insertions into
    it (a padding's interior and border strips), or None."""
    while not isinstance(value.owner, ir.Block):
        op = value.owner.operation
        if op.name == "tensor.empty":
            return op
        if op.name == "tensor.insert_slice":
            value = op.operands[1]
            continue
        outputs = linalg_outputs(op)
        if outputs is None:
            return None
        value = outputs[ir.OpResult(value).result_number]
    return None


def linalg_outputs(op: ir.Operation) -> list[ir.Value] | None:
    """The destination operands of a linalg op (``outs``; ``init`` of transpose, broadcast
    and friends), or None for any other op."""
    if not op.name.startswith("linalg."):
        return None
    if hasattr(op.opview, "outputs"):
        return list(op.opview.outputs)
    if hasattr(op.opview, "init"):
        return [op.opview.init]
    return None


# Index ops a dynamic destination size may be computed with: cloned at each call site.
_INDEX_OPS = ("arith.constant", "arith.addi", "arith.subi", "arith.muli", "arith.divsi",
              "arith.divui", "arith.ceildivsi", "arith.floordivsi", "arith.maxsi", "arith.minsi",
              "arith.select", "arith.cmpi", "affine.apply")


class _Unsized(Exception):
    """A destination size that cannot be computed from the kernel's arguments."""


class _CallSiteSizes:
    """The dynamic sizes of a kernel's ``tensor.empty`` destinations computed from its
    arguments, at a call site (``operands`` replacing the arguments; ops created at the
    current insertion point) or only checked (``operands`` None): through the blocks'
    destinations, views (expand/collapse_shape, cast, extract_slice), inserted slices and index arithmetic."""

    def __init__(self, entry: ir.Block, operands: list[ir.Value] | None):
        self.entry, self.operands = entry, operands

    def dim(self, value: ir.Value, axis: int) -> ir.Value | None:
        """The size of dim ``axis`` of the tensor ``value``."""
        if isinstance(value.owner, ir.Block):
            if value.owner != self.entry:
                raise _Unsized
            if self.operands is None:
                return None
            return tensor.dim(self.operands[ir.BlockArgument(value).arg_number], b.index(axis))
        op = value.owner.operation
        shape = b.shape_of(value)
        if shape[axis] is not None:
            return None if self.operands is None else b.index(shape[axis])
        before = sum(d is None for d in shape[:axis])
        if op.name == "tensor.empty":
            return self.index(list(op.operands)[before])
        if op.name == "tensor.expand_shape":
            return self.index(list(op.operands)[1 + before])
        if op.name == "tensor.extract_slice":
            sizes = list(op.opview.sizes)
            return self.index(sizes[before]) if before < len(sizes) else self._fail()
        if op.name == "tensor.cast":
            return self.dim(op.operands[0], axis)
        if op.name == "tensor.insert_slice":  # the destination's shape
            return self.dim(op.operands[1], axis)
        if op.name == "tensor.collapse_shape":
            group = [int(ir.IntegerAttr(i).value) for i in
                     ir.ArrayAttr(ir.ArrayAttr(op.attributes["reassociation"])[axis])]
            sizes = [self.dim(op.operands[0], d) for d in group]
            if self.operands is None:
                return None
            total = sizes[0]
            for size in sizes[1:]:
                total = arith.muli(total, size)
            return total
        outputs = linalg_outputs(op)
        if outputs is not None:
            return self.dim(outputs[ir.OpResult(value).result_number], axis)
        return self._fail()

    def index(self, value: ir.Value) -> ir.Value | None:
        """The index ``value`` of the kernel, computed again."""
        if isinstance(value.owner, ir.Block):
            return self._fail()
        op = value.owner.operation
        if op.name == "tensor.dim":
            axis = op.operands[1]
            if isinstance(axis.owner, ir.Block) or axis.owner.operation.name != "arith.constant":
                return self._fail()
            return self.dim(op.operands[0],
                            ir.IntegerAttr(axis.owner.operation.attributes["value"]).value)
        if op.name not in _INDEX_OPS:
            return self._fail()
        operands = [self.index(v) for v in op.operands]
        if self.operands is None:
            return None
        clone = ir.Operation.create(op.name, results=[r.type for r in op.results],
                                    operands=operands, attributes=dict(op.attributes.items()))
        return clone.results[ir.OpResult(value).result_number]

    @staticmethod
    def _fail() -> None:
        raise _Unsized


def _sizes_from_arguments(empty: ir.Operation, entry: ir.Block) -> bool:
    """Whether the dynamic sizes of ``empty`` can be computed from ``entry``'s arguments."""
    try:
        for v in empty.operands:
            _CallSiteSizes(entry, None).index(v)
    except _Unsized:
        return False
    return True


def _copy_dynamic_views(ret: ir.Operation) -> None:
    """Copy each dynamically shaped result of a fused group that is a view (a reshape at
    its end) into its own ``tensor.empty`` (a ``copy`` block): bufferization can return a
    static view through an out-parameter, not a dynamic one."""
    for i, value in enumerate(list(ret.operands)):
        if None not in b.shape_of(value) or _destination_of(value) is not None:
            continue
        with ir.InsertionPoint(ret), ret.location:
            dest = b.empty(b.shape_of(value), b.element_type(value), source=value)
            copy = linalg.copy(value, outs=[dest])
            tag_block(copy.owner, "copy")
        ret.operands[i] = copy


def _one_destination(empty: ir.Operation) -> bool:
    """Whether ``empty`` is written as one tensor: by one op, or in disjoint slices (a
    padding's border strips and interior, each an ``extract_slice`` written and inserted)."""
    uses = [use.owner.operation.name for use in empty.result.uses]
    uses = [u for u in uses if u != "tensor.dim"]  # reading a size writes nothing
    return len(uses) == 1 or all(u in ("tensor.extract_slice", "tensor.insert_slice")
                                 for u in uses)


def _pass_destinations(module: ir.Operation, fn: func.FuncOp) -> None:
    """Give the lowered fused group ``fn`` one destination argument per result, written by the
    block computing it, and make its callers pass ``tensor.empty`` — as the per-op kernels
    are. Bufferization then writes a model's output straight into the caller's array instead
    of into a temporary that is copied. Dynamic sizes are computed again at each call site
    from the call's operands. Left as is when a result is not computed into its own
    ``tensor.empty`` (a view, an argument returned as is)."""
    entry = fn.regions[0].blocks[0]
    ret = entry.operations[len(entry.operations) - 1]
    _copy_dynamic_views(ret)
    results = list(ret.operands)
    empties = [_destination_of(v) for v in results]
    if any(e is None or not _one_destination(e) or not _sizes_from_arguments(e, entry)
           for e in empties) or len({id(e) for e in empties}) != len(empties):
        return
    sizes = [list(e.operands) for e in empties]
    fn_type = ir.FunctionType(fn.attributes["function_type"].value)
    for empty in empties:
        empty.result.replace_all_uses_with(entry.add_argument(empty.result.type, fn.location))
        empty.erase()
    fn.attributes["function_type"] = ir.TypeAttr.get(ir.FunctionType.get(
        list(fn_type.inputs) + list(fn_type.results), list(fn_type.results)))
    name = fn.sym_name.value
    calls: list[ir.Operation] = []

    def visit(op: ir.Operation) -> ir.WalkResult:
        if op.name == "func.call" and ir.FlatSymbolRefAttr(op.attributes["callee"]).value == name:
            calls.append(op)
        return ir.WalkResult.ADVANCE

    module.walk(visit)
    for call in calls:
        with ir.InsertionPoint(call), call.location:
            dests = [b.empty(b.shape_of(r), b.element_type(r),
                             dynamic=[_CallSiteSizes(entry, list(call.operands)).index(v)
                                      for v in dyn])
                     for r, dyn in zip(call.results, sizes)]
            new = func.CallOp([r.type for r in call.results], ir.FlatSymbolRefAttr.get(name),
                              list(call.operands) + dests)
        for old, value in zip(call.results, new.results):
            old.replace_all_uses_with(value)
        call.erase()


def kernel_functions(module: ir.Operation) -> list[func.FuncOp]:
    """The loop-level kernels of a lowered module."""
    return [fn for fn in functions(module) if KERNEL_ATTR in fn.attributes]

