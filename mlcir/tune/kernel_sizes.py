"""The sizes a dynamic kernel is measured at when a model is tuned over input ranges.

A model with symbolic dims (``input_ids: [N, S]``) compiles to kernels with dynamic extents.
To tune those kernels themselves (not a static copy per size), each candidate is timed at a
few sizes drawn from the ranges the user gives (``{"input_ids": [(1, 8), (16, 512)]}``), and
its cost is the weighted sum of those times: the expected time of a call when sizes come as
the weights say. The same record then serves every size (docs/tuning.md, "Tuning over
ranges").

- :func:`sample_sizes`: the sizes, one value per symbol (two inputs that share ``N`` draw it
  once), stratified over each range so that a few samples cover it, in a seeded order.
- :func:`call_shapes`: the shape of every operand of every kernel call in the model's
  ``main`` at the ``kernels`` stage, for one size, by evaluating the index arithmetic and
  shape ops between the calls (``tensor.dim``, ``tensor.empty``, reshapes, slices, a call's
  results shaped like its destinations).
- The sizes travel with the kernel as the attribute ``tune.sizes`` of its function (per size,
  the shape of each argument) and ``tune.size_weights``: a runner on another node reads them
  from the kernel's text. The workload hash is taken without them.
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping, Sequence
from typing import Any

from mlir import ir

from mlcir.errors import TuningError
from mlcir.schedule import Schedule
from mlcir.targets.cpu.defaults import DYNAMIC_HINT

SIZES_ATTR = "tune.sizes"
WEIGHTS_ATTR = "tune.size_weights"

# A dim of a range: a fixed size or an inclusive (low, high).
RangeDim = int | tuple[int, int]
Shapes = dict[str, tuple[int, ...]]


def check_ranges(ranges: Mapping[str, Sequence[RangeDim]]) -> dict[str, list[RangeDim]]:
    """``ranges`` with every dim an int >= 1 or a (low, high) pair with 1 <= low <= high."""
    checked: dict[str, list[RangeDim]] = {}
    for name, dims in ranges.items():
        out: list[RangeDim] = []
        for d in dims:
            if isinstance(d, (tuple, list)) and len(d) == 2 and all(
                    isinstance(v, int) and not isinstance(v, bool) for v in d) \
                    and 1 <= d[0] <= d[1]:
                out.append((int(d[0]), int(d[1])) if d[0] < d[1] else int(d[0]))
            elif isinstance(d, int) and not isinstance(d, bool) and d >= 1:
                out.append(int(d))
            else:
                raise TuningError(f"input_ranges['{name}']: bad dim {d!r} (a size >= 1, or a "
                                  "(low, high) pair with 1 <= low <= high)")
        checked[name] = out
    return checked


def input_symbols(main: Any) -> dict[str, list[str | int]]:
    """Per argument of ``main`` (by its ``graph.name``): per dim its symbol (the
    ``graph.dims`` name, else ``<input>.<axis>``), or its size where it is static."""
    fn_type = ir.FunctionType(main.attributes["function_type"].value)
    arg_attrs = list(ir.ArrayAttr(main.attributes["arg_attrs"])) \
        if "arg_attrs" in main.attributes else [None] * len(fn_type.inputs)
    symbols: dict[str, list[str | None]] = {}
    for i, (t, attrs) in enumerate(zip(fn_type.inputs, arg_attrs)):
        attrs = ir.DictAttr(attrs) if attrs is not None else None
        name = ir.StringAttr(attrs["graph.name"]).value \
            if attrs is not None and "graph.name" in attrs else f"arg{i}"
        rt = ir.RankedTensorType(t)
        names = [ir.StringAttr(a).value for a in ir.ArrayAttr(attrs["graph.dims"])] \
            if attrs is not None and "graph.dims" in attrs else [""] * rt.rank
        symbols[name] = [rt.shape[a] if not rt.is_dynamic_dim(a) else (names[a] or f"{name}.{a}")
                         for a in range(rt.rank)]
    return symbols


def sample_sizes(symbols: Mapping[str, Sequence[str | int]],
                 ranges: Mapping[str, Sequence[RangeDim]], count: int,
                 seed: int = 0) -> list[Shapes]:
    """``count`` input sizes of a model whose inputs have dims ``symbols``
    (:func:`input_symbols`) drawn from ``ranges``: each symbol's range cut into ``count``
    equal strata, one value drawn in each, the strata in a seeded random order per symbol."""
    ranges = check_ranges(ranges)
    bounds: dict[str, tuple[int, int]] = {}
    for name, dims in symbols.items():
        if name not in ranges:
            if any(isinstance(s, str) for s in dims):
                raise TuningError(f"input '{name}' has dynamic dims: give its range too "
                                  f"(ranges given for {', '.join(sorted(ranges)) or 'none'})")
            continue
        given = ranges[name]
        if len(given) != len(dims):
            raise TuningError(f"input_ranges['{name}'] has {len(given)} dims; the input has "
                              f"{len(dims)}")
        for axis, (symbol, dim) in enumerate(zip(dims, given)):
            low, high = dim if isinstance(dim, tuple) else (dim, dim)
            if not isinstance(symbol, str):
                if (low, high) != (symbol, symbol):
                    raise TuningError(f"input_ranges['{name}'] dim {axis} is {dim!r}; the "
                                      f"input's dim {axis} is static, {symbol}")
                continue
            if symbol in bounds:  # a symbol two inputs share: where both ranges allow
                low, high = max(low, bounds[symbol][0]), min(high, bounds[symbol][1])
                if low > high:
                    raise TuningError(f"input_ranges: '{symbol}' ('{name}' dim {axis}) has "
                                      "ranges that do not overlap in the inputs that share it")
            bounds[symbol] = (low, high)
    for name in ranges:
        if name not in symbols:
            raise TuningError(f"input_ranges names '{name}', which is not an input (inputs: "
                              f"{', '.join(symbols)})")
    rng = random.Random(seed)
    values: dict[str, list[int]] = {}
    for symbol, (low, high) in sorted(bounds.items()):
        span = high - low + 1
        drawn = [low + min(span - 1, int((j + rng.random()) * span / count))
                 for j in range(count)]
        rng.shuffle(drawn)
        values[symbol] = drawn
    return [{name: tuple(values[s][j] if isinstance(s, str) else s for s in dims)
             for name, dims in symbols.items()} for j in range(count)]


# -- shapes at the call sites --------------------------------------------------------------

_BINARY = {"arith.addi": lambda a, b: a + b, "arith.subi": lambda a, b: a - b,
           "arith.muli": lambda a, b: a * b, "arith.divsi": lambda a, b: int(a / b),
           "arith.divui": lambda a, b: a // b, "arith.floordivsi": lambda a, b: a // b,
           "arith.ceildivsi": lambda a, b: -(-a // b), "arith.remsi": lambda a, b: a % b,
           "arith.minsi": min, "arith.maxsi": max}


def _affine(expr: ir.AffineExpr, dims: Sequence[int], syms: Sequence[int]) -> int:
    if ir.AffineConstantExpr.isinstance(expr):
        return ir.AffineConstantExpr(expr).value
    if ir.AffineDimExpr.isinstance(expr):
        return dims[ir.AffineDimExpr(expr).position]
    if ir.AffineSymbolExpr.isinstance(expr):
        return syms[ir.AffineSymbolExpr(expr).position]
    for kind, fn in ((ir.AffineAddExpr, lambda a, b: a + b), (ir.AffineMulExpr, lambda a, b: a * b),
                     (ir.AffineModExpr, lambda a, b: a % b),
                     (ir.AffineFloorDivExpr, lambda a, b: a // b),
                     (ir.AffineCeilDivExpr, lambda a, b: -(-a // b))):
        if kind.isinstance(expr):
            e = kind(expr)
            return fn(_affine(e.lhs, dims, syms), _affine(e.rhs, dims, syms))
    raise ValueError(f"affine expression {expr}")


def _type_shape(t: ir.Type) -> list[int | None] | None:
    if not isinstance(t, ir.RankedTensorType):
        return None
    rt = ir.RankedTensorType(t)
    return [None if rt.is_dynamic_dim(i) else rt.shape[i] for i in range(rt.rank)]


def _fill(t: ir.Type, sizes: Sequence[int | None]) -> tuple[int, ...] | None:
    """The shape of type ``t`` with its dynamic dims taken from ``sizes`` in order."""
    shape = _type_shape(t)
    if shape is None:
        return None
    it = iter(sizes)
    out = [next(it, None) if d is None else d for d in shape]
    return None if None in out else tuple(out)


def _static_shape(t: ir.Type) -> tuple[int, ...] | None:
    shape = _type_shape(t)
    return tuple(shape) if shape is not None and None not in shape else None


def call_shapes(main: Any, input_shapes: Mapping[str, Sequence[int]]) -> dict[str, list[tuple]]:
    """Per kernel called at the top level of ``main`` (first call site): the shape of each
    operand when ``main`` is called with inputs of ``input_shapes`` (by ``graph.name``). A
    kernel whose operand shapes cannot be worked out here is left out."""
    names = list(input_symbols(main))
    entry = main.regions[0].blocks[0]
    known: dict[Any, Any] = {}
    for name, arg in zip(names, entry.arguments):
        known[arg] = tuple(int(d) for d in input_shapes[name])

    def of(value: ir.Value) -> Any:
        if value in known:
            return known[value]
        return _static_shape(value.type)

    found: dict[str, list[tuple]] = {}
    for op in entry.operations:
        op = op.operation
        name = op.name
        args = [of(v) for v in op.operands]
        results: list[Any] = [_static_shape(r.type) for r in op.results]
        try:
            if name == "arith.constant" and isinstance(op.results[0].type,
                                                       (ir.IndexType, ir.IntegerType)):
                results = [ir.IntegerAttr(op.attributes["value"]).value]
            elif name == "arith.index_cast":
                results = [args[0]]
            elif name in _BINARY and None not in args:
                results = [_BINARY[name](*args)]
            elif name == "affine.apply" and None not in args:
                amap = ir.AffineMapAttr(op.attributes["map"]).value
                dims, syms = args[:amap.n_dims], args[amap.n_dims:]
                results = [_affine(amap.results[0], dims, syms)]
            elif name == "tensor.dim" and None not in args:
                results = [args[0][args[1]]]
            elif name in ("tensor.empty", "tensor.expand_shape", "tensor.extract_slice"):
                dynamic = args if name == "tensor.empty" else args[1:]
                if name == "tensor.extract_slice":
                    dynamic = _slice_sizes(op, args)
                results = [_fill(op.results[0].type, dynamic)] if None not in dynamic else [None]
            elif name == "tensor.collapse_shape" and args[0] is not None:
                groups = [[ir.IntegerAttr(i).value for i in ir.ArrayAttr(g)]
                          for g in ir.ArrayAttr(op.attributes["reassociation"])]
                results = [tuple(math.prod(args[0][i] for i in g) for g in groups)]
            elif name in ("tensor.insert_slice", "bufferization.materialize_in_destination"):
                results = [args[1]] if op.results else []
            elif name == "tensor.cast":
                results = [args[0]]
            elif name == "func.call":
                callee = ir.FlatSymbolRefAttr(op.attributes["callee"]).value
                if callee not in found and all(isinstance(a, tuple) for a in args):
                    found[callee] = [tuple(a) for a in args]
                n = len(op.results)
                dests = args[len(args) - n:] if n <= len(args) else []
                results = [d if isinstance(d, tuple) and _fits(r.type, d) else _static_shape(r.type)
                           for r, d in zip(op.results, dests)] or results
        except (ValueError, IndexError, KeyError, ZeroDivisionError, TypeError):
            results = [None] * len(op.results)
        for value, shape in zip(op.results, results):
            known[value] = shape
    return found


def _fits(t: ir.Type, shape: tuple) -> bool:
    """Whether ``shape`` is a shape of tensor type ``t`` (rank and static dims)."""
    want = _type_shape(t)
    return want is not None and len(want) == len(shape) and all(
        w is None or w == s for w, s in zip(want, shape))


def _slice_sizes(op: ir.Operation, args: list[Any]) -> list[Any]:
    """The dynamic sizes of a ``tensor.extract_slice``, in order (its ``sizes`` operands)."""
    segments = list(ir.DenseI32ArrayAttr(op.attributes["operandSegmentSizes"]))
    start = segments[0] + segments[1]
    return args[start:start + segments[2]]


# -- sampling a dynamic kernel -------------------------------------------------------------

class AtHint(Schedule):
    """A schedule that reads a kernel's dynamic dims at the size its default is planned at,
    so the design space can draw tile sizes of a dynamic loop (the outer factor of a split
    stays dynamic when the trace replays on the kernel). For sampling and features only: a
    build replays the trace on a plain :class:`Schedule`."""

    dynamic_extent = DYNAMIC_HINT


def has_dynamic_dims(fn: Any) -> bool:
    """Whether function ``fn`` has an argument or result with a dynamic dim."""
    fn_type = ir.FunctionType(fn.attributes["function_type"].value)
    return any(isinstance(t, ir.ShapedType) and not ir.ShapedType(t).has_static_shape
               for t in list(fn_type.inputs) + list(fn_type.results))


def is_dynamic(kernel: ir.Module) -> bool:
    """Whether a function of ``kernel`` has an argument or result with a dynamic dim."""
    return any(has_dynamic_dims(op) for op in kernel.body.operations
               if op.operation.name == "func.func")


def sampling_schedule(kernel: ir.Module) -> type[Schedule]:
    """The schedule class the search draws and scores ``kernel``'s candidates with."""
    return AtHint if is_dynamic(kernel) else Schedule


