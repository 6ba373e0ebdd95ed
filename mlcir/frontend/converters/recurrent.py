"""LSTM, GRU and RNN composed of graph ops, the time steps a loop in ``main``.

The input projection of every step and both directions is one matmul (``[T*B, I] x
[I, D*G*H]``, the input and recurrent biases folded into it); each step then adds its row to
``h x R^T`` (a matmul whose constant weight graph-pack-weights packs) and applies the gates, a
short elementwise chain that graph-fuse-ops fuses. The steps are an ``scf.for`` carrying
the state and the outputs (:meth:`GraphBuilder.loop`); the batch or the number of steps may
be symbolic (docs/frontend.md#recurrent-networks). ``sequence_lens`` masks each batch row
(its state frozen, its outputs zero past its length); the reverse direction reads each row
reversed within its own length (a gather)."""

from __future__ import annotations

from collections.abc import Callable
from typing import ClassVar

import numpy as np
from mlir import ir

from ..builder import GraphBuilder
from ..converter import Converter, Node, Value, converter, require
from ..symbolic import Dim, SymbolicDim
from .elementwise import _elu, _hard_sigmoid, _softplus
from .tensor import _slice_along

Activation = Callable[[Value], Value]

# ONNX's activation names -> (number of alphas, betas it consumes, their defaults).
_ACTIVATIONS: dict[str, tuple[int, int, float, float]] = {
    "Relu": (0, 0, 0.0, 0.0), "Tanh": (0, 0, 0.0, 0.0), "Sigmoid": (0, 0, 0.0, 0.0),
    "Softsign": (0, 0, 0.0, 0.0), "Softplus": (0, 0, 0.0, 0.0),
    "Affine": (1, 1, 1.0, 0.0), "ScaledTanh": (1, 1, 1.0, 1.0),
    "HardSigmoid": (1, 1, 0.2, 0.5), "LeakyRelu": (1, 0, 0.01, 0.0),
    "ThresholdedRelu": (1, 0, 1.0, 0.0), "Elu": (1, 0, 1.0, 0.0),
}
_DIRECTIONS = ("forward", "reverse", "bidirectional")


def _activation(cx: GraphBuilder, name: str, alpha: float, beta: float) -> Activation:
    """The ONNX RNN activation ``name`` as a function building graph ops."""
    def scaled(x: Value, a: float) -> Value:
        return cx.op("multiply", x, cx.scalar(a, x))

    table: dict[str, Activation] = {
        "Relu": lambda x: cx.op("relu", x),
        "Tanh": lambda x: cx.op("tanh", x),
        "Sigmoid": lambda x: cx.op("sigmoid", x),
        "Softsign": lambda x: cx.op("divide", x, cx.op("add", cx.scalar(1, x),
                                                        cx.op("abs", x))),
        "Softplus": lambda x: _softplus(cx, x),
        "Affine": lambda x: cx.op("add", scaled(x, alpha), cx.scalar(beta, x)),
        "ScaledTanh": lambda x: scaled(cx.op("tanh", scaled(x, beta)), alpha),
        "HardSigmoid": lambda x: _hard_sigmoid(cx, x, alpha, beta),
        "LeakyRelu": lambda x: cx.op("leaky_relu", x, alpha=alpha),
        "ThresholdedRelu": lambda x: cx.op("thresholded_relu", x, alpha=alpha),
        "Elu": lambda x: _elu(cx, x, alpha),
    }
    return table[name]


def _names(node: Node) -> list[str]:
    """The ``activations`` attribute (a list of strings, which onnx decodes as bytes)."""
    return [n.decode() if isinstance(n, bytes) else n for n in node.attr("activations", [])]


def _canonical(name: str) -> str | None:
    """ONNX activation names are case-insensitive in onnxruntime."""
    return next((known for known in _ACTIVATIONS if known.lower() == name.lower()), None)


