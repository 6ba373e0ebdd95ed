"""``create_prim_func``: tensor expressions to a loop-level kernel.

Each compute becomes one ``linalg.generic`` named after it (``loop.block``), with one loop per
output axis (in order) then one per reduction axis (in the order of ``axis=``); a reduction's
output starts as a ``linalg.fill`` of its identity named ``<name>_init``. So the kernel has the
form the graph lowering produces, and ``mlcir.Schedule``, ``mlcir.tune`` and ``mlcir.build``
take it like any other.

A tensor read ``A[f(i, k)]`` whose indices are affine in the loop variables with non-negative
coefficients and stay inside ``A`` becomes an operand of the generic (an indexing map), which
is what tiling, fusion and vectorization follow. Other reads (``A[i // 4]``, ``A[n - 1 - i]``,
``A[B[i]]``, or a read in one branch of an ``if_then_else`` that would fall outside ``A`` where
that branch is not taken, as in padding) are ``tensor.extract`` in the body, with indices
clamped into the tensor when they could fall outside it. An affine read that does fall outside
its tensor for some loop values, outside any branch, is an error.
"""

from __future__ import annotations

from typing import Any, Sequence

from mlir import ir
from mlir.dialects import arith, func, linalg, tensor
from mlir.dialects import math as mmath

from mlcir.dialects.loop import KERNEL_ATTR, tag_block
from mlcir.ir import make_context, verify_module

from .expr import (BOOL, INDEX, Binary, Call, Cast, Compare, Const, Expr, IterVar, Logical,
                   Reduce, Select, TEError, TensorRead, children, is_float)
from .tensor import Tensor

_ELEMENT = {"float16": "f16", "float32": "f32", "float64": "f64", "int8": "i8", "int16": "i16",
            "int32": "i32", "int64": "i64", "bool": "i1", "index": "index"}
_FLOAT_OPS = {"add": arith.addf, "sub": arith.subf, "mul": arith.mulf, "div": arith.divf,
              "max": arith.maximumf, "min": arith.minimumf}
_INT_OPS = {"add": arith.addi, "sub": arith.subi, "mul": arith.muli, "div": arith.divsi,
            "floordiv": arith.floordivsi, "max": arith.maxsi, "min": arith.minsi}
_FLOAT_CMP = {"lt": "OLT", "le": "OLE", "gt": "OGT", "ge": "OGE", "eq": "OEQ", "ne": "UNE"}
_INT_CMP = {"lt": "slt", "le": "sle", "gt": "sgt", "ge": "sge", "eq": "eq", "ne": "ne"}
_COMBINE = {"sum": "add", "max": "max", "min": "min"}


def element_type(dtype: str) -> ir.Type:
    return ir.Type.parse(_ELEMENT[dtype])


def create_prim_func(args: Sequence[Tensor], name: str = "main") -> ir.Module:
    """A module holding ``func.func @<name>``: the placeholders of ``args`` are its arguments
    and the computes of ``args`` its results, in the order given (TVM's
    ``te.create_prim_func([A, B, C])``); computes between them are intermediate blocks."""
    args = list(args)
    for t in args:
        if not isinstance(t, Tensor):
            raise TEError(f"create_prim_func takes te tensors, got {t!r}")
    if len({id(t) for t in args}) != len(args):
        raise TEError("create_prim_func: a tensor is listed twice")
    inputs = [t for t in args if t.is_placeholder]
    outputs = [t for t in args if not t.is_placeholder]
    if not outputs:
        raise TEError("create_prim_func: no compute among the tensors (nothing to compute)")
    order = _topological(outputs)
    listed = {id(t) for t in inputs}
    for t in order:
        for read in _reads(t.body):
            if read.tensor.is_placeholder and id(read.tensor) not in listed:
                raise TEError(f"compute {t.name} reads placeholder {read.tensor.name}, which is "
                              "not among create_prim_func's tensors")
    computes = [t for t in order if not t.is_placeholder]
    names = _block_names(computes)
    ctx = make_context()
    with ctx, ir.Location.unknown():
        module = ir.Module.create()
        with ir.InsertionPoint(module.body):
            ftype = ir.FunctionType.get([_tensor_type(t) for t in inputs],
                                        [_tensor_type(t) for t in outputs])
            fn = func.FuncOp(name, ftype)
            fn.attributes[KERNEL_ATTR] = ir.UnitAttr.get()
            with ir.InsertionPoint(fn.add_entry_block()):
                values = {id(t): v for t, v in zip(inputs, fn.arguments)}
                for t in computes:
                    values[id(t)] = _Compute(t, names[id(t)], values).emit()
                func.ReturnOp([values[id(t)] for t in outputs])
        verify_module(module)
    return module


def _tensor_type(t: Tensor) -> ir.Type:
    return ir.RankedTensorType.get(list(t.shape), element_type(t.dtype))