# -- the sizes on a kernel -----------------------------------------------------------------

def attach(kernel: ir.Module, shapes: Sequence[Sequence[tuple]], weights: Sequence[float]) -> None:
    """Put the argument shapes of each size and their weights on ``kernel``'s ``main``."""
    fn = next(op for op in kernel.body.operations if op.operation.name == "func.func")
    with kernel.context:
        fn.attributes[SIZES_ATTR] = ir.ArrayAttr.get([
            ir.ArrayAttr.get([ir.DenseI64ArrayAttr.get(list(s)) for s in size])
            for size in shapes])
        fn.attributes[WEIGHTS_ATTR] = ir.ArrayAttr.get([
            ir.FloatAttr.get_f64(float(w)) for w in weights])


def attached(kernel: ir.Module) -> tuple[list[list[tuple[int, ...]]], list[float]] | None:
    """The sizes and weights :func:`attach` put on ``kernel`` (None for a static kernel)."""
    for op in kernel.body.operations:
        if op.operation.name == "func.func" and SIZES_ATTR in op.attributes:
            shapes = [[tuple(ir.DenseI64ArrayAttr(s)) for s in ir.ArrayAttr(size)]
                      for size in ir.ArrayAttr(op.attributes[SIZES_ATTR])]
            weights = [ir.FloatAttr(w).value for w in ir.ArrayAttr(op.attributes[WEIGHTS_ATTR])]
            return shapes, weights
    return None
