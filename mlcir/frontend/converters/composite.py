"""Ops the graph dialect has no op for, composed of the ones it has.

ReduceL1, ReduceL2, ReduceSumSquare and ReduceLogSumExp are a map and a ``sum`` (the last
shifted by its maximum so ``exp`` cannot overflow); LpNormalization divides by such a norm;
MeanVarianceNormalization subtracts a ``mean`` and divides by the root of another; Hardmax is
ArgMax's first maximum compared with the positions; LRN sums squares over a channel window
with an average pool over a ``[C, H*W]`` view; RMSNormalization (opset 23) divides by the
root mean square. Each is checked against onnxruntime (tests/test_frontend_composite.py).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..builder import GraphBuilder
from ..converter import Converter, Node, Value, converter, require
from .reduce import _Reduce
from .selection import _axis_size, _positions


def _float_input(cx: GraphBuilder, x: Value, op: str) -> None:
    if cx.dtype(x).kind != "f":
        raise cx.error(f"{op} of {cx.dtype(x)} values is not supported (floating point only)")


class _ComposedReduce(_Reduce):
    """A reduction over ``axes``: :meth:`compose` builds it from the reduced axes."""

    @classmethod
    def reduce(cls, cx: GraphBuilder, node: Node, x: Value, axes: Sequence[int] | None) -> Value:
        rank = cx.rank(x)
        if not axes:
            if node.attr("noop_with_empty_axes", 0):
                return cls.compose(cx, x, [], int(node.attr("keepdims", 1)))
            axes = list(range(rank))
        return cls.compose(cx, x, cx.axes(axes, rank), int(node.attr("keepdims", 1)))

    @classmethod
    def compose(cls, cx: GraphBuilder, x: Value, axes: list[int], keepdims: int) -> Value:
        raise NotImplementedError


def _sum(cx: GraphBuilder, x: Value, axes: list[int], keepdims: int) -> Value:
    return cx.op("sum", x, axes=axes, keepdims=keepdims) if axes else x


@converter
class ReduceL1(_ComposedReduce):
    """ReduceL1 -> sum(abs(x))."""

    graph_ops = ("abs", "sum")

    @classmethod
    def compose(cls, cx: GraphBuilder, x: Value, axes: list[int], keepdims: int) -> Value:
        return _sum(cx, cx.op("abs", x), axes, keepdims)


@converter
class ReduceSumSquare(_ComposedReduce):
    """ReduceSumSquare -> sum(x * x)."""

    graph_ops = ("multiply", "sum")

    @classmethod
    def compose(cls, cx: GraphBuilder, x: Value, axes: list[int], keepdims: int) -> Value:
        return _sum(cx, cx.op("multiply", x, x), axes, keepdims)


@converter
class ReduceL2(_ComposedReduce):
    """ReduceL2 -> sqrt(sum(x * x))."""

    graph_ops = ("multiply", "sum", "sqrt")

    @classmethod
    def compose(cls, cx: GraphBuilder, x: Value, axes: list[int], keepdims: int) -> Value:
        _float_input(cx, x, "ReduceL2")
        return cx.op("sqrt", _sum(cx, cx.op("multiply", x, x), axes, keepdims))


@converter
class ReduceLogSumExp(_ComposedReduce):
    """ReduceLogSumExp -> log(sum(exp(x - m))) + m with m the maximum over the axes."""

    graph_ops = ("max", "subtract", "exp", "sum", "log", "add")

    @classmethod
    def compose(cls, cx: GraphBuilder, x: Value, axes: list[int], keepdims: int) -> Value:
        _float_input(cx, x, "ReduceLogSumExp")
        if not axes:
            return x
        top = cx.op("max", x, axes=axes, keepdims=1)
        total = _sum(cx, cx.op("exp", cx.op("subtract", x, top)), axes, keepdims)
        shift = top if keepdims else cx.op("max", x, axes=axes, keepdims=0)
        return cx.op("add", cx.op("log", total), shift)


@converter
class LpNormalization(Converter):
    """LpNormalization(axis, p in {1, 2}) -> x / norm_p(x) along the axis."""

    graph_ops = ("abs", "multiply", "sum", "sqrt", "divide")

    @classmethod
    def _impl_v1(cls, cx: GraphBuilder, node: Node, inputs: list[Value]) -> Value:
        x = inputs[0]
        _float_input(cx, x, "LpNormalization")
        axis = cx.axis(node.attr("axis", -1), cx.rank(x))
        p = int(node.attr("p", 2))
        if p == 1:
            norm = _sum(cx, cx.op("abs", x), [axis], 1)
        elif p == 2:
            norm = cx.op("sqrt", _sum(cx, cx.op("multiply", x, x), [axis], 1))
        else:
            raise cx.error(f"p={p} (ONNX allows 1 and 2)")
        return cx.op("divide", x, norm)


@converter
class MeanVarianceNormalization(Converter):
    """MeanVarianceNormalization(axes=[0, 2, 3]) -> (x - mean) / sqrt(mean((x - mean)^2)): no
    epsilon, as the ONNX function and onnxruntime (a constant group, such as one element, is
    0 / 0 = NaN); the variance of the centred values, which the function's E[x^2] - E[x]^2
    equals but for rounding."""

    graph_ops = ("mean", "subtract", "multiply", "sqrt", "divide")

    @classmethod
    def _impl_v13(cls, cx: GraphBuilder, node: Node, inputs: list[Value]) -> Value:
        x = inputs[0]
        _float_input(cx, x, "MeanVarianceNormalization")
        axes = cx.axes(node.attr("axes", [0, 2, 3]), cx.rank(x))
        centred = cx.op("subtract", x, cx.op("mean", x, axes=axes, keepdims=1))
        variance = cx.op("mean", cx.op("multiply", centred, centred), axes=axes, keepdims=1)
        return cx.op("divide", centred, cx.op("sqrt", variance))


@converter
class Hardmax(Converter):
    """Hardmax(axis) -> 1 at the first maximum along the axis, 0 elsewhere."""

    graph_ops = ("max", "equal", "where", "min", "astype")

    @classmethod
    def _impl_v13(cls, cx: GraphBuilder, node: Node, inputs: list[Value]) -> Value:
        x = inputs[0]
        rank = cx.rank(x)
        axis = cx.axis(node.attr("axis", -1), rank)
        n = _axis_size(cx, x, axis, "Hardmax")
        positions = _positions(n, axis, rank)
        hit = cx.op("equal", x, cx.op("max", x, axes=[axis], keepdims=1))
        first = cx.op("min", cx.op("where", hit, positions, np.array(n, np.int64)),
                      axes=[axis], keepdims=1)
        return cx.astype(cx.op("equal", positions, first), cx.dtype(x))


@converter
class LRN(Converter):
    """LRN(size, alpha, beta, bias) over NCHW channels: x / (bias + alpha / size *
    square_sum)^beta, the window sum an average pool (padding counted) times its size."""

    graph_ops = ("multiply", "reshape", "avg_pool2d", "add", "power", "divide")

    @classmethod
    def _impl_v13(cls, cx: GraphBuilder, node: Node, inputs: list[Value]) -> Value:
        x = inputs[0]
        _float_input(cx, x, "LRN")
        shape = cx.static_shape(x, "LRN")
        if len(shape) < 3:
            raise cx.error(f"LRN needs an input of rank >= 3 (N, C, ...), got rank {len(shape)}")
        size = int(node.attr("size"))
        alpha, beta = float(node.attr("alpha", 1e-4)), float(node.attr("beta", 0.75))
        bias = float(node.attr("bias", 1.0))
        n, c = shape[0], shape[1]
        rest = int(np.prod(shape[2:]))
        squares = cx.reshape(cx.op("multiply", x, x), [n, 1, c, rest])
        before, after = (size - 1) // 2, size - 1 - (size - 1) // 2
        window = cx.op("avg_pool2d", squares, kernel=[size, 1], strides=[1, 1],
                       padding=[before, 0, after, 0], dilation=[1, 1], ceil_mode=0,
                       count_include_pad=1)
        square_sum = cx.reshape(window, list(shape))  # the window's mean: alpha / size folded
        scale = cx.op("add", cx.op("multiply", square_sum, cx.scalar(alpha, x)),
                      cx.scalar(bias, x))
        return cx.op("divide", x, cx.op("power", scale, cx.scalar(beta, x)))


@converter
class RMSNormalization(Converter):
    """RMSNormalization(axis, epsilon) (opset 23) -> x / sqrt(mean(x^2 over [axis, rank)) +
    epsilon) * scale."""

    graph_ops = ("multiply", "mean", "add", "rsqrt")

    @classmethod
    def _impl_v23(cls, cx: GraphBuilder, node: Node, inputs: list[Value]) -> Value:
        x, scale = inputs[0], inputs[1]
        _float_input(cx, x, "RMSNormalization")
        if node.attr("stash_type", 1) != 1:
            raise cx.error("stash_type other than 1 (float32) is not supported")
        rank = cx.rank(x)
        axis = cx.axis(node.attr("axis", -1), rank)
        mean_square = cx.op("mean", cx.op("multiply", x, x), axes=list(range(axis, rank)),
                            keepdims=1)
        eps = cx.scalar(float(node.attr("epsilon", 1e-5)), x)
        return cx.op("multiply", cx.op("multiply", x, cx.op("rsqrt", cx.op("add", mean_square,
                                                                             eps))), scale)


def _tileable(rows: int) -> int:
    """The least count of at least ``rows`` that a register tile of 4 to 8 divides (or
    ``rows`` itself when small)."""
    if rows <= 8:
        return rows
    return next(n for n in range(rows, rows + 8) if any(n % d == 0 for d in range(4, 9)))


@converter
class ConvTranspose(Converter):
    """ConvTranspose (strides, pads, output_padding, output_shape, auto_pad, dilations,
    group), 1-D or 2-D -> the direct convolution it is the gradient of: the input with
    ``stride - 1`` zeros after every element (a reshape, a pad and a reshape), padded by
    ``dilation * (k - 1) - pad``, convolved at stride 1 with the filter flipped and each
    group's input and output channels swapped; negative pads crop the result instead."""

    graph_ops = ("reshape", "pad", "conv2d", "permute_dims", "take", "strided_slice", "add")

    @classmethod
    def _impl_v11(cls, cx: GraphBuilder, node: Node, inputs: list[Value]) -> Value:
        x, w = inputs[0], inputs[1]
        bias = inputs[2] if len(inputs) > 2 else None
        shape = list(cx.static_shape(x, "ConvTranspose"))
        w_shape = list(cx.static_shape(w, "ConvTranspose's weight"))
        spatial = len(shape) - 2
        if spatial not in (1, 2):
            raise cx.error(f"ConvTranspose of rank {len(shape)} (1-D and 2-D are supported)")
        if spatial == 1:  # as 2-D with a height of 1
            x = cx.reshape(x, shape[:2] + [1] + shape[2:])
            w = cx.reshape(w, w_shape[:2] + [1] + w_shape[2:])
            shape, w_shape = shape[:2] + [1] + shape[2:], w_shape[:2] + [1] + w_shape[2:]
        lift = (lambda v, one: [one] + list(v)) if spatial == 1 else (lambda v, _one: list(v))
        kernel = w_shape[2:]
        strides = lift(node.attr("strides", [1] * spatial), 1)
        dilations = lift(node.attr("dilations", [1] * spatial), 1)
        extra = lift(node.attr("output_padding", [0] * spatial), 0)
        groups = int(node.attr("group", 1))
        begin, end = cls._pads(node, shape[2:], kernel, strides, dilations, extra, spatial)
        n, c_in, h, wd = shape
        if c_in != w_shape[0] or c_in % groups:
            raise cx.error(f"the weight's shape {w_shape} does not fit {c_in} input channels "
                           f"in {groups} groups")
        c_out = w_shape[1] * groups
        sh, sw = strides
        out = [s * (i - 1) + e + (k - 1) * d + 1 - b - f for s, i, e, k, d, b, f in
               zip(strides, shape[2:], extra, kernel, dilations, begin, end)]
        if isinstance(w, np.ndarray) and (sh > 1 or sw > 1) and dilations == [1, 1]:
            y = cls._phases(cx, x, w, groups, strides, begin, out)
            if bias is not None:
                y = cx.op("add", y, cx.reshape(bias, [1, c_out, 1, 1]))
            return cx.reshape(y, [n, c_out, out[1]]) if spatial == 1 else y
        # Zeros between the elements: [N, C, H, 1, W, 1] padded to [N, C, H, s, W, s].
        if sh > 1 or sw > 1:
            x = cx.reshape(x, [n, c_in, h, 1, wd, 1])
            zeros = np.array([0] * 6 + [0, 0, 0, sh - 1, 0, sw - 1], np.int64)
            x = cx.op("pad", x, zeros, cx.scalar(0, x), mode="constant")
            x = cx.reshape(x, [n, c_in, h * sh, wd * sw])
        # The inserted zeros after the last element stand for (s - 1) of the end padding.
        pad_begin = [d * (k - 1) - p for d, k, p in zip(dilations, kernel, begin)]
        pad_end = [d * (k - 1) - p + e - (s - 1)
                   for d, k, p, e, s in zip(dilations, kernel, end, extra, strides)]
        filt = cls._flipped_filter(cx, w, groups, w_shape)
        y = cx.op("conv2d", x, filt, strides=[1, 1],
                  padding=[max(p, 0) for p in pad_begin] + [max(p, 0) for p in pad_end],
                  dilation=dilations, groups=groups)
        crop = {2 + a: (max(-pad_begin[a], 0), max(-pad_begin[a], 0) + out[a], 1)
                for a in range(2) if pad_begin[a] < 0 or pad_end[a] < 0}
        if crop:
            from .tensor import _slice_along

            y = _slice_along(cx, y, crop)
        if bias is not None:
            y = cx.op("add", y, cx.reshape(bias, [1, c_out, 1, 1]))
        if spatial == 1:
            y = cx.reshape(y, [n, c_out, out[1]])
        return y

    @staticmethod
    def _phases(cx: GraphBuilder, x: Value, w: np.ndarray, groups: int, strides: list[int],
                begin: list[int], out: list[int]) -> Value:
        """The strided-phase form of a stride > 1 transposed convolution with a constant
        filter (docs/frontend.md#convtranspose): output row ``t - pad`` (``t = q*s + r``) is
        ``sum_j x[q - j] * w[r + j*s]``, a stride-1 convolution of the input itself with the
        phase's taps. All ``s*s`` phases are one ``conv2d`` whose output channels are
        (group, phase, channel), the taps of each phase padded with zeros to ``ceil(k / s)``;
        a reshape and a transpose interleave the phases, a slice crops the padding. No
        multiply-add reads an inserted zero, as the zero-insertion form's ``s*s - 1`` in
        ``s*s`` do."""
        n, c_in, h, wd = cx.shape(x)
        _, per_group, kh, kw = w.shape
        (sh, sw), (bh, bw) = strides, begin
        lh, lw = -(-kh // sh), -(-kw // sw)  # taps per phase
        # [C_in, C_out/g, kh, kw] -> per group, phase and output channel its flipped taps.
        taps = np.zeros((c_in, per_group, lh * sh, lw * sw), w.dtype)
        taps[:, :, :kh, :kw] = w
        taps = taps.reshape(groups, c_in // groups, per_group, lh, sh, lw, sw)
        taps = taps[:, :, :, ::-1, :, ::-1, :]  # j reversed: a correlation
        filt = taps.transpose(0, 4, 6, 2, 1, 3, 5).reshape(
            groups * sh * sw * per_group, c_in // groups, lh, lw)
        # Rows q of every phase up to the last output row: pad the end to reach it.
        rows = [(o - 1 + b) // s + 1 for o, b, s in zip(out, begin, strides)]
        end = [max(taps_ - 1, r - size) for taps_, r, size in zip((lh, lw), rows, (h, wd))]
        # A few more rows where that gives the convolution a width its register tile divides
        # (a prime width, 17, left its window tiles partial and unvectorized); cropped below.
        end = [_tileable(size + e) - size for e, size in zip(end, (h, wd))]
        y = cx.op("conv2d", x, np.ascontiguousarray(filt), strides=[1, 1],
                  padding=[lh - 1, lw - 1] + end, dilation=[1, 1], groups=groups)
        qh, qw = h + end[0], wd + end[1]
        y = cx.reshape(y, [n, groups, sh, sw, per_group, qh, qw])
        y = cx.op("permute_dims", y, axes=[0, 1, 4, 5, 2, 6, 3])
        y = cx.reshape(y, [n, groups * per_group, qh * sh, qw * sw])
        from .tensor import _slice_along

        return _slice_along(cx, y, {2: (bh, bh + out[0], 1), 3: (bw, bw + out[1], 1)})

    @staticmethod
    def _pads(node: Node, sizes: list[int], kernel: list[int], strides: list[int],
              dilations: list[int], extra: list[int], spatial: int
              ) -> tuple[list[int], list[int]]:
        """(begin, end) pads of the lifted 2-D window: from ``pads``, or from
        ``output_shape`` / ``auto_pad`` (the ONNX formulas)."""
        lifted = 2 - spatial  # leading size-1 dims added for a 1-D op
        auto_pad = node.attr("auto_pad", "NOTSET")
        target = node.attr("output_shape")
        if target is not None:
            target = [1] * lifted + list(target)[-spatial:]
        elif auto_pad in ("SAME_UPPER", "SAME_LOWER"):
            target = [i * s for i, s in zip(sizes, strides)]
        if target is None:
            pads = list(node.attr("pads", [0] * 2 * spatial)) if auto_pad != "VALID" \
                else [0] * 2 * spatial
            return [0] * lifted + pads[:spatial], [0] * lifted + pads[spatial:]
        begin, end = [], []
        for i, s, e, k, d, o in zip(sizes, strides, extra, kernel, dilations, target):
            total = s * (i - 1) + e + (k - 1) * d + 1 - o
            small, large = total // 2, total - total // 2
            begin.append(small if auto_pad == "SAME_UPPER" else large)
            end.append(large if auto_pad == "SAME_UPPER" else small)
        return begin, end

    @staticmethod
    def _flipped_filter(cx: GraphBuilder, w: Value, groups: int, shape: list[int]) -> Value:
        """``[C_in, C_out/g, kh, kw]`` -> ``[C_out, C_in/g, kh, kw]``, each group's channels
        swapped and the window reversed (folded at import for constant weights)."""
        c_in, per_group, kh, kw = shape
        w = cx.reshape(w, [groups, c_in // groups, per_group, kh, kw])
        w = cx.op("permute_dims", w, axes=[0, 2, 1, 3, 4])
        w = cx.reshape(w, [groups * per_group, c_in // groups, kh, kw])
        w = cx.op("take", w, np.arange(kh - 1, -1, -1, dtype=np.int64), axis=2)
        return cx.op("take", w, np.arange(kw - 1, -1, -1, dtype=np.int64), axis=3)


@converter
class OneHot(Converter):
    """OneHot(indices, depth, values=[off, on], axis) with run-time indices and a constant
    depth -> ``where(indices == 0..depth-1, on, off)``, negative indices counted from the
    end; out-of-range ones give a row of ``off``, as onnxruntime does."""

    graph_ops = ("astype", "less", "add", "where", "reshape", "equal", "take")
    constants = {1: "depth"}

    @classmethod
    def _impl_v11(cls, cx: GraphBuilder, node: Node, inputs: list[Value]) -> Value:
        indices, depth, values = inputs
        depth = int(np.asarray(depth).reshape(-1)[0])
        if depth < 1:
            raise cx.error(f"depth {depth} must be positive")
        rank = cx.rank(indices)
        axis = cx.axis(node.attr("axis", -1), rank + 1)
        index = cx.astype(indices, np.dtype(np.int64))
        index = cx.op("where", cx.op("less", index, np.array(0, np.int64)),
                      cx.op("add", index, np.array(depth, np.int64)), index)
        shape = list(cx.static_shape(index, "OneHot"))
        index = cx.reshape(index, shape[:axis] + [1] + shape[axis:])
        hit = cx.op("equal", index, _positions(depth, axis, rank + 1))
        off, on = (cx.op("take", values, np.array(i, np.int64), axis=0) for i in (0, 1))
        return cx.op("where", hit, on, off)


def _heads(cx: GraphBuilder, x: Value, heads: int) -> Value:
    """``[B, S, heads * D]`` -> ``[B, heads, S, D]``."""
    b, s, hidden = cx.static_shape(x, "a 3-D attention input")
    if heads < 1 or hidden % heads:
        raise cx.error(f"a hidden size of {hidden} does not split into {heads} heads")
    return cx.op("permute_dims", cx.reshape(x, [b, s, heads, hidden // heads]),
                 axes=[0, 2, 1, 3])


@converter
class Attention(Converter):
    """Attention (opset 23): softmax(Q K^T * scale [softcapped] + bias) V with the bias from
    ``attn_mask`` (boolean: -inf where False; float: added; shorter than the keys: padded
    with -inf) and ``is_causal`` (bottom-right aligned past a ``past_key`` cache); 3-D inputs
    split into ``q_num_heads`` / ``kv_num_heads``; grouped-query heads share their key and
    value head; a fully masked row gives zeros (the ONNX reference's rule). Outputs Y and
    the present key and value."""

    graph_ops = ("permute_dims", "reshape", "take", "matmul", "multiply", "divide", "tanh",
                 "add", "where", "softmax", "max", "equal")

    @classmethod
    def check(cls, node: Node) -> list[str]:
        problems: list[str] = []
        require(len(node.outputs) < 4 or not node.outputs[3],
                "the qk_matmul_output output is not supported", problems)
        require(len(node.inputs) < 7 or not node.inputs[6],
                "the nonpad_kv_seqlen input is not supported", problems)
        return problems

    @classmethod
    def _impl_v23(cls, cx: GraphBuilder, node: Node, inputs: list[Value]) -> list[Value]:
        q, k, v = inputs[:3]
        mask, past_k, past_v = (inputs[i] if len(inputs) > i else None for i in (3, 4, 5))
        three_d = cx.rank(q) == 3
        if three_d:
            q = _heads(cx, q, int(node.attr("q_num_heads", 0)))
            k = _heads(cx, k, int(node.attr("kv_num_heads", 0)))
            v = _heads(cx, v, int(node.attr("kv_num_heads", 0)))
        past = 0
        if past_k is not None:
            past = cx.static_shape(past_k, "past_key")[2]
            k, v = cx.concat([past_k, k], 2), cx.concat([past_v, v], 2)
        present_k, present_v = k, v
        batch, q_heads, q_len, depth = cx.static_shape(q, "Attention's Q")
        kv_heads, kv_len = cx.static_shape(k, "Attention's K")[1:3]
        if q_heads != kv_heads:
            if q_heads % kv_heads:
                raise cx.error(f"{q_heads} query heads do not share {kv_heads} key heads")
            share = np.arange(q_heads, dtype=np.int64) // (q_heads // kv_heads)
            k, v = (cx.op("take", t, share, axis=1) for t in (k, v))
        scale = node.attr("scale")
        scale = 1.0 / np.sqrt(depth) if scale is None else float(scale)
        scores = cx.op("multiply", cx.op("matmul", q, cx.op("permute_dims", k,
                                                               axes=[0, 1, 3, 2])),
                       cx.scalar(scale, q))
        softcap = float(node.attr("softcap", 0.0))
        if softcap > 0:
            capped = cx.op("tanh", cx.op("divide", scores, cx.scalar(softcap, q)))
            scores = cx.op("multiply", capped, cx.scalar(softcap, q))
        bias = cls._bias(cx, node, mask, q, q_len, kv_len, past)
        if bias is not None:
            scores = cx.op("add", scores, bias)
        weights = cx.op("softmax", scores, axis=3)
        if bias is not None:
            top = cx.op("max", bias, axes=[cx.rank(bias) - 1], keepdims=1)
            masked = cx.op("equal", top, cx.scalar(-np.inf, q))
            if not (isinstance(masked, np.ndarray) and not masked.any()):
                weights = cx.op("where", masked, cx.scalar(0, q), weights)
        y = cx.op("matmul", weights, v)
        if three_d:
            y = cx.reshape(cx.op("permute_dims", y, axes=[0, 2, 1, 3]),
                           [batch, q_len, q_heads * cx.shape(v)[3]])
        return [y, present_k, present_v][:max(1, len(node.outputs))]

    @staticmethod
    def _bias(cx: GraphBuilder, node: Node, mask: Value | None, q: Value, q_len: int,
              kv_len: int, past: int) -> Value | None:
        """The additive bias of the scores (0 or -inf, or the float mask), or None."""
        dtype = cx.dtype(q)
        bias = None
        if mask is not None:
            if cx.dtype(mask) == np.bool_:
                mask = cx.op("where", mask, np.array(0, dtype), np.array(-np.inf, dtype))
            short = kv_len - cx.static_shape(mask, "attn_mask")[-1]
            if short > 0:
                fill = np.full(list(cx.shape(mask)[:-1]) + [short], -np.inf, dtype)
                mask = cx.concat([mask, fill], cx.rank(mask) - 1)
            bias = mask
        if node.attr("is_causal", 0):
            rows = np.arange(q_len).reshape(-1, 1)
            allowed = np.arange(kv_len).reshape(1, -1) <= rows + past
            causal = np.where(allowed, 0, -np.inf).astype(dtype)
            bias = causal if bias is None else cx.op("add", bias, causal)
        return bias


@converter
class RotaryEmbedding(Converter):
    """RotaryEmbedding (opset 23): x rotated by the cos/sin caches at ``position_ids`` (or
    the first positions of a cache already per position), halves or ``interleaved`` pairs,
    the first ``rotary_embedding_dim`` of each head (the rest passed through); 3-D inputs
    split into ``num_heads``."""

    graph_ops = ("permute_dims", "reshape", "take", "multiply", "subtract", "add",
                 "strided_slice")

    @classmethod
    def _impl_v23(cls, cx: GraphBuilder, node: Node, inputs: list[Value]) -> Value:
        from .tensor import _slice_along

        x, cos, sin = inputs[:3]
        positions = inputs[3] if len(inputs) > 3 else None
        shape = list(cx.static_shape(x, "RotaryEmbedding"))
        four_d = len(shape) == 4
        if four_d:  # [B, H, S, D] -> [B, S, H, D]
            x = cx.op("permute_dims", x, axes=[0, 2, 1, 3])
        else:
            heads = int(node.attr("num_heads", 0))
            if heads < 1 or shape[2] % heads:
                raise cx.error(f"a hidden size of {shape[2]} needs num_heads dividing it")
            x = cx.reshape(x, [shape[0], shape[1], heads, shape[2] // heads])
        b, s, h, d = cx.shape(x)
        rotated = int(node.attr("rotary_embedding_dim", 0)) or d
        half = rotated // 2
        if positions is not None:  # caches [max_positions, half] read at [B, S]
            cos, sin = (cx.op("take", t, positions, axis=0) for t in (cos, sin))
        cos, sin = (cx.reshape(_slice_along(cx, t, {cx.rank(t) - 1: (0, half, 1)}),
                               [b, s, 1, half]) for t in (cos, sin))
        if node.attr("interleaved", 0):
            pairs = cx.reshape(_slice_along(cx, x, {3: (0, rotated, 1)}), [b, s, h, half, 2])
            first, second = (cx.reshape(_slice_along(cx, pairs, {4: (i, i + 1, 1)}),
                                        [b, s, h, half]) for i in (0, 1))
        else:
            first = _slice_along(cx, x, {3: (0, half, 1)})
            second = _slice_along(cx, x, {3: (half, rotated, 1)})
        new_first = cx.op("subtract", cx.op("multiply", first, cos),
                          cx.op("multiply", second, sin))
        new_second = cx.op("add", cx.op("multiply", first, sin), cx.op("multiply", second, cos))
        if node.attr("interleaved", 0):
            parts = [cx.reshape(t, [b, s, h, half, 1]) for t in (new_first, new_second)]
            out = cx.reshape(cx.concat(parts, 4), [b, s, h, rotated])
        else:
            out = cx.concat([new_first, new_second], 3)
        if rotated < d:
            out = cx.concat([out, _slice_along(cx, x, {3: (rotated, d, 1)})], 3)
        if four_d:
            return cx.op("permute_dims", out, axes=[0, 2, 1, 3])
        return cx.reshape(out, shape)