class _Recurrent(Converter):
    """What LSTM, GRU and RNN share: attributes, the input projection, directions, masking by
    ``sequence_lens``, the layouts of the inputs and outputs. A subclass gives its gate count,
    its default activations and :meth:`step`."""

    gates: ClassVar[int] = 1
    default_activations: ClassVar[tuple[str, ...]] = ()
    state_outputs: ClassVar[int] = 2        # Y, Y_h (LSTM: and Y_c)
    graph_ops = ("matmul", "add", "subtract", "multiply", "divide", "permute_dims", "reshape",
                 "strided_slice", "take", "where", "less", "clip", "relu", "tanh", "sigmoid",
                 "abs", "exp", "log", "negative", "minimum", "leaky_relu", "thresholded_relu",
                 "astype", "iota")

    @classmethod
    def check(cls, node: Node) -> list[str]:
        problems: list[str] = []
        direction = node.attr("direction", "forward")
        require(direction in _DIRECTIONS, f"direction '{direction}' is not one of "
                f"{', '.join(_DIRECTIONS)}", problems)
        require(node.attr("layout", 0) in (0, 1), f"layout={node.attr('layout')} (ONNX "
                "allows 0 and 1)", problems)
        for name in _names(node):
            require(_canonical(name) is not None, f"activation '{name}' is not one of "
                    f"{', '.join(_ACTIVATIONS)}", problems)
        given, per = len(_names(node)), len(cls.default_activations)
        needed = per * (2 if direction == "bidirectional" else 1)
        require(given in (0, needed), f"{given} activations given, {needed} needed ({per} per "
                "direction)", problems)
        return problems

    @classmethod
    def activations(cls, cx: GraphBuilder, node: Node, directions: int
                    ) -> list[list[Activation]]:
        """Each direction's activations; ``activation_alpha``/``beta`` are consumed in order by
        the activations that take them (onnxruntime's rule), defaults where they run out."""
        names = _names(node) or list(cls.default_activations) * directions
        per = len(cls.default_activations)
        alphas = list(node.attr("activation_alpha", []))
        betas = list(node.attr("activation_beta", []))
        built = []
        for name in names:
            canonical = _canonical(name)
            assert canonical is not None  # check() refused the others
            n_alpha, n_beta, alpha, beta = _ACTIVATIONS[canonical]
            if n_alpha and alphas:
                alpha = float(alphas.pop(0))
            if n_beta and betas:
                beta = float(betas.pop(0))
            built.append(_activation(cx, canonical, alpha, beta))
        return [built[d * per:(d + 1) * per] for d in range(directions)]

    @classmethod
    def folded_bias(cls, cx: GraphBuilder, node: Node, wb: Value, rb: Value
                    ) -> tuple[Value, Value | None]:
        """The bias added to the input projection, and one kept for :meth:`step` (None)."""
        return cx.op("add", wb, rb), None

    @classmethod
    def step(cls, cx: GraphBuilder, node: Node, xw: Value, state: list[Value], r_t: Value,
             inner_bias: Value | None, peepholes: Value | None, acts: list[Activation]
             ) -> list[Value]:
        """One time step: ``xw`` ([B, G*H], the projected input and folded bias), the state
        ([h] or [h, c], each [B, H]) and ``r_t`` ([H, G*H]) -> the new state."""
        raise NotImplementedError

    @classmethod
    def clip(cls, cx: GraphBuilder, node: Node, x: Value) -> Value:
        """``clip`` bounds the input of every gate activation."""
        threshold = node.attr("clip")
        if threshold is None:
            return x
        return cx.op("clip", x, min=-float(threshold), max=float(threshold))

    @classmethod
    def _impl_v7(cls, cx: GraphBuilder, node: Node, inputs: list[Value]) -> list[Value]:
        def given(i: int) -> Value | None:
            return inputs[i] if len(inputs) > i else None

        x, w, r = inputs[:3]
        if cx.dtype(x).kind != "f":
            raise cx.error(f"{node.op_type} of {cx.dtype(x)} values is not supported "
                           "(floating point only)")
        layout = int(node.attr("layout", 0))
        if layout:
            x = cx.op("permute_dims", x, axes=[1, 0, 2])
        steps, batch, width = cx.dims(x)  # static, or symbols
        if isinstance(width, Dim) or (isinstance(steps, Dim) and isinstance(batch, Dim)):
            raise cx.error(f"{node.op_type}'s X has the shape {list(cx.dims(x))}: the input size "
                           "must be static, and the number of steps or the batch (one "
                           "projection matmul over both; from_onnx's shape_dict can fix them)")
        directions = 2 if node.attr("direction", "forward") == "bidirectional" else 1
        hidden = int(node.attr("hidden_size", cx.static_shape(r, "R")[-1]))
        size = cls.gates * hidden
        dtype = cx.dtype(x)
        bias = given(3)
        if bias is None:
            bias = np.zeros((directions, 2 * size), dtype)
        folded, inner = [], []
        for d in range(directions):
            b_d = cx.op("take", bias, np.array(d, np.int64), axis=0)
            fold, keep = cls.folded_bias(cx, node, _slice_along(cx, b_d, {0: (0, size, 1)}),
                                         _slice_along(cx, b_d, {0: (size, 2 * size, 1)}))
            folded.append(fold)
            inner.append(keep)
        # One matmul projects every step of every direction: [T*B, I] x [I, D*G*H].
        w_all = cx.reshape(cx.op("permute_dims", w, axes=[2, 0, 1]), [width, directions * size])
        projected = cx.op("add", cx.op("matmul", _reshape(cx, x, [steps * batch, width]), w_all),
                          cx.concat(folded, 0))
        projected = _reshape(cx, projected, [steps, batch, directions * size])
        initial = [given(5)] + ([given(6)] if cls.state_outputs == 3 else [])
        if layout:
            initial = [None if s is None else cx.op("permute_dims", s, axes=[1, 0, 2])
                       for s in initial]
        lens = given(4)
        if isinstance(lens, np.ndarray) and isinstance(steps, int) and (lens == steps).all():
            lens = None  # every row runs the whole sequence: nothing to mask
        acts = cls.activations(cx, node, directions)
        peepholes = given(7)
        reverse_all = node.attr("direction", "forward") == "reverse"
        ys, finals = [], []
        for d in range(directions):
            xw = _slice_along(cx, projected, {2: (d * size, (d + 1) * size, 1)})
            state = [cx.expand_to(np.zeros((1, hidden), dtype), [batch, hidden]) if s is None else
                     cx.op("take", s, np.array(d, np.int64), axis=0) for s in initial]
            r_t = cx.op("permute_dims", cx.op("take", r, np.array(d, np.int64), axis=0),
                        axes=[1, 0])
            p_d = None if peepholes is None else \
                cx.op("take", peepholes, np.array(d, np.int64), axis=0)
            y, state = cls._direction(cx, node, xw, state, r_t, inner[d], p_d, acts[d], lens,
                                      reverse=reverse_all or d == 1)
            ys.append(_reshape(cx, y, [steps, 1, batch, hidden]))
            finals.append([_reshape(cx, s, [1, batch, hidden]) for s in state])
        y = cx.concat(ys, 1)
        outs = [cx.concat([f[i] for f in finals], 0) for i in range(cls.state_outputs - 1)]
        if layout:
            y = cx.op("permute_dims", y, axes=[2, 0, 1, 3])
            outs = [cx.op("permute_dims", s, axes=[1, 0, 2]) for s in outs]
        return [y, *outs][:max(1, len(node.outputs))]

    @classmethod
    def _direction(cls, cx: GraphBuilder, node: Node, xw: Value, state: list[Value],
                   r_t: Value, inner: Value | None, peepholes: Value | None,
                   acts: list[Activation], lens: Value | None, reverse: bool
                   ) -> tuple[Value, list[Value]]:
        """Every step of one direction: its outputs [T, B, H] in time order and final state."""
        steps, batch, size = cx.dims(xw)
        gather = None
        if lens is not None:
            lens = cx.astype(lens, np.dtype(np.int64))
            if reverse:  # each row reversed within its own length, then run forwards
                times = _reshape(cx, cx.iota(steps), [steps, 1])
                row_lens = _reshape(cx, lens, [1, batch])
                valid = cx.op("less", times, row_lens)
                back = cx.op("subtract", cx.op("subtract", row_lens, np.array(1, np.int64)),
                             times)
                index = cx.op("where", valid, back, times)
                gather = cx.op("add", cx.op("multiply", index, cx.dim_value(batch)),
                               _reshape(cx, cx.iota(batch), [1, batch]))
                xw = cx.op("take", _reshape(cx, xw, [steps * batch, size]), gather, axis=0)
                reverse = False
        y, state = cls._looped(cx, node, xw, state, (r_t, inner, peepholes), acts, lens,
                               reverse)
        if gather is not None:
            hidden = cx.shape(y)[2]
            y = cx.op("take", _reshape(cx, y, [steps * batch, hidden]), gather, axis=0)
        return y, state

    @classmethod
    def _looped(cls, cx: GraphBuilder, node: Node, xw: Value, state: list[Value],
                weights: tuple[Value, Value | None, Value | None], acts: list[Activation],
                lens: Value | None, reverse: bool) -> tuple[Value, list[Value]]:
        """The steps as an ``scf.for`` in ``main`` (:meth:`GraphBuilder.loop`): the state and
        the outputs [T, B, H] carried, each step's cell one fused kernel; a row past its
        length keeps its state by a 0/1 mask (no booleans inside the loop)."""
        steps, batch, _ = cx.dims(xw)
        hidden = cx.shape(state[0])[1]
        dtype = cx.dtype(xw)
        mask = None
        if lens is not None:
            times = _reshape(cx, cx.iota(steps), [steps, 1])
            running = cx.op("less", times, _reshape(cx, lens, [1, batch]))
            mask = _reshape(cx, cx.astype(running, dtype), [steps, batch, 1])

        def body(i: ir.Value, values: list[ir.Value]) -> list[Value]:
            t = cx.index_from(steps, i) if reverse else i
            *old, ys = values
            new = cls.step(cx, node, cx.slice_at(xw, t), old, *weights, acts)
            out = new[0]
            if mask is not None:
                m = cx.slice_at(mask, t)
                out = cx.op("multiply", m, out)
                new = [cx.op("add", s, cx.op("multiply", m, cx.op("subtract", n, s)))
                       for n, s in zip(new, old)]
            return [*new, cx.insert_at(ys, out, t)]

        *final, y = cx.loop(steps, [*state, cx.empty([steps, batch, hidden], dtype)], body)
        return y, final

