"""Shape rules of the ``graph`` ops: the ``infer`` and ``check`` functions of the op table.

Each takes the operands' :class:`TensorSpec` and the attributes, and returns the result types
or raises :class:`ShapeError`; builders and the verifier both call them (:mod:`.graph_ops`).
The data-movement ops' rules (reshape, slicing, gathers, padding) are in
:mod:`.graph_shape_ops`.
"""

from __future__ import annotations

import math
from typing import Any, Sequence

from mlir import ir

from .opdef import ShapeError, TensorSpec


def broadcast_shapes(*shapes: tuple[int | None, ...]) -> tuple[int | None, ...]:
    """numpy broadcasting of static/dynamic (``None``) shapes."""
    rank = max(len(s) for s in shapes)
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


def _permute_dims(specs: list[TensorSpec], attrs: dict[str, Any]) -> list[TensorSpec]:
    (x,) = specs
    axes = attrs["axes"]
    if sorted(axes) != list(range(x.rank)):
        raise ShapeError(f"axes {axes} are not a permutation of the {x.rank} dimensions of "
                         f"{_fmt(x.shape)}")
    return [TensorSpec(tuple(x.shape[a] for a in axes), x.element_type)]


# ----------------------------------------------------------------------------------------------
# Attribute checks and shape rules of the neural-network and reduction ops

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


# ----------------------------------------------------------------------------------------------
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
