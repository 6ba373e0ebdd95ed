"""The ``graph`` dialect: pure tensor operators of a computational graph (Relax's analogue).

Each op is declared once, as an :class:`~mlcir.dialects.opdef.OpDef`: its operands, its
attributes and the function that infers its result type. The IRDL text, the Python verifier and
the builder's checks all come from that declaration. The declarations are one table, :data:`OPS`;
each op also has an explicit builder function of its name (``graph.matmul(a, b)``), so adding
an op is one row in :data:`OPS`, its builder, and its lowering in ``passes/lowerings`` (a test
checks that the table and the builders match).

What is not an op here is upstream: graph functions are ``func.func``, constants are
``arith.constant``, and the destination-passing call to a kernel or a library function is
``func.call`` (see :func:`call_dps` and docs/decisions.md).
"""

from __future__ import annotations

import builtins
import math
from typing import Any, Sequence

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view
from mlir import ir
from mlir.dialects import func, tensor

from . import winograd
from .dtypes import numpy_dtype
from .opdef import AttrDef, OpDef, ShapeError, TensorSpec, irdl_dialect

DIALECT = "graph"

# Attribute names mlcir sets on upstream ops of a graph module.
LIBRARY_ATTR = "graph.library"      # on a func.func declaration: the registered library name
NAME_ATTR = "graph.name"            # on a function argument/result: its user-facing name
DIMS_ATTR = "graph.dims"            # on a function argument: each dim's symbol ("" if none)
SPECIALIZES_ATTR = "graph.specializes"  # on a public func.func: the function it specialises
DTYPE_ATTR = "graph.dtype"          # ... and its numpy dtype where the element type does not
                                    # say it (an unsigned integer stored as signless)
PRIMITIVE_ATTR = "graph.primitive"  # on a private func.func: a fused group, one future kernel


# ----------------------------------------------------------------------------------------------
# Shape rules


def broadcast_shapes(*shapes: tuple[int | None, ...]) -> tuple[int | None, ...]:
    """numpy broadcasting of static/dynamic (``None``) shapes."""
    rank = builtins.max(len(s) for s in shapes)
    out: list[int | None] = []
    for axis in range(rank):
        dims = [s[axis - rank + len(s)] for s in shapes if axis - rank + len(s) >= 0]
        static = {d for d in dims if d is not None and d != 1}
        if len(static) > 1:
            raise ShapeError(f"shapes {' and '.join(_fmt(s) for s in shapes)} do not broadcast "
                             f"(dimension {axis} of the result: {sorted(static)})")
        if static:
            out.append(static.pop())
        elif any(d is None for d in dims):
            out.append(None)
        else:
            out.append(1)
    return tuple(out)


def _fmt(shape: Sequence[int | None]) -> str:
    return "[" + ", ".join("?" if d is None else str(d) for d in shape) + "]"


def _same_element_type(specs: list[TensorSpec]) -> ir.Type:
    types = {str(s.element_type) for s in specs}
    if len(types) > 1:
        raise ShapeError(f"operands have different element types: {', '.join(sorted(types))}")
    return specs[0].element_type


def _unary(specs: list[TensorSpec], _attrs: dict[str, Any]) -> list[TensorSpec]:
    return [specs[0]]


def _broadcasting(specs: list[TensorSpec], _attrs: dict[str, Any]) -> list[TensorSpec]:
    return [TensorSpec(broadcast_shapes(*(s.shape for s in specs)), _same_element_type(specs))]


def _same_shape(specs: list[TensorSpec], _attrs: dict[str, Any]) -> list[TensorSpec]:
    elem = _same_element_type(specs)
    first = specs[0].shape
    for s in specs[1:]:
        if len(s.shape) != len(first) or any(
                a is not None and b is not None and a != b for a, b in zip(first, s.shape)):
            raise ShapeError(f"operands must have the same shape, got "
                             f"{' and '.join(_fmt(x.shape) for x in specs)}")
    return [TensorSpec(first, elem)]


def _matmul(specs: list[TensorSpec], _attrs: dict[str, Any]) -> list[TensorSpec]:
    """numpy.matmul: 1-D operands are promoted, leading (batch) dims broadcast."""
    lhs, rhs = specs
    elem = _same_element_type(specs)
    if lhs.rank == 0 or rhs.rank == 0:
        raise ShapeError("matmul operands must have rank >= 1")
    a = (1,) + lhs.shape if lhs.rank == 1 else lhs.shape
    b = rhs.shape + (1,) if rhs.rank == 1 else rhs.shape
    k_a, k_b = a[-1], b[-2]
    if k_a is not None and k_b is not None and k_a != k_b:
        raise ShapeError(f"contracting dimensions differ: lhs {_fmt(lhs.shape)} has K={k_a}, "
                         f"rhs {_fmt(rhs.shape)} has K={k_b}")
    batch = broadcast_shapes(a[:-2], b[:-2])
    out = batch + ((a[-2],) if lhs.rank > 1 else ()) + ((b[-1],) if rhs.rank > 1 else ())
    return [TensorSpec(out, elem)]


def _matmul_packed(specs: list[TensorSpec], _attrs: dict[str, Any]) -> list[TensorSpec]:
    """``lhs [.., M, K]`` times a right operand packed in panels ``[N/n, K, n]`` (the order the
    register tile streams it): the result stays blocked, ``[.., M, N/n, n]``."""
    lhs, packed = specs
    elem = _same_element_type(specs)
    if lhs.rank < 2 or packed.rank != 3:
        raise ShapeError(f"expects lhs [.., M, K] and packed [N/n, K, n], got {_fmt(lhs.shape)} "
                         f"and {_fmt(packed.shape)}")
    if None not in (lhs.shape[-1], packed.shape[1]) and lhs.shape[-1] != packed.shape[1]:
        raise ShapeError(f"contracting dimensions differ: lhs {_fmt(lhs.shape)} has "
                         f"K={lhs.shape[-1]}, packed {_fmt(packed.shape)} has K={packed.shape[1]}")
    return [TensorSpec(lhs.shape[:-1] + (packed.shape[0], packed.shape[2]), elem)]


def _np_matmul_packed(lhs: np.ndarray, packed: np.ndarray) -> np.ndarray:
    return np.einsum("...mk,bkn->...mbn", lhs, packed).astype(lhs.dtype)


def _permute_dims(specs: list[TensorSpec], attrs: dict[str, Any]) -> list[TensorSpec]:
    (x,) = specs
    axes = attrs["axes"]
    if sorted(axes) != list(range(x.rank)):
        raise ShapeError(f"axes {axes} are not a permutation of the {x.rank} dimensions of "
                         f"{_fmt(x.shape)}")
    return [TensorSpec(tuple(x.shape[a] for a in axes), x.element_type)]


# ----------------------------------------------------------------------------------------------
# Attribute checks and shape rules of the neural-network, reduction and shape ops

_FLOAT_TYPES = (ir.F16Type, ir.BF16Type, ir.F32Type, ir.F64Type)


def is_float_type(t: ir.Type) -> bool:
    return isinstance(t, _FLOAT_TYPES)


def is_signless_int_type(t: ir.Type) -> bool:
    return isinstance(t, ir.IntegerType) and ir.IntegerType(t).is_signless


def _require_float(spec: TensorSpec, operand: str = "x") -> None:
    if not is_float_type(spec.element_type):
        raise ShapeError(f"{operand} must have a floating-point element type, got "
                         f"{spec.element_type}")


def _require_numeric(spec: TensorSpec, operand: str = "x") -> None:
    t = spec.element_type
    if not (is_float_type(t) or is_signless_int_type(t)):
        raise ShapeError(f"{operand} must have a float or signless integer element type, got {t}")


def _count(attrs: dict[str, Any], name: str, n: int) -> list[int]:
    values = list(attrs[name])
    if len(values) != n:
        raise ShapeError(f"{name} must have {n} entries, got {values}")
    return values


def _all_at_least(attrs: dict[str, Any], name: str, n: int, low: int) -> list[int]:
    values = _count(attrs, name, n)
    if any(v < low for v in values):
        word = "positive" if low == 1 else f">= {low}"
        raise ShapeError(f"{name} must be {word}, got {values}")
    return values


def _flag(attrs: dict[str, Any], name: str) -> None:
    if attrs[name] not in (0, 1):
        raise ShapeError(f"{name} must be 0 or 1, got {attrs[name]}")


def _axis(axis: int, rank: int, name: str = "axis") -> None:
    if not 0 <= axis < rank:
        raise ShapeError(f"{name} {axis} is out of range for rank {rank} (must be in [0, {rank}))")


def _axes(axes: Sequence[int], rank: int) -> None:
    for a in axes:
        _axis(a, rank, "axis")
    if list(axes) != sorted(set(axes)):
        raise ShapeError(f"axes {list(axes)} must be sorted and unique")


def _leaky_relu_check(specs: list[TensorSpec], _attrs: dict[str, Any]) -> None:
    _require_float(specs[0])


def _clip_check(specs: list[TensorSpec], attrs: dict[str, Any]) -> None:
    _require_numeric(specs[0])
    if math.isnan(attrs["min"]) or math.isnan(attrs["max"]):
        raise ShapeError(f"min and max must not be NaN, got min={attrs['min']}, max={attrs['max']}")


def _gelu_check(specs: list[TensorSpec], attrs: dict[str, Any]) -> None:
    _require_float(specs[0])
    if attrs["approximate"] not in ("none", "tanh"):
        raise ShapeError(f'approximate must be "none" or "tanh", got "{attrs["approximate"]}"')


def _astype(specs: list[TensorSpec], attrs: dict[str, Any]) -> list[TensorSpec]:
    (x,) = specs
    target = attrs["dtype"]
    _require_numeric(x)
    if not (is_float_type(target) or is_signless_int_type(target)):
        raise ShapeError(f"dtype must be a float or signless integer type, got {target}")
    return [TensorSpec(x.shape, target)]


def _reduction(specs: list[TensorSpec], attrs: dict[str, Any]) -> list[TensorSpec]:
    (x,) = specs
    axes, keep = attrs["axes"], attrs["keepdims"]
    _axes(axes, x.rank)
    _flag(attrs, "keepdims")
    shape = tuple(1 if i in axes else d for i, d in enumerate(x.shape) if keep or i not in axes)
    return [TensorSpec(shape, x.element_type)]


def _softmax(specs: list[TensorSpec], attrs: dict[str, Any]) -> list[TensorSpec]:
    (x,) = specs
    _require_float(x)
    _axis(attrs["axis"], x.rank)
    return [x]


def _layer_norm(specs: list[TensorSpec], attrs: dict[str, Any]) -> list[TensorSpec]:
    x, gamma, beta = specs
    _require_float(x)
    _same_element_type(specs)
    axes = list(attrs["axes"])
    if not axes or axes != list(range(axes[0], x.rank)):
        raise ShapeError(f"axes {axes} must be the trailing axes of x (rank {x.rank}), e.g. "
                         f"[{x.rank - 1}]")
    normalized = x.shape[axes[0]:]
    for name, spec in (("gamma", gamma), ("beta", beta)):
        if spec.rank != len(normalized) or any(
                a is not None and b is not None and a != b for a, b in zip(spec.shape, normalized)):
            raise ShapeError(f"{name} has shape {_fmt(spec.shape)} but the normalized dims of x "
                             f"{_fmt(x.shape)} are {_fmt(normalized)}")
    if attrs["epsilon"] < 0 or math.isnan(attrs["epsilon"]):
        raise ShapeError(f"epsilon must be >= 0, got {attrs['epsilon']}")
    return [x]