def _reshape(cx: GraphBuilder, v: Value, dims: list[SymbolicDim]) -> Value:
    """``v`` reshaped to ``dims``, which may hold the batch's symbol."""
    if all(isinstance(d, (int, np.integer)) for d in dims):
        return cx.reshape(v, [int(d) for d in dims])
    return cx.reshape_to(v, dims)


def _gates(cx: GraphBuilder, x: Value, count: int) -> list[Value]:
    """``x`` [B, count*H] split into ``count`` [B, H] slices."""
    width = cx.shape(x)[1] // count
    return [_slice_along(cx, x, {1: (i * width, (i + 1) * width, 1)}) for i in range(count)]


def _split(cx: GraphBuilder, v: Value, count: int) -> list[Value]:
    """A [count*H] vector split into ``count`` [H] slices."""
    width = cx.shape(v)[0] // count
    return [_slice_along(cx, v, {0: (i * width, (i + 1) * width, 1)}) for i in range(count)]


@converter
class RNN(_Recurrent):
    """RNN: h = f(x W^T + h R^T + Wb + Rb); directions, activations with alpha/beta, clip,
    layout, sequence_lens, initial_h; outputs Y and Y_h."""

    default_activations = ("Tanh",)

    @classmethod
    def step(cls, cx: GraphBuilder, node: Node, xw: Value, state: list[Value], r_t: Value,
             inner_bias: Value | None, peepholes: Value | None, acts: list[Activation]
             ) -> list[Value]:
        total = cx.op("add", xw, cx.op("matmul", state[0], r_t))
        return [acts[0](cls.clip(cx, node, total))]