def _reads(e: Expr | None) -> list[TensorRead]:
    out: list[TensorRead] = []
    stack = [e] if e is not None else []
    while stack:
        x = stack.pop()
        if isinstance(x, TensorRead):
            out.append(x)
        stack.extend(children(x))
    return out


def _topological(outputs: list[Tensor]) -> list[Tensor]:
    order: list[Tensor] = []
    seen: set[int] = set()

    def visit(t: Tensor) -> None:
        if id(t) in seen:
            return
        seen.add(id(t))
        for read in _reads(t.body):
            visit(read.tensor)
        order.append(t)

    for t in outputs:
        visit(t)
    return order


def _block_names(computes: list[Tensor]) -> dict[int, str]:
    """Compute names, made unique as the ``loop`` dialect's naming rule does (``_1``, ``_2``)."""
    taken: set[str] = set()
    names: dict[int, str] = {}
    for t in computes:
        base, n = t.name, 0
        name = base
        while name in taken or f"{name}_init" in taken:
            n += 1
            name = f"{base}_{n}"
        taken.update({name, f"{name}_init"})
        names[id(t)] = name
    return names


def _interval(e: Expr, dims: dict[int, int], extents: list[int]) -> tuple[int, int] | None:
    """The range of an index expression over the loops, or None when unknown."""
    if isinstance(e, IterVar):
        return (0, extents[dims[id(e)]] - 1) if id(e) in dims else None
    if isinstance(e, Const) and e.dtype == INDEX:
        return (int(e.value), int(e.value))
    if isinstance(e, Binary) and e.dtype == INDEX:
        a, b = _interval(e.lhs, dims, extents), _interval(e.rhs, dims, extents)
        if a is None or b is None:
            return None
        if e.op == "add":
            return (a[0] + b[0], a[1] + b[1])
        if e.op == "sub":
            return (a[0] - b[1], a[1] - b[0])
        if e.op in ("mul", "floordiv", "max", "min") and (e.op != "floordiv" or b[0] > 0):
            fold = {"mul": lambda x, y: x * y, "floordiv": lambda x, y: x // y,
                    "max": max, "min": min}[e.op]
            corners = [fold(x, y) for x in a for y in b]
            return (min(corners), max(corners))
        if e.op == "floormod" and b[0] == b[1] and b[0] > 0:
            return (0, b[0] - 1) if a[0] < 0 or a[1] >= b[0] else a
    return None


def _linear(e: Expr, dims: dict[int, int]) -> tuple[dict[int, int], int] | None:
    """An index expression as ``sum(c * d) + c0`` over the loop dims, or None."""
    if isinstance(e, IterVar):
        return ({dims[id(e)]: 1}, 0) if id(e) in dims else None
    if isinstance(e, Const) and e.dtype == INDEX:
        return {}, int(e.value)
    if not isinstance(e, Binary) or e.dtype != INDEX:
        return None
    a, b = _linear(e.lhs, dims), _linear(e.rhs, dims)
    if a is None or b is None:
        return None
    if e.op in ("add", "sub"):
        sign = 1 if e.op == "add" else -1
        terms = dict(a[0])
        for d, c in b[0].items():
            terms[d] = terms.get(d, 0) + sign * c
        return {d: c for d, c in terms.items() if c}, a[1] + sign * b[1]
    if e.op == "mul" and not (a[0] and b[0]):
        (terms, c0), scale = (a, b[1]) if not b[0] else (b, a[1])
        return {d: c * scale for d, c in terms.items() if c * scale}, c0 * scale
    return None