def window_output_size(size: int | None, kernel: int | None, stride: int, pad_lo: int,
                       pad_hi: int, dilation: int, ceil_mode: int = 0) -> int | None:
    """Output length of a sliding window (convolution or pooling) along one axis; ``None``
    when the input or kernel length is dynamic. Ceil mode follows ONNX/PyTorch: the last
    window must start inside the input or its leading padding."""
    if size is None or kernel is None:
        return None
    span = size + pad_lo + pad_hi - (dilation * (kernel - 1) + 1)
    if span < 0:
        raise ShapeError(f"the window (kernel {kernel}, dilation {dilation}) is larger than the "
                         f"padded input ({size} + padding {pad_lo} + {pad_hi})")
    if not ceil_mode:
        return span // stride + 1
    out = -(-span // stride) + 1
    if (out - 1) * stride >= size + pad_lo:
        out -= 1
    return out


def _window_attrs(attrs: dict[str, Any]) -> None:
    _all_at_least(attrs, "strides", 2, 1)
    _all_at_least(attrs, "padding", 4, 0)
    _all_at_least(attrs, "dilation", 2, 1)


def _conv2d_check(_specs: list[TensorSpec], attrs: dict[str, Any]) -> None:
    _window_attrs(attrs)
    if attrs["groups"] < 1:
        raise ShapeError(f"groups must be positive, got {attrs['groups']}")


def _conv2d(specs: list[TensorSpec], attrs: dict[str, Any]) -> list[TensorSpec]:
    x, w = specs
    elem = _same_element_type(specs)
    _require_numeric(x)
    if x.rank != 4 or w.rank != 4:
        raise ShapeError(f"x must be NCHW and w OIHW (rank 4), got x {_fmt(x.shape)} and "
                         f"w {_fmt(w.shape)}")
    groups = attrs["groups"]
    n, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    if c is not None and c % groups:
        raise ShapeError(f"x has {c} channels, not a multiple of groups={groups}")
    if o is not None and o % groups:
        raise ShapeError(f"w has {o} output channels, not a multiple of groups={groups}")
    if c is not None and cg is not None and cg * groups != c:
        raise ShapeError(f"w {_fmt(w.shape)} expects {cg} channels per group ({cg * groups} "
                         f"with groups={groups}) but x {_fmt(x.shape)} has {c}")
    (sh, sw), (pt, pl, pb, pr), (dh, dw) = attrs["strides"], attrs["padding"], attrs["dilation"]
    oh = window_output_size(h, kh, sh, pt, pb, dh)
    ow = window_output_size(wd, kw, sw, pl, pr, dw)
    return [TensorSpec((n, o, oh, ow), elem)]


def _pool_check(_specs: list[TensorSpec], attrs: dict[str, Any]) -> None:
    kernel = _all_at_least(attrs, "kernel", 2, 1)
    _window_attrs(attrs)
    _flag(attrs, "ceil_mode")
    if "count_include_pad" in attrs:
        _flag(attrs, "count_include_pad")
    pads, dilation = attrs["padding"], attrs["dilation"]
    extent = [dilation[i % 2] * (kernel[i % 2] - 1) + 1 for i in range(4)]
    if any(p >= e for p, e in zip(pads, extent)):
        raise ShapeError(f"padding {list(pads)} must be smaller than the (dilated) window "
                         f"{extent[:2]} so that no window lies entirely in the padding")


def _pool(specs: list[TensorSpec], attrs: dict[str, Any]) -> list[TensorSpec]:
    (x,) = specs
    _require_numeric(x)
    if x.rank != 4:
        raise ShapeError(f"x must be NCHW (rank 4), got {_fmt(x.shape)}")
    n, c, h, w = x.shape
    (kh, kw), (sh, sw) = attrs["kernel"], attrs["strides"]
    (pt, pl, pb, pr), (dh, dw) = attrs["padding"], attrs["dilation"]
    oh = window_output_size(h, kh, sh, pt, pb, dh, attrs["ceil_mode"])
    ow = window_output_size(w, kw, sw, pl, pr, dw, attrs["ceil_mode"])
    return [TensorSpec((n, c, oh, ow), x.element_type)]


def reshape_source_axis(d: int, position: int) -> int | None:
    """The axis of x that entry ``d`` at ``position`` of graph.reshape's ``shape`` keeps: 0
    is x's dim at the same position, -2 - j x's dim j; None for a size or the -1."""
    if d == 0:
        return position
    return -2 - d if d <= -2 else None


def reshape_result(x: Sequence[int | None], shape: Sequence[int]) -> list[int | None]:
    """graph.reshape's result dims (None: dynamic) for ``x``'s dims: a 0 keeps x's dim at
    its position, -2 - j keeps x's dim j, the -1 is the rest of the elements — static when
    every dim of x that is not kept is (ShapeError when the element counts do not fit)."""
    sources = [reshape_source_axis(d, i) for i, d in enumerate(shape)]
    copied = {j for j in sources if j is not None}
    if list(shape).count(-1) > 1 or any(j is not None and j >= len(x) for j in sources) or \
            len(copied) != builtins.sum(j is not None for j in sources):
        raise ShapeError(f"shape {list(shape)} must be the full result shape (every dim >= 1, "
                         "0 for x's dim at the same position, -2 - j for x's dim j, each kept "
                         "once, or one -1 for the rest)")
    uncopied = [d for i, d in enumerate(x) if i not in copied]
    out: list[int | None] = [x[j] if j is not None else d for j, d in zip(sources, shape)]
    static = math.prod(d for j, d in zip(sources, out) if j is None and d != -1)
    if None in uncopied:
        out = [None if j is None and d == -1 else d for j, d in zip(sources, out)]
        if out.count(None) > 1 and reshape_groups(x, shape) is None:
            raise ShapeError(f"shape {list(shape)}: a reshape of {_fmt(x)} with more than one "
                             "dynamic dim must keep them in x's order, the dims between them "
                             "regrouping")
        return out
    count = math.prod(uncopied)
    if (-1 in out and count % static) or (-1 not in out and count != static):
        kept = " outside the kept dims" if copied else ""
        raise ShapeError(f"cannot reshape {_fmt(x)} ({count} elements{kept}) to {list(shape)} "
                         f"({static}{' * -1' if -1 in out else ''} elements)")
    out = [count // static if d == -1 else d for d in out]
    return out


def reshape_groups(x: Sequence[int | None], shape: Sequence[int]
                   ) -> tuple[list[list[int]], list[list[int]], list[int | None]] | None:
    """A reshape that keeps dims of x (0, -2 - j) as a regrouping around them: the collapse
    groups of x, the expand groups of the result and the dims in between — each kept dim a
    group of its own (with unit dims joining it), the static dims of x between two kept ones
    one group expanded to the result dims between them. None when no dim is kept, the kept
    ones are not in x's order, or what lies between does not regroup. Every expand group
    then has one dynamic dim at most, what ``tensor.expand_shape`` can lower."""
    kept = [(p, reshape_source_axis(d, p)) for p, d in enumerate(shape)
            if reshape_source_axis(d, p) is not None]
    if not kept or [j for _, j in kept] != sorted({j for _, j in kept}):
        return None
    collapse: list[list[int]] = []
    expand: list[list[int]] = []
    mid: list[int | None] = []
    pending_x: list[int] = []  # unit dims before the first group
    pending_t: list[int] = []
    bounds = [(-1, -1)] + kept + [(len(shape), len(x))]
    for (p0, j0), (p1, j1) in zip(bounds, bounds[1:]):
        xs, ts = list(range(j0 + 1, j1)), list(range(p0 + 1, p1))
        sizes = [shape[p] for p in ts]
        if xs and ts:
            if any(x[j] is None for j in xs) or any(d < 1 and d != -1 for d in sizes):
                return None
            static = math.prod(d for d in sizes if d != -1)
            count = math.prod(x[j] for j in xs)  # type: ignore[misc]
            if count % static or (-1 not in sizes and count != static):
                return None
            collapse.append(xs)
            expand.append(ts)
            mid.append(count)
        elif xs or ts:
            if any(x[j] != 1 for j in xs) or any(d not in (1, -1) for d in sizes):
                return None
            into_x, into_t = (collapse[-1], expand[-1]) if collapse else (pending_x, pending_t)
            into_x.extend(xs)
            into_t.extend(ts)
        if p1 < len(shape):  # the kept dim that ends this segment
            collapse.append(pending_x + [j1])
            expand.append(pending_t + [p1])
            mid.append(x[j1])
            pending_x, pending_t = [], []
    return [sorted(g) for g in collapse], [sorted(g) for g in expand], mid


def _reshape(specs: list[TensorSpec], attrs: dict[str, Any]) -> list[TensorSpec]:
    (x,) = specs
    return [TensorSpec(tuple(reshape_result(x.shape, attrs["shape"])), x.element_type)]


def _np_reshape(x: np.ndarray, shape: Sequence[int]) -> np.ndarray:
    return np.reshape(x, reshape_result(x.shape, shape))


def _iota(specs: list[TensorSpec], attrs: dict[str, Any]) -> list[TensorSpec]:
    (x,) = specs
    axis = attrs["axis"]
    _axis(axis, x.rank)
    return [TensorSpec((x.shape[axis],), ir.IntegerType.get_signless(64))]


def _broadcast_to(specs: list[TensorSpec], attrs: dict[str, Any]) -> list[TensorSpec]:
    (x,) = specs
    shape = tuple(attrs["shape"])
    if any(d < 1 for d in shape):
        raise ShapeError(f"shape {list(shape)} must have every dim >= 1")
    if len(shape) < x.rank:
        raise ShapeError(f"cannot broadcast {_fmt(x.shape)} to the lower rank {list(shape)}")
    for axis, d in enumerate(x.shape):
        target = shape[len(shape) - x.rank + axis]
        if d is not None and d != 1 and d != target:
            raise ShapeError(f"cannot broadcast {_fmt(x.shape)} to {list(shape)} (dimension "
                             f"{axis} is {d}, the target's is {target})")
    return [TensorSpec(shape, x.element_type)]


def slice_length(size: int, begin: int, end: int, stride: int) -> int:
    """Elements of ``x[begin:end:stride]`` along an axis of ``size`` elements, with the
    normalised bounds of ``strided_slice`` (``end = -1`` with a negative stride: through
    index 0)."""
    if stride > 0:
        lo, hi = builtins.min(begin, size), builtins.min(end, size)
        return builtins.max(0, -(-(hi - lo) // stride))
    lo, hi = builtins.max(end, -1), builtins.min(begin, size - 1)
    return builtins.max(0, -(-(hi - lo) // -stride))


def _strided_slice(specs: list[TensorSpec], attrs: dict[str, Any]) -> list[TensorSpec]:
    (x,) = specs
    begin = _count(attrs, "begin", x.rank)
    end = _count(attrs, "end", x.rank)
    strides = _count(attrs, "strides", x.rank)
    shape: list[int | None] = []
    for axis, (n, b, e, s) in enumerate(zip(x.shape, begin, end, strides)):
        if s == 0:
            raise ShapeError(f"strides {strides}: the stride of axis {axis} is 0")
        if b < 0 or e < -1:
            raise ShapeError(f"axis {axis}: begin {b} must be >= 0 and end {e} >= -1 (bounds "
                             "are normalised; end -1 with a negative stride means through 0)")
        if n is None:
            shape.append(None)
            continue
        length = slice_length(n, b, e, s)
        if length == 0:
            raise ShapeError(f"axis {axis}: the slice {b}:{e}:{s} of {n} elements is empty")
        shape.append(length)
    return [TensorSpec(tuple(shape), x.element_type)]


def _take(specs: list[TensorSpec], attrs: dict[str, Any]) -> list[TensorSpec]:
    x, indices = specs
    t = indices.element_type
    if not (is_signless_int_type(t) and ir.IntegerType(t).width in (32, 64)):
        raise ShapeError(f"indices must be i32 or i64, got {t}")
    axis = attrs["axis"]
    _axis(axis, x.rank)
    return [TensorSpec(x.shape[:axis] + indices.shape + x.shape[axis + 1:], x.element_type)]


def _gather_elements(specs: list[TensorSpec], attrs: dict[str, Any]) -> list[TensorSpec]:
    x, indices = specs
    t = indices.element_type
    if not (is_signless_int_type(t) and ir.IntegerType(t).width in (32, 64)):
        raise ShapeError(f"indices must be i32 or i64, got {t}")
    if indices.rank != x.rank:
        raise ShapeError(f"indices {_fmt(indices.shape)} must have the rank of x {_fmt(x.shape)}")
    _axis(attrs["axis"], x.rank)
    return [TensorSpec(indices.shape, x.element_type)]


SCATTER_REDUCTIONS = ("none", "add", "mul", "max", "min")


def _scatter_rows(specs: list[TensorSpec], attrs: dict[str, Any]) -> list[TensorSpec]:
    data, rows, updates = specs
    t = rows.element_type
    if not (is_signless_int_type(t) and ir.IntegerType(t).width in (32, 64)):
        raise ShapeError(f"rows must be i32 or i64, got {t}")
    _same_element_type([data, updates])
    _require_numeric(data, "data")
    if data.rank != 2 or rows.rank != 1 or updates.rank != 2:
        raise ShapeError(f"data [R, K], rows [M] and updates [M, K] expected, got data "
                         f"{_fmt(data.shape)}, rows {_fmt(rows.shape)}, updates "
                         f"{_fmt(updates.shape)}")
    for what, a, b in (("M", rows.shape[0], updates.shape[0]),
                       ("K", data.shape[1], updates.shape[1])):
        if a is not None and b is not None and a != b:
            raise ShapeError(f"{what} differs: data {_fmt(data.shape)}, rows "
                             f"{_fmt(rows.shape)}, updates {_fmt(updates.shape)}")
    if attrs["reduction"] not in SCATTER_REDUCTIONS:
        raise ShapeError(f"reduction must be one of {SCATTER_REDUCTIONS}, got "
                         f"{attrs['reduction']!r}")
    return [data]


PAD_MODES = ("constant", "reflect", "edge", "wrap")


def _pad(specs: list[TensorSpec], attrs: dict[str, Any]) -> list[TensorSpec]:
    x, pads, value = specs
    t = pads.element_type
    if not (is_signless_int_type(t) and ir.IntegerType(t).width == 64):
        raise ShapeError(f"pads must be i64, got {t}")
    if pads.shape != (2 * x.rank,):
        raise ShapeError(f"pads must have shape [{2 * x.rank}] (begin and end of each of the "
                         f"{x.rank} axes), got {_fmt(pads.shape)}")
    if value.rank != 0:
        raise ShapeError(f"value must be a 0-d tensor, got {_fmt(value.shape)}")
    _same_element_type([x, value])
    if attrs["mode"] not in PAD_MODES:
        raise ShapeError(f"mode must be one of {PAD_MODES}, got {attrs['mode']!r}")
    return [TensorSpec((None,) * x.rank, x.element_type)]


# ----------------------------------------------------------------------------------------------
# Their numpy semantics (``evaluate``)

def _erf(x: np.ndarray) -> np.ndarray:
    return np.vectorize(math.erf, otypes=[x.dtype])(x)


def _divide(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """arith.divf for floats; arith.divsi (rounds toward zero, like C and ONNX) for integers."""
    if np.issubdtype(np.result_type(a, b), np.integer):
        return (np.sign(a) * np.sign(b) * (np.abs(a) // np.abs(b))).astype(np.result_type(a, b))
    return np.divide(a, b)


def _np_clip(x: np.ndarray, min: float, max: float) -> np.ndarray:  # the attributes' names
    if np.issubdtype(x.dtype, np.integer):
        info = np.iinfo(x.dtype)
        lo = info.min if min == -math.inf else builtins.max(info.min, math.ceil(min))
        hi = info.max if max == math.inf else builtins.min(info.max, math.floor(max))
        return np.minimum(np.maximum(x, x.dtype.type(lo)), x.dtype.type(hi))
    return np.minimum(np.maximum(x, x.dtype.type(min)), x.dtype.type(max))


def _np_gelu(x: np.ndarray, approximate: str) -> np.ndarray:
    v = x.astype(np.float64)
    if approximate == "tanh":
        inner = math.sqrt(2 / math.pi) * (v + 0.044715 * v ** 3)
        return (0.5 * v * (1 + np.tanh(inner))).astype(x.dtype)
    return (0.5 * v * (1 + _erf(v / math.sqrt(2)))).astype(x.dtype)


def _np_reduce(fn):
    def evaluate(x: np.ndarray, axes: Sequence[int], keepdims: int) -> np.ndarray:
        return fn(x, axis=tuple(axes), keepdims=bool(keepdims))
    return evaluate


def _np_mean(x: np.ndarray, axes: Sequence[int], keepdims: int) -> np.ndarray:
    total = np.sum(x, axis=tuple(axes), keepdims=bool(keepdims), dtype=x.dtype)
    count = math.prod(x.shape[a] for a in axes)
    return _divide(total, np.asarray(count, x.dtype)).astype(x.dtype)


def _np_softmax(x: np.ndarray, axis: int) -> np.ndarray:
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return e / np.sum(e, axis=axis, keepdims=True)


def _np_log_softmax(x: np.ndarray, axis: int) -> np.ndarray:
    shifted = x - np.max(x, axis=axis, keepdims=True)
    return shifted - np.log(np.sum(np.exp(shifted), axis=axis, keepdims=True))


def _np_layer_norm(x: np.ndarray, gamma: np.ndarray, beta: np.ndarray, axes: Sequence[int],
                   epsilon: float) -> np.ndarray:
    axes = tuple(axes)
    mean = np.mean(x, axis=axes, keepdims=True)
    var = np.mean(np.square(x - mean), axis=axes, keepdims=True)
    return ((x - mean) / np.sqrt(var + x.dtype.type(epsilon)) * gamma + beta).astype(x.dtype)


def _np_windows(padded: np.ndarray, kernel: Sequence[int], strides: Sequence[int],
                dilation: Sequence[int]) -> np.ndarray:
    """Every window of an NCHW array as a view ``[N, C, OH, OW, KH, KW]``."""
    (kh, kw), (sh, sw), (dh, dw) = kernel, strides, dilation
    view = sliding_window_view(padded, (dh * (kh - 1) + 1, dw * (kw - 1) + 1), axis=(2, 3))
    return view[:, :, ::sh, ::sw, ::dh, ::dw]


def _np_conv2d(x: np.ndarray, w: np.ndarray, strides: Sequence[int], padding: Sequence[int],
               dilation: Sequence[int], groups: int) -> np.ndarray:
    pt, pl, pb, pr = padding
    padded = np.pad(x, ((0, 0), (0, 0), (pt, pb), (pl, pr)))
    win = _np_windows(padded, w.shape[2:], strides, dilation)
    n, c, oh, ow, kh, kw = win.shape
    o = w.shape[0]
    win = win.reshape(n, groups, c // groups, oh, ow, kh, kw)
    wg = w.reshape(groups, o // groups, c // groups, kh, kw)
    out = np.einsum("ngchwij,gocij->ngohw", win, wg)
    return out.reshape(n, o, oh, ow).astype(x.dtype)


def _np_pool_out(x: np.ndarray, kernel, strides, padding, dilation, ceil_mode) -> list[int]:
    pt, pl, pb, pr = padding
    return [window_output_size(x.shape[2], kernel[0], strides[0], pt, pb, dilation[0], ceil_mode),
            window_output_size(x.shape[3], kernel[1], strides[1], pl, pr, dilation[1], ceil_mode)]


def _np_pool_windows(x: np.ndarray, fill: Any, out: Sequence[int], kernel: Sequence[int],
                     strides: Sequence[int], padding: Sequence[int], dilation: Sequence[int]
                     ) -> np.ndarray:
    """The ``out`` windows along H and W of ``x`` padded with ``fill`` (also past the
    bottom/right padding, where ceil mode reads)."""
    pt, pl, pb, pr = padding
    need = [(o - 1) * s + d * (k - 1) + 1 for o, s, d, k in zip(out, strides, dilation, kernel)]
    extra_h = builtins.max(0, need[0] - (x.shape[2] + pt + pb))
    extra_w = builtins.max(0, need[1] - (x.shape[3] + pl + pr))
    padded = np.pad(x, ((0, 0), (0, 0), (pt, pb + extra_h), (pl, pr + extra_w)),
                    constant_values=fill)
    return _np_windows(padded, kernel, strides, dilation)[:, :, :out[0], :out[1]]


def _np_max_pool2d(x: np.ndarray, kernel, strides, padding, dilation, ceil_mode) -> np.ndarray:
    lowest = -np.inf if np.issubdtype(x.dtype, np.floating) else np.iinfo(x.dtype).min
    out = _np_pool_out(x, kernel, strides, padding, dilation, ceil_mode)
    return _np_pool_windows(x, lowest, out, kernel, strides, padding, dilation).max(axis=(-2, -1))


def pool_divisors(spatial: Sequence[int], kernel: Sequence[int], strides: Sequence[int],
                  padding: Sequence[int], dilation: Sequence[int], ceil_mode: int,
                  count_include_pad: int) -> np.ndarray:
    """``[OH, OW]``: how many taps of each average-pooling window are counted: those inside the
    input, or with ``count_include_pad`` inside the input and its explicit padding (never the
    extra region ceil mode reads past the padding)."""
    h, w = spatial
    pt, pl, pb, pr = padding
    out = [window_output_size(h, kernel[0], strides[0], pt, pb, dilation[0], ceil_mode),
           window_output_size(w, kernel[1], strides[1], pl, pr, dilation[1], ceil_mode)]
    if count_include_pad:
        counted = np.ones((1, 1, h + pt + pb, w + pl + pr), np.int64)
        padding = (0, 0, 0, 0)
    else:
        counted = np.ones((1, 1, h, w), np.int64)
    return _np_pool_windows(counted, 0, out, kernel, strides, padding, dilation).sum(
        axis=(-2, -1))[0, 0]


def _np_avg_pool2d(x: np.ndarray, kernel, strides, padding, dilation, ceil_mode,
                   count_include_pad) -> np.ndarray:
    out = _np_pool_out(x, kernel, strides, padding, dilation, ceil_mode)
    total = _np_pool_windows(x, 0, out, kernel, strides, padding, dilation).sum(
        axis=(-2, -1), dtype=x.dtype)
    divisors = pool_divisors(x.shape[2:], kernel, strides, padding, dilation, ceil_mode,
                             count_include_pad)
    return _divide(total, divisors.astype(x.dtype)).astype(x.dtype)


def _np_strided_slice(x: np.ndarray, begin: Sequence[int], end: Sequence[int],
                      strides: Sequence[int]) -> np.ndarray:
    index = tuple(slice(b, e if (s > 0 or e >= 0) else None, s)
                  for b, e, s in zip(begin, end, strides))
    return np.ascontiguousarray(x[index])


def _np_take(x: np.ndarray, indices: np.ndarray, axis: int) -> np.ndarray:
    n = x.shape[axis]
    if np.any((indices < -n) | (indices >= n)):
        raise IndexError(f"take: indices out of range for an axis of {n} elements")
    return np.take(x, np.where(indices < 0, indices + n, indices), axis=axis)


def _np_gather_elements(x: np.ndarray, indices: np.ndarray, axis: int) -> np.ndarray:
    n = x.shape[axis]
    if np.any((indices < -n) | (indices >= n)):
        raise IndexError(f"gather_elements: indices out of range for an axis of {n} elements")
    return np.take_along_axis(x, np.where(indices < 0, indices + n, indices), axis=axis)


def _np_scatter_rows(data: np.ndarray, rows: np.ndarray, updates: np.ndarray,
                     reduction: str) -> np.ndarray:
    n = data.shape[0]
    if np.any((rows < 0) | (rows >= n)):
        raise IndexError(f"scatter_rows: rows out of range for {n} rows")
    out = data.copy()
    if reduction == "none":
        for m, row in enumerate(rows):  # in order: a later update of a row wins
            out[row] = updates[m]
        return out
    combine = {"add": np.add, "mul": np.multiply, "max": np.maximum, "min": np.minimum}
    combine[reduction].at(out, rows, updates)
    return out


def _np_pad(x: np.ndarray, pads: np.ndarray, value: np.ndarray, mode: str) -> np.ndarray:
    rank = x.ndim
    before, after = [int(p) for p in pads[:rank]], [int(p) for p in pads[rank:]]
    for axis, (b, e) in enumerate(zip(before, after)):
        n = x.shape[axis] - builtins.max(-b, 0) - builtins.max(-e, 0)  # kept after cropping
        if n < 1 or (mode == "reflect" and (b >= n or e >= n)):
            raise ValueError(f"pad: pads ({b}, {e}) do not fit axis {axis} of {n} elements "
                             f"in mode {mode!r}")
    cropped = x[tuple(slice(builtins.max(-b, 0), n - builtins.max(-e, 0))
                      for b, e, n in zip(before, after, x.shape))]
    widths = [(builtins.max(b, 0), builtins.max(e, 0)) for b, e in zip(before, after)]
    if mode == "constant":
        return np.pad(cropped, widths, constant_values=value)
    return np.pad(cropped, widths, mode={"edge": "edge", "reflect": "reflect",
                                         "wrap": "wrap"}[mode])


_np_sum = _np_reduce(lambda x, **kw: np.sum(x, dtype=x.dtype, **kw))
_np_max = _np_reduce(np.max)
_np_min = _np_reduce(np.min)


# ----------------------------------------------------------------------------------------------
# The op table

# -- the blocked NCHWc layout (graph-layout-nchwc) -------------------------------------------

def parse_blocked_layout(layout: str) -> int | None:
    """The channel block of ``"NCHW16c"`` (16); None for ``"NCHW"``; raises otherwise."""
    if layout == "NCHW":
        return None
    if layout.startswith("NCHW") and layout.endswith("c") and layout[4:-1].isdigit() \
            and int(layout[4:-1]) > 0:
        return int(layout[4:-1])
    raise ShapeError(f"layout {layout!r} is neither NCHW nor NCHW<c>c (NCHW16c)")


def _layout_transform(specs: list[TensorSpec], attrs: dict[str, Any]) -> list[TensorSpec]:
    (x,) = specs
    src, dst = parse_blocked_layout(attrs["src_layout"]), parse_blocked_layout(attrs["dst_layout"])
    if (src is None) == (dst is None):
        raise ShapeError(f"layout_transform goes between NCHW and NCHW<c>c, got "
                         f"{attrs['src_layout']} -> {attrs['dst_layout']}")
    if src is None:
        if x.rank != 4:
            raise ShapeError(f"x must be NCHW (rank 4), got {_fmt(x.shape)}")
        n, c, h, w = x.shape
        if c is None or c % dst:
            raise ShapeError(f"{c} channels do not split into blocks of {dst}")
        return [TensorSpec((n, c // dst, h, w, dst), x.element_type)]
    if x.rank != 5 or x.shape[4] != src:
        raise ShapeError(f"x must be NCHW{src}c ([N, C/{src}, H, W, {src}]), got {_fmt(x.shape)}")
    n, cb, h, w, _ = x.shape
    return [TensorSpec((n, None if cb is None else cb * src, h, w), x.element_type)]


def to_blocked(x: np.ndarray, block: int) -> np.ndarray:
    """NCHW -> NCHW<block>c: ``[N, C/c, H, W, c]``."""
    n, c, h, w = x.shape
    return np.ascontiguousarray(x.reshape(n, c // block, block, h, w).transpose(0, 1, 3, 4, 2))


def from_blocked(x: np.ndarray) -> np.ndarray:
    """NCHW<c>c -> NCHW."""
    n, cb, h, w, c = x.shape
    return np.ascontiguousarray(x.transpose(0, 1, 4, 2, 3).reshape(n, cb * c, h, w))


def pack_filter(w: np.ndarray, in_block: int, out_block: int) -> np.ndarray:
    """An OIHW filter ``[O, C, KH, KW]`` as ``conv2d_nchwc`` streams it:
    ``[O/co, C/ci, KH, KW, ci, co]`` (a depthwise ``[C, 1, KH, KW]``: ci = 1)."""
    o, c, kh, kw = w.shape
    return np.ascontiguousarray(w.reshape(o // out_block, out_block, c // in_block, in_block, kh,
                                          kw).transpose(0, 2, 4, 5, 3, 1))


def unpack_filter(w: np.ndarray) -> np.ndarray:
    ob, cb, kh, kw, ci, co = w.shape
    return np.ascontiguousarray(w.transpose(0, 5, 1, 4, 2, 3).reshape(ob * co, cb * ci, kh, kw))


def _np_layout_transform(x: np.ndarray, src_layout: str, dst_layout: str) -> np.ndarray:  # noqa: ARG001
    block = parse_blocked_layout(dst_layout)
    return from_blocked(x) if block is None else to_blocked(x, block)


def _conv2d_nchwc(specs: list[TensorSpec], attrs: dict[str, Any]) -> list[TensorSpec]:
    x, w = specs
    _same_element_type(specs)
    if x.rank != 5 or w.rank != 6:
        raise ShapeError(f"x must be [N, C/ci, H, W, ci] and w [O/co, C/ci, KH, KW, ci, co], got "
                         f"x {_fmt(x.shape)} and w {_fmt(w.shape)}")
    n, cb, h, wd, ci = x.shape
    ob, wcb, kh, kw, wci, co = w.shape
    groups = attrs["groups"]
    if groups == 1 and (wcb, wci) != (cb, ci):
        raise ShapeError(f"w {_fmt(w.shape)} does not read the channel blocks of x {_fmt(x.shape)}")
    if groups != 1 and not (wcb == 1 and wci == 1 and ci == co and ob == cb
                            and groups == cb * ci):
        raise ShapeError(f"groups={groups}: only depthwise (groups = channels, w "
                         f"[C/c, 1, KH, KW, 1, c]) is blocked, got x {_fmt(x.shape)} and "
                         f"w {_fmt(w.shape)}")
    unblocked = _conv2d([TensorSpec((n, None if cb is None else cb * ci, h, wd), x.element_type),
                         TensorSpec((ob * co, wcb * wci, kh, kw), w.element_type)], attrs)[0]
    _, _, oh, ow = unblocked.shape
    return [TensorSpec((n, ob, oh, ow, co), x.element_type)]


def _np_conv2d_nchwc(x: np.ndarray, w: np.ndarray, strides, padding, dilation, groups
                     ) -> np.ndarray:
    out = _np_conv2d(from_blocked(x), unpack_filter(w), strides, padding, dilation, groups)
    return to_blocked(out, w.shape[5])


def _pool_nchwc(specs: list[TensorSpec], attrs: dict[str, Any]) -> list[TensorSpec]:
    (x,) = specs
    if x.rank != 5:
        raise ShapeError(f"x must be NCHW<c>c (rank 5), got {_fmt(x.shape)}")
    n, cb, h, w, c = x.shape
    (out,) = _pool([TensorSpec((n, cb, h, w), x.element_type)], attrs)
    return [TensorSpec(out.shape + (c,), x.element_type)]


def _pad_window(specs: list[TensorSpec], attrs: dict[str, Any]) -> list[TensorSpec]:
    (x,) = specs
    if x.rank not in (4, 5):
        raise ShapeError(f"x must be NCHW or NCHW<c>c (rank 4 or 5), got {_fmt(x.shape)}")
    padding = attrs["padding"]
    if len(padding) != 4 or any(p < 0 for p in padding):
        raise ShapeError(f"padding must be 4 sizes >= 0 [top, left, bottom, right], got {padding}")
    top, left, bottom, right = padding
    h, w = x.shape[2:4]
    shape = list(x.shape)
    shape[2] = None if h is None else h + top + bottom
    shape[3] = None if w is None else w + left + right
    return [TensorSpec(tuple(shape), x.element_type)]


def _np_pad_window(x: np.ndarray, padding, value) -> np.ndarray:
    top, left, bottom, right = padding
    widths = [(0, 0), (0, 0), (top, bottom), (left, right)] + [(0, 0)] * (x.ndim - 4)
    fill = value
    if np.issubdtype(x.dtype, np.integer) and not np.isfinite(value):
        info = np.iinfo(x.dtype)
        fill = info.min if value < 0 else info.max
    return np.pad(x, widths, constant_values=np.asarray(fill).astype(x.dtype))


def _winograd_input(specs: list[TensorSpec], attrs: dict[str, Any]) -> list[TensorSpec]:
    (x,) = specs
    _require_float(x)
    if x.rank != 5 or None in x.shape:
        raise ShapeError(f"x must be a static NCHW<c>c tensor [N, C/c, H, W, c], got {_fmt(x.shape)}")
    padding = attrs["padding"]
    if len(padding) != 4 or any(p < 0 for p in padding):
        raise ShapeError(f"padding must be 4 sizes >= 0 [top, left, bottom, right], got {padding}")
    n, cb, h, w, c = x.shape
    hp, wp = h + padding[0] + padding[2], w + padding[1] + padding[3]
    step, extra = winograd.TILE, winograd.KERNEL - 1
    if (hp - extra) % step or (wp - extra) % step or hp <= extra or wp <= extra:
        raise ShapeError(f"the padded input's H and W ({hp}, {wp}) must be 4 t + 2 (whole "
                         f"4x4 output tiles of a 3x3 window)")
    tiles = n * ((hp - extra) // step) * ((wp - extra) // step)
    return [TensorSpec((winograd.ALPHA ** 2, tiles, cb * c), x.element_type)]


def _np_winograd_input(x: np.ndarray, padding: Sequence[int]) -> np.ndarray:
    return winograd.input_transform(_np_pad_window(x, padding, 0.0))


def _winograd_output(specs: list[TensorSpec], attrs: dict[str, Any]) -> list[TensorSpec]:
    (m,) = specs
    _require_float(m, "m")
    tiles, block = attrs["tiles"], attrs["block"]
    if len(tiles) != 2 or builtins.min(tiles) < 1 or block < 1:
        raise ShapeError(f"tiles must be [tH, tW] >= 1 and block >= 1, got {tiles} and {block}")
    if m.rank != 3 or None in m.shape or m.shape[0] != winograd.ALPHA ** 2:
        raise ShapeError(f"m must be the 36 products [36, tiles, K], got {_fmt(m.shape)}")
    _, t, k = m.shape
    if t % (tiles[0] * tiles[1]) or k % block:
        raise ShapeError(f"m {_fmt(m.shape)} is not [36, N x {tiles[0]} x {tiles[1]} tiles, "
                         f"K/{block} x {block}]")
    n = t // (tiles[0] * tiles[1])
    return [TensorSpec((n, k // block, tiles[0] * winograd.TILE, tiles[1] * winograd.TILE,
                        block), m.element_type)]


def _np_winograd_output(m: np.ndarray, tiles: Sequence[int], block: int) -> np.ndarray:
    return winograd.output_transform(m, tiles, block)


def _np_max_pool2d_nchwc(x: np.ndarray, **attrs: Any) -> np.ndarray:
    return to_blocked(_np_max_pool2d(from_blocked(x), **attrs), x.shape[4])


_REDUCTION_ATTRS = (AttrDef("axes", "ints", "the reduced axes (sorted, unique, >= 0)"),
                    AttrDef("keepdims", "int", "1: reduced axes stay as size 1"))
_POOL_ATTRS = (AttrDef("kernel", "ints", "[kh, kw]"), AttrDef("strides", "ints", "[sh, sw]"),
               AttrDef("padding", "ints", "[top, left, bottom, right]"),
               AttrDef("dilation", "ints", "[dh, dw]"),
               AttrDef("ceil_mode", "int", "1: output sizes rounded up (ONNX/PyTorch rule)"))

#: Every graph op, by name: one :class:`OpDef` row each (order: the IRDL file's).
# The ONNX elementwise math family's operand checks: trigonometric, rounding, sign, remainders,
# bitwise ops and the activations that need a comparison (the others are decomposed at import).


def _float_elementwise(specs: list[TensorSpec], _attrs: dict[str, Any]) -> None:
    _require_float(specs[0])


def _integer_elementwise(specs: list[TensorSpec], _attrs: dict[str, Any]) -> None:
    for spec in specs:
        if not is_signless_int_type(spec.element_type) or \
                ir.IntegerType(spec.element_type).width == 1:
            raise ShapeError(f"operands must have a signless integer element type (i8 to i64), "
                             f"got {spec.element_type}")


def _numeric_elementwise(specs: list[TensorSpec], _attrs: dict[str, Any]) -> None:
    for spec in specs:
        _require_numeric(spec)


def _is_bool_type(t: ir.Type) -> bool:
    return isinstance(t, ir.IntegerType) and ir.IntegerType(t).width == 1


def _comparison(specs: list[TensorSpec], _attrs: dict[str, Any]) -> list[TensorSpec]:
    """Broadcasting comparison of two tensors of one element type: a boolean (i1) tensor."""
    _same_element_type(specs)
    for spec in specs:
        if not (is_float_type(spec.element_type) or is_signless_int_type(spec.element_type)):
            raise ShapeError(f"operands must have a float, integer or boolean element type, got "
                             f"{spec.element_type}")
    return [TensorSpec(broadcast_shapes(*(s.shape for s in specs)),
                       ir.IntegerType.get_signless(1))]


def _boolean_elementwise(specs: list[TensorSpec], _attrs: dict[str, Any]) -> None:
    for spec in specs:
        if not _is_bool_type(spec.element_type):
            raise ShapeError(f"operands must have a boolean (i1) element type, got "
                             f"{spec.element_type}")


def _float_predicate(specs: list[TensorSpec], _attrs: dict[str, Any]) -> list[TensorSpec]:
    """A float tensor's elementwise test: a boolean (i1) tensor of its shape."""
    _require_float(specs[0])
    return [TensorSpec(specs[0].shape, ir.IntegerType.get_signless(1))]


def _where(specs: list[TensorSpec], _attrs: dict[str, Any]) -> list[TensorSpec]:
    condition, x, y = specs
    if not _is_bool_type(condition.element_type):
        raise ShapeError(f"condition must have a boolean (i1) element type, got "
                         f"{condition.element_type}")
    return [TensorSpec(broadcast_shapes(condition.shape, x.shape, y.shape),
                       _same_element_type([x, y]))]


def _np_isinf(x: np.ndarray, detect_positive: int, detect_negative: int) -> np.ndarray:
    return ((np.isposinf(x) & bool(detect_positive)) | (np.isneginf(x) & bool(detect_negative)))


def _np_shift(fn):
    """numpy's shift of integers viewed as unsigned, 0 for shift counts of the width or more
    (what numpy gives for unsigned types; C and LLVM leave them undefined)."""
    def evaluate(x: np.ndarray, y: np.ndarray) -> np.ndarray:
        dtype = np.result_type(x, y)
        unsigned = np.dtype(f"u{dtype.itemsize}")
        a, n = x.astype(dtype).view(unsigned), y.astype(dtype).view(unsigned)
        wide = n >= 8 * dtype.itemsize
        out = fn(a, np.where(wide, 0, n).astype(unsigned))
        return np.where(wide, unsigned.type(0), out).astype(unsigned).view(dtype)
    return evaluate


def _np_float(fn):
    """A numpy ufunc that keeps the float element type of its operand."""
    return lambda x: fn(x).astype(x.dtype)


OPS: dict[str, OpDef] = {op.name: op for op in [
    OpDef(DIALECT, "relu", ("x",), _unary, summary="Elementwise max(x, 0).", pattern="elementwise",
          evaluate=lambda x: np.maximum(x, x.dtype.type(0))),
    OpDef(DIALECT, "negative", ("x",), _unary, summary="Elementwise -x.", pattern="elementwise",
          evaluate=np.negative),
    OpDef(DIALECT, "exp", ("x",), _unary, summary="Elementwise e^x.", pattern="elementwise",
          evaluate=np.exp),
    OpDef(DIALECT, "log", ("x",), _unary, summary="Elementwise natural logarithm.",
          pattern="elementwise", evaluate=np.log),
    OpDef(DIALECT, "sqrt", ("x",), _unary, summary="Elementwise square root.",
          pattern="elementwise", evaluate=np.sqrt),
    OpDef(DIALECT, "rsqrt", ("x",), _unary, summary="Elementwise 1 / sqrt(x).",
          pattern="elementwise", evaluate=lambda x: (1 / np.sqrt(x)).astype(x.dtype)),
    OpDef(DIALECT, "tanh", ("x",), _unary, summary="Elementwise hyperbolic tangent.",
          pattern="elementwise", evaluate=np.tanh),
    OpDef(DIALECT, "sigmoid", ("x",), _unary, summary="Elementwise 1 / (1 + e^-x).",
          pattern="elementwise", evaluate=lambda x: (1 / (1 + np.exp(-x))).astype(x.dtype)),
    OpDef(DIALECT, "erf", ("x",), _unary, summary="Elementwise error function.",
          pattern="elementwise", evaluate=_erf),
    OpDef(DIALECT, "abs", ("x",), _unary, summary="Elementwise absolute value.",
          pattern="elementwise", evaluate=np.abs),
    OpDef(DIALECT, "add", ("lhs", "rhs"), _broadcasting,
          summary="Elementwise a + b, numpy broadcasting.", pattern="broadcast", evaluate=np.add),
    OpDef(DIALECT, "subtract", ("lhs", "rhs"), _broadcasting,
          summary="Elementwise a - b, numpy broadcasting.", pattern="broadcast",
          evaluate=np.subtract),
    OpDef(DIALECT, "multiply", ("lhs", "rhs"), _broadcasting,
          summary="Elementwise a * b, numpy broadcasting.", pattern="broadcast",
          evaluate=np.multiply),
    OpDef(DIALECT, "divide", ("lhs", "rhs"), _broadcasting,
          summary="Elementwise a / b, numpy broadcasting.", pattern="broadcast", evaluate=_divide),
    OpDef(DIALECT, "power", ("lhs", "rhs"), _broadcasting,
          summary="Elementwise a ** b, numpy broadcasting.", pattern="broadcast",
          evaluate=np.power),
    OpDef(DIALECT, "maximum", ("lhs", "rhs"), _broadcasting,
          summary="Elementwise max(a, b), numpy broadcasting.", pattern="broadcast",
          evaluate=np.maximum),
    OpDef(DIALECT, "minimum", ("lhs", "rhs"), _broadcasting,
          summary="Elementwise min(a, b), numpy broadcasting.", pattern="broadcast",
          evaluate=np.minimum),
    OpDef(DIALECT, "ewise_fma", ("a", "b", "c"), _same_shape,
          summary="a * b + c on tensors of one shape (Relax's ewise_fma).", pattern="elementwise",
          evaluate=lambda a, b, c: a * b + c),
    OpDef(DIALECT, "matmul", ("lhs", "rhs"), _matmul,
          summary="numpy.matmul: batched, broadcast leading dims, 1-D operands promoted.",
          pattern="anchor", evaluate=np.matmul),
    OpDef(DIALECT, "matmul_packed", ("lhs", "packed"), _matmul_packed,
          summary="lhs [.., M, K] times a constant right operand packed in panels [N/n, K, n] "
                  "(graph-pack-weights); the result is blocked [.., M, N/n, n].",
          pattern="anchor", evaluate=_np_matmul_packed),
    OpDef(DIALECT, "permute_dims", ("x",), _permute_dims,
          attrs=(AttrDef("axes", "ints", "result dim i is input dim axes[i]"),),
          summary="Transpose: the dimensions of x reordered by `axes`.", pattern="injective",
          evaluate=lambda x, axes: np.transpose(x, axes)),
    OpDef(DIALECT, "sum", ("x",), _reduction, attrs=_REDUCTION_ATTRS,
          summary="Reduction: the sum over `axes` (numpy semantics).", pattern="reduction",
          evaluate=_np_sum),
    OpDef(DIALECT, "mean", ("x",), _reduction, attrs=_REDUCTION_ATTRS,
          summary="Reduction: the mean (integers: the sum divided with truncation) over `axes` "
                  "(numpy semantics).",
          pattern="reduction", evaluate=_np_mean),
    OpDef(DIALECT, "max", ("x",), _reduction, attrs=_REDUCTION_ATTRS,
          summary="Reduction: the maximum over `axes` (numpy semantics).", pattern="reduction",
          evaluate=_np_max),
    OpDef(DIALECT, "min", ("x",), _reduction, attrs=_REDUCTION_ATTRS,
          summary="Reduction: the minimum over `axes` (numpy semantics).", pattern="reduction",
          evaluate=_np_min),
    OpDef(DIALECT, "leaky_relu", ("x",), _unary,
          attrs=(AttrDef("alpha", "float", "slope for x < 0"),), check=_leaky_relu_check,
          summary="x if x >= 0 else alpha * x.", pattern="elementwise",
          evaluate=lambda x, alpha: np.where(x >= 0, x, x * x.dtype.type(alpha))),
    OpDef(DIALECT, "clip", ("x",), _unary,
          attrs=(AttrDef("min", "float", "lower bound (-inf: none)"),
                 AttrDef("max", "float", "upper bound (+inf: none)")), check=_clip_check,
          summary="min(max(x, min), max).", pattern="elementwise", evaluate=_np_clip),
    OpDef(DIALECT, "gelu", ("x",), _unary,
          attrs=(AttrDef("approximate", "str", '"none" (erf) or "tanh"'),), check=_gelu_check,
          summary="0.5 x (1 + erf(x / sqrt 2)), or its tanh approximation.", pattern="elementwise",
          evaluate=_np_gelu),
    OpDef(DIALECT, "astype", ("x",), _astype,
          attrs=(AttrDef("dtype", "type", "the result element type (f32, i64, ...)"),),
          summary="Elementwise conversion (float to int truncates toward zero; to i1: != 0).",
          pattern="elementwise", evaluate=lambda x, dtype: x.astype(numpy_dtype(dtype))),
    OpDef(DIALECT, "softmax", ("x",), _softmax,
          attrs=(AttrDef("axis", "int", "the normalised axis (>= 0)"),),
          summary="exp(x - max) / sum(exp(x - max)) along `axis`.", pattern="reduction",
          evaluate=_np_softmax),
    OpDef(DIALECT, "log_softmax", ("x",), _softmax,
          attrs=(AttrDef("axis", "int", "the normalised axis (>= 0)"),),
          summary="x - max - log(sum(exp(x - max))) along `axis`: log(softmax(x)), stable.",
          pattern="reduction", evaluate=_np_log_softmax),
    OpDef(DIALECT, "layer_norm", ("x", "gamma", "beta"), _layer_norm,
          attrs=(AttrDef("axes", "ints", "the trailing axes normalised"),
                 AttrDef("epsilon", "float", "added to the variance")),
          summary="(x - mean) / sqrt(var + epsilon) * gamma + beta over the trailing `axes`; "
                  "gamma and beta have the shape of those axes.",
          pattern="reduction", evaluate=_np_layer_norm),
    OpDef(DIALECT, "conv2d", ("x", "w"), _conv2d,
          attrs=(AttrDef("strides", "ints", "[sh, sw]"),
                 AttrDef("padding", "ints", "[top, left, bottom, right]"),
                 AttrDef("dilation", "ints", "[dh, dw]"),
                 AttrDef("groups", "int", "channel groups (C for depthwise)")), check=_conv2d_check,
          summary="2-D convolution, x NCHW, w [O, C/groups, KH, KW], no bias.", pattern="anchor",
          evaluate=_np_conv2d),
    OpDef(DIALECT, "max_pool2d", ("x",), _pool, attrs=_POOL_ATTRS, check=_pool_check,
          summary="2-D max pooling of NCHW x; padding never wins.", pattern="anchor",
          evaluate=_np_max_pool2d),
    OpDef(DIALECT, "avg_pool2d", ("x",), _pool,
          attrs=_POOL_ATTRS + (AttrDef("count_include_pad", "int",
                                       "1: the divisor counts explicit padding"),),
          check=_pool_check,
          summary="2-D average pooling of NCHW x.", pattern="anchor", evaluate=_np_avg_pool2d),
    OpDef(DIALECT, "layout_transform", ("x",), _layout_transform,
          attrs=(AttrDef("src_layout", "str", '"NCHW" or "NCHW<c>c"'),
                 AttrDef("dst_layout", "str", '"NCHW<c>c" or "NCHW"')),
          summary="Between NCHW and the blocked NCHW<c>c ([N, C/c, H, W, c]; TVM's "
                  "layout_transform), inserted by graph-layout-nchwc where a blocked chain "
                  "begins or ends.", pattern="injective", evaluate=_np_layout_transform),
    OpDef(DIALECT, "conv2d_nchwc", ("x", "w"), _conv2d_nchwc,
          attrs=(AttrDef("strides", "ints", "[sh, sw]"),
                 AttrDef("padding", "ints", "[top, left, bottom, right]"),
                 AttrDef("dilation", "ints", "[dh, dw]"),
                 AttrDef("groups", "int", "1, or the channels (depthwise)")), check=_conv2d_check,
          summary="conv2d in NCHW<c>c: x [N, C/ci, H, W, ci], w packed [O/co, C/ci, KH, KW, ci, "
                  "co] (depthwise: [C/c, 1, KH, KW, 1, c]); the result is [N, O/co, OH, OW, co].",
          pattern="anchor", evaluate=_np_conv2d_nchwc),
    OpDef(DIALECT, "pad_window", ("x",), _pad_window,
          attrs=(AttrDef("padding", "ints", "[top, left, bottom, right] (dims 2 and 3)"),
                 AttrDef("value", "float", "the fill (-inf: an integer type's smallest)")),
          summary="x (NCHW or NCHW<c>c) with H and W padded by `value`: a window's padding "
                  "made an op of its own by graph-pad-windows, so that the producer of x "
                  "writes straight into the padded tensor.",
          pattern="padding", evaluate=_np_pad_window),
    OpDef(DIALECT, "winograd_input", ("x",), _winograd_input,
          attrs=(AttrDef("padding", "ints", "[top, left, bottom, right] (dims 2 and 3)"),),
          summary="The 6x6 tiles of x (NCHW<c>c, padded by zeros), 4 apart, each as B^T d B "
                  "(F(4x4, 3x3)): [36, N tH tW, C], the left operands of a 3x3 convolution's "
                  "36 matmuls (graph-winograd; storage order in dialects/winograd.py).",
          pattern="opaque", evaluate=_np_winograd_input),
    OpDef(DIALECT, "winograd_output", ("m",), _winograd_output,
          attrs=(AttrDef("tiles", "ints", "[tH, tW]: output tiles along H and W"),
                 AttrDef("block", "int", "the channel block c of the NCHW<c>c result")),
          summary="The 36 matmul products m [36, N tH tW, K] of a Winograd F(4x4, 3x3) "
                  "convolution as its NCHW<c>c output [N, K/c, 4 tH, 4 tW, c] (A^T m A per "
                  "tile; graph-winograd).",
          pattern="opaque", evaluate=_np_winograd_output),
    OpDef(DIALECT, "max_pool2d_nchwc", ("x",), _pool_nchwc, attrs=_POOL_ATTRS, check=_pool_check,
          summary="max_pool2d of x in NCHW<c>c ([N, C/c, H, W, c]), pooled along the channel "
                  "block.", pattern="anchor", evaluate=_np_max_pool2d_nchwc),
    OpDef(DIALECT, "reshape", ("x",), _reshape,
          attrs=(AttrDef("shape", "ints", "the full result shape; 0: x's dim at the same "
                                          "position; -2 - j: x's dim j; one -1: the rest of "
                                          "the elements"),),
          summary="Row-major reshape (a view).", pattern="injective", evaluate=_np_reshape),
    OpDef(DIALECT, "iota", ("x",), _iota,
          attrs=(AttrDef("axis", "int", "the axis of x whose size is the length"),),
          summary="The i64 vector 0, 1, ..., n - 1 with n the size of x's `axis` (x's values "
                  "are not read): a range whose length is known only at run time.",
          pattern="injective",
          evaluate=lambda x, axis: np.arange(x.shape[axis], dtype=np.int64)),
    OpDef(DIALECT, "broadcast_to", ("x",), _broadcast_to,
          attrs=(AttrDef("shape", "ints", "the result shape"),), summary="numpy.broadcast_to.",
          pattern="injective",
          evaluate=lambda x, shape: np.ascontiguousarray(np.broadcast_to(x, shape))),
    OpDef(DIALECT, "strided_slice", ("x",), _strided_slice,
          attrs=(AttrDef("begin", "ints", "per axis, >= 0"),
                 AttrDef("end", "ints", "per axis, exclusive (-1 with a negative stride: "
                                        "through index 0)"),
                 AttrDef("strides", "ints", "per axis, non-zero")),
          summary="x[begin:end:stride] per axis (numpy basic slicing, normalised bounds).",
          pattern="injective", evaluate=_np_strided_slice),
    OpDef(DIALECT, "take", ("x", "indices"), _take,
          attrs=(AttrDef("axis", "int", "the axis indexed"),),
          summary="numpy.take along `axis`; negative indices count from the end.",
          pattern="injective", evaluate=_np_take),
    OpDef(DIALECT, "gather_elements", ("x", "indices"), _gather_elements,
          attrs=(AttrDef("axis", "int", "the axis indexed"),),
          summary="numpy.take_along_axis (ONNX GatherElements): the result has the indices' "
                  "shape; negative indices count from the end.",
          pattern="injective", evaluate=_np_gather_elements),
    OpDef(DIALECT, "pad", ("x", "pads", "value"), _pad,
          attrs=(AttrDef("mode", "str", '"constant", "reflect", "edge" or "wrap"'),),
          summary="x padded by `pads` (i64 [2 * rank]: the begins, then the ends; negative "
                  "crops), known only at run time, so every result dim is dynamic; `value` "
                  "(0-d) fills mode constant.",
          pattern="opaque", evaluate=_np_pad),
    OpDef(DIALECT, "scatter_rows", ("data", "rows", "updates"), _scatter_rows,
          attrs=(AttrDef("reduction", "str", '"none", "add", "mul", "max" or "min"'),),
          summary="data [R, K] with row rows[m] replaced by updates[m] (m in order: a later "
                  "update of a row wins), or combined with it by `reduction`; rows in [0, R).",
          pattern="opaque", evaluate=_np_scatter_rows),
    OpDef(DIALECT, "sin", ("x",), _unary, check=_float_elementwise,
          summary="Elementwise sine of a float tensor.", pattern="elementwise",
          evaluate=_np_float(np.sin)),
    OpDef(DIALECT, "cos", ("x",), _unary, check=_float_elementwise,
          summary="Elementwise cosine of a float tensor.", pattern="elementwise",
          evaluate=_np_float(np.cos)),
    OpDef(DIALECT, "tan", ("x",), _unary, check=_float_elementwise,
          summary="Elementwise tangent of a float tensor.", pattern="elementwise",
          evaluate=_np_float(np.tan)),
    OpDef(DIALECT, "asin", ("x",), _unary, check=_float_elementwise,
          summary="Elementwise arcsine of a float tensor.", pattern="elementwise",
          evaluate=_np_float(np.arcsin)),
    OpDef(DIALECT, "acos", ("x",), _unary, check=_float_elementwise,
          summary="Elementwise arccosine of a float tensor.", pattern="elementwise",
          evaluate=_np_float(np.arccos)),
    OpDef(DIALECT, "atan", ("x",), _unary, check=_float_elementwise,
          summary="Elementwise arctangent of a float tensor.", pattern="elementwise",
          evaluate=_np_float(np.arctan)),
    OpDef(DIALECT, "sinh", ("x",), _unary, check=_float_elementwise,
          summary="Elementwise hyperbolic sine of a float tensor.", pattern="elementwise",
          evaluate=_np_float(np.sinh)),
    OpDef(DIALECT, "cosh", ("x",), _unary, check=_float_elementwise,
          summary="Elementwise hyperbolic cosine of a float tensor.", pattern="elementwise",
          evaluate=_np_float(np.cosh)),
    OpDef(DIALECT, "asinh", ("x",), _unary, check=_float_elementwise,
          summary="Elementwise inverse hyperbolic sine of a float tensor.", pattern="elementwise",
          evaluate=_np_float(np.arcsinh)),
    OpDef(DIALECT, "acosh", ("x",), _unary, check=_float_elementwise,
          summary="Elementwise inverse hyperbolic cosine of a float tensor.", pattern="elementwise",
          evaluate=_np_float(np.arccosh)),
    OpDef(DIALECT, "atanh", ("x",), _unary, check=_float_elementwise,
          summary="Elementwise inverse hyperbolic tangent of a float tensor.", pattern="elementwise",
          evaluate=_np_float(np.arctanh)),
    OpDef(DIALECT, "floor", ("x",), _unary, check=_float_elementwise,
          summary="Elementwise floor of a float tensor.", pattern="elementwise",
          evaluate=_np_float(np.floor)),
    OpDef(DIALECT, "ceil", ("x",), _unary, check=_float_elementwise,
          summary="Elementwise ceiling of a float tensor.", pattern="elementwise",
          evaluate=_np_float(np.ceil)),
    OpDef(DIALECT, "round", ("x",), _unary, check=_float_elementwise,
          summary="Elementwise rounding to the nearest integer, halves to even (ONNX Round) of a float tensor.", pattern="elementwise",
          evaluate=_np_float(np.round)),
    OpDef(DIALECT, "sign", ("x",), _unary, check=_numeric_elementwise,
          summary="Elementwise sign: -1, 0 or 1 (NaN stays NaN).", pattern="elementwise",
          evaluate=np.sign),
    OpDef(DIALECT, "bitwise_not", ("x",), _unary, check=_integer_elementwise,
          summary="Elementwise bitwise complement of an integer tensor.",
          pattern="elementwise", evaluate=np.invert),
    OpDef(DIALECT, "bitwise_and", ("lhs", "rhs"), _broadcasting, check=_integer_elementwise,
          summary="Elementwise a & b of integer tensors, numpy broadcasting.",
          pattern="broadcast", evaluate=np.bitwise_and),
    OpDef(DIALECT, "bitwise_or", ("lhs", "rhs"), _broadcasting, check=_integer_elementwise,
          summary="Elementwise a | b of integer tensors, numpy broadcasting.",
          pattern="broadcast", evaluate=np.bitwise_or),
    OpDef(DIALECT, "bitwise_xor", ("lhs", "rhs"), _broadcasting, check=_integer_elementwise,
          summary="Elementwise a ^ b of integer tensors, numpy broadcasting.",
          pattern="broadcast", evaluate=np.bitwise_xor),
    OpDef(DIALECT, "mod", ("lhs", "rhs"), _broadcasting, check=_numeric_elementwise,
               summary="Remainder with the sign of the divisor (numpy.mod, Python's %; ONNX "
                       "Mod with fmod=0), numpy broadcasting.",
               pattern="broadcast", evaluate=np.mod),
    OpDef(DIALECT, "fmod", ("lhs", "rhs"), _broadcasting, check=_numeric_elementwise,
               summary="Remainder with the sign of the dividend (C fmod, numpy.fmod; ONNX Mod "
                       "with fmod=1), numpy broadcasting.",
               pattern="broadcast", evaluate=np.fmod),
    OpDef(DIALECT, "thresholded_relu", ("x",), _unary,
               attrs=(AttrDef("alpha", "float", "the threshold"),), check=_float_elementwise,
               summary="x if x > alpha else 0.", pattern="elementwise",
               evaluate=lambda x, alpha: np.where(x > alpha, x, x.dtype.type(0))),
    OpDef(DIALECT, "shrink", ("x",), _unary,
               attrs=(AttrDef("lambd", "float", "half the width of the band mapped to 0"),
                      AttrDef("bias", "float", "moved towards 0 outside the band")),
               check=_float_elementwise,
               summary="x + bias if x < -lambd, x - bias if x > lambd, else 0 (ONNX Shrink).",
               pattern="elementwise",
               evaluate=lambda x, lambd, bias: np.where(
                   x < -lambd, x + x.dtype.type(bias),
                   np.where(x > lambd, x - x.dtype.type(bias), x.dtype.type(0))).astype(x.dtype)),
    OpDef(DIALECT, "equal", ("lhs", "rhs"), _comparison,
          summary="Elementwise a == b (a boolean tensor), numpy broadcasting.",
          pattern="broadcast", evaluate=np.equal),
    OpDef(DIALECT, "less", ("lhs", "rhs"), _comparison,
          summary="Elementwise a < b (a boolean tensor; false with a NaN), numpy broadcasting.",
          pattern="broadcast", evaluate=np.less),
    OpDef(DIALECT, "less_equal", ("lhs", "rhs"), _comparison,
          summary="Elementwise a <= b (a boolean tensor; false with a NaN), numpy broadcasting.",
          pattern="broadcast", evaluate=np.less_equal),
    OpDef(DIALECT, "greater", ("lhs", "rhs"), _comparison,
          summary="Elementwise a > b (a boolean tensor; false with a NaN), numpy broadcasting.",
          pattern="broadcast", evaluate=np.greater),
    OpDef(DIALECT, "greater_equal", ("lhs", "rhs"), _comparison,
          summary="Elementwise a >= b (a boolean tensor; false with a NaN), numpy "
                  "broadcasting.",
          pattern="broadcast", evaluate=np.greater_equal),
    OpDef(DIALECT, "logical_and", ("lhs", "rhs"), _broadcasting, check=_boolean_elementwise,
          summary="Elementwise a and b of boolean tensors, numpy broadcasting.",
          pattern="broadcast", evaluate=np.logical_and),
    OpDef(DIALECT, "logical_or", ("lhs", "rhs"), _broadcasting, check=_boolean_elementwise,
          summary="Elementwise a or b of boolean tensors, numpy broadcasting.",
          pattern="broadcast", evaluate=np.logical_or),
    OpDef(DIALECT, "logical_xor", ("lhs", "rhs"), _broadcasting, check=_boolean_elementwise,
          summary="Elementwise a xor b of boolean tensors, numpy broadcasting.",
          pattern="broadcast", evaluate=np.logical_xor),
    OpDef(DIALECT, "logical_not", ("x",), _unary, check=_boolean_elementwise,
          summary="Elementwise not x of a boolean tensor.", pattern="elementwise",
          evaluate=np.logical_not),
    OpDef(DIALECT, "where", ("condition", "x", "y"), _where,
          summary="Elementwise x where condition else y (numpy.where), numpy broadcasting of "
                  "all three.",
          pattern="broadcast", evaluate=np.where),
    OpDef(DIALECT, "isnan", ("x",), _float_predicate,
          summary="Elementwise: is x NaN (a boolean tensor).", pattern="elementwise",
          evaluate=np.isnan),
    OpDef(DIALECT, "isinf", ("x",), _float_predicate,
          attrs=(AttrDef("detect_positive", "int", "1: +inf counts"),
                 AttrDef("detect_negative", "int", "1: -inf counts")),
          summary="Elementwise: is x an infinity of a detected sign (a boolean tensor).",
          pattern="elementwise", evaluate=_np_isinf),
    OpDef(DIALECT, "shift_left", ("lhs", "rhs"), _broadcasting, check=_integer_elementwise,
          summary="Elementwise a << b of integer tensors (0 when b >= the bit width; ONNX "
                  "BitShift LEFT), numpy broadcasting.",
          pattern="broadcast", evaluate=_np_shift(np.left_shift)),
    OpDef(DIALECT, "shift_right_logical", ("lhs", "rhs"), _broadcasting,
          check=_integer_elementwise,
          summary="Elementwise logical (unsigned) a >> b of integer tensors (0 when b >= the "
                  "bit width; ONNX BitShift RIGHT), numpy broadcasting.",
          pattern="broadcast", evaluate=_np_shift(np.right_shift)),
]}



def irdl_text() -> str:
    return irdl_dialect(DIALECT, list(OPS.values()))


# ----------------------------------------------------------------------------------------------
# Builders


def build(name: str, operands: Sequence[ir.Value], attrs: dict[str, Any] | None = None, *,
          loc: ir.Location | None = None) -> ir.Value | list[ir.Value]:
    """Create ``graph.<name>`` at the current insertion point with its inferred result types.

    Raises :class:`ShapeError` (naming the op) when the operands do not fit, before any IR is
    created.
    """
    opdef = OPS[name]
    attrs = dict(attrs or {})
    if len(operands) != len(opdef.operands):
        raise ShapeError(f"'{opdef.full_name}' takes {len(opdef.operands)} operands "
                         f"({', '.join(opdef.operands)}), got {len(operands)}")
    missing = [a.name for a in opdef.attrs if a.name not in attrs]
    unknown = sorted(set(attrs) - {a.name for a in opdef.attrs})
    if missing or unknown:
        raise ShapeError(f"'{opdef.full_name}': missing attributes {missing}, unknown {unknown}")
    # Through the IR attributes and back: checks and shape rules see the values the verifier
    # will see (lists of ints, an ir.Type for a type given as "i64").
    try:
        ir_attrs = {a.name: a.make(attrs[a.name]) for a in opdef.attrs}
        attrs = {a.name: a.read(ir_attrs[a.name]) for a in opdef.attrs}
    except (TypeError, ValueError, ir.MLIRError) as e:
        raise ShapeError(f"'{opdef.full_name}': bad attribute value: {e}") from None
    specs = [TensorSpec.of(v.type) for v in operands]
    try:
        if opdef.check:
            opdef.check(specs, attrs)
        results = opdef.infer(specs, attrs)
    except ShapeError as e:
        raise ShapeError(f"'{opdef.full_name}': {e}") from None
    op = ir.Operation.create(opdef.full_name, results=[r.to_type() for r in results],
                             operands=list(operands), attributes=ir_attrs, loc=loc)
    return op.results[0] if len(op.results) == 1 else list(op.results)


# The default of the builders' attribute parameters: an attribute left out is reported by
# :func:`build` (a ShapeError naming the op), as one given to ``build`` by name would be.
_REQUIRED: Any = object()


def _build(name: str, *operands: ir.Value, loc: ir.Location | None, **attrs: Any) -> ir.Value:
    """:func:`build` for the ops of one result (all of them today)."""
    given = {key: value for key, value in attrs.items() if value is not _REQUIRED}
    result = build(name, operands, given, loc=loc)
    assert isinstance(result, ir.Value)
    return result


def relu(x: ir.Value, *, loc: ir.Location | None = None) -> ir.Value:
    """Elementwise max(x, 0)."""
    return _build("relu", x, loc=loc)


def negative(x: ir.Value, *, loc: ir.Location | None = None) -> ir.Value:
    """Elementwise -x."""
    return _build("negative", x, loc=loc)


def exp(x: ir.Value, *, loc: ir.Location | None = None) -> ir.Value:
    """Elementwise e^x."""
    return _build("exp", x, loc=loc)


def log(x: ir.Value, *, loc: ir.Location | None = None) -> ir.Value:
    """Elementwise natural logarithm."""
    return _build("log", x, loc=loc)


def sqrt(x: ir.Value, *, loc: ir.Location | None = None) -> ir.Value:
    """Elementwise square root."""
    return _build("sqrt", x, loc=loc)


def rsqrt(x: ir.Value, *, loc: ir.Location | None = None) -> ir.Value:
    """Elementwise 1 / sqrt(x)."""
    return _build("rsqrt", x, loc=loc)


def tanh(x: ir.Value, *, loc: ir.Location | None = None) -> ir.Value:
    """Elementwise hyperbolic tangent."""
    return _build("tanh", x, loc=loc)


def sigmoid(x: ir.Value, *, loc: ir.Location | None = None) -> ir.Value:
    """Elementwise 1 / (1 + e^-x)."""
    return _build("sigmoid", x, loc=loc)


def erf(x: ir.Value, *, loc: ir.Location | None = None) -> ir.Value:
    """Elementwise error function."""
    return _build("erf", x, loc=loc)


def abs(x: ir.Value, *, loc: ir.Location | None = None) -> ir.Value:
    """Elementwise absolute value."""
    return _build("abs", x, loc=loc)


def add(lhs: ir.Value, rhs: ir.Value, *, loc: ir.Location | None = None) -> ir.Value:
    """Elementwise a + b, numpy broadcasting."""
    return _build("add", lhs, rhs, loc=loc)


def subtract(lhs: ir.Value, rhs: ir.Value, *, loc: ir.Location | None = None) -> ir.Value:
    """Elementwise a - b, numpy broadcasting."""
    return _build("subtract", lhs, rhs, loc=loc)


def multiply(lhs: ir.Value, rhs: ir.Value, *, loc: ir.Location | None = None) -> ir.Value:
    """Elementwise a * b, numpy broadcasting."""
    return _build("multiply", lhs, rhs, loc=loc)


def divide(lhs: ir.Value, rhs: ir.Value, *, loc: ir.Location | None = None) -> ir.Value:
    """Elementwise a / b, numpy broadcasting."""
    return _build("divide", lhs, rhs, loc=loc)


def power(lhs: ir.Value, rhs: ir.Value, *, loc: ir.Location | None = None) -> ir.Value:
    """Elementwise a ** b, numpy broadcasting."""
    return _build("power", lhs, rhs, loc=loc)


def maximum(lhs: ir.Value, rhs: ir.Value, *, loc: ir.Location | None = None) -> ir.Value:
    """Elementwise max(a, b), numpy broadcasting."""
    return _build("maximum", lhs, rhs, loc=loc)


def minimum(lhs: ir.Value, rhs: ir.Value, *, loc: ir.Location | None = None) -> ir.Value:
    """Elementwise min(a, b), numpy broadcasting."""
    return _build("minimum", lhs, rhs, loc=loc)


def ewise_fma(a: ir.Value, b: ir.Value, c: ir.Value, *, loc: ir.Location | None = None) -> ir.Value:
    """a * b + c on tensors of one shape (Relax's ewise_fma)."""
    return _build("ewise_fma", a, b, c, loc=loc)


def matmul(lhs: ir.Value, rhs: ir.Value, *, loc: ir.Location | None = None) -> ir.Value:
    """numpy.matmul: batched, broadcast leading dims, 1-D operands promoted."""
    return _build("matmul", lhs, rhs, loc=loc)


def matmul_packed(lhs: ir.Value, packed: ir.Value, *, loc: ir.Location | None = None
                  ) -> ir.Value:
    """lhs [.., M, K] times a right operand packed in panels [N/n, K, n]: [.., M, N/n, n]."""
    return _build("matmul_packed", lhs, packed, loc=loc)


def permute_dims(x: ir.Value, *, axes: Sequence[int] = _REQUIRED,
                 loc: ir.Location | None = None) -> ir.Value:
    """Transpose: the dimensions of x reordered by `axes`.

    axes: result dim i is input dim axes[i]
    """
    return _build("permute_dims", x, axes=axes, loc=loc)


def sum(x: ir.Value, *, axes: Sequence[int] = _REQUIRED, keepdims: int = _REQUIRED,
        loc: ir.Location | None = None) -> ir.Value:
    """Reduction: the sum over `axes` (numpy semantics).

    axes: the reduced axes (sorted, unique, >= 0)
    keepdims: 1: reduced axes stay as size 1
    """
    return _build("sum", x, axes=axes, keepdims=keepdims, loc=loc)


def mean(x: ir.Value, *, axes: Sequence[int] = _REQUIRED, keepdims: int = _REQUIRED,
         loc: ir.Location | None = None) -> ir.Value:
    """Reduction: the mean (integers: the sum divided with truncation) over `axes` (numpy
    semantics).

    axes: the reduced axes (sorted, unique, >= 0)
    keepdims: 1: reduced axes stay as size 1
    """
    return _build("mean", x, axes=axes, keepdims=keepdims, loc=loc)


def max(x: ir.Value, *, axes: Sequence[int] = _REQUIRED, keepdims: int = _REQUIRED,
        loc: ir.Location | None = None) -> ir.Value:
    """Reduction: the maximum over `axes` (numpy semantics).

    axes: the reduced axes (sorted, unique, >= 0)
    keepdims: 1: reduced axes stay as size 1
    """
    return _build("max", x, axes=axes, keepdims=keepdims, loc=loc)


def min(x: ir.Value, *, axes: Sequence[int] = _REQUIRED, keepdims: int = _REQUIRED,
        loc: ir.Location | None = None) -> ir.Value:
    """Reduction: the minimum over `axes` (numpy semantics).

    axes: the reduced axes (sorted, unique, >= 0)
    keepdims: 1: reduced axes stay as size 1
    """
    return _build("min", x, axes=axes, keepdims=keepdims, loc=loc)


def leaky_relu(x: ir.Value, *, alpha: float = _REQUIRED,
               loc: ir.Location | None = None) -> ir.Value:
    """x if x >= 0 else alpha * x.

    alpha: slope for x < 0
    """
    return _build("leaky_relu", x, alpha=alpha, loc=loc)


def clip(x: ir.Value, *, min: float = _REQUIRED, max: float = _REQUIRED,
         loc: ir.Location | None = None) -> ir.Value:
    """min(max(x, min), max).

    min: lower bound (-inf: none)
    max: upper bound (+inf: none)
    """
    return _build("clip", x, min=min, max=max, loc=loc)


def gelu(x: ir.Value, *, approximate: str = _REQUIRED, loc: ir.Location | None = None) -> ir.Value:
    """0.5 x (1 + erf(x / sqrt 2)), or its tanh approximation.

    approximate: "none" (erf) or "tanh"
    """
    return _build("gelu", x, approximate=approximate, loc=loc)


def astype(x: ir.Value, *, dtype: ir.Type | str = _REQUIRED,
           loc: ir.Location | None = None) -> ir.Value:
    """Elementwise conversion (float to int truncates toward zero; to i1: != 0).

    dtype: the result element type (f32, i64, ...)
    """
    return _build("astype", x, dtype=dtype, loc=loc)


def softmax(x: ir.Value, *, axis: int = _REQUIRED, loc: ir.Location | None = None) -> ir.Value:
    """exp(x - max) / sum(exp(x - max)) along `axis`.

    axis: the normalised axis (>= 0)
    """
    return _build("softmax", x, axis=axis, loc=loc)


def log_softmax(x: ir.Value, *, axis: int = _REQUIRED, loc: ir.Location | None = None) -> ir.Value:
    """x - max - log(sum(exp(x - max))) along `axis`: log(softmax(x)), stable.

    axis: the normalised axis (>= 0)
    """
    return _build("log_softmax", x, axis=axis, loc=loc)


def layer_norm(x: ir.Value, gamma: ir.Value, beta: ir.Value, *, axes: Sequence[int] = _REQUIRED,
               epsilon: float = _REQUIRED, loc: ir.Location | None = None) -> ir.Value:
    """(x - mean) / sqrt(var + epsilon) * gamma + beta over the trailing `axes`; gamma and beta
    have the shape of those axes.

    axes: the trailing axes normalised
    epsilon: added to the variance
    """
    return _build("layer_norm", x, gamma, beta, axes=axes, epsilon=epsilon, loc=loc)


def conv2d(x: ir.Value, w: ir.Value, *, strides: Sequence[int] = _REQUIRED,
           padding: Sequence[int] = _REQUIRED, dilation: Sequence[int] = _REQUIRED,
           groups: int = _REQUIRED, loc: ir.Location | None = None) -> ir.Value:
    """2-D convolution, x NCHW, w [O, C/groups, KH, KW], no bias.

    strides: [sh, sw]
    padding: [top, left, bottom, right]
    dilation: [dh, dw]
    groups: channel groups (C for depthwise)
    """
    return _build("conv2d", x, w, strides=strides, padding=padding, dilation=dilation,
                  groups=groups, loc=loc)


def layout_transform(x: ir.Value, *, src_layout: str = _REQUIRED, dst_layout: str = _REQUIRED,
                     loc: ir.Location | None = None) -> ir.Value:
    """Between NCHW and the blocked NCHW<c>c ([N, C/c, H, W, c]).

    src_layout: "NCHW" or "NCHW<c>c"
    dst_layout: "NCHW<c>c" or "NCHW"
    """
    return _build("layout_transform", x, src_layout=src_layout, dst_layout=dst_layout, loc=loc)


def pad_window(x: ir.Value, *, padding: Sequence[int] = _REQUIRED, value: float = _REQUIRED,
               loc: ir.Location | None = None) -> ir.Value:
    """x (NCHW or NCHW<c>c) with H and W padded by `value`.

    padding: [top, left, bottom, right] (dims 2 and 3)
    value: the fill (-inf: an integer type's smallest)
    """
    return _build("pad_window", x, padding=padding, value=value, loc=loc)


def conv2d_nchwc(x: ir.Value, w: ir.Value, *, strides: Sequence[int] = _REQUIRED,
                 padding: Sequence[int] = _REQUIRED, dilation: Sequence[int] = _REQUIRED,
                 groups: int = _REQUIRED, loc: ir.Location | None = None) -> ir.Value:
    """conv2d in NCHW<c>c with a packed filter [O/co, C/ci, KH, KW, ci, co].

    strides: [sh, sw]
    padding: [top, left, bottom, right]
    dilation: [dh, dw]
    groups: 1, or the channels (depthwise)
    """
    return _build("conv2d_nchwc", x, w, strides=strides, padding=padding, dilation=dilation,
                  groups=groups, loc=loc)


def winograd_input(x: ir.Value, *, padding: Sequence[int] = _REQUIRED,
                   loc: ir.Location | None = None) -> ir.Value:
    """The 6x6 tiles of x (NCHW<c>c, padded by zeros), 4 apart, each as B^T d B: [36, N tH tW, C].

    padding: [top, left, bottom, right] (dims 2 and 3)
    """
    return _build("winograd_input", x, padding=padding, loc=loc)


def winograd_output(m: ir.Value, *, tiles: Sequence[int] = _REQUIRED, block: int = _REQUIRED,
                    loc: ir.Location | None = None) -> ir.Value:
    """The 36 products m [36, N tH tW, K] as the NCHW<c>c output [N, K/c, 4 tH, 4 tW, c].

    tiles: [tH, tW]: output tiles along H and W
    block: the channel block c of the NCHW<c>c result
    """
    return _build("winograd_output", m, tiles=tiles, block=block, loc=loc)


def max_pool2d_nchwc(x: ir.Value, *, kernel: Sequence[int] = _REQUIRED,
                     strides: Sequence[int] = _REQUIRED, padding: Sequence[int] = _REQUIRED,
                     dilation: Sequence[int] = _REQUIRED, ceil_mode: int = _REQUIRED,
                     loc: ir.Location | None = None) -> ir.Value:
    """max_pool2d of x in NCHW<c>c.

    kernel: [kh, kw]
    strides: [sh, sw]
    padding: [top, left, bottom, right]
    dilation: [dh, dw]
    ceil_mode: 1: output sizes rounded up (ONNX/PyTorch rule)
    """
    return _build("max_pool2d_nchwc", x, kernel=kernel, strides=strides, padding=padding,
                  dilation=dilation, ceil_mode=ceil_mode, loc=loc)


def max_pool2d(x: ir.Value, *, kernel: Sequence[int] = _REQUIRED,
               strides: Sequence[int] = _REQUIRED, padding: Sequence[int] = _REQUIRED,
               dilation: Sequence[int] = _REQUIRED, ceil_mode: int = _REQUIRED,
               loc: ir.Location | None = None) -> ir.Value:
    """2-D max pooling of NCHW x; padding never wins.

    kernel: [kh, kw]
    strides: [sh, sw]
    padding: [top, left, bottom, right]
    dilation: [dh, dw]
    ceil_mode: 1: output sizes rounded up (ONNX/PyTorch rule)
    """
    return _build("max_pool2d", x, kernel=kernel, strides=strides, padding=padding,
                  dilation=dilation, ceil_mode=ceil_mode, loc=loc)


def avg_pool2d(x: ir.Value, *, kernel: Sequence[int] = _REQUIRED,
               strides: Sequence[int] = _REQUIRED, padding: Sequence[int] = _REQUIRED,
               dilation: Sequence[int] = _REQUIRED, ceil_mode: int = _REQUIRED,
               count_include_pad: int = _REQUIRED, loc: ir.Location | None = None) -> ir.Value:
    """2-D average pooling of NCHW x.

    kernel: [kh, kw]
    strides: [sh, sw]
    padding: [top, left, bottom, right]
    dilation: [dh, dw]
    ceil_mode: 1: output sizes rounded up (ONNX/PyTorch rule)
    count_include_pad: 1: the divisor counts explicit padding
    """
    return _build("avg_pool2d", x, kernel=kernel, strides=strides, padding=padding,
                  dilation=dilation, ceil_mode=ceil_mode, count_include_pad=count_include_pad,
                  loc=loc)


def reshape(x: ir.Value, *, shape: Sequence[int] = _REQUIRED,
            loc: ir.Location | None = None) -> ir.Value:
    """Row-major reshape (a view).

    shape: the full result shape; 0: x's dim at the same position; -2 - j: x's dim j; one -1:
        the rest
    """
    return _build("reshape", x, shape=shape, loc=loc)


def iota(x: ir.Value, *, axis: int = _REQUIRED, loc: ir.Location | None = None) -> ir.Value:
    """The i64 vector 0, 1, ..., n - 1, n the size of x's ``axis`` (a run-time length)."""
    return _build("iota", x, axis=axis, loc=loc)


def broadcast_to(x: ir.Value, *, shape: Sequence[int] = _REQUIRED,
                 loc: ir.Location | None = None) -> ir.Value:
    """numpy.broadcast_to.

    shape: the result shape
    """
    return _build("broadcast_to", x, shape=shape, loc=loc)


def strided_slice(x: ir.Value, *, begin: Sequence[int] = _REQUIRED, end: Sequence[int] = _REQUIRED,
                  strides: Sequence[int] = _REQUIRED, loc: ir.Location | None = None) -> ir.Value:
    """x[begin:end:stride] per axis (numpy basic slicing, normalised bounds).

    begin: per axis, >= 0
    end: per axis, exclusive (-1 with a negative stride: through index 0)
    strides: per axis, non-zero
    """
    return _build("strided_slice", x, begin=begin, end=end, strides=strides, loc=loc)


def take(x: ir.Value, indices: ir.Value, *, axis: int = _REQUIRED,
         loc: ir.Location | None = None) -> ir.Value:
    """numpy.take along `axis`; negative indices count from the end.

    axis: the axis indexed
    """
    return _build("take", x, indices, axis=axis, loc=loc)


def gather_elements(x: ir.Value, indices: ir.Value, *, axis: int = _REQUIRED,
                    loc: ir.Location | None = None) -> ir.Value:
    """numpy.take_along_axis (ONNX GatherElements): the result has the indices' shape;
    negative indices count from the end.

    axis: the axis indexed
    """
    return _build("gather_elements", x, indices, axis=axis, loc=loc)



def pad(x: ir.Value, pads: ir.Value, value: ir.Value, *, mode: str = _REQUIRED,
        loc: ir.Location | None = None) -> ir.Value:
    """x padded by `pads` (i64 [2 * rank]: the begins, then the ends; negative crops), known
    only at run time, so every result dim is dynamic; `value` (0-d) fills mode constant.

    mode: "constant", "reflect", "edge" or "wrap"
    """
    return _build("pad", x, pads, value, mode=mode, loc=loc)

def scatter_rows(data: ir.Value, rows: ir.Value, updates: ir.Value, *,
                 reduction: str = _REQUIRED, loc: ir.Location | None = None) -> ir.Value:
    """data [R, K] with row rows[m] replaced by updates[m] (m in order: a later update of a
    row wins), or combined with it by `reduction`; rows in [0, R).

    reduction: "none", "add", "mul", "max" or "min"
    """
    return _build("scatter_rows", data, rows, updates, reduction=reduction, loc=loc)

# ----------------------------------------------------------------------------------------------
# Calls to kernels and library functions


def call_dps(callee: str, args: Sequence[ir.Value], result_types: Sequence[ir.Type], *,
             loc: ir.Location | None = None) -> list[ir.Value]:
    """Destination-passing call (``call_tir``/``call_dps_packed``): allocate each destination
    with ``tensor.empty`` and call ``callee(args..., destinations...)``, which returns them
    filled."""
    dests = []
    for t in result_types:
        rt = ir.RankedTensorType(t)
        if not rt.has_static_shape:
            raise ShapeError(f"call_dps to '{callee}': destination type {t} must be static")
        dests.append(tensor.EmptyOp(rt.shape, rt.element_type, loc=loc).result)
    call = func.CallOp(list(result_types), ir.FlatSymbolRefAttr.get(callee),
                       list(args) + dests, loc=loc)
    return list(call.results)


def declare_library_function(module: ir.Module, name: str, arg_types: Sequence[ir.Type],
                             result_types: Sequence[ir.Type]) -> str:
    """Declare the external function that the library function ``name`` implements for these
    types, once; return its symbol.

    Arguments are the inputs followed by one destination per result (destination-passing
    style). A Python function serves any types, a declaration only one, so each signature gets
    its own symbol (``env.linear``, ``env.linear_1``…), all marked ``graph.library = name``; the
    runtime binds each to the registered function.
    """
    fn_type = ir.FunctionType.get(list(arg_types) + list(result_types), list(result_types))
    symbols = set()
    for op in module.body.operations:
        if isinstance(op, func.FuncOp):
            symbols.add(op.sym_name.value)
            if (LIBRARY_ATTR in op.attributes
                    and ir.StringAttr(op.attributes[LIBRARY_ATTR]).value == name
                    and op.attributes["function_type"].value == fn_type):
                return op.sym_name.value
    symbol, n = name, 0
    while symbol in symbols:
        n += 1
        symbol = f"{name}_{n}"
    with ir.InsertionPoint.at_block_begin(module.body):
        decl = func.FuncOp(symbol, fn_type, visibility="private")
        decl.attributes[LIBRARY_ATTR] = ir.StringAttr.get(name)
    return symbol


def call_library(module: ir.Module, name: str, args: Sequence[ir.Value],
                 result_types: Sequence[ir.Type], *, loc: ir.Location | None = None
                 ) -> list[ir.Value]:
    """Call the library function ``name`` (registered from Python) in destination-passing
    style, declaring it in ``module`` if needed."""
    symbol = declare_library_function(module, name, [a.type for a in args], result_types)
    return call_dps(symbol, args, result_types, loc=loc)


def element_count(shape: Sequence[int]) -> int:
    return math.prod(shape)


def sin(x: ir.Value, *, loc: ir.Location | None = None) -> ir.Value:
    """Elementwise sine of a float tensor."""
    return _build("sin", x, loc=loc)


def cos(x: ir.Value, *, loc: ir.Location | None = None) -> ir.Value:
    """Elementwise cosine of a float tensor."""
    return _build("cos", x, loc=loc)


def tan(x: ir.Value, *, loc: ir.Location | None = None) -> ir.Value:
    """Elementwise tangent of a float tensor."""
    return _build("tan", x, loc=loc)


def asin(x: ir.Value, *, loc: ir.Location | None = None) -> ir.Value:
    """Elementwise arcsine of a float tensor."""
    return _build("asin", x, loc=loc)


def acos(x: ir.Value, *, loc: ir.Location | None = None) -> ir.Value:
    """Elementwise arccosine of a float tensor."""
    return _build("acos", x, loc=loc)


def atan(x: ir.Value, *, loc: ir.Location | None = None) -> ir.Value:
    """Elementwise arctangent of a float tensor."""
    return _build("atan", x, loc=loc)


def sinh(x: ir.Value, *, loc: ir.Location | None = None) -> ir.Value:
    """Elementwise hyperbolic sine of a float tensor."""
    return _build("sinh", x, loc=loc)


def cosh(x: ir.Value, *, loc: ir.Location | None = None) -> ir.Value:
    """Elementwise hyperbolic cosine of a float tensor."""
    return _build("cosh", x, loc=loc)


def asinh(x: ir.Value, *, loc: ir.Location | None = None) -> ir.Value:
    """Elementwise inverse hyperbolic sine of a float tensor."""
    return _build("asinh", x, loc=loc)


def acosh(x: ir.Value, *, loc: ir.Location | None = None) -> ir.Value:
    """Elementwise inverse hyperbolic cosine of a float tensor."""
    return _build("acosh", x, loc=loc)


def atanh(x: ir.Value, *, loc: ir.Location | None = None) -> ir.Value:
    """Elementwise inverse hyperbolic tangent of a float tensor."""
    return _build("atanh", x, loc=loc)


def floor(x: ir.Value, *, loc: ir.Location | None = None) -> ir.Value:
    """Elementwise floor of a float tensor."""
    return _build("floor", x, loc=loc)


def ceil(x: ir.Value, *, loc: ir.Location | None = None) -> ir.Value:
    """Elementwise ceiling of a float tensor."""
    return _build("ceil", x, loc=loc)


def round(x: ir.Value, *, loc: ir.Location | None = None) -> ir.Value:
    """Elementwise rounding to the nearest integer, halves to even (ONNX Round) of a float tensor."""
    return _build("round", x, loc=loc)


def sign(x: ir.Value, *, loc: ir.Location | None = None) -> ir.Value:
    """Elementwise sign: -1, 0 or 1 (NaN stays NaN)."""
    return _build("sign", x, loc=loc)


def bitwise_not(x: ir.Value, *, loc: ir.Location | None = None) -> ir.Value:
    """Elementwise bitwise complement of an integer tensor."""
    return _build("bitwise_not", x, loc=loc)


def bitwise_and(lhs: ir.Value, rhs: ir.Value, *, loc: ir.Location | None = None) -> ir.Value:
    """Elementwise a & b, numpy broadcasting."""
    return _build("bitwise_and", lhs, rhs, loc=loc)


def bitwise_or(lhs: ir.Value, rhs: ir.Value, *, loc: ir.Location | None = None) -> ir.Value:
    """Elementwise a | b, numpy broadcasting."""
    return _build("bitwise_or", lhs, rhs, loc=loc)


def bitwise_xor(lhs: ir.Value, rhs: ir.Value, *, loc: ir.Location | None = None) -> ir.Value:
    """Elementwise a ^ b, numpy broadcasting."""
    return _build("bitwise_xor", lhs, rhs, loc=loc)


def mod(lhs: ir.Value, rhs: ir.Value, *, loc: ir.Location | None = None) -> ir.Value:
    """Elementwise remainder with the sign of the divisor (numpy.mod), numpy broadcasting."""
    return _build("mod", lhs, rhs, loc=loc)


def fmod(lhs: ir.Value, rhs: ir.Value, *, loc: ir.Location | None = None) -> ir.Value:
    """Elementwise remainder with the sign of the dividend (C fmod), numpy broadcasting."""
    return _build("fmod", lhs, rhs, loc=loc)


def thresholded_relu(x: ir.Value, *, alpha: float = _REQUIRED,
                     loc: ir.Location | None = None) -> ir.Value:
    """x if x > alpha else 0."""
    return _build("thresholded_relu", x, alpha=alpha, loc=loc)


def shrink(x: ir.Value, *, lambd: float = _REQUIRED, bias: float = _REQUIRED,
           loc: ir.Location | None = None) -> ir.Value:
    """x + bias if x < -lambd, x - bias if x > lambd, else 0 (ONNX Shrink)."""
    return _build("shrink", x, lambd=lambd, bias=bias, loc=loc)


def equal(lhs: ir.Value, rhs: ir.Value, *, loc: ir.Location | None = None) -> ir.Value:
    """Elementwise a == b (a boolean tensor), numpy broadcasting."""
    return _build("equal", lhs, rhs, loc=loc)


def less(lhs: ir.Value, rhs: ir.Value, *, loc: ir.Location | None = None) -> ir.Value:
    """Elementwise a < b (a boolean tensor; false with a NaN), numpy broadcasting."""
    return _build("less", lhs, rhs, loc=loc)


def less_equal(lhs: ir.Value, rhs: ir.Value, *, loc: ir.Location | None = None) -> ir.Value:
    """Elementwise a <= b (a boolean tensor; false with a NaN), numpy broadcasting."""
    return _build("less_equal", lhs, rhs, loc=loc)


def greater(lhs: ir.Value, rhs: ir.Value, *, loc: ir.Location | None = None) -> ir.Value:
    """Elementwise a > b (a boolean tensor; false with a NaN), numpy broadcasting."""
    return _build("greater", lhs, rhs, loc=loc)


def greater_equal(lhs: ir.Value, rhs: ir.Value, *, loc: ir.Location | None = None) -> ir.Value:
    """Elementwise a >= b (a boolean tensor; false with a NaN), numpy broadcasting."""
    return _build("greater_equal", lhs, rhs, loc=loc)


def logical_and(lhs: ir.Value, rhs: ir.Value, *, loc: ir.Location | None = None) -> ir.Value:
    """Elementwise a and b of boolean tensors, numpy broadcasting."""
    return _build("logical_and", lhs, rhs, loc=loc)


def logical_or(lhs: ir.Value, rhs: ir.Value, *, loc: ir.Location | None = None) -> ir.Value:
    """Elementwise a or b of boolean tensors, numpy broadcasting."""
    return _build("logical_or", lhs, rhs, loc=loc)


def logical_xor(lhs: ir.Value, rhs: ir.Value, *, loc: ir.Location | None = None) -> ir.Value:
    """Elementwise a xor b of boolean tensors, numpy broadcasting."""
    return _build("logical_xor", lhs, rhs, loc=loc)


def logical_not(x: ir.Value, *, loc: ir.Location | None = None) -> ir.Value:
    """Elementwise not x of a boolean tensor."""
    return _build("logical_not", x, loc=loc)


def where(condition: ir.Value, x: ir.Value, y: ir.Value, *,
          loc: ir.Location | None = None) -> ir.Value:
    """Elementwise x where condition else y (numpy.where), numpy broadcasting of all three."""
    return _build("where", condition, x, y, loc=loc)


def isnan(x: ir.Value, *, loc: ir.Location | None = None) -> ir.Value:
    """Elementwise: is x NaN (a boolean tensor)."""
    return _build("isnan", x, loc=loc)


def isinf(x: ir.Value, *, detect_positive: int = _REQUIRED, detect_negative: int = _REQUIRED,
          loc: ir.Location | None = None) -> ir.Value:
    """Elementwise: is x an infinity of a detected sign (a boolean tensor).

    detect_positive: 1: +inf counts
    detect_negative: 1: -inf counts
    """
    return _build("isinf", x, detect_positive=detect_positive, detect_negative=detect_negative,
                  loc=loc)


def shift_left(lhs: ir.Value, rhs: ir.Value, *, loc: ir.Location | None = None) -> ir.Value:
    """Elementwise a << b of integer tensors (0 when b >= the bit width), numpy broadcasting."""
    return _build("shift_left", lhs, rhs, loc=loc)


def shift_right_logical(lhs: ir.Value, rhs: ir.Value, *,
                        loc: ir.Location | None = None) -> ir.Value:
    """Elementwise logical (unsigned) a >> b of integer tensors (0 when b >= the bit width),
    numpy broadcasting."""
    return _build("shift_right_logical", lhs, rhs, loc=loc)
