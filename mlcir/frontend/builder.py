"""What converters build with: graph ops that fold when their operands are constants.

A value during import is either a numpy array (known at import time: an initializer, a
Constant, a folded node) or an SSA value of ``main``. :meth:`GraphBuilder.op` builds a graph op
at the current node's location; when every operand is an array it runs the op's ``evaluate``
instead and returns an array, so a converter written once folds whatever is constant (a
BatchNormalization's statistics, a Gemm's transposed weight). Arrays become ``arith.constant``
(large ones ``dense_resource`` blobs) only where a built op uses them.

The builder also knows every value's dims as symbols (:mod:`.symbolic`): a graph input's
symbolic dim is its ``dim_param`` (``N``), and each op built gets its result dims from its
operands' (its shape rule evaluated on probe sizes, matched to an operand dim; a reshape's
worked out exactly; a dim no rule explains gets a fresh symbol). So ``Shape`` of any value
folds into a symbolic shape value, and a symbolic size is made a run-time value where an op
needs one (:meth:`GraphBuilder.dim_value`: an ``iota`` of a value that has that dim).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from mlir import ir
from mlir.dialects import arith, bufferization, scf, tensor

from mlcir.dialects import graph
from mlcir.dialects.dtypes import constant_attr, mlir_element_type, numpy_dtype, signless_dtype
from mlcir.dialects.opdef import ShapeError
from mlcir.errors import FrontendError

from .converter import Node, Value, normalize_axes, normalize_axis
from .loader import Shape
from mlcir.dialects.dims import result_dims

from .symbolic import Dim, NotExpressible, SymbolicDim, divide_exactly, format_dims, is_symbolic

def tensor_type(shape: Shape, dtype: np.dtype) -> ir.RankedTensorType:
    dyn = ir.ShapedType.get_dynamic_size()
    return ir.RankedTensorType.get([dyn if d is None else d for d in shape],
                                   mlir_element_type(signless_dtype(dtype)))


class GraphBuilder:
    """Builds ``main``'s body, one ONNX node at a time (see :meth:`at`)."""

    def __init__(self) -> None:
        self.node: Node | None = None
        self.loc: ir.Location | None = None
        # Arrays already materialised in this function: id(array) -> (array, value).
        self._materialized: dict[int, tuple[np.ndarray, ir.Value]] = {}
        # The symbolic dims of values with dynamic ones, and for each symbol a value and
        # axis of that size (to make it a run-time value).
        self._dims: dict[ir.Value, tuple[SymbolicDim, ...]] = {}
        self._carriers: dict[str, tuple[ir.Value, int]] = {}
        self._scalars: dict[str, ir.Value] = {}
        # A reshape's result -> the value its chain of reshapes started from.
        self._reshaped_from: dict[ir.Value, ir.Value] = {}
        # A quantized (8-bit) value -> the float32 value holding the same integers that it was
        # narrowed from, so a DequantizeLinear of a QuantizeLinear skips the 8-bit round trip
        # (converters/quantize.py).
        self.integer_floats: dict[ir.Value, ir.Value] = {}

    def at(self, node: Node | None, loc: ir.Location) -> None:
        """Make ``node`` the one being converted: ops built from now carry ``loc``."""
        self.node, self.loc = node, loc

    # -- errors ---------------------------------------------------------------------------

    def error(self, message: str) -> FrontendError:
        """A FrontendError naming the node being converted."""
        where = self.node.describe() if self.node else "model"
        return FrontendError(f"{where}: {message}", [(where, message)])

    def axis(self, axis: int, rank: int) -> int:
        """``axis`` of a rank-``rank`` value, negative counting from the end; out of range is
        an error naming the node."""
        try:
            return normalize_axis(int(axis), rank)
        except ValueError as e:
            raise self.error(str(e)) from None

    def axes(self, axes: Sequence[int], rank: int) -> list[int]:
        """:meth:`axis` of each of ``axes`` (repeats are an error too)."""
        try:
            return normalize_axes(axes, rank)
        except ValueError as e:
            raise self.error(str(e)) from None

    # -- what a value is --------------------------------------------------------------------

    @staticmethod
    def is_constant(v: Value | None) -> bool:
        return isinstance(v, np.ndarray)

    @staticmethod
    def shape(v: Value) -> Shape:
        if isinstance(v, np.ndarray):
            return tuple(v.shape)
        t = ir.RankedTensorType(v.type)
        return tuple(None if t.is_dynamic_dim(i) else t.shape[i] for i in range(t.rank))

    def rank(self, v: Value) -> int:
        return len(self.shape(v))

    def static_shape(self, v: Value, why: str) -> tuple[int, ...]:
        """The shape of ``v``; an error (saying ``why`` it must be static) if a dim is ``?``."""
        shape = self.shape(v)
        if any(d is None for d in shape):
            raise self.error(f"{why} needs a static shape, but the input has shape "
                             f"{_fmt(shape)}; give the symbolic dims a size with "
                             "from_onnx(..., shape_dict={input: shape})")
        return tuple(int(d) for d in shape)  # type: ignore[arg-type]

    @staticmethod
    def dtype(v: Value) -> np.dtype:
        if isinstance(v, np.ndarray):
            return v.dtype
        return numpy_dtype(ir.RankedTensorType(v.type).element_type)

    # -- symbolic dims ----------------------------------------------------------------------

    def declare_input(self, v: ir.Value, name: str, symbols: Sequence[str]) -> None:
        """Graph input ``v``: its dynamic dims are the symbols (``dim_param``; ``""``: the
        input's own ``<name>.<axis>``)."""
        dims: list[SymbolicDim] = []
        for axis, d in enumerate(self.shape(v)):
            if d is not None:
                dims.append(d)
                continue
            symbol = (symbols[axis] if axis < len(symbols) else "") or f"{name}.{axis}"
            dims.append(Dim.symbol(symbol))
            self._carriers.setdefault(symbol, (v, axis))
        self._dims[v] = tuple(dims)

    def dims(self, v: Value) -> tuple[SymbolicDim, ...]:
        """``v``'s dims: ints where static, :class:`~.symbolic.Dim` where dynamic."""
        if isinstance(v, np.ndarray):
            return tuple(v.shape)
        found = self._dims.get(v)
        if found is None:
            found = self._name_dims(v, self.shape(v))
        return found

    def _name_dims(self, v: ir.Value, dims: Sequence[SymbolicDim | None]) -> tuple:
        """``dims`` with a fresh symbol for each unknown one (a value of that size: ``v``)."""
        out: list[SymbolicDim] = []
        for axis, d in enumerate(dims):
            if d is None:
                symbol = f"{self.node.label if self.node else 'value'}.{axis}"
                while symbol in self._carriers:
                    symbol += "'"
                self._carriers[symbol] = (v, axis)
                d = Dim.symbol(symbol)
            out.append(d)
        self._dims[v] = tuple(out)
        return self._dims[v]

    def _propagate(self, name: str, operands: Sequence[ir.Value], results: list[ir.Value]
                   ) -> None:
        """The symbolic dims of a graph op's results from its operands'."""
        if all(None not in self.shape(r) for r in results):
            return
        opdef = graph.OPS[name]
        found = result_dims(opdef, opdef.read_attrs(results[0].owner),
                            [self.dims(o) for o in operands], [o.type for o in operands],
                            [self.shape(r) for r in results])
        for result, dims in zip(results, found):
            self._name_dims(result, dims)

    def dim_value(self, d: SymbolicDim) -> Value:
        """A size as a 0-d i64 value: a constant, or computed at run time from the values
        that have its symbols as dims."""
        if not isinstance(d, Dim):
            return np.array(int(d), dtype=np.int64)
        total: Value = np.array(0, dtype=np.int64)
        for monomial, coefficient in d.terms.items():
            term: Value = np.array(coefficient, dtype=np.int64)
            for symbol in monomial:
                term = self.op("multiply", term, self._symbol_value(symbol))
            total = self.op("add", total, term)
        return total

    def _symbol_value(self, symbol: str) -> ir.Value:
        if symbol not in self._scalars:
            last = self.op("take", self.iota(Dim.symbol(symbol)), np.array(-1, np.int64), axis=0)
            self._scalars[symbol] = self.op("add", last, np.array(1, np.int64))
        return self._scalars[symbol]

    def iota(self, d: SymbolicDim) -> Value:
        """The i64 vector ``0, 1, ..., d - 1``; a symbolic ``d`` must be one symbol (the dim
        of a value)."""
        if not isinstance(d, Dim):
            return np.arange(int(d), dtype=np.int64)
        if len(d.terms) != 1 or list(d.terms.values()) != [1] or len(next(iter(d.terms))) != 1:
            raise NotExpressible(f"a range of length {d} (only the size of a dim, such as N, "
                                 "is a run-time length)")
        carrier, axis = self._carriers[next(iter(d.symbols))]
        return self.op("iota", carrier, axis=axis)

    def materialize(self, v: Value) -> Value:
        """A symbolic shape value as an i64 tensor computed at run time (others unchanged)."""
        if not is_symbolic(v):
            return v
        parts = [self.reshape(self.dim_value(d), [1]) for d in v.reshape(-1)]
        return self.reshape(self.concat(parts, 0), list(v.shape))

    def expand_to(self, v: Value, dims: Sequence[SymbolicDim]) -> Value:
        """``v`` broadcast (numpy rules) to ``dims``; a symbolic dim that ``v`` lacks is made
        by broadcasting against a zero vector of that length (an ``iota`` times 0)."""
        own = (1,) * (len(dims) - self.rank(v)) + self.dims(v)
        if len(dims) < self.rank(v):
            raise self.error(f"cannot expand a value of rank {self.rank(v)} to the lower rank "
                             f"{len(dims)}")
        static = []
        for axis, (a, b) in enumerate(zip(own, dims)):
            if a == b or b == 1:
                static.append(a if isinstance(a, int) else 1)
            elif a == 1:
                static.append(b if isinstance(b, int) else 1)
            else:
                raise self.error(f"cannot broadcast {format_dims(own)} to {format_dims(dims)} "
                                 f"(axis {axis})")
        if len(static) != self.rank(v) or \
                static != [d if isinstance(d, int) else 1 for d in own]:
            v = self.broadcast_static(v, static)
        bool_ = self.dtype(v) == np.bool_
        for axis, (a, b) in enumerate(zip(own, dims)):
            if a != b and isinstance(b, Dim):
                shape = [1] * len(dims)
                shape[axis] = -1
                zeros = self.reshape(self.op("multiply", self.iota(b), np.array(0, np.int64)),
                                     shape)
                if bool_:
                    v = self.op("logical_or", v, self.astype(zeros, np.bool_))
                else:
                    v = self.op("add", v, self.astype(zeros, self.dtype(v)))
        return v

    def broadcast_static(self, v: Value, shape: Sequence[int]) -> Value:
        """``v`` broadcast where ``shape`` has static sizes and ``v`` a 1 (dynamic dims of
        ``v`` keep their place: a constant zeros tensor is added)."""
        if None not in self.shape(v):
            return self.broadcast_to(v, shape)
        zeros = np.zeros(shape, dtype=self.dtype(v))
        if self.dtype(v) == np.bool_:
            return self.op("logical_or", v, zeros)
        return self.op("add", v, zeros)

    def reshape_to(self, v: Value, dims: Sequence[SymbolicDim]) -> Value:
        """``v`` reshaped to the symbolic ``dims``: a chain of reshapes restarts from its
        first input, dims of the input are kept (0 at the same position, else -2 - j; in the
        input's order), at most one other dim is dynamic (-1); anything else raises
        NotExpressible."""
        if isinstance(v, np.ndarray):
            if any(isinstance(d, Dim) for d in dims):
                raise NotExpressible(f"a constant of shape {list(v.shape)} reshaped to the "
                                     f"symbolic {format_dims(dims)}")
            return v.reshape([int(d) for d in dims])
        sources = [v]
        while sources[-1] in self._reshaped_from:
            sources.append(self._reshaped_from[sources[-1]])
        problem = None
        for source in reversed(sources):  # the earliest first: fewer views
            try:
                return self._reshape_keeping(source, dims)
            except NotExpressible as e:
                problem = problem or e
        raise problem  # type: ignore[misc]

    def _reshape_keeping(self, v: ir.Value, dims: Sequence[SymbolicDim]) -> Value:
        own = self.dims(v)
        if tuple(own) == tuple(dims):
            return v
        total, rest = Dim.of(1), Dim.of(1)
        for d in own:
            total = Dim.of(total * d)
        shape: list[int] = []
        last = -1  # kept dims stay in x's order
        for i, d in enumerate(dims):
            if isinstance(d, int):
                shape.append(d)
                rest = Dim.of(rest * d)
                continue
            j = i if i < len(own) and own[i] == d and i > last else next(
                (j for j in range(last + 1, len(own)) if own[j] == d), None)
            if j is None:
                shape.append(-1)
                continue
            shape.append(0 if j == i else -2 - j)
            rest = Dim.of(rest * d)
            last = j
        if shape.count(-1) > 1 or (sum(isinstance(d, Dim) for d in dims) > 1 and
                                   graph.reshape_groups(self.shape(v), shape) is None):
            raise NotExpressible(f"a reshape of {format_dims(own)} to {format_dims(dims)} "
                                 "(more than one dynamic dim, not all of them dims of the "
                                 "input kept in its order with static dims between them)")
        if -1 in shape and divide_exactly(total.simplify(), rest.simplify()) != \
                dims[shape.index(-1)]:
            raise NotExpressible(f"cannot reshape {format_dims(own)} to {format_dims(dims)}")
        if -1 not in shape and Dim.of(total.simplify()) != Dim.of(rest.simplify()):
            raise NotExpressible(f"cannot reshape {format_dims(own)} to {format_dims(dims)}")
        result = self.op("reshape", v, shape=shape)
        self._dims[result] = tuple(dims)
        self._reshaped_from[result] = v
        return result

    # -- building -----------------------------------------------------------------------------

    def value(self, v: Value) -> ir.Value:
        """``v`` as an SSA value: arrays become an ``arith.constant`` (once per array)."""
        if not isinstance(v, np.ndarray):
            return v
        if is_symbolic(v):
            return self.value(self.materialize(v))
        hit = self._materialized.get(id(v))
        if hit is not None and hit[0] is v:
            return hit[1]
        try:
            attr = constant_attr(v.view(signless_dtype(v.dtype)))
        except TypeError as e:
            raise self.error(f"a constant of type {v.dtype} cannot be used by a graph op: {e}") \
                from None
        result = arith.ConstantOp(attr.type, attr, loc=self.loc).result
        self._materialized[id(v)] = (v, result)
        return result

    def op(self, name: str, *operands: Value, **attrs: Any) -> Value:
        """``graph.<name>(operands, attrs)`` at the node's location, or its value when every
        operand is a constant (the op's ``evaluate``)."""
        opdef = graph.OPS.get(name)
        if opdef is None:
            raise self.error(f"needs the graph op '{name}', which this mlcir does not have")
        if operands and all(isinstance(v, np.ndarray) for v in operands) and opdef.evaluate:
            result = opdef.evaluate(*operands, **attrs)
            return np.asarray(result)
        built = [self.value(v) for v in operands]
        try:
            result = graph.build(name, built, attrs, loc=self.loc)
        except ShapeError as e:
            raise self.error(str(e)) from None
        self._propagate(name, built, result if isinstance(result, list) else [result])
        return result

    def reshape(self, v: Value, shape: Sequence[int]) -> Value:
        """``v`` reshaped to ``shape`` (numpy for constants; nothing when equal); a -1 is the
        dynamic dim of a dynamic ``v``."""
        shape = [int(d) for d in shape]
        if isinstance(v, np.ndarray):
            return v.reshape(shape)
        if list(self.shape(v)) == shape:
            return v
        return self.op("reshape", v, shape=shape)

    def broadcast_to(self, v: Value, shape: Sequence[int]) -> Value:
        """``v`` broadcast (numpy rules) to the static ``shape``; nothing when equal."""
        shape = [int(d) for d in shape]
        if list(self.shape(v)) == shape:
            return v
        if isinstance(v, np.ndarray):
            return np.ascontiguousarray(np.broadcast_to(v, shape))
        return self.op("broadcast_to", v, shape=shape)

    def scalar(self, value: float | int, like: Value) -> np.ndarray:
        """A 0-d constant of ``like``'s element type."""
        return np.array(value, dtype=self.dtype(like))

    def astype(self, v: Value, dtype: np.dtype) -> Value:
        dtype = np.dtype(dtype)
        if self.dtype(v) == dtype:
            return v
        if isinstance(v, np.ndarray):
            return v.astype(dtype)
        return self.op("astype", v, dtype=mlir_element_type(dtype))

    def concat(self, values: Sequence[Value], axis: int) -> Value:
        """Upstream ``tensor.concat`` (or numpy's, when every input is a constant)."""
        if all(isinstance(v, np.ndarray) for v in values):
            return np.concatenate(values, axis=axis)
        if len(values) == 1:
            return values[0]
        shapes = [self.shape(v) for v in values]
        dtypes = {str(self.dtype(v)) for v in values}
        if len(dtypes) > 1:
            raise self.error(f"inputs have different element types: {', '.join(sorted(dtypes))}")
        out = list(shapes[0])
        for s in shapes[1:]:
            if len(s) != len(out):
                raise self.error(f"inputs of ranks {len(out)} and {len(s)} cannot be "
                                 "concatenated")
            for d, (a, b) in enumerate(zip(out, s)):
                if d == axis:
                    out[d] = None if a is None or b is None else a + b
                elif a is None:
                    out[d] = b
                elif b is not None and a != b:
                    raise self.error(f"inputs of shapes {' and '.join(_fmt(x) for x in shapes)} "
                                     f"differ outside the concatenated axis {axis}")
        result_type = tensor_type(tuple(out), self.dtype(values[0]))
        result = tensor.ConcatOp(result_type, axis, [self.value(v) for v in values],
                                 loc=self.loc).result
        if None in out:
            dims = [self.dims(v) for v in values]
            joined: list[SymbolicDim | None] = list(out)
            for d, size in enumerate(out):
                if size is not None:
                    continue
                if d == axis:
                    total: SymbolicDim = 0
                    for part in dims:
                        total = total + part[d]
                    joined[d] = total
                else:
                    joined[d] = next((p[d] for p in dims if isinstance(p[d], Dim)), None)
            self._name_dims(result, joined)
        return result


    # -- a loop over steps (recurrent networks) ----------------------------------------------

    def loop(self, steps: SymbolicDim, carried: Sequence[Value],
             body: Callable[[ir.Value, list[ir.Value]], Sequence[Value]]) -> list[ir.Value]:
        """An ``scf.for`` of ``steps`` iterations in ``main``, carrying ``carried``;
        ``body(i, values)`` builds one iteration at the index ``i`` and returns the new
        values. Each is yielded through ``bufferization.materialize_in_destination`` into its
        carried tensor, or as it is when it is an :meth:`insert_at` into it: the loop then
        bufferizes in place (a new tensor yielded instead needs ownership flags that the
        LLVM lowering cannot store, docs/frontend.md#recurrent-networks). Nothing the body
        materialises (constants, run-time sizes) is reused after the loop."""
        init = [self.value(v) for v in carried]
        dims = [self.dims(v) for v in init]
        saved = (dict(self._materialized), dict(self._scalars), dict(self._carriers))
        with self.loc:
            index = ir.IndexType.get()
            lower, one = (arith.ConstantOp(index, n).result for n in (0, 1))
            for_op = scf.ForOp(lower, self.index_size(steps), one, init)
            with ir.InsertionPoint(for_op.body):
                current = list(for_op.inner_iter_args)
                for arg, d in zip(current, dims):
                    self._dims[arg] = d
                new = [self.value(v) for v in body(for_op.induction_variable, current)]
                yielded = []
                for value, into in zip(new, current):
                    owner = value.owner
                    if isinstance(owner, ir.Operation):
                        owner = owner.opview
                    if not (isinstance(owner, tensor.InsertSliceOp) and owner.dest == into):
                        value = bufferization.MaterializeInDestinationOp(
                            into.type, value, into).result
                    yielded.append(value)
                scf.YieldOp(yielded)
        self._materialized, self._scalars, self._carriers = saved
        results = list(for_op.results)
        for result, d in zip(results, dims):
            self._dims[result] = d
        return results

    def index_from(self, steps: SymbolicDim, i: ir.Value) -> ir.Value:
        """``steps - 1 - i`` (an index): a loop's steps taken backwards."""
        with self.loc:
            one = arith.ConstantOp(ir.IndexType.get(), 1).result
            return arith.SubIOp(arith.SubIOp(self.index_size(steps), one).result, i).result

    def index_size(self, d: SymbolicDim) -> ir.Value:
        """A size as an ``index``: a constant, or ``tensor.dim`` of a value with that dim (a
        symbolic ``d`` must be one symbol, such as ``N``)."""
        with self.loc:
            if not isinstance(d, Dim):
                return arith.ConstantOp(ir.IndexType.get(), int(d)).result
            if len(d.terms) != 1 or list(d.terms.values()) != [1] or \
                    len(next(iter(d.terms))) != 1:
                raise NotExpressible(f"a size of {d} (only a value's dim)")
            carrier, axis = self._carriers[next(iter(d.symbols))]
            at = arith.ConstantOp(ir.IndexType.get(), axis).result
            return tensor.DimOp(carrier, at).result

    def _sizes(self, v: ir.Value, dims: Sequence[SymbolicDim]) -> tuple[list[int], list]:
        """Static sizes (kDynamic where symbolic) and the run-time ones (``tensor.dim``)."""
        dyn = ir.ShapedType.get_dynamic_size()
        static, dynamic = [], []
        for axis, d in enumerate(dims):
            if isinstance(d, Dim):
                static.append(dyn)
                with self.loc:
                    at = arith.ConstantOp(ir.IndexType.get(), axis + 1).result
                    dynamic.append(tensor.DimOp(v, at).result)
            else:
                static.append(int(d))
        return static, dynamic

    def slice_at(self, v: Value, i: ir.Value) -> Value:
        """``v[i]`` at a run-time index ``i`` along axis 0 (the axis dropped)."""
        v = self.value(v)
        rest = list(self.dims(v))[1:]
        static, dynamic = self._sizes(v, rest)
        dyn = ir.ShapedType.get_dynamic_size()  # kDynamic, for offsets too
        shape = (1, *[None if s == dyn else s for s in static])
        with self.loc:
            row = tensor.ExtractSliceOp(tensor_type(shape, self.dtype(v)), v, [i], dynamic, [],
                                        [dyn] + [0] * len(rest), [1, *static],
                                        [1] * (len(rest) + 1)).result
        self._dims[row] = (1, *rest)
        return self._reshape_dims(row, rest)

    def insert_at(self, dest: ir.Value, v: Value, i: ir.Value) -> ir.Value:
        """``dest`` with ``dest[i] = v`` at a run-time index ``i`` along axis 0."""
        rest = list(self.dims(dest))[1:]
        row = self.value(self._reshape_dims(v, [1, *rest]))
        static, dynamic = self._sizes(dest, rest)
        dyn = ir.ShapedType.get_dynamic_size()
        with self.loc:
            result = tensor.InsertSliceOp(row, dest, [i], dynamic, [], [dyn] + [0] * len(rest),
                                          [1, *static], [1] * (len(rest) + 1)).result
        self._dims[result] = self.dims(dest)
        return result

    def _reshape_dims(self, v: Value, dims: Sequence[SymbolicDim]) -> Value:
        if all(not isinstance(d, Dim) for d in dims):
            return self.reshape(v, [int(d) for d in dims])
        return self.reshape_to(v, dims)

    def empty(self, dims: Sequence[SymbolicDim], dtype: np.dtype) -> ir.Value:
        """An uninitialised tensor (a loop's output, every element written in it); a
        symbolic dim must be the dim of a value (``N``)."""
        sizes = [self.index_size(d) if isinstance(d, Dim) else int(d) for d in dims]
        with self.loc:
            result = tensor.EmptyOp(sizes, mlir_element_type(signless_dtype(dtype))).result
        self._dims[result] = tuple(dims)
        return result


def _fmt(shape: Sequence[int | None]) -> str:
    return "[" + ", ".join("?" if d is None else str(d) for d in shape) + "]"

