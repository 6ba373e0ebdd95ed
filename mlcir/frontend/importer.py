"""``from_onnx``: an ONNX model to a ``graph``-dialect module with one public function ``main``.

Two passes over the nodes, in graph order:

1. **Plan** (nothing is built): constants are propagated — initializers, ``Constant`` nodes,
   nodes whose inputs are all known (folded, see :mod:`.folding`) and ``Shape`` of a tensor
   whose dims are static. ``Shape``/``Size`` of a tensor with symbolic dims, and the shape
   arithmetic on it (:data:`.symbolic.FOLDERS`), are *symbolic*: folded while building, when
   the dims are known as symbols. An If, Loop or Scan is replaced by its subgraph's nodes, planned
   next (:mod:`.control_flow`). Every other node needs a converter for the model's opset
   whose checks pass; every problem of every node is collected and reported in one
   :class:`~mlcir.errors.FrontendError`.
2. **Build**: ``main(graph inputs...) -> graph outputs`` is built with the converters; its
   arguments and results carry the ONNX names (``graph.name``), every op a location naming its
   ONNX node, and the weights are ``arith.constant`` ops (``dense_resource`` when large).
   Symbolic nodes are folded on the builder's symbolic dims (:mod:`.symbolic`); one that
   cannot be (``N == 4``?) is built by its converter instead, its symbolic inputs computed at
   run time; a shape input that must be known (Reshape's, Expand's...) and is not expressible
   is an error naming the node.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import onnx
from mlir import ir
from mlir.dialects import func

from mlcir.dialects.graph import DIMS_ATTR, DTYPE_ATTR, NAME_ATTR
from mlcir.errors import FrontendError
from mlcir.ir import make_context, verify_module

from .builder import GraphBuilder, tensor_type
from .control_flow import expand
from .folding import can_fold, fold
from .loader import LoadedModel, ModelSource, Shape, load
from .loader import tensor_type as onnx_tensor_type
from .converter import Converter, InputInfo, Node, Value
from .converters.quantize import MICROSOFT_REFUSED
from .qdq import fuse_qdq as fuse
from .registry import converter_table
from .symbolic import FOLDERS, NotExpressible, evaluate, is_symbolic

#: Problems listed in full in one error message; the rest are counted.
MAX_LISTED = 50


def from_onnx(model: ModelSource, shape_dict: Mapping[str, Sequence[int | None]] | None = None,
              *, context: ir.Context | None = None, fuse_qdq: bool = True) -> ir.Module:
    """Import an ONNX model (a path, serialized bytes or an ``onnx.ModelProto``).

    ``shape_dict`` (graph input name -> shape) fixes the input's symbolic dims (``dim_param``);
    without it they stay dynamic (``?``). The module lives in ``context`` (default: a new
    context with mlcir's dialects). Raises :class:`~mlcir.errors.FrontendError` for anything
    that cannot be imported. ``fuse_qdq``: rewrite QDQ groups (DequantizeLinear -> Conv/MatMul/
    Gemm/Add -> QuantizeLinear) into integer ops first (:mod:`mlcir.frontend.qdq`).
    """
    loaded = load(model, shape_dict)
    if fuse_qdq:
        fuse(loaded)
    nodes, foldable, constants, symbolic = plan(loaded)
    ctx = context or make_context()
    with ctx:
        return build_module(loaded, nodes, foldable, constants, symbolic)


# ----------------------------------------------------------------------------------------------
# Plan


def plan(loaded: LoadedModel
         ) -> tuple[list[Node], set[int], dict[str, np.ndarray], set[int]]:
    """Propagate constants, check every other node; raise one error listing all problems.

    Returns the nodes, the indices of the folded ones, every constant by value name and the
    indices of the symbolic nodes (shape arithmetic on symbolic dims).
    """
    table = converter_table()
    constants: dict[str, np.ndarray] = dict(loaded.initializers)
    types = loaded.value_types
    nodes: list[Node] = []
    foldable: set[int] = set()
    symbolic: set[int] = set()
    symbolic_values: set[str] = set()
    problems: list[tuple[str, str]] = []
    pending = list(reversed(loaded.model.graph.node))  # a stack: If/Loop push their nodes
    types = dict(types)
    while pending:
        proto = pending.pop()
        index = len(nodes)
        node = Node(proto, index, loaded.opset,
                    [_input_info(name, constants, types) for name in proto.input])
        if node.op_type in ("If", "Loop", "Scan") and node.domain == "ai.onnx":
            try:
                pending.extend(reversed(expand(node, constants.get, types)))
            except ValueError as e:
                problems.append((node.describe(), str(e)))
            continue
        nodes.append(node)
        known = [i.constant for i in node.inputs]
        try:
            if can_fold(node, known):
                for name, value in zip(node.outputs, fold(node, known)):
                    if name:
                        constants[name] = value
                foldable.add(index)
                continue
            if node.op_type == "Shape" and node.domain == "ai.onnx":
                shape = _static_shape_of(node)
                if shape is not None:
                    constants[node.outputs[0]] = shape
                    foldable.add(index)
                    continue
        except ValueError as e:
            problems.append((node.describe(), str(e)))
            continue
        if _is_symbolic(node, symbolic_values):
            symbolic.add(index)
            symbolic_values.update(name for name in node.outputs if name)
            if node.op_type not in table:
                continue
        problems.extend((node.describe(), p) for p in _check(node, table, symbolic_values))
    if problems:
        raise _problems_error(loaded, problems)
    return nodes, foldable, constants, symbolic


def _is_symbolic(node: Node, symbolic_values: set[str]) -> bool:
    """Shape/Size of a tensor with a dynamic dim, or shape arithmetic on such values."""
    if node.domain != "ai.onnx":
        return False
    if node.op_type in ("Shape", "Size"):
        return True  # a static Shape was folded before
    present = [i for i in node.inputs if i.present]
    return node.op_type in FOLDERS and any(i.name in symbolic_values for i in present) and \
        all(i.constant is not None or i.name in symbolic_values for i in present)


def _input_info(name: str, constants: dict[str, np.ndarray],
                types: dict[str, tuple[Shape, np.dtype]]) -> InputInfo:
    if not name:
        return InputInfo("")
    if name in constants:
        value = constants[name]
        return InputInfo(name, value, (tuple(value.shape), value.dtype))
    return InputInfo(name, None, types.get(name))


def _static_shape_of(node: Node) -> np.ndarray | None:
    """``Shape(x)[start:end]`` when those dims of ``x`` are static (opset 15 start/end)."""
    shape = node.input(0).shape
    if shape is None:
        return None
    start, end = node.attr("start", 0), node.attr("end", None)
    dims = shape[slice(start, end)]
    if any(d is None for d in dims):
        return None
    return np.array(dims, dtype=np.int64)


def _check(node: Node, table: dict[str, type[Converter]], symbolic_values: set[str]
           ) -> list[str]:
    from mlcir.dialects import graph

    if node.domain == "com.microsoft" and node.op_type in MICROSOFT_REFUSED:
        return [f"the com.microsoft op {node.op_type} is "
                f"{MICROSOFT_REFUSED[node.op_type]}"]
    cls = table.get(node.key)
    if node.domain != "ai.onnx" and cls is None:
        return [f"ops of the domain '{node.domain}' are not supported"
                + (" (of com.microsoft: QLinearAdd, QLinearMul, QLinearGlobalAveragePool, "
                   "QLinearConcat, QGemm)" if node.domain == "com.microsoft" else "")]
    if cls is None or cls.impl(node.opset) is None:
        folded = ("" if node.op_type not in _FOLD_ONLY
                  else " (it is folded only when all its inputs are constants)")
        why = f": {_NOT_YET[node.op_type]}" if node.op_type in _NOT_YET else ""
        return [f"unsupported op{folded}{why}"]
    problems = []
    missing = [op for op in cls.needed_graph_ops() if op not in graph.OPS]
    if missing:
        problems.append(f"needs the graph op{'s' if len(missing) > 1 else ''} "
                        f"{', '.join(missing)}, which this mlcir does not have yet")
    if not cls.unsigned_inputs:
        for i, info in enumerate(node.inputs):
            if info.type is not None and info.type[1].kind == "u":
                problems.append(f"input {i} ('{info.name}') is {info.type[1]}: unsigned integers "
                                "are stored as signless ones, and this op would treat them as "
                                "signed (supported on unsigned inputs: "
                                f"{', '.join(_unsigned_ops(table))})")
                break
    for index, role in cls.constant_inputs(node).items():
        info = node.input(index)
        if info.present and info.constant is None and info.name not in symbolic_values:
            problems.append(f"input {index} ('{role}', value '{info.name}') must be a constant "
                            "(an initializer, a Constant, or computed from them and the "
                            "shapes of tensors only)")
    try:
        problems.extend(cls.check(node))
    except ValueError as e:
        problems.append(str(e))
    return problems


def _unsigned_ops(table: dict[str, type[Converter]]) -> list[str]:
    return sorted(op for op, cls in table.items() if cls.unsigned_inputs)


# Ops with no converter that still import when their inputs are constants (shape arithmetic).
_FOLD_ONLY = {"NonZero", "Tile", "ScatterND", "OneHot", "EyeLike", "CumSum"}
_DATA_SIZED = ("the size of its result depends on the values, and compiled functions allocate "
               "their results from the input shapes only (issue 42)")
# Ops refused with the reason (docs/frontend.md, "Still refused").
_NOT_YET = {
    "NonZero": _DATA_SIZED, "NonMaxSuppression": _DATA_SIZED,
}


def _problems_error(loaded: LoadedModel, problems: list[tuple[str, str]]) -> FrontendError:
    lines = [f"  {where}: {message}" for where, message in problems[:MAX_LISTED]]
    if len(problems) > MAX_LISTED:
        lines.append(f"  ... and {len(problems) - MAX_LISTED} more")
    nodes = len({where for where, _ in problems})
    return FrontendError(
        f"{loaded.source}: cannot import {nodes} node{'s' if nodes > 1 else ''} "
        f"(ai.onnx opset {loaded.opset}):\n" + "\n".join(lines), problems)


# ----------------------------------------------------------------------------------------------
# Build


def build_module(loaded: LoadedModel, nodes: list[Node], foldable: set[int],
                 constants: dict[str, np.ndarray], symbolic: set[int] = frozenset()
                 ) -> ir.Module:
    graph = loaded.model.graph
    file_loc = ir.Location.file(loaded.source, 0, 0)
    table = converter_table()
    builder = GraphBuilder()
    values: dict[str, object] = dict(constants)
    why: dict[str, str] = {}  # values computed at run time since their arithmetic did not fold
    with file_loc:
        module = ir.Module.create()
        arg_types = [tensor_type(*onnx_tensor_type(vi.type)) for vi in loaded.inputs]
    with ir.InsertionPoint(module.body), file_loc:
        fn = func.FuncOp("main", ir.FunctionType.get(arg_types, []))
        entry = fn.add_entry_block(arg_locs=[ir.Location.name(vi.name) for vi in loaded.inputs])
        with ir.InsertionPoint(entry):
            for vi, arg in zip(loaded.inputs, entry.arguments):
                values[vi.name] = arg
                builder.declare_input(arg, vi.name, _dim_params(vi))
            for node in nodes:
                if node.index in foldable:
                    continue
                loc = ir.Location.name(node.label)
                builder.at(node, loc)
                inputs = [values[name] if name else None for name in node.proto.input]
                try:
                    with loc:
                        outputs = _convert(builder, table, node, inputs,
                                           node.index in symbolic, why)
                except (ValueError, IndexError, ArithmeticError) as e:
                    # numpy refusing a folded op's operands (an index out of range…)
                    raise builder.error(str(e)) from e
                if not isinstance(outputs, (list, tuple)):
                    outputs = [outputs]
                for name, value in zip(node.outputs, outputs):
                    if name:
                        values[name] = value
            results = []
            for out in graph.output:
                if out.name not in values:
                    raise FrontendError(f"{loaded.source}: graph output '{out.name}' is not "
                                        "computed by any node")
                builder.at(None, ir.Location.name(out.name))  # for an output that is a constant
                results.append(builder.value(values[out.name]))
            func.ReturnOp(results)
        fn.attributes["function_type"] = ir.TypeAttr.get(
            ir.FunctionType.get(arg_types, [r.type for r in results]))
        fn.arg_attrs = ir.ArrayAttr.get([_input_attrs(vi) for vi in loaded.inputs])
        fn.res_attrs = ir.ArrayAttr.get([ir.DictAttr.get(_name_attrs(o.name, o.type))
                                         for o in graph.output])
    verify_module(module)
    return module


def _convert(builder: GraphBuilder, table: dict[str, type[Converter]], node: Node,
             inputs: list[Value | None], symbolic: bool, why: dict[str, str]
             ) -> Value | list[Value]:
    """The node's outputs: folded when its inputs turned out constant, folded on symbols when
    it is shape arithmetic that can be, else built by its converter. ``why`` collects, per
    value computed at run time because shape arithmetic did not fold, the reason."""
    if symbolic:
        if can_fold(node, [v if isinstance(v, np.ndarray) and not is_symbolic(v) else None
                           for v in inputs]):
            return fold(node, inputs)
        if all(v is None or isinstance(v, np.ndarray) for v in inputs):
            try:
                return evaluate(node, inputs)
            except NotExpressible as e:
                if node.op_type not in table:
                    raise
                why.update((name, f"'{node.label}': {e}") for name in node.outputs)
    for name in node.proto.input:
        if name in why:  # a value computed at run time from one that did not fold
            why.update((out, why[name]) for out in node.outputs if out not in why)
    cls = table[node.key]
    keep = cls.constant_inputs(node)
    for index, role in keep.items():
        if index < len(inputs) and isinstance(inputs[index], ir.Value):
            raise NotExpressible(
                f"input {index} ('{role}', value '{node.proto.input[index]}') is computed at "
                "run time: the shape arithmetic before it does not fold over the symbolic "
                "dims" + (f" ({why[node.proto.input[index]]})"
                          if node.proto.input[index] in why else ""))
    inputs = [v if i in keep else builder.materialize(v) for i, v in enumerate(inputs)]
    return cls.impl(node.opset)(builder, node, inputs)


def _dim_params(vi: onnx.ValueInfoProto) -> list[str]:
    dims = vi.type.tensor_type.shape.dim if vi.type.tensor_type.HasField("shape") else []
    return [d.dim_param if d.HasField("dim_param") else "" for d in dims]


def _name_attrs(name: str, type_proto: onnx.TypeProto) -> dict[str, ir.Attribute]:
    """The ONNX name, and for an unsigned tensor (stored as signless) its numpy dtype."""
    attrs = {NAME_ATTR: ir.StringAttr.get(name)}
    found = onnx_tensor_type(type_proto)
    if found is not None and found[1].kind == "u":
        attrs[DTYPE_ATTR] = ir.StringAttr.get(found[1].name)
    return attrs


def _input_attrs(vi: onnx.ValueInfoProto) -> ir.DictAttr:
    """The input's name attributes and, when it has symbolic dims, each dim's ``dim_param``
    (``""`` for the others): inputs that share a symbol must be given equal sizes at run time."""
    attrs = _name_attrs(vi.name, vi.type)
    dims = vi.type.tensor_type.shape.dim if vi.type.tensor_type.HasField("shape") else []
    symbols = [d.dim_param if d.HasField("dim_param") else "" for d in dims]
    if any(symbols):
        attrs[DIMS_ATTR] = ir.ArrayAttr.get([ir.StringAttr.get(s) for s in symbols])
    return ir.DictAttr.get(attrs)
