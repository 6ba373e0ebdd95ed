"""Random valid ONNX models, seeded: what the differential fuzzer (:mod:`.fuzz_models`) feeds
both mlcir and onnxruntime.

A model is built node by node from a pool of values whose shapes and dtypes the generator
tracks itself (it does the shape arithmetic, so every model is valid by construction): each
step draws an op, operands from the pool (recent values more often, so chains form) and the
op's attributes, and adds the result to the pool. Weights are initializers at realistic
scales (``1/sqrt(fan_in)``); inputs are standard normal. The last value and a few random
others are the outputs. A model is float32 (most), float64, int32 or int64, with ops
restricted to what onnxruntime's CPU kernels implement for that type. In a *symbolic* model the
inputs' first dim is the symbol ``N`` and no op moves, reshapes or reduces that axis, so the
model runs at any batch size. Choices added after the first runs draw from a second stream
(``_Maker.extra``), so that the models of a seed stay what they were unless a new choice
fires. ``max_size`` caps the sizes drawn (the shrinker regenerates a failing seed smaller).
docs/fuzzing.md lists the ops and the tolerances.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field
from typing import Callable

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 17
_INTS = ("int32", "int64")
_ELEM = {"float32": TensorProto.FLOAT, "float64": TensorProto.DOUBLE, "int32": TensorProto.INT32,
         "int64": TensorProto.INT64, "bool": TensorProto.BOOL}


@dataclass
class Value:
    name: str
    shape: tuple[int, ...]
    dtype: str


@dataclass
class GeneratedModel:
    """A model, the inputs to run it with (two sets where it is symbolic) and how it was made."""

    model: onnx.ModelProto
    inputs: list[dict[str, np.ndarray]]
    dtype: str
    symbolic: bool
    ops: list[str]


@dataclass
class _Maker:
    rng: random.Random
    dtype: str
    symbolic: bool
    values: list[Value] = field(default_factory=list)
    inputs: list[Value] = field(default_factory=list)
    nodes: list[onnx.NodeProto] = field(default_factory=list)
    inits: list[onnx.TensorProto] = field(default_factory=list)
    count: int = 0
    extra: random.Random = field(default_factory=lambda: random.Random(0))
    max_size: int | None = None

    @property
    def integer(self) -> bool:
        return self.dtype in _INTS

    def size(self, n: int) -> int:
        """A drawn size, capped at ``max_size``."""
        return n if self.max_size is None else min(n, self.max_size)

    def name(self, stem: str) -> str:
        self.count += 1
        return f"{stem}{self.count}"

    def const(self, array: np.ndarray, stem: str = "c") -> str:
        name = self.name(stem)
        self.inits.append(numpy_helper.from_array(np.asarray(array), name))
        return name

    def weight(self, shape: tuple[int, ...], fan_in: int) -> str:
        if self.integer:
            return self.const(self.np_rng.integers(-3, 4, shape).astype(self.dtype), "w")
        scale = 1.0 / math.sqrt(max(fan_in, 1))
        return self.const((self.np_rng.standard_normal(shape) * scale).astype(self.dtype), "w")

    @property
    def np_rng(self) -> np.random.Generator:
        return np.random.default_rng(self.rng.getrandbits(32))

    @property
    def extra_np_rng(self) -> np.random.Generator:
        """Numbers for the later choices, from the second stream."""
        return np.random.default_rng(self.extra.getrandbits(32))

    def scalar(self, x: float) -> str:
        return self.const(np.array(x, self.dtype))

    def node(self, op: str, inputs: list[str], shape: tuple[int, ...], dtype: str | None = None,
             **attrs) -> Value:
        value = Value(self.name(op.lower()), tuple(int(d) for d in shape), dtype or self.dtype)
        self.nodes.append(helper.make_node(op, inputs, [value.name], name=f"n{len(self.nodes)}_{op}",
                                           **attrs))
        self.values.append(value)
        return value

    def pick(self, ok: Callable[[Value], bool] | None = None) -> Value | None:
        """A value of the pool (the model's dtype) for which ``ok`` holds, recent ones likelier."""
        found = [(i, v) for i, v in enumerate(self.values)
                 if v.dtype == self.dtype and (ok is None or ok(v))]
        if not found:
            return None
        weights = [1 + i for i, _ in found]
        return self.rng.choices([v for _, v in found], weights)[0]

    def axis(self, v: Value) -> int | None:
        """An axis of ``v`` an op may work along (not the symbolic batch)."""
        low = 1 if self.symbolic else 0
        if len(v.shape) <= low:
            return None
        return self.rng.randrange(low, len(v.shape))


def _rank_at_least(n: int) -> Callable[[Value], bool]:
    return lambda v: len(v.shape) >= n


# -- ops: each returns the value it made, or None when nothing in the pool fits --------------

_UNARY_FLOAT = ["Relu", "Sigmoid", "Tanh", "Abs", "Neg", "Erf", "Softplus", "Softsign",
                "HardSigmoid", "Elu", "LeakyRelu", "Selu", "HardSwish", "Sin", "Cos"]
_UNARY_DOUBLE = ["Relu", "Abs", "Neg", "Tanh", "Sigmoid"]
# Steps (Floor, Ceil, Round) only of the inputs: of a computed value, a last-bit difference
# between two correct compilers would flip a whole step.
_STEPS = ["Floor", "Ceil", "Round"]
_UNARY_INT = ["Abs", "Neg"]
_BINARY = ["Add", "Sub", "Mul", "Max", "Min"]


def _unary(m: _Maker) -> Value | None:
    v = m.pick()
    if m.dtype == "float32" and m.extra.random() < 0.25:
        return _more_math(m, v)
    ops = {"float32": _UNARY_FLOAT, "float64": _UNARY_DOUBLE}.get(m.dtype, _UNARY_INT)
    return m.node(m.rng.choice(ops), [v.name], v.shape)


def _more_math(m: _Maker, v: Value) -> Value:
    """Math ops whose domain or range needs care, each on an operand that keeps it finite."""
    op = m.extra.choice(["Exp", "Log", "Reciprocal", "Pow", "Atan", "Asinh", "Celu", "PRelu"])
    if op == "Exp":
        bounded = m.node("Tanh", [v.name], v.shape)
        return m.node("Exp", [bounded.name], v.shape)
    if op in ("Log", "Reciprocal", "Pow"):
        positive = m.node("Add", [m.node("Abs", [v.name], v.shape).name, m.scalar(1.0)], v.shape)
        if op == "Pow":
            exponent = m.scalar(m.extra.choice([2.0, 0.5, 1.5]))
            return m.node("Pow", [positive.name, exponent], v.shape)
        return m.node(op, [positive.name], v.shape)
    if op == "PRelu":
        per_channel = len(v.shape) > (1 if m.symbolic else 0)  # never along the batch N
        shape = (v.shape[-1],) if per_channel and m.extra.random() < 0.7 else (1,)
        slope = m.const(m.extra_np_rng.uniform(0.0, 0.5, shape).astype(m.dtype), "w")
        return m.node("PRelu", [v.name, slope], v.shape)
    if op == "Celu":
        return m.node("Celu", [v.name], v.shape, alpha=m.extra.choice([1.0, 0.5]))
    return m.node(op, [v.name], v.shape)


def _step(m: _Maker) -> Value | None:
    if m.integer:
        return None
    v = m.rng.choice(m.inputs)
    return m.node(m.rng.choice(_STEPS), [v.name], v.shape)


def _sqrt_abs(m: _Maker) -> Value | None:
    v = m.pick()
    a = m.node("Abs", [v.name], v.shape)
    return m.node("Sqrt", [a.name], v.shape)


def _broadcast_shape(m: _Maker, shape: tuple[int, ...], whole: bool = False) -> tuple[int, ...]:
    """A constant's shape that broadcasts to ``shape``: a suffix of it (all of it when
    ``whole``), some dims set to 1; never the symbolic batch's size."""
    keep = len(shape) if whole else (m.rng.randint(1, len(shape)) if shape else 0)
    out = list(shape[len(shape) - keep:])
    for i in range(len(out)):
        if not whole and m.rng.random() < 0.3:
            out[i] = 1
    if m.symbolic and len(out) == len(shape) and out:
        out[0] = 1
    return tuple(out)


def _binary(m: _Maker) -> Value | None:
    a = m.pick()
    op = m.rng.choice(_BINARY)
    if m.integer and m.extra.random() < 0.2:
        # Mod (the divisor's sign, as Python's %) by a constant without zeros.
        divisor = m.extra_np_rng.choice([-3, -2, 2, 3, 5], _broadcast_shape(m, a.shape))
        return m.node("Mod", [a.name, m.const(divisor.astype(m.dtype))], a.shape)
    same = [v for v in m.values if v.dtype == m.dtype and v.shape == a.shape and v is not a]
    if same and m.rng.random() < 0.5:
        b = m.rng.choice(same).name
    else:
        b = m.weight(_broadcast_shape(m, a.shape), 1)
    first, second = (a.name, b) if m.rng.random() < 0.5 else (b, a.name)
    return m.node(op, [first, second], a.shape)


def _divide(m: _Maker) -> Value | None:
    a = m.pick()
    shape = _broadcast_shape(m, a.shape)
    if m.integer:
        return None
    magnitude = m.np_rng.uniform(0.5, 2.0, shape) * m.np_rng.choice([-1.0, 1.0], shape)
    return m.node("Div", [a.name, m.const(magnitude.astype(m.dtype))], a.shape)


def _where(m: _Maker) -> Value | None:
    a = m.pick()
    same = [v for v in m.values if v.dtype == m.dtype and v.shape == a.shape and v is not a]
    b = m.rng.choice(same).name if same else m.weight(_broadcast_shape(m, a.shape, True), 1)
    compare = m.rng.choice(["Greater", "Less", "GreaterOrEqual"])
    if m.extra.random() < 0.3:
        compare = m.extra.choice(["LessOrEqual", "Equal"] if m.integer else ["LessOrEqual"])
    cond = m.node(compare, [a.name, b], a.shape, "bool")
    if m.extra.random() < 0.25:
        # Two conditions combined, or one negated.
        logic = m.extra.choice(["And", "Or", "Xor", "Not"])
        if logic == "Not":
            cond = m.node("Not", [cond.name], a.shape, "bool")
        else:
            other = m.node("Less", [a.name, m.scalar(0)], a.shape, "bool")
            cond = m.node(logic, [cond.name, other.name], a.shape, "bool")
    return m.node("Where", [cond.name, a.name, b], a.shape)


def _clip(m: _Maker) -> Value | None:
    if m.integer:
        return None
    a = m.pick()
    low = m.const(np.array(-m.rng.uniform(0.1, 1.0), m.dtype))
    high = m.const(np.array(m.rng.uniform(0.1, 1.0), m.dtype))
    return m.node("Clip", [a.name, low, high], a.shape)


def _matmul(m: _Maker) -> Value | None:
    a = m.pick(_rank_at_least(2 if m.symbolic else 1))
    k = a.shape[-1]
    n = m.size(m.rng.choice([1, 3, 8, 16, 17, 32, 64]))
    if not m.symbolic and len(a.shape) == 3 and m.rng.random() < 0.3:
        # Scores of a value against itself, as attention does: [B, M, K] x [B, K, M].
        t = m.node("Transpose", [a.name], (a.shape[0], a.shape[2], a.shape[1]), perm=[0, 2, 1])
        return m.node("MatMul", [a.name, t.name], (a.shape[0], a.shape[1], a.shape[1]))
    if not m.symbolic and len(a.shape) in (2, 3) and m.extra.random() < 0.2:
        # Broadcasting batch dims: [M, K] x [B, K, N] and [B, M, K] x [1, K, N].
        batch = m.extra.choice([2, 3]) if len(a.shape) == 2 else 1
        out = (batch if len(a.shape) == 2 else a.shape[0],) + (a.shape[-2], n)
        return m.node("MatMul", [a.name, m.weight((batch, k, n), k)], out)
    shape = a.shape[:-1] + (n,) if len(a.shape) > 1 else (n,)
    return m.node("MatMul", [a.name, m.weight((k, n), k)], shape)


def _gemm(m: _Maker) -> Value | None:
    a = m.pick(lambda v: len(v.shape) == 2)
    if a is None or m.integer:
        return None
    k, n = a.shape[1], m.size(m.rng.choice([1, 5, 16, 33, 64]))
    trans_b = m.rng.randint(0, 1)
    b = m.weight((n, k) if trans_b else (k, n), k)
    inputs = [a.name, b] + ([m.weight((n,), 1)] if m.rng.random() < 0.7 else [])
    return m.node("Gemm", inputs, (a.shape[0], n), transB=trans_b,
                  alpha=m.rng.choice([1.0, 0.5]), beta=m.rng.choice([1.0, 2.0]))


def _conv(m: _Maker) -> Value | None:
    a = m.pick(lambda v: len(v.shape) == 4 and v.shape[2] >= 3 and v.shape[3] >= 3)
    if a is None or m.dtype != "float32":
        return None
    n, c, h, w = a.shape
    kernel = m.rng.choice([1, 1, 3, 3, 3, 5, 7])
    dilation = m.rng.choice([1, 1, 1, 2]) if kernel == 3 else 1
    stride = m.rng.choice([1, 1, 2])
    pad = m.rng.randint(0, kernel // 2 * dilation) if kernel > 1 else 0
    span = dilation * (kernel - 1) + 1
    if h + 2 * pad < span or w + 2 * pad < span:
        return None
    kind = m.rng.random()
    if kind < 0.2:
        group, out = c, c * m.rng.choice([1, 1, 2])          # depthwise (with multiplier)
    elif kind < 0.3 and c % 2 == 0:
        group, out = 2, 2 * m.rng.choice([2, 4, 8])           # grouped
    else:
        group, out = 1, m.size(m.rng.choice([4, 8, 16, 24, 32]))
    weight = m.weight((out, c // group, kernel, kernel), c // group * kernel * kernel)
    inputs = [a.name, weight] + ([m.weight((out,), 1)] if m.rng.random() < 0.6 else [])
    oh = (h + 2 * pad - span) // stride + 1
    ow = (w + 2 * pad - span) // stride + 1
    return m.node("Conv", inputs, (n, out, oh, ow), kernel_shape=[kernel, kernel],
                  strides=[stride, stride], pads=[pad] * 4, dilations=[dilation, dilation],
                  group=group)


def _pool(m: _Maker) -> Value | None:
    a = m.pick(lambda v: len(v.shape) == 4 and v.shape[2] >= 3 and v.shape[3] >= 3)
    if a is None or m.dtype != "float32":
        return None
    n, c, h, w = a.shape
    if m.extra.random() < 0.15:  # pixels to channels and back
        if h % 2 == 0 and w % 2 == 0 and m.extra.random() < 0.5:
            return m.node("SpaceToDepth", [a.name], (n, c * 4, h // 2, w // 2), blocksize=2)
        if c % 4 == 0:
            return m.node("DepthToSpace", [a.name], (n, c // 4, h * 2, w * 2), blocksize=2,
                          mode=m.extra.choice(["DCR", "CRD"]))
    if m.rng.random() < 0.25:
        return m.node(m.rng.choice(["GlobalAveragePool", "GlobalMaxPool"]), [a.name],
                      (n, c, 1, 1))
    kernel = m.rng.choice([2, 3])
    stride = m.rng.choice([1, 2])
    pad = m.rng.randint(0, kernel // 2)
    oh, ow = (h + 2 * pad - kernel) // stride + 1, (w + 2 * pad - kernel) // stride + 1
    op = m.rng.choice(["MaxPool", "AveragePool"])
    extra = {"count_include_pad": m.rng.randint(0, 1)} if op == "AveragePool" else {}
    return m.node(op, [a.name], (n, c, oh, ow), kernel_shape=[kernel, kernel],
                  strides=[stride, stride], pads=[pad] * 4, **extra)


def _batch_norm(m: _Maker) -> Value | None:
    a = m.pick(lambda v: len(v.shape) in (3, 4))
    if a is None or m.dtype != "float32":
        return None
    c = a.shape[1]
    if m.extra.random() < 0.3:
        if m.extra.random() < 0.5:
            rng = m.extra_np_rng
            scale, bias = rng.uniform(0.5, 1.5, c), rng.normal(0, 0.2, c)
            return m.node("InstanceNormalization",
                          [a.name, m.const(scale.astype("float32")),
                           m.const(bias.astype("float32"))], a.shape, epsilon=1e-5)
        return m.node("MeanVarianceNormalization", [a.name], a.shape,
                      axes=list(range(2, len(a.shape))))
    rng = m.np_rng
    params = [rng.uniform(0.5, 1.5, c), rng.normal(0, 0.2, c), rng.normal(0, 0.2, c),
              rng.uniform(0.5, 2.0, c)]
    return m.node("BatchNormalization", [a.name] + [m.const(p.astype("float32")) for p in params],
                  a.shape, epsilon=1e-5)


def _layer_norm(m: _Maker) -> Value | None:
    a = m.pick(_rank_at_least(2))
    if a is None or m.dtype != "float32":
        return None
    d = a.shape[-1]
    scale = m.const(m.np_rng.uniform(0.5, 1.5, d).astype("float32"))
    bias = m.const(m.np_rng.normal(0, 0.2, d).astype("float32"))
    return m.node("LayerNormalization", [a.name, scale, bias], a.shape, axis=-1, epsilon=1e-5)


def _softmax(m: _Maker) -> Value | None:
    a = m.pick()
    axis = m.axis(a)
    if axis is None or m.integer:
        return None
    return m.node(m.rng.choice(["Softmax", "Softmax", "LogSoftmax"]), [a.name], a.shape,
                  axis=axis)


def _reduce(m: _Maker) -> Value | None:
    a = m.pick()
    axis = m.axis(a)
    if axis is None:
        return None
    keep = m.rng.randint(0, 1)
    shape = tuple(1 if i == axis else d for i, d in enumerate(a.shape)) if keep else \
        tuple(d for i, d in enumerate(a.shape) if i != axis)
    op = m.rng.choice(["ReduceSum", "ReduceMax"] if m.integer
                      else ["ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin"])
    if m.extra.random() < 0.3:
        if m.integer:  # ties are common among small integers: which index is taken
            found = m.node(m.extra.choice(["ArgMax", "ArgMin"]), [a.name], shape, "int64",
                           axis=axis, keepdims=keep, select_last_index=m.extra.randint(0, 1))
            if m.dtype == "int64":
                return found
            return m.node("Cast", [found.name], shape, to=_ELEM[m.dtype])
        op = m.extra.choice(["ReduceL1", "ReduceL2", "ReduceSumSquare", "ReduceLogSumExp",
                             "ReduceProd"])
    if op == "ReduceSum":  # axes is an input from opset 13 on; an attribute for the others
        return m.node(op, [a.name, m.const(np.array([axis], np.int64))], shape, keepdims=keep)
    return m.node(op, [a.name], shape, axes=[axis], keepdims=keep)


def _transpose(m: _Maker) -> Value | None:
    a = m.pick(_rank_at_least(2))
    if a is None:
        return None
    if not m.integer and m.extra.random() < 0.15:
        k = m.const(np.array(m.extra.randint(-2, 2), np.int64))
        return m.node("Trilu", [a.name, k], a.shape, upper=m.extra.randint(0, 1))
    low = 1 if m.symbolic else 0
    rest = list(range(low, len(a.shape)))
    m.rng.shuffle(rest)
    perm = list(range(low)) + rest
    return m.node("Transpose", [a.name], tuple(a.shape[p] for p in perm), perm=perm)


def _reshape(m: _Maker) -> Value | None:
    if m.symbolic:
        return None
    a = m.pick(_rank_at_least(2))
    if a is None:
        return None
    shape = list(a.shape)
    i = m.rng.randrange(len(shape) - 1)
    if m.rng.random() < 0.5:  # merge two neighbours
        shape[i:i + 2] = [shape[i] * shape[i + 1]]
    else:  # split a dim by one of its factors
        factors = [f for f in range(2, shape[i] + 1) if shape[i] % f == 0 and f < shape[i]]
        if not factors:
            return None
        f = m.rng.choice(factors)
        shape[i:i + 1] = [shape[i] // f, f]
    target = list(shape)
    if m.rng.random() < 0.5:
        target[m.rng.randrange(len(target))] = -1
    return m.node("Reshape", [a.name, m.const(np.array(target, np.int64))], tuple(shape))


def _flatten(m: _Maker) -> Value | None:
    if m.symbolic:
        return None
    a = m.pick(_rank_at_least(2))
    if a is None:
        return None
    axis = m.rng.randint(1, len(a.shape) - 1)
    return m.node("Flatten", [a.name], (math.prod(a.shape[:axis]), math.prod(a.shape[axis:])),
                  axis=axis)


def _slice(m: _Maker) -> Value | None:
    a = m.pick()
    axis = m.axis(a)
    if axis is None or a.shape[axis] < 2:
        return None
    d = a.shape[axis]
    step = m.rng.choice([1, 1, 2, -1])
    if step > 0:
        start = m.rng.randrange(0, d - 1)
        end = m.rng.randint(start + 1, d)
        size = len(range(start, end, step))
    else:
        start = m.rng.randrange(1, d)
        end = m.rng.randrange(-1, start)
        size = len(range(start, end, step))
        end = end if end >= 0 else -d - 1  # -1 would mean the last element
    if size <= 0:
        return None
    shape = tuple(size if i == axis else s for i, s in enumerate(a.shape))
    consts = [m.const(np.array([x], np.int64)) for x in (start, end, axis, step)]
    return m.node("Slice", [a.name, *consts], shape)


def _concat(m: _Maker) -> Value | None:
    a = m.pick()
    axis = m.axis(a)
    if axis is None:
        return None
    fits = [v for v in m.values if v.dtype == m.dtype and len(v.shape) == len(a.shape)
            and all(x == y for i, (x, y) in enumerate(zip(v.shape, a.shape)) if i != axis)]
    b = m.rng.choice(fits)
    shape = tuple(x + y if i == axis else x for i, (x, y) in enumerate(zip(a.shape, b.shape)))
    return m.node("Concat", [a.name, b.name], shape, axis=axis)


def _split(m: _Maker) -> Value | None:
    a = m.pick()
    axis = m.axis(a)
    if axis is None or a.shape[axis] % 2 or a.shape[axis] < 2:
        return None
    half = tuple(d // 2 if i == axis else d for i, d in enumerate(a.shape))
    first, second = Value(m.name("split"), half, m.dtype), Value(m.name("split"), half, m.dtype)
    m.nodes.append(helper.make_node("Split", [a.name], [first.name, second.name],
                                    name=f"n{len(m.nodes)}_Split", axis=axis))
    m.values += [first, second]
    return second


def _gather(m: _Maker) -> Value | None:
    a = m.pick()
    axis = m.axis(a)
    if axis is None:
        return None
    d = a.shape[axis]
    if m.rng.random() < 0.3:
        indices = np.array(m.rng.randrange(-d, d), np.int64)
    else:
        indices = np.array([m.rng.randrange(-d, d) for _ in range(m.rng.randint(1, 4))], np.int64)
    shape = a.shape[:axis] + indices.shape + a.shape[axis + 1:]
    return m.node("Gather", [a.name, m.const(indices)], shape, axis=axis)


def _expand(m: _Maker) -> Value | None:
    if m.symbolic:
        return None
    a = m.pick(lambda v: 1 in v.shape or len(v.shape) < 4)
    if a is None:
        return None
    shape = [m.rng.choice([2, 3]) if d == 1 else d for d in a.shape]
    if len(shape) < 4 and m.rng.random() < 0.5:
        shape = [2] + shape
    return m.node("Expand", [a.name, m.const(np.array(shape, np.int64))], tuple(shape))


def _pad(m: _Maker) -> Value | None:
    a = m.pick()
    if a is None or not a.shape:
        return None
    rank = len(a.shape)
    pads = [0] * (2 * rank)
    for axis in range(1 if m.symbolic else 0, rank):
        if m.rng.random() < 0.5:
            pads[axis], pads[rank + axis] = m.rng.randint(0, 2), m.rng.randint(0, 2)
    shape = tuple(d + pads[i] + pads[rank + i] for i, d in enumerate(a.shape))
    value = m.const(np.array(m.rng.choice([0, 1]), m.dtype))
    return m.node("Pad", [a.name, m.const(np.array(pads, np.int64)), value], shape,
                  mode="constant")


def _unsqueeze(m: _Maker) -> Value | None:
    a = m.pick(lambda v: len(v.shape) < 4)
    if a is None:
        return None
    axis = m.rng.randint(1 if m.symbolic else 0, len(a.shape))
    shape = a.shape[:axis] + (1,) + a.shape[axis:]
    u = m.node("Unsqueeze", [a.name, m.const(np.array([axis], np.int64))], shape)
    if m.rng.random() < 0.5:
        return m.node("Squeeze", [u.name, m.const(np.array([axis], np.int64))], a.shape)
    return u


def _cast_round_trip(m: _Maker) -> Value | None:
    """To another type and back, exact both ways: float32 through float64; an input of a
    float32 model through int32 (truncated: only of inputs, as the steps); int32 through
    float64 or int64; int64 through int32 (the values stay small)."""
    if m.dtype == "float32" and m.extra.random() < 0.3:
        a = m.rng.choice(m.inputs)
        scaled = m.node("Mul", [a.name, m.const(np.array(4.0, np.float32))], a.shape)
        whole = m.node("Cast", [scaled.name], a.shape, "int32", to=TensorProto.INT32)
        return m.node("Cast", [whole.name], a.shape, "float32", to=TensorProto.FLOAT)
    a = m.pick()
    if m.dtype == "float64":
        return None
    via = {"float32": "float64", "int64": "int32"}.get(m.dtype) or \
        m.extra.choice(["float64", "int64"])
    wide = m.node("Cast", [a.name], a.shape, via, to=_ELEM[via])
    return m.node("Cast", [wide.name], a.shape, m.dtype, to=_ELEM[m.dtype])


# op -> (weight, generator, dtypes it takes)
OPS: dict[str, tuple[float, Callable[[_Maker], Value | None], tuple[str, ...]]] = {
    "unary": (6, _unary, ("float32", "float64", "int32", "int64")),
    "sqrt": (1, _sqrt_abs, ("float32", "float64")),
    "step": (0.5, _step, ("float32", "float64")),
    "binary": (6, _binary, ("float32", "float64", "int32", "int64")),
    "div": (1, _divide, ("float32", "float64")),
    "where": (1, _where, ("float32", "float64", "int32", "int64")),
    "clip": (1, _clip, ("float32",)),
    "matmul": (4, _matmul, ("float32", "float64", "int32", "int64")),
    "gemm": (2, _gemm, ("float32", "float64")),
    "conv": (6, _conv, ("float32",)),
    "pool": (2, _pool, ("float32",)),
    "batch_norm": (2, _batch_norm, ("float32",)),
    "layer_norm": (1, _layer_norm, ("float32",)),
    "softmax": (2, _softmax, ("float32", "float64")),
    "reduce": (2, _reduce, ("float32", "float64", "int32", "int64")),
    "transpose": (2, _transpose, ("float32", "float64", "int32", "int64")),
    "reshape": (2, _reshape, ("float32", "float64", "int32", "int64")),
    "flatten": (1, _flatten, ("float32", "float64", "int32", "int64")),
    "slice": (2, _slice, ("float32", "float64", "int32", "int64")),
    "concat": (2, _concat, ("float32", "float64", "int32", "int64")),
    "split": (1, _split, ("float32", "float64", "int32", "int64")),
    "gather": (1, _gather, ("float32", "float64", "int32", "int64")),
    "expand": (1, _expand, ("float32", "float64", "int32", "int64")),
    "pad": (1, _pad, ("float32", "float64", "int32", "int64")),
    "unsqueeze": (1, _unsqueeze, ("float32", "float64", "int32", "int64")),
    "cast": (1, _cast_round_trip, ("float32", "int32", "int64")),
}

_IMAGE_SIDES = [5, 7, 8, 9, 12, 14, 16]
_SIZES = [1, 2, 3, 5, 7, 8, 12, 16, 17, 24, 32, 48, 64]


def _input_shape(m: _Maker, batch: int) -> tuple[int, ...]:
    kind = m.rng.random()
    if kind < 0.45 and m.dtype == "float32":  # an image batch, NCHW
        side = m.rng.choice(_IMAGE_SIDES)
        if m.max_size is not None:
            side = min(side, max(m.max_size, 5))  # a 3x3 or 5x5 kernel still fits
        return (batch, m.size(m.rng.choice([1, 3, 4, 8, 16])), side,
                side + m.rng.choice([0, 0, 1]))
    rank = m.rng.choice([2, 2, 3, 3, 4])
    return (batch,) + tuple(m.size(m.rng.choice(_SIZES)) for _ in range(rank - 1))


def generate(seed: int, max_nodes: int = 30, max_size: int | None = None) -> GeneratedModel:
    """The model of ``seed``: 1 to ``max_nodes`` nodes, valid by construction; ``max_size``
    caps the sizes drawn (dims of inputs, matmul and conv widths), all else drawn alike."""
    rng = random.Random(seed)
    extra = random.Random(seed ^ 0x1F0E43)
    dtype = rng.choices(["float32", "float64", "int32"], [0.85, 0.1, 0.05])[0]
    if dtype == "int32" and extra.random() < 0.5:
        dtype = "int64"
    symbolic = rng.random() < 0.2
    m = _Maker(rng, dtype, symbolic, extra=extra, max_size=max_size)
    batch = rng.choice([1, 1, 2, 3])
    inputs = [Value(f"in{i}", _input_shape(m, batch), dtype)
              for i in range(rng.choice([1, 1, 1, 2]))]
    m.values, m.inputs = list(inputs), list(inputs)
    names = [op for op, (_, _, dtypes) in OPS.items() if dtype in dtypes]
    weights = [OPS[op][0] for op in names]
    target = rng.randint(1, max_nodes)
    used: list[str] = []
    attempts = 0
    while len(m.nodes) < target and attempts < 20 * max_nodes:
        attempts += 1
        op = rng.choices(names, weights)[0]
        if OPS[op][1](m) is not None:
            used.append(op)
        if len(m.values) > len(inputs) and max(math.prod(v.shape) for v in m.values) > 1 << 18:
            break  # values past 256k elements make slow cases without new paths
    computed = [v for v in m.values[len(inputs):] if v.dtype == dtype]
    if not computed:
        m.node("Identity", [inputs[0].name], inputs[0].shape)
        computed = [m.values[-1]]
    outputs = [computed[-1]] + rng.sample(computed[:-1], min(len(computed) - 1,
                                                            rng.choice([0, 0, 1, 2])))
    model = _model(m, inputs, outputs, symbolic)
    feeds = [_feeds(inputs, np.random.default_rng(seed), dtype, None)]
    if symbolic:
        other = rng.choice([b for b in (1, 2, 3, 4) if b != batch])
        feeds.append(_feeds(inputs, np.random.default_rng(seed + 1), dtype, other))
    return GeneratedModel(model, feeds, dtype, symbolic, used)


def _model(m: _Maker, inputs: list[Value], outputs: list[Value],
           symbolic: bool) -> onnx.ModelProto:
    def info(v: Value, is_io: bool) -> onnx.ValueInfoProto:
        shape: list[int | str] = list(v.shape)
        if symbolic and is_io and shape:
            shape[0] = "N"
        return helper.make_tensor_value_info(v.name, _ELEM[v.dtype], shape)

    graph = helper.make_graph(m.nodes, "fuzz", [info(v, True) for v in inputs],
                              [info(v, True) for v in outputs], m.inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)],
                              producer_name="mlcir.testing.model_generator")
    model.ir_version = 8
    return model


def _feeds(inputs: list[Value], rng: np.random.Generator, dtype: str,
           batch: int | None) -> dict[str, np.ndarray]:
    feeds = {}
    for v in inputs:
        shape = ((batch,) + v.shape[1:]) if batch is not None else v.shape
        if dtype in _INTS:
            feeds[v.name] = rng.integers(-5, 6, shape).astype(dtype)
        else:
            feeds[v.name] = rng.standard_normal(shape).astype(dtype)
    return feeds


__all__ = ["GeneratedModel", "OPS", "OPSET", "generate"]