@converter
class GRU(_Recurrent):
    """GRU (gates z, r, h): directions, activations with alpha/beta, clip, layout,
    linear_before_reset, sequence_lens, initial_h; outputs Y and Y_h."""

    gates = 3
    default_activations = ("Sigmoid", "Tanh")

    @classmethod
    def folded_bias(cls, cx: GraphBuilder, node: Node, wb: Value, rb: Value
                    ) -> tuple[Value, Value | None]:
        """With ``linear_before_reset`` the reset gate multiplies ``h R_h^T + Rb_h``: that
        bias stays inside the step."""
        if not node.attr("linear_before_reset", 0):
            return cx.op("add", wb, rb), None
        (wz, wr, wh), (rz, rr, rh) = _split(cx, wb, 3), _split(cx, rb, 3)
        return cx.concat([cx.op("add", wz, rz), cx.op("add", wr, rr), wh], 0), rh

    @classmethod
    def step(cls, cx: GraphBuilder, node: Node, xw: Value, state: list[Value], r_t: Value,
             inner_bias: Value | None, peepholes: Value | None, acts: list[Activation]
             ) -> list[Value]:
        f, g = acts
        (h,) = state
        hidden = cx.shape(h)[1]
        xz, xr, xh = _gates(cx, xw, 3)
        if inner_bias is not None:  # linear_before_reset: one matmul for the three gates
            hz, hr, hh = _gates(cx, cx.op("matmul", h, r_t), 3)
        else:
            hz, hr = _gates(cx, cx.op("matmul", h, _slice_along(cx, r_t,
                                                                  {1: (0, 2 * hidden, 1)})), 2)
        z = f(cls.clip(cx, node, cx.op("add", xz, hz)))
        reset = f(cls.clip(cx, node, cx.op("add", xr, hr)))
        if inner_bias is not None:
            candidate = cx.op("multiply", reset, cx.op("add", hh, inner_bias))
        else:
            r_h = _slice_along(cx, r_t, {1: (2 * hidden, 3 * hidden, 1)})
            candidate = cx.op("matmul", cx.op("multiply", reset, h), r_h)
        n = g(cls.clip(cx, node, cx.op("add", xh, candidate)))
        # (1 - z) n + z h = n + z (h - n)
        return [cx.op("add", n, cx.op("multiply", z, cx.op("subtract", h, n)))]


