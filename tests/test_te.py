"""mlcir.te: tensor expressions to loop-level kernels that schedule, tune and build like any
other; the guide's examples (examples/te_*.py) against numpy; errors by type and message."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

import mlcir
from mlcir import te
from mlcir.te import TEError, topi

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def example(name: str):
    spec = importlib.util.spec_from_file_location(name, EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def run(tensors, *inputs):
    return mlcir.build(te.create_prim_func(tensors)).main(*inputs)


# -- the kernel --------------------------------------------------------------------------------

def test_blocks_are_named_after_the_computes_and_a_reduction_has_its_init():
    A = te.placeholder((8, 4), name="A")
    k = te.reduce_axis((0, 4), "k")
    S = te.compute((8,), lambda i: te.sum(A[i, k], axis=k), name="S")
    T = te.compute((8,), lambda i: te.exp(S[i]), name="T")
    text = str(te.create_prim_func([A, T]))
    assert 'loop.block = "S_init"' in text and 'loop.block = "S"' in text
    assert 'loop.block = "T"' in text and "math.exp" in text
    assert "func.func @main(%arg0: tensor<8x4xf32>) -> tensor<8xf32> attributes {loop.kernel}" in text
    sch = mlcir.Schedule(te.create_prim_func([A, T]))
    assert [sch.get(b) for b in sch.get_producers(sch.get_block("S"))] == ["S_init"]
    assert [sch.get(b) for b in sch.get_consumers(sch.get_block("S"))] == ["T"]
    assert [sch.get(loop).kind for loop in sch.get_loops(sch.get_block("S"))] == ["spatial",
                                                                                  "reduction"]


def test_repeated_names_get_suffixes():
    A = te.placeholder((4,), name="A")
    B = te.compute((4,), lambda i: A[i] + 1.0)
    C = te.compute((4,), lambda i: B[i] * 2.0)
    text = str(te.create_prim_func([A, C]))
    assert 'loop.block = "compute"' in text and 'loop.block = "compute_1"' in text


def test_elementwise_math_reductions_and_conditions_match_numpy():
    rng = np.random.default_rng(0)
    x = rng.uniform(0.5, 2.0, (6, 10)).astype(np.float32)
    X = te.placeholder((6, 10), name="X")
    k = te.reduce_axis((0, 10), "k")
    cases = [
        (lambda i, j: te.exp(X[i, j]) + te.sqrt(X[i, j]), np.exp(x) + np.sqrt(x)),
        (lambda i, j: te.tanh(X[i, j]) * te.log(X[i, j]), np.tanh(x) * np.log(x)),
        (lambda i, j: te.sigmoid(X[i, j]) - te.abs(-X[i, j]), 1 / (1 + np.exp(-x)) - x),
        (lambda i, j: te.power(X[i, j], 2.0) / te.maximum(X[i, j], 1.0),
         x ** 2 / np.maximum(x, 1.0)),
        (lambda i, j: te.if_then_else(te.any(i == j, X[i, j] > 1.5), X[i, j], -1.0),
         np.where((np.arange(6)[:, None] == np.arange(10)) | (x > 1.5), x, -1.0)),
        (lambda i, j: X[i, j] + i * 10 + j, x + np.arange(6)[:, None] * 10 + np.arange(10)),
    ]
    for fcompute, expected in cases:
        Y = te.compute((6, 10), fcompute, name="Y")
        np.testing.assert_allclose(run([X, Y], x), expected, rtol=1e-5, atol=1e-5)
    for reducer, reference in ((te.sum, np.sum), (te.max, np.max), (te.min, np.min)):
        R = te.compute((6,), lambda i, f=reducer: f(X[i, k], axis=k), name="R")
        np.testing.assert_allclose(run([X, R], x), reference(x, axis=1), rtol=1e-5)
    masked = te.compute((6,), lambda i: te.sum(X[i, k], axis=k, where=k < 5), name="M")
    np.testing.assert_allclose(run([X, masked], x), x[:, :5].sum(axis=1), rtol=1e-5)


def test_integer_tensors_casts_and_gathers():
    A = te.placeholder((8,), dtype="int32", name="A")
    idx = te.placeholder((5,), dtype="int32", name="idx")
    G = te.compute((5,), lambda i: A[idx[i]] * 3 // 2, name="G")
    F = te.compute((5,), lambda i: G[i].astype("float32") / 4.0, name="F")
    a = np.arange(8, dtype=np.int32) * 7 - 20
    ix = np.array([7, 0, 3, 3, 5], np.int32)
    g, f = mlcir.build(te.create_prim_func([A, idx, G, F])).main(a, ix)
    np.testing.assert_array_equal(g, a[ix] * 3 // 2)
    np.testing.assert_allclose(f, (a[ix] * 3 // 2).astype(np.float32) / 4)


def test_reversed_and_strided_reads():
    A = te.placeholder((12,), name="A")
    R = te.compute((12,), lambda i: A[11 - i], name="R")
    S = te.compute((4,), lambda i: A[i * 3 + 2] + A[i // 2], name="S")
    a = np.arange(12, dtype=np.float32)
    r, s = mlcir.build(te.create_prim_func([A, R, S])).main(a)
    np.testing.assert_array_equal(r, a[::-1])
    np.testing.assert_array_equal(s, a[2::3] + a[np.arange(4) // 2])


def test_te_kernels_tune(tmp_path):
    A = te.placeholder((16, 16), name="A")
    B = te.placeholder((16, 16), name="B")
    k = te.reduce_axis((0, 16), "k")
    C = te.compute((16, 16), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    best = mlcir.tune.tune_kernel(te.create_prim_func([A, B, C]), work_dir=tmp_path,
                                  max_trials=2, num_trials_per_iter=2, cost_model="random",
                                  verbose=0)
    a, b = (np.random.default_rng(s).standard_normal((16, 16)).astype(np.float32) for s in (1, 2))
    np.testing.assert_allclose(mlcir.build(best.mod).main(a, b), a @ b, rtol=1e-4, atol=1e-4)


# -- errors ------------------------------------------------------------------------------------

def test_errors_name_what_is_wrong():
    A = te.placeholder((8,), name="A")
    k = te.reduce_axis((0, 8), "k")
    with pytest.raises(TEError, match="must be the whole body of a compute"):
        te.compute((1,), lambda _: te.sum(A[k], axis=k) + 1.0)
    shifted = te.compute((8,), lambda i: A[i + 1], name="shifted")
    with pytest.raises(TEError, match=r"shifted: A\[i \+ 1\] may read outside A .*if_then_else"):
        te.create_prim_func([A, shifted])
    B = te.placeholder((8,), name="B")
    with pytest.raises(TEError, match="reads placeholder B, which is not among"):
        te.create_prim_func([A, te.compute((8,), lambda i: A[i] + B[i])])
    with pytest.raises(TEError, match="compute uses variable k, which is neither"):
        te.create_prim_func([A, te.compute((8,), lambda _: A[k])])
    with pytest.raises(TEError, match="add of float32 and int32: convert one with .astype"):
        te.compute((8,), lambda i: A[i] + te.placeholder((8,), "int32", "I")[i])
    with pytest.raises(TEError, match="no truth value"):
        te.compute((8,), lambda i: A[i] if i > 2 else 0.0)
    with pytest.raises(TEError, match="takes 1 indices, the shape has 2"):
        te.compute((8, 2), lambda i: A[i])
    with pytest.raises(TEError, match="dtype 'float8' is not supported"):
        te.placeholder((2,), dtype="float8")
    with pytest.raises(TEError, match="te.exp of a int32 value"):
        te.exp(te.placeholder((2,), "int32", "I")[0])


# -- the guide's examples ----------------------------------------------------------------------

def test_example_vector_add():
    ex = example("te_vector_add")
    sch = ex.vector_add(4096)
    ex.parallel_vectorized(sch)
    ex.check(sch, 4096)
    assert "sch.vectorize" in str(sch.trace)


@pytest.mark.parametrize("step", range(7))
def test_example_matmul_steps(step):
    ex = example("te_matmul")
    ex.check(ex.scheduled(step, 64), 64)


def test_example_conv2d():
    ex = example("te_conv2d")
    sch = ex.kernel()
    ex.schedule(sch)
    ex.check(sch)


def test_example_topi():
    ex = example("te_topi")
    ex.check_row_sums()
    ex.check_broadcast_reduce(1)
    ex.check_broadcast_reduce(None)
    trace = str(ex.scheduled_broadcast_reduce().trace)
    assert trace.count("compute_inline") == 4 and "sch.parallel" in trace


def test_topi_broadcasting_rules():
    a = te.placeholder((3, 1, 4), name="a")
    b = te.placeholder((5, 1), name="b")
    c = topi.broadcast_sub(a, b)
    assert c.shape == (3, 5, 4)
    av = np.arange(12, dtype=np.float32).reshape(3, 1, 4)
    bv = np.arange(5, dtype=np.float32).reshape(5, 1)
    np.testing.assert_array_equal(run([a, b, c], av, bv), av - bv)
    kept = topi.sum(c, axis=(0, 2), keepdims=True)
    np.testing.assert_allclose(run([a, b, kept], av, bv), (av - bv).sum(axis=(0, 2), keepdims=True))
    with pytest.raises(TEError, match=r"shapes \[3, 1, 4\] and \[1, 2, 3\] do not broadcast"):
        topi.broadcast_add(a, te.placeholder((2, 3), name="x"))