class _Compute:
    """The ops of one compute: its output, its generic and the generic's body."""

    def __init__(self, t: Tensor, name: str, values: dict[int, ir.Value]):
        self.t, self.name, self.values = t, name, values
        self.vars: list[IterVar] = list(t.axis) + list(t.reduce_axis)
        self.dims = {id(v): d for d, v in enumerate(self.vars)}
        self.extents = [v.extent for v in self.vars]
        # Operand reads: (tensor id, map key) -> operand position; and the affine maps.
        self.operands: list[tuple[Tensor, ir.AffineMap]] = []
        self.operand_of: dict[tuple[int, str], int] = {}
        self.read_operand: dict[int, int] = {}  # id(TensorRead) -> operand position
        self.args: list[ir.Value] = []  # the generic's block arguments
        self.cache: dict[int, ir.Value] = {}  # id(Expr) -> its value in the body

    # -- reads --------------------------------------------------------------------------
    def _classify(self, e: Expr, guarded: bool) -> None:
        """Decide, for each read in ``e``, operand or ``tensor.extract``."""
        if isinstance(e, IterVar) and id(e) not in self.dims:
            raise TEError(f"compute {self.t.name} uses variable {e.name}, which is neither "
                          "one of its axes nor a reduction axis of its te.sum/max/min")
        if isinstance(e, TensorRead):
            forms = [_linear(i, self.dims) for i in e.indices]
            inside = all(self._inside(i, n) for i, n in zip(e.indices, e.tensor.shape))
            if all(f is not None and all(c > 0 for c in f[0].values()) for f in forms) and inside:
                amap = ir.AffineMap.get(len(self.vars), 0, [_affine(f) for f in forms])
                key = (id(e.tensor), str(amap))
                if key not in self.operand_of:
                    self.operand_of[key] = len(self.operands)
                    self.operands.append((e.tensor, amap))
                self.read_operand[id(e)] = self.operand_of[key]
            elif not guarded and not inside and all(
                    _interval(i, self.dims, self.extents) is not None for i in e.indices):
                raise TEError(f"compute {self.t.name}: {e.tensor.name}[{', '.join(map(_show, e.indices))}]"
                              f" may read outside {e.tensor.name} (shape {list(e.tensor.shape)}); "
                              "guard it with te.if_then_else")
            for i in e.indices:
                self._classify(i, guarded)
            return
        if isinstance(e, Select):
            self._classify(e.cond, guarded)
            self._classify(e.then, guarded or not isinstance(e.cond, Const))
            self._classify(e.otherwise, guarded or not isinstance(e.cond, Const))
            return
        if isinstance(e, Reduce):
            if e.where is not None:
                self._classify(e.where, guarded)
            self._classify(e.source, guarded or e.where is not None)
            return
        for child in children(e):
            self._classify(child, guarded)

    def _inside(self, index: Expr, size: int) -> bool:
        bounds = _interval(index, self.dims, self.extents)
        return bounds is not None and bounds[0] >= 0 and bounds[1] < size

    # -- ops ----------------------------------------------------------------------------
    def emit(self) -> ir.Value:
        t, body = self.t, self.t.body
        self._classify(body, False)
        out_type = _tensor_type(t)
        dest = tensor.EmptyOp(list(t.shape), element_type(t.dtype)).result
        rank = len(t.axis)
        n = len(self.vars)
        if isinstance(body, Reduce):
            init = linalg.fill(self._constant(_identity(body.combiner, t.dtype), t.dtype),
                               outs=[dest])
            tag_block(init.owner, f"{self.name}_init")
            dest = init
        out_map = ir.AffineMap.get(n, 0, [ir.AffineDimExpr.get(d) for d in range(rank)])
        iterators = ["parallel"] * rank + ["reduction"] * (n - rank)
        maps = [m for _, m in self.operands] + [out_map]
        op = linalg.GenericOp_([self.values[id(x)] for x, _ in self.operands], [dest], maps,
                               ir.ArrayAttr.get([ir.Attribute.parse(f"#linalg.iterator_type<{k}>")
                                                 for k in iterators]))
        block = op.regions[0].blocks[0]
        self.args = list(block.arguments)
        with ir.InsertionPoint(block):
            if isinstance(body, Reduce):
                value = self._value(body.source)
                if body.where is not None:
                    value = arith.select(self._value(body.where), value, self._constant(
                        _identity(body.combiner, t.dtype), t.dtype))
                value = self._binary(_COMBINE[body.combiner], self.args[-1], value, t.dtype)
            else:
                value = self._value(body)
            linalg.YieldOp([value])
        tag_block(op.operation, self.name)
        assert op.results[0].type == out_type
        return op.results[0]

    def _constant(self, value: Any, dtype: str) -> ir.Value:
        etype = element_type(dtype)
        if is_float(dtype):
            return arith.ConstantOp(etype, ir.FloatAttr.get(etype, float(value))).result
        return arith.ConstantOp(etype, ir.IntegerAttr.get(etype, int(value))).result

    def _value(self, e: Expr) -> ir.Value:
        if id(e) not in self.cache:
            self.cache[id(e)] = self._build(e)
        return self.cache[id(e)]

    def _build(self, e: Expr) -> ir.Value:
        if isinstance(e, IterVar):
            return linalg.IndexOp(self.dims[id(e)]).result
        if isinstance(e, Const):
            return self._constant(e.value, e.dtype)
        if isinstance(e, TensorRead):
            if id(e) in self.read_operand:
                return self.args[self.read_operand[id(e)]]
            indices = [self._clamped(i, n) for i, n in zip(e.indices, e.tensor.shape)]
            return tensor.extract(self.values[id(e.tensor)], indices)
        if isinstance(e, Binary):
            return self._binary(e.op, self._value(e.lhs), self._value(e.rhs), e.dtype)
        if isinstance(e, Compare):
            lhs, rhs = self._value(e.lhs), self._value(e.rhs)
            if is_float(e.lhs.dtype):
                return arith.cmpf(getattr(arith.CmpFPredicate, _FLOAT_CMP[e.op]), lhs, rhs)
            return arith.cmpi(getattr(arith.CmpIPredicate, _INT_CMP[e.op]), lhs, rhs)
        if isinstance(e, Logical):
            values = [self._value(a) for a in e.args]
            result = values[0]
            for v in values[1:]:
                result = (arith.andi if e.op == "and" else arith.ori)(result, v)
            return result
        if isinstance(e, Select):
            return arith.select(self._value(e.cond), self._value(e.then), self._value(e.otherwise))
        if isinstance(e, Call):
            return self._call(e)
        if isinstance(e, Cast):
            return self._cast(self._value(e.value), e.value.dtype, e.dtype)
        raise TEError(f"compute {self.t.name}: cannot lower {e!r}")

    def _clamped(self, index: Expr, size: int) -> ir.Value:
        value = self._value(index)
        bounds = _interval(index, self.dims, self.extents)
        if bounds is None or bounds[0] < 0:
            value = arith.maxsi(value, self._constant(0, INDEX))
        if bounds is None or bounds[1] >= size:
            value = arith.minsi(value, self._constant(size - 1, INDEX))
        return value

    def _binary(self, op: str, lhs: ir.Value, rhs: ir.Value, dtype: str) -> ir.Value:
        if is_float(dtype):
            return _FLOAT_OPS[op](lhs, rhs)
        if op == "floormod":
            quotient = arith.floordivsi(lhs, rhs)
            return arith.subi(lhs, arith.muli(quotient, rhs))
        return _INT_OPS[op](lhs, rhs)

    def _call(self, e: Call) -> ir.Value:
        args = [self._value(a) for a in e.args]
        if e.func == "sigmoid":
            one = self._constant(1.0, e.dtype)
            return arith.divf(one, arith.addf(one, mmath.exp(arith.negf(args[0]))))
        op = {"abs": "absf", "round": "roundeven", "power": "powf"}.get(e.func, e.func)
        return getattr(mmath, op)(*args)

    def _cast(self, value: ir.Value, src: str, dst: str) -> ir.Value:
        if src == dst:
            return value
        target = element_type(dst)
        if dst == BOOL:
            zero = self._constant(0, src)
            return (arith.cmpf(arith.CmpFPredicate.UNE, value, zero) if is_float(src)
                    else arith.cmpi(arith.CmpIPredicate.ne, value, zero))
        if src == INDEX:
            if dst == INDEX:
                return value
            wide = arith.index_cast(ir.IntegerType.get_signless(64), value)
            return self._cast(wide, "int64", dst)
        if dst == INDEX:
            if is_float(src):
                value, src = arith.fptosi(ir.IntegerType.get_signless(64), value), "int64"
            return arith.index_cast(target, value)
        if is_float(src) and is_float(dst):
            wider = _bits(dst) > _bits(src)
            return (arith.extf if wider else arith.truncf)(target, value)
        if is_float(dst):
            return (arith.uitofp if src == BOOL else arith.sitofp)(target, value)
        if is_float(src):
            return arith.fptosi(target, value)
        if _bits(dst) > _bits(src):
            return (arith.extui if src == BOOL else arith.extsi)(target, value)
        return arith.trunci(target, value)