@converter
class LSTM(_Recurrent):
    """LSTM (gates i, o, f, c): directions, activations with alpha/beta, clip, layout,
    input_forget, peepholes P, sequence_lens, initial_h and initial_c; outputs Y, Y_h, Y_c."""

    gates = 4
    default_activations = ("Sigmoid", "Tanh", "Tanh")
    state_outputs = 3

    @classmethod
    def step(cls, cx: GraphBuilder, node: Node, xw: Value, state: list[Value], r_t: Value,
             inner_bias: Value | None, peepholes: Value | None, acts: list[Activation]
             ) -> list[Value]:
        f, g, h_act = acts
        h, c = state
        gi, go, gf, gc = _gates(cx, cx.op("add", xw, cx.op("matmul", h, r_t)), 4)
        pi = po = pf = None
        if peepholes is not None:
            pi, po, pf = _split(cx, peepholes, 3)
            gi = cx.op("add", gi, cx.op("multiply", c, pi))
            gf = cx.op("add", gf, cx.op("multiply", c, pf))
        i = f(cls.clip(cx, node, gi))
        if node.attr("input_forget", 0):
            forget = cx.op("subtract", cx.scalar(1, i), i)
        else:
            forget = f(cls.clip(cx, node, gf))
        c_new = cx.op("add", cx.op("multiply", forget, c),
                      cx.op("multiply", i, g(cls.clip(cx, node, gc))))
        if po is not None:
            go = cx.op("add", go, cx.op("multiply", c_new, po))
        o = f(cls.clip(cx, node, go))
        return [cx.op("multiply", o, h_act(c_new)), c_new]
