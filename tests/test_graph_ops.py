"""The nn, reduction and shape ops of the graph dialect (docs/graph-ops.md).

Each op is built with its builder in a graph function, compiled with ``mlcir.build`` and run on
fixed-seed inputs; the result is compared with (a) an independent numpy reference written here
(loops over windows and indices, float64 where it matters) and (b) the op's ``evaluate``, so
``evaluate`` (used by constant folding and as the reference elsewhere) is checked too. Bad
operands and attributes raise errors naming the op and the problem.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from mlir import ir
from mlir.dialects import func

import mlcir
from mlcir.dialects import graph
from mlcir.dialects.opdef import ShapeError
from mlcir.dialects.dtypes import mlir_element_type
from mlcir.testing.graph_kernels import build_graph_function

RNG = np.random.default_rng(0)


def normal(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


def ints(*shape: int, low: int = -5, high: int = 6, dtype=np.int32) -> np.ndarray:
    return RNG.integers(low, high, shape).astype(dtype)


def run(op: str, arrays: list[np.ndarray], attrs: dict) -> np.ndarray:
    module = build_graph_function(arrays, lambda g, *args: getattr(g, op)(*args, **attrs))
    return mlcir.build(module).main(*arrays)


def check(op: str, arrays: list[np.ndarray], attrs: dict, reference, rtol: float = 1e-5) -> None:
    """The compiled op against ``reference`` (independent numpy) and against ``evaluate``."""
    got = run(op, arrays, attrs)
    for name, want in (("reference", reference(*arrays)),
                       ("evaluate", graph.OPS[op].evaluate(*arrays, **attrs))):
        want = np.asarray(want)
        assert got.shape == want.shape, f"{name}: shape {got.shape} != {want.shape}"
        assert got.dtype == want.dtype, f"{name}: dtype {got.dtype} != {want.dtype}"
        scale = max(float(np.abs(want).max()), 1.0) if want.size else 1.0
        np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol * scale, err_msg=name)


# -- independent references ---------------------------------------------------------------------


def conv2d_reference(x, w, strides, padding, dilation, groups):
    """Sum over kernel taps of strided slices of the zero-padded input, group by group."""
    n, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    (sh, sw), (pt, pl, pb, pr), (dh, dw) = strides, padding, dilation
    xp = np.zeros((n, c, h + pt + pb, wd + pl + pr), np.float64)
    xp[:, :, pt:pt + h, pl:pl + wd] = x
    oh = (h + pt + pb - dh * (kh - 1) - 1) // sh + 1
    ow = (wd + pl + pr - dw * (kw - 1) - 1) // sw + 1
    out = np.zeros((n, o, oh, ow), np.float64)
    og = o // groups
    for g in range(groups):
        xs, ws = xp[:, g * cg:(g + 1) * cg], w[g * og:(g + 1) * og].astype(np.float64)
        for i in range(kh):
            for j in range(kw):
                patch = xs[:, :, i * dh:i * dh + sh * (oh - 1) + 1:sh,
                           j * dw:j * dw + sw * (ow - 1) + 1:sw]
                out[:, g * og:(g + 1) * og] += np.einsum("nchw,oc->nohw", patch, ws[:, :, i, j])
    return out.astype(x.dtype)


def pool_reference(x, kernel, strides, padding, dilation, ceil_mode, kind,
                   count_include_pad=0):
    """A loop over output positions; each window's taps listed by index (PyTorch's counting:
    taps inside the input, or inside input + explicit padding with count_include_pad)."""
    n, c, h, w = x.shape
    (kh, kw), (sh, sw), (pt, pl, pb, pr), (dh, dw) = kernel, strides, padding, dilation

    def out_size(size, k, s, lo, hi, d):
        span = size + lo + hi - (d * (k - 1) + 1)
        o = (math.ceil(span / s) if ceil_mode else span // s) + 1
        return o - 1 if ceil_mode and (o - 1) * s >= size + lo else o

    oh, ow = out_size(h, kh, sh, pt, pb, dh), out_size(w, kw, sw, pl, pr, dw)
    out = np.empty((n, c, oh, ow), x.dtype)
    for i in range(oh):
        for j in range(ow):
            taps = [(i * sh - pt + a * dh, j * sw - pl + b * dw)
                    for a in range(kh) for b in range(kw)]
            inside = [x[:, :, r, q] for r, q in taps if 0 <= r < h and 0 <= q < w]
            if kind == "max":
                out[:, :, i, j] = np.max(inside, axis=0)
                continue
            if count_include_pad:
                count = sum(-pt <= r < h + pb and -pl <= q < w + pr for r, q in taps)
            else:
                count = len(inside)
            total = np.sum(np.asarray(inside, np.float64), axis=0)
            if np.issubdtype(x.dtype, np.integer):
                out[:, :, i, j] = np.trunc(total / count)
            else:
                out[:, :, i, j] = total / count
    return out


def slice_reference(x, begin, end, strides):
    """The indices read along each axis, listed (end -1 with a negative stride: through 0)."""
    picks = []
    for n, b, e, s in zip(x.shape, begin, end, strides):
        picks.append(list(range(min(b, n), min(e, n), s)) if s > 0 else
                     list(range(min(b, n - 1), max(e, -1), s)))
    return x[np.ix_(*picks)]


# -- elementwise ops with attributes ------------------------------------------------------------


def test_leaky_relu():
    x = normal(4, 33)
    check("leaky_relu", [x], dict(alpha=0.2), lambda v: np.where(v > 0, v, np.float32(0.2) * v))


@pytest.mark.parametrize("low, high", [(-0.5, 0.75), (-math.inf, 0.0), (0.25, math.inf)])
def test_clip_float(low, high):
    x = normal(6, 17)
    check("clip", [x], dict(min=low, max=high),
          lambda v: np.array([[min(max(e, low), high) for e in row] for row in v], np.float32))


def test_clip_int_bounds_are_rounded_inward():
    x = ints(5, 9, low=-20, high=20)
    check("clip", [x], dict(min=-3.5, max=7.2), lambda v: np.minimum(np.maximum(v, -3), 7))


@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu(approximate):
    x = normal(3, 40) * 3

    def reference(v):
        d = v.astype(np.float64)
        if approximate == "none":
            cdf = np.array([0.5 * (1 + math.erf(e / math.sqrt(2))) for e in d.ravel()])
            return (d * cdf.reshape(d.shape)).astype(np.float32)
        return (0.5 * d * (1 + np.tanh(math.sqrt(2 / math.pi) * (d + 0.044715 * d ** 3)))
                ).astype(np.float32)

    check("gelu", [x], dict(approximate=approximate), reference)


@pytest.mark.parametrize("source, target", [
    (np.float32, "i64"), (np.float32, "i32"), (np.float32, "i8"), (np.int64, "f32"),
    (np.int32, "i64"), (np.int64, "i32"), (np.float32, "f64"), (np.float64, "f32"),
    (np.int32, "f64")])
def test_astype(source, target):
    if np.issubdtype(source, np.floating):
        x = (normal(4, 12) * 40).astype(source)  # fractions of both signs: truncation shows
    else:
        x = ints(4, 12, low=-1000, high=1000, dtype=source)
    numpy_target = {"i64": np.int64, "i32": np.int32, "i8": np.int8, "f32": np.float32,
                    "f64": np.float64}[target]

    def reference(v):
        if np.issubdtype(source, np.floating) and np.issubdtype(numpy_target, np.integer):
            return np.trunc(v).astype(numpy_target)  # toward zero, like ONNX Cast
        return v.astype(numpy_target)

    check("astype", [x], dict(dtype=target), reference)


def test_astype_to_and_from_bool_runs_with_bytes_for_booleans():
    """Boolean tensors are stored as bytes (mlcir-bool-storage): to i1 is ``!= 0`` (NaN is
    true), from i1 true is 1; numpy bool arrays go in and come out."""
    x = np.array([[0.0, -0.0, 2.5, np.nan], [-1e-30, 0.0, np.inf, 1.0]], np.float32)
    check("astype", [x], dict(dtype="i1"), lambda v: v.astype(np.bool_))
    flags = np.array([[True, False, True], [False, False, True]])
    for target, dtype in (("f32", np.float32), ("i64", np.int64), ("i8", np.int8)):
        check("astype", [flags], dict(dtype=target), lambda v, d=dtype: v.astype(d))


# -- reductions, softmax, layer_norm ------------------------------------------------------------


@pytest.mark.parametrize("op", ["sum", "mean", "max", "min"])
@pytest.mark.parametrize("axes, keepdims", [([1], 0), ([0, 2], 1), ([0, 1, 2], 0), ([2], 1),
                                            ([], 0)])
def test_float_reductions(op, axes, keepdims):
    x = normal(3, 5, 8)
    fn = {"sum": np.sum, "mean": np.mean, "max": np.max, "min": np.min}[op]

    def reference(v):
        return fn(v.astype(np.float64), axis=tuple(axes), keepdims=bool(keepdims)).astype(np.float32)

    check(op, [x], dict(axes=axes, keepdims=keepdims), reference)


@pytest.mark.parametrize("op", ["sum", "mean", "max", "min"])
def test_int_reductions(op):
    x = ints(4, 7, low=-50, high=50)

    def reference(v):
        if op == "mean":  # the sum divided with truncation toward zero
            return np.trunc(v.sum(axis=1) / 7).astype(np.int32)
        return {"sum": np.sum, "max": np.max, "min": np.min}[op](v, axis=1).astype(np.int32)

    check(op, [x], dict(axes=[1], keepdims=0), reference)


@pytest.mark.parametrize("axes, keepdims", [([1], 0), ([0, 2], 1)])
def test_prod_reduction(axes, keepdims):
    """The product (ReduceProd's op): identity 1, floats and wrapping integers."""
    x = normal(3, 5, 8)
    check("prod", [x], dict(axes=axes, keepdims=keepdims),
          lambda v: np.prod(v.astype(np.float64), axis=tuple(axes),
                            keepdims=bool(keepdims)).astype(np.float32))
    n = ints(4, 7, low=-5, high=5)
    check("prod", [n], dict(axes=axes[:1], keepdims=keepdims),
          lambda v: np.prod(v, axis=axes[0], keepdims=bool(keepdims)).astype(np.int32))


@pytest.mark.parametrize("axis", [0, 1, 2])
def test_softmax(axis):
    x = normal(4, 6, 10) * 5

    def reference(v):
        d = v.astype(np.float64)
        e = np.exp(d - d.max(axis=axis, keepdims=True))
        return (e / e.sum(axis=axis, keepdims=True)).astype(np.float32)

    check("softmax", [x], dict(axis=axis), reference)


@pytest.mark.parametrize("axis", [0, 2])
def test_log_softmax(axis):
    x = normal(4, 6, 10) * 30  # large enough that log(softmax(x)) underflows: it must not

    def reference(v):
        d = v.astype(np.float64)
        shifted = d - d.max(axis=axis, keepdims=True)
        return (shifted - np.log(np.exp(shifted).sum(axis=axis, keepdims=True))).astype(np.float32)

    check("log_softmax", [x], dict(axis=axis), reference)


@pytest.mark.parametrize("axes", [[2], [1, 2]])
def test_layer_norm(axes):
    x = normal(3, 4, 16) * 2 + 10  # a large mean: the two-pass variance stays accurate
    normalized = x.shape[axes[0]:]
    gamma, beta = normal(*normalized), normal(*normalized)

    def reference(v, g, b):
        d = v.astype(np.float64)
        mean = d.mean(axis=tuple(axes), keepdims=True)
        var = ((d - mean) ** 2).mean(axis=tuple(axes), keepdims=True)
        return ((d - mean) / np.sqrt(var + 1e-5) * g + b).astype(np.float32)

    check("layer_norm", [x, gamma, beta], dict(axes=axes, epsilon=1e-5), reference, rtol=2e-5)


@pytest.mark.parametrize("case", ["large-epsilon", "near-constant-rows"])
def test_layer_norm_adds_epsilon_to_the_variance(case):
    """Epsilon changes these results far beyond the tolerance: a lowering that dropped it, or
    added it elsewhere (to the standard deviation), fails. Rows of variance ~1 with epsilon 1
    scale by 1/sqrt(2) instead of 1; rows that vary by ~1e-4 (variance ~1e-8, far below epsilon
    1e-5) come out near 0 instead of at unit variance."""
    if case == "large-epsilon":
        x, epsilon = normal(4, 16), 1.0
    else:
        x, epsilon = 3.0 + normal(4, 16) * np.float32(1e-4), 1e-5
    gamma, beta = np.ones(16, np.float32), np.zeros(16, np.float32)

    def reference(v, _gamma, _beta):
        d = v.astype(np.float64)
        mean = d.mean(axis=1, keepdims=True)
        var = ((d - mean) ** 2).mean(axis=1, keepdims=True)
        return ((d - mean) / np.sqrt(var + epsilon)).astype(np.float32)

    without = ((x - x.mean(axis=1, keepdims=True)) / x.std(axis=1, keepdims=True))
    assert np.abs(reference(x, gamma, beta) - without).max() > 0.2  # epsilon matters here
    check("layer_norm", [x, gamma, beta], dict(axes=[1], epsilon=epsilon), reference,
          rtol=1e-3)


# -- convolution and pooling --------------------------------------------------------------------


CONV_CASES = {
    "plain": ((2, 3, 9, 9), (4, 3, 3, 3), dict(strides=[1, 1], padding=[0, 0, 0, 0],
                                                dilation=[1, 1], groups=1)),
    "strided_padded": ((1, 4, 10, 11), (6, 4, 3, 3), dict(strides=[2, 3], padding=[1, 2, 0, 1],
                                                          dilation=[1, 1], groups=1)),
    "dilated": ((1, 2, 12, 12), (3, 2, 3, 2), dict(strides=[1, 2], padding=[2, 2, 2, 2],
                                                   dilation=[2, 3], groups=1)),
    "grouped": ((2, 6, 8, 8), (9, 2, 3, 3), dict(strides=[1, 1], padding=[1, 1, 1, 1],
                                                 dilation=[1, 1], groups=3)),
    "depthwise": ((1, 8, 9, 9), (8, 1, 3, 3), dict(strides=[2, 2], padding=[1, 1, 1, 1],
                                                   dilation=[1, 1], groups=8)),
    "depthwise_multiplier": ((1, 4, 7, 7), (8, 1, 5, 5), dict(strides=[1, 1],
                                                              padding=[2, 2, 2, 2],
                                                              dilation=[1, 1], groups=4)),
    "pointwise": ((1, 16, 5, 5), (8, 16, 1, 1), dict(strides=[1, 1], padding=[0, 0, 0, 0],
                                                     dilation=[1, 1], groups=1)),
}


@pytest.mark.parametrize("case", sorted(CONV_CASES))
def test_conv2d(case):
    x_shape, w_shape, attrs = CONV_CASES[case]
    check("conv2d", [normal(*x_shape), normal(*w_shape)], attrs,
          lambda x, w: conv2d_reference(x, w, **attrs), rtol=1e-5)


def test_conv2d_int32():
    attrs = dict(strides=[1, 1], padding=[1, 1, 1, 1], dilation=[1, 1], groups=2)
    check("conv2d", [ints(1, 4, 6, 6), ints(4, 2, 3, 3)], attrs,
          lambda x, w: conv2d_reference(x, w, **attrs).astype(np.int32))


POOL_CASES = {
    "plain": dict(kernel=[2, 2], strides=[2, 2], padding=[0, 0, 0, 0], dilation=[1, 1],
                  ceil_mode=0),
    "padded_overlapping": dict(kernel=[3, 3], strides=[2, 2], padding=[1, 1, 1, 1],
                               dilation=[1, 1], ceil_mode=0),
    "ceil_mode": dict(kernel=[3, 3], strides=[2, 2], padding=[0, 0, 0, 0], dilation=[1, 1],
                      ceil_mode=1),
    "ceil_mode_padded_asymmetric": dict(kernel=[3, 2], strides=[2, 3], padding=[1, 0, 2, 1],
                                        dilation=[1, 1], ceil_mode=1),
    "dilated": dict(kernel=[2, 3], strides=[1, 2], padding=[1, 2, 1, 2], dilation=[2, 2],
                    ceil_mode=0),
}


@pytest.mark.parametrize("case", sorted(POOL_CASES))
def test_max_pool2d(case):
    attrs = POOL_CASES[case]
    check("max_pool2d", [normal(2, 3, 10, 11)], attrs,
          lambda x: pool_reference(x, **attrs, kind="max"))


@pytest.mark.parametrize("count_include_pad", [0, 1])
@pytest.mark.parametrize("case", sorted(POOL_CASES))
def test_avg_pool2d(case, count_include_pad):
    attrs = dict(POOL_CASES[case], count_include_pad=count_include_pad)
    check("avg_pool2d", [normal(2, 3, 10, 11)], attrs,
          lambda x: pool_reference(x, **attrs, kind="avg"))


def test_pools_int32():
    attrs = POOL_CASES["ceil_mode_padded_asymmetric"]
    x = ints(1, 2, 7, 8, low=-100, high=100)
    check("max_pool2d", [x], attrs, lambda v: pool_reference(v, **attrs, kind="max"))
    check("avg_pool2d", [x], dict(attrs, count_include_pad=0),
          lambda v: pool_reference(v, **attrs, kind="avg"))


# -- shape ops ----------------------------------------------------------------------------------


@pytest.mark.parametrize("source, target", [
    ((2, 3, 4), (6, 4)), ((6, 4), (2, 3, 2, 2)), ((2, 3, 4), (4, 6)), ((2, 3, 4), (24,)),
    ((2, 1, 3), (1, 6, 1)), ((1, 1), ()), ((), (1, 1, 1)), ((4, 6), (4, 6))])
def test_reshape(source, target):
    x = normal(*source)
    check("reshape", [x], dict(shape=list(target)),
          lambda v: np.array([e for e in v.flat], np.float32).reshape(target))


@pytest.mark.parametrize("source, shape, result", [
    ((2, 3, 8), (0, 0, 2, 4), (2, 3, 2, 4)), ((2, 3, 2, 4), (0, 0, -1), (2, 3, 8)),
    ((2, 3, 2, 1), (0, 0, 2), (2, 3, 2)), ((5, 6), (0, 2, -1), (5, 2, 3)),
    ((2, 3, 4), (1, -2, -3, 2, 2), (1, 2, 3, 2, 2)), ((1, 2, 3, 4), (-3, -4, -1), (2, 3, 4))])
def test_reshape_keeps_dims_of_x(source, shape, result):
    """0 keeps x's dim at the same position, -2 - j x's dim j."""
    x = normal(*source)
    check("reshape", [x], dict(shape=list(shape)), lambda v: v.reshape(result))


def test_reshape_keeps_dynamic_dims():
    """0s keep two dynamic dims in place (what an exporter's view(B, S, heads, d) becomes);
    -2 - j keeps them elsewhere (an unsqueeze in front), unit dims joining their groups."""
    module = mlcir.parse("""
      func.func @main(%x: tensor<?x?x8xf32>) -> (tensor<?x?x2x4xf32>, tensor<1x?x?x1x8xf32>) {
        %0 = "graph.reshape"(%x) {shape = array<i64: 0, 0, 2, 4>}
            : (tensor<?x?x8xf32>) -> tensor<?x?x2x4xf32>
        %1 = "graph.reshape"(%x) {shape = array<i64: 1, -2, -3, 1, 8>}
            : (tensor<?x?x8xf32>) -> tensor<1x?x?x1x8xf32>
        return %0, %1 : tensor<?x?x2x4xf32>, tensor<1x?x?x1x8xf32>
      }""")
    ex = mlcir.build(module)
    for n, s in ((1, 1), (3, 5)):
        x = normal(n, s, 8)
        split, unsqueezed = ex.main(x)
        np.testing.assert_array_equal(split, x.reshape(n, s, 2, 4))
        np.testing.assert_array_equal(unsqueezed, x.reshape(1, n, s, 1, 8))


def test_iota():
    check("iota", [normal(3, 5)], dict(axis=1), lambda _: np.arange(5, dtype=np.int64))
    check("iota", [ints(4, 2)], dict(axis=0), lambda _: np.arange(4, dtype=np.int64))


@pytest.mark.parametrize("source, target", [((3, 1), (2, 3, 5)), ((1,), (4, 2)),
                                            ((2, 1, 4), (2, 3, 4)), ((5,), (5,))])
def test_broadcast_to(source, target):
    x = normal(*source)
    check("broadcast_to", [x], dict(shape=list(target)),
          lambda v: v * np.ones(target, np.float32))


SLICES = [
    ([1, 0, 2], [4, 9, 8], [1, 2, 3]),       # positive strides: a strided view copied
    ([0, 0, 0], [99, 99, 99], [1, 1, 1]),    # ends past the axis are clamped
    ([3, 8, 2], [-1, 0, 8], [-1, -2, 3]),    # negative strides: a gather
    ([9, 20, 6], [0, -1, -1], [-2, -3, -1]),  # begins past the axis clamp to n - 1
]


@pytest.mark.parametrize("begin, end, strides", SLICES)
def test_strided_slice(begin, end, strides):
    x = normal(5, 9, 7)
    check("strided_slice", [x], dict(begin=begin, end=end, strides=strides),
          lambda v: slice_reference(v, begin, end, strides))


@pytest.mark.parametrize("index_dtype", [np.int64, np.int32])
@pytest.mark.parametrize("axis, index_shape", [(0, (2, 3)), (1, (4,)), (2, ()), (1, (2, 2))])
def test_take(axis, index_shape, index_dtype):
    x = normal(4, 5, 6)
    n = x.shape[axis]
    indices = RNG.integers(-n, n, index_shape).astype(index_dtype)  # negative ones included

    def reference(v, i):
        return v[(slice(None),) * axis + (np.asarray(i) % n,)]

    check("take", [x, indices], dict(axis=axis), reference)


def test_take_clamps_out_of_range_indices_instead_of_reading_outside():
    x = normal(4, 3)
    out = run("take", [x, np.array([7, -9], np.int64)], dict(axis=0))
    np.testing.assert_array_equal(out, x[[3, 0]])


@pytest.mark.usefixtures("ctx")
def test_concat_in_a_graph_function_and_in_a_fused_kernel():
    text = """
    func.func @main(%a: tensor<4x8xf32>, %b: tensor<4x24xf32>) -> (tensor<4x32xf32>, tensor<4x32xf32>) {
      %0 = "graph.exp"(%a) : (tensor<4x8xf32>) -> tensor<4x8xf32>
      %1 = tensor.concat dim(1) %0, %b : (tensor<4x8xf32>, tensor<4x24xf32>) -> tensor<4x32xf32>
      %2 = "graph.relu"(%1) : (tensor<4x32xf32>) -> tensor<4x32xf32>
      %3 = call @fused(%a, %b) : (tensor<4x8xf32>, tensor<4x24xf32>) -> tensor<4x32xf32>
      return %2, %3 : tensor<4x32xf32>, tensor<4x32xf32>
    }
    func.func private @fused(%a: tensor<4x8xf32>, %b: tensor<4x24xf32>) -> tensor<4x32xf32>
        attributes {graph.primitive} {
      %0 = "graph.exp"(%a) : (tensor<4x8xf32>) -> tensor<4x8xf32>
      %1 = tensor.concat dim(1) %0, %b : (tensor<4x8xf32>, tensor<4x24xf32>) -> tensor<4x32xf32>
      %2 = "graph.negative"(%1) : (tensor<4x32xf32>) -> tensor<4x32xf32>
      return %2 : tensor<4x32xf32>
    }"""
    a, b = normal(4, 8), normal(4, 24)
    joined = np.concatenate([np.exp(a), b], axis=1)
    host, fused = mlcir.build(mlcir.parse(text)).main(a, b)
    np.testing.assert_allclose(host, np.maximum(joined, 0), rtol=1e-6)
    np.testing.assert_allclose(fused, -joined, rtol=1e-6)


# -- symbolic dims ------------------------------------------------------------------------------


def _dynamic_function(arg_shapes, build):
    """A graph function whose arguments have ``None`` (dynamic) dims."""
    ctx = mlcir.make_context()
    with ctx, ir.Location.unknown():
        module = ir.Module.create()
        types = [ir.RankedTensorType.get([ir.ShapedType.get_dynamic_size() if d is None else d
                                          for d in shape], mlir_element_type(dtype))
                 for shape, dtype in arg_shapes]
        with ir.InsertionPoint(module.body):
            fn = func.FuncOp("main", ir.FunctionType.get(types, []))
            with ir.InsertionPoint(fn.add_entry_block()):
                result = build(graph, *fn.arguments)
                func.ReturnOp([result])
            fn.attributes["function_type"] = ir.TypeAttr.get(
                ir.FunctionType.get(types, [result.type]))
    return module


@pytest.mark.parametrize("name, arg_shapes, build, arrays", [
    ("conv2d_batch", [((None, 3, 8, 8), np.float32), ((4, 3, 3, 3), np.float32)],
     lambda g, x, w: g.conv2d(x, w, strides=[1, 1], padding=[1, 1, 1, 1], dilation=[1, 1],
                              groups=1),
     [normal(2, 3, 8, 8), normal(4, 3, 3, 3)]),
    ("grouped_conv2d_batch", [((None, 4, 6, 6), np.float32), ((4, 2, 3, 3), np.float32)],
     lambda g, x, w: g.conv2d(x, w, strides=[1, 1], padding=[0, 0, 0, 0], dilation=[1, 1],
                              groups=2),
     [normal(3, 4, 6, 6), normal(4, 2, 3, 3)]),
    ("max_pool2d_batch", [((None, 3, 8, 8), np.float32)],
     lambda g, x: g.max_pool2d(x, kernel=[2, 2], strides=[2, 2], padding=[1, 1, 1, 1],
                               dilation=[1, 1], ceil_mode=1),
     [normal(2, 3, 8, 8)]),
    ("mean", [((None, 6, None), np.float32)],
     lambda g, x: g.mean(x, axes=[1, 2], keepdims=1), [normal(3, 6, 5)]),
    ("softmax", [((None, 7), np.float32)], lambda g, x: g.softmax(x, axis=1), [normal(3, 7)]),
    ("layer_norm", [((None, 8), np.float32), ((8,), np.float32), ((8,), np.float32)],
     lambda g, x, s, b: g.layer_norm(x, s, b, axes=[1], epsilon=1e-5),
     [normal(5, 8), normal(8), normal(8)]),
    ("strided_slice", [((None, 9), np.float32)],
     lambda g, x: g.strided_slice(x, begin=[1, 8], end=[100, -1], strides=[2, -3]),
     [normal(6, 9)]),
    ("take", [((5, None), np.float32), ((None,), np.int64)],
     lambda g, x, i: g.take(x, i, axis=0), [normal(5, 3), np.array([4, -1, 0, 2], np.int64)]),
    ("reshape", [((None, 6), np.float32)], lambda g, x: g.reshape(x, shape=[3, 4]),
     [normal(2, 6)]),
])
def test_symbolic_dims_lower_where_the_rule_sizes_the_result(name, arg_shapes, build,  # noqa: ARG001 - name: the case id
                                                            arrays):
    module = _dynamic_function(arg_shapes, build)
    ex = mlcir.build(module)
    numpy_graph = type("G", (), {"__getattr__": lambda _self, op: lambda *a, **kw:
                                 graph.OPS[op].evaluate(*a, **kw)})()
    want = build(numpy_graph, *arrays)
    spec = ex["main"].signature.results[0]
    outputs = [np.empty(want.shape, want.dtype)] if None in spec.shape else []
    got = ex.main(*arrays, *outputs)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.usefixtures("ctx")
def test_dynamic_spatial_dims_are_refused_with_the_op_named():
    module = _dynamic_function(
        [((1, 3, None, 8), np.float32)],
        lambda g, x: g.max_pool2d(x, kernel=[2, 2], strides=[2, 2], padding=[0, 0, 0, 0],
                                  dilation=[1, 1], ceil_mode=0))
    with pytest.raises(mlcir.LoweringError, match=r"'graph.max_pool2d' needs static spatial "
                                                  r"dims \(H, W and the kernel's\), got "
                                                  r"tensor<1x3x\?x8xf32>"):
        mlcir.build(module)


# -- errors -------------------------------------------------------------------------------------


def _conv(**changes):
    attrs = dict(strides=[1, 1], padding=[0, 0, 0, 0], dilation=[1, 1], groups=1)
    attrs.update(changes)
    return attrs


def _pool(**changes):
    attrs = dict(kernel=[3, 3], strides=[1, 1], padding=[0, 0, 0, 0], dilation=[1, 1],
                 ceil_mode=0)
    attrs.update(changes)
    return attrs


BAD = [
    ("conv2d", [(1, 4, 8, 8), (8, 3, 3, 3)], _conv(),
     r"w \[8, 3, 3, 3\] expects 3 channels per group \(3 with groups=1\) but x \[1, 4, 8, 8\] has 4"),
    ("conv2d", [(1, 4, 8, 8), (6, 1, 3, 3)], _conv(groups=3), "x has 4 channels, not a multiple of groups=3"),
    ("conv2d", [(1, 4, 8, 8), (8, 4, 3, 3)], _conv(strides=[1]), r"strides must have 2 entries, got \[1\]"),
    ("conv2d", [(1, 4, 8, 8), (8, 4, 3, 3)], _conv(padding=[0, -1, 0, 0]), "padding must be >= 0"),
    ("conv2d", [(1, 4, 8, 8), (8, 4, 3, 3)], _conv(dilation=[0, 1]), "dilation must be positive"),
    ("conv2d", [(1, 4, 2, 8), (8, 4, 3, 3)], _conv(), "the window .* is larger than the padded input"),
    ("conv2d", [(4, 8, 8), (8, 4, 3, 3)], _conv(), "x must be NCHW and w OIHW"),
    ("max_pool2d", [(1, 4, 8, 8)], _pool(padding=[3, 0, 0, 0]), "padding .* must be smaller than the"),
    ("max_pool2d", [(1, 4, 8, 8)], _pool(ceil_mode=2), "ceil_mode must be 0 or 1, got 2"),
    ("avg_pool2d", [(1, 4, 8, 8)], dict(_pool(), count_include_pad=3), "count_include_pad must be 0 or 1"),
    ("sum", [(2, 3)], dict(axes=[2], keepdims=0), r"axis 2 is out of range for rank 2"),
    ("mean", [(2, 3)], dict(axes=[1, 0], keepdims=0), r"axes \[1, 0\] must be sorted and unique"),
    ("max", [(2, 3)], dict(axes=[0], keepdims=5), "keepdims must be 0 or 1, got 5"),
    ("softmax", [(2, 3)], dict(axis=2), "axis 2 is out of range for rank 2"),
    ("layer_norm", [(2, 3, 4), (4,), (4,)], dict(axes=[1], epsilon=1e-5), r"axes \[1\] must be the trailing axes"),
    ("layer_norm", [(2, 3, 4), (3, 4), (4,)], dict(axes=[2], epsilon=1e-5), r"gamma has shape \[3, 4\] but the normalized dims"),
    ("reshape", [(2, 3)], dict(shape=[4, 2]), r"cannot reshape \[2, 3\] \(6 elements\) to \[4, 2\]"),
    ("reshape", [(2, 3)], dict(shape=[-1, -1]), r"shape \[-1, -1\] must be the full result shape"),
    ("broadcast_to", [(2, 3)], dict(shape=[4, 3]), r"cannot broadcast \[2, 3\] to \[4, 3\] \(dimension 0 is 2, the target\'s is 4\)"),
    ("broadcast_to", [(2, 3)], dict(shape=[3]), "cannot broadcast .* to the lower rank"),
    ("strided_slice", [(4, 5)], dict(begin=[0], end=[4], strides=[1]), "begin must have 2 entries"),
    ("strided_slice", [(4, 5)], dict(begin=[0, 0], end=[4, 5], strides=[1, 0]), r"strides \[1, 0\]: the stride of axis 1 is 0"),
    ("strided_slice", [(4, 5)], dict(begin=[2, 0], end=[2, 5], strides=[1, 1]), "axis 0: the slice 2:2:1 of 4 elements is empty"),
    ("strided_slice", [(4, 5)], dict(begin=[0, 0], end=[4, -3], strides=[1, -1]), r"axis 1: begin 0 must be >= 0 and end -3 >= -1"),
    ("take", [(4, 5), (3,)], dict(axis=0), "indices must be i32 or i64, got f32"),
    ("take", [(4, 5), ((3,), np.int64)], dict(axis=2), "axis 2 is out of range for rank 2"),
    ("gelu", [(4,)], dict(approximate="fast"), 'approximate must be "none" or "tanh", got "fast"'),
    ("leaky_relu", [((4,), np.int32)], dict(alpha=0.1), "x must have a floating-point element type, got i32"),
    ("clip", [(4,)], dict(min=math.nan, max=1.0), "min and max must not be NaN"),
    ("astype", [(4,)], dict(dtype="index"), "dtype must be a float or signless integer type, got index"),
    ("astype", [(4,)], dict(dtype="not_a_type"), "bad attribute value"),
]


@pytest.mark.usefixtures("ctx")
@pytest.mark.parametrize("op, shapes, attrs, message", BAD, ids=[f"{b[0]}-{i}" for i, b in enumerate(BAD)])
def test_builders_reject_bad_operands_and_attributes(op, shapes, attrs, message):
    with ir.Location.unknown():
        types = []
        for s in shapes:
            shape, dtype = s if isinstance(s[-1], type) else (s, np.float32)
            types.append(ir.RankedTensorType.get(list(shape), mlir_element_type(dtype)))
        module = ir.Module.create()
        with ir.InsertionPoint(module.body):
            fn = func.FuncOp("f", ir.FunctionType.get(types, []))
            with ir.InsertionPoint(fn.add_entry_block()):
                with pytest.raises(ShapeError, match=f"^'graph.{op}': {message}"):
                    getattr(graph, op)(*fn.arguments, **attrs)


@pytest.mark.usefixtures("ctx")
def test_verifier_names_the_op_and_location():
    text = ("func.func @f(%x: tensor<1x4x8x8xf32>, %w: tensor<8x4x3x3xf32>) -> tensor<1x8x7x7xf32> {\n"
            '  %0 = "graph.conv2d"(%x, %w) {strides = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>,'
            " dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<1x4x8x8xf32>, tensor<8x4x3x3xf32>)"
            " -> tensor<1x8x7x7xf32>\n"
            "  return %0 : tensor<1x8x7x7xf32>\n}\n")
    with pytest.raises(mlcir.VerificationError) as info:
        mlcir.parse(text, source_name="model.mlir")
    assert str(info.value) == ("model.mlir:2:8: error: 'graph.conv2d' op result #0 has type "
                               "'tensor<1x8x7x7xf32>' but the operands give 'tensor<1x8x6x6xf32>'")


def test_evaluate_matches_numpy_semantics_for_constant_folding():
    """evaluate is what constant folding runs: numpy's own answers on small cases."""
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    np.testing.assert_array_equal(graph.OPS["take"].evaluate(x, np.array([-1, 0]), axis=2),
                                  np.take(x, [3, 0], axis=2))
    np.testing.assert_array_equal(graph.OPS["strided_slice"].evaluate(
        x, begin=[1, 2, 3], end=[-1, -1, 0], strides=[-1, -1, -2]), x[1::-1, 2::-1, 3:0:-2])
    np.testing.assert_array_equal(graph.OPS["mean"].evaluate(np.array([[-7, 7, 2]], np.int32),
                                                             axes=[1], keepdims=0),
                                  np.array([0], np.int32))
    with pytest.raises(IndexError, match="take: indices out of range"):
        graph.OPS["take"].evaluate(x, np.array([4]), axis=2)


@pytest.mark.parametrize("case", sorted(POOL_CASES))
def test_pool_semantics_match_onnxruntime(case):
    """ONNX MaxPool/AveragePool as ONNX Runtime computes them (ceil mode, asymmetric pads,
    count_include_pad) agree with the ops' evaluate; test_max/avg_pool2d tie evaluate to the
    compiled kernels."""
    ort = pytest.importorskip("onnxruntime")
    from onnx import TensorProto, helper

    attrs = POOL_CASES[case]
    x = normal(1, 2, 10, 11)
    onnx_attrs = dict(kernel_shape=attrs["kernel"], strides=attrs["strides"],
                      pads=attrs["padding"], dilations=attrs["dilation"],
                      ceil_mode=attrs["ceil_mode"])
    for op, extra, ours in (("MaxPool", {}, "max_pool2d"),
                            ("AveragePool", dict(count_include_pad=0), "avg_pool2d"),
                            ("AveragePool", dict(count_include_pad=1), "avg_pool2d")):
        node = helper.make_node(op, ["x"], ["y"], **onnx_attrs, **extra)
        model = helper.make_model(
            helper.make_graph([node], "pool",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, x.shape)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)]),
            opset_imports=[helper.make_opsetid("", 19)])
        session = ort.InferenceSession(model.SerializeToString(),
                                       providers=["CPUExecutionProvider"])
        want = session.run(None, {"x": x})[0]
        got = graph.OPS[ours].evaluate(x, **attrs, **extra)
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6, err_msg=f"{op} {extra}")