def _bits(dtype: str) -> int:
    return 1 if dtype == BOOL else int("".join(ch for ch in dtype if ch.isdigit()))


def _identity(combiner: str, dtype: str) -> float | int:
    if combiner == "sum":
        return 0
    if is_float(dtype):
        return float("-inf") if combiner == "max" else float("inf")
    bits = _bits(dtype)
    return -(1 << (bits - 1)) if combiner == "max" else (1 << (bits - 1)) - 1


def _affine(form: tuple[dict[int, int], int]) -> ir.AffineExpr:
    terms, c0 = form
    expr: ir.AffineExpr = ir.AffineConstantExpr.get(c0)
    for d, c in sorted(terms.items()):
        term = ir.AffineDimExpr.get(d) if c == 1 else ir.AffineDimExpr.get(d) * c
        expr = term if (expr is None or (isinstance(expr, ir.AffineConstantExpr)
                                           and expr.value == 0)) else expr + term
    return expr


def _show(e: Expr) -> str:
    if isinstance(e, Cast):
        return _show(e.value)
    if isinstance(e, TensorRead):
        return f"{e.tensor.name}[{', '.join(map(_show, e.indices))}]"
    if isinstance(e, Binary):
        sym = {"add": "+", "sub": "-", "mul": "*", "floordiv": "//", "floormod": "%",
               "div": "/"}.get(e.op)
        if sym:
            return f"{_show(e.lhs)} {sym} {_show(e.rhs)}"
    return repr(e)
