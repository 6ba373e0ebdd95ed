"""mlcir.build and the runtime: upstream modules run unchanged, inputs are validated before
native code runs, library functions are bound, and the time evaluator reports."""

from __future__ import annotations

import numpy as np
import pytest

import mlcir
from mlcir.testing.kernels import library_module
from mlcir.errors import RuntimeInputError

MATMUL_MEMREF = """
func.func @matmul(%A: memref<16x32xf32>, %B: memref<32x8xf32>, %C: memref<16x8xf32>) {
  linalg.matmul ins(%A, %B : memref<16x32xf32>, memref<32x8xf32>) outs(%C : memref<16x8xf32>)
  return
}
"""

TENSOR_FUNC = """
func.func @scale_add(%a: tensor<4x?xf32>, %b: tensor<4x?xf32>) -> tensor<4x?xf32> {
  %0 = linalg.add ins(%a, %b : tensor<4x?xf32>, tensor<4x?xf32>) outs(%a : tensor<4x?xf32>) -> tensor<4x?xf32>
  return %0 : tensor<4x?xf32>
}
func.func @two_results(%a: tensor<3xf32>) -> (tensor<3xf32>, tensor<3xf32>) {
  %e = tensor.empty() : tensor<3xf32>
  %0 = linalg.mul ins(%a, %a : tensor<3xf32>, tensor<3xf32>) outs(%e : tensor<3xf32>) -> tensor<3xf32>
  return %0, %a : tensor<3xf32>, tensor<3xf32>
}
"""


def test_upstream_memref_matmul_in_destination_passing_style(rng):
    ex = mlcir.build(MATMUL_MEMREF)
    a = rng.standard_normal((16, 32)).astype(np.float32)
    b = rng.standard_normal((32, 8)).astype(np.float32)
    c = np.zeros((16, 8), np.float32)
    assert ex.matmul(a, b, c) is None  # writes C in place, like TVM's DPS functions
    np.testing.assert_allclose(c, a @ b, rtol=1e-5, atol=1e-5)


def test_upstream_tensor_functions_with_dynamic_dims_and_several_results(rng):
    ex = mlcir.build(TENSOR_FUNC)
    a = rng.standard_normal((4, 5)).astype(np.float32)
    b = rng.standard_normal((4, 5)).astype(np.float32)
    out = np.empty((4, 5), np.float32)
    ex.scale_add(a, b, out)  # an output array is still taken
    np.testing.assert_allclose(out, a + b, rtol=1e-6)
    # Without one, the dynamic result is sized from the linalg op's destination (a
    # tensor.empty sized by tensor.dim of an argument: runtime/symbolic_shapes.py).
    np.testing.assert_allclose(ex.scale_add(a, b), a + b, rtol=1e-6)
    sq, same = ex.two_results(np.arange(3, dtype=np.float32))
    np.testing.assert_array_equal(sq, [0, 1, 4])
    np.testing.assert_array_equal(same, [0, 1, 2])


@pytest.mark.parametrize("bad, message", [
    (lambda a: a.astype(np.float64), r"argument 'arg0': expected dtype float32, got float64"),
    (lambda a: a[:, :16], r"argument 'arg0': expected shape float32\[16, 32\], got float32\[16, 16\]"),
    (lambda a: a.reshape(16, 32, 1), r"expected shape float32\[16, 32\], got float32\[16, 32, 1\]"),
    (lambda a: a.tolist(), r"argument 'arg0': expected a numpy array float32\[16, 32\], got list"),
])
def test_bad_inputs_are_refused_before_native_code(rng, bad, message):
    ex = mlcir.build(MATMUL_MEMREF)
    a = rng.standard_normal((16, 32)).astype(np.float32)
    b = rng.standard_normal((32, 8)).astype(np.float32)
    c = np.zeros((16, 8), np.float32)
    with pytest.raises(RuntimeInputError, match=message):
        ex.matmul(bad(a), b, c)


def test_argument_count_and_written_arguments(rng):
    ex = mlcir.build(MATMUL_MEMREF)
    a = rng.standard_normal((16, 32)).astype(np.float32)
    b = rng.standard_normal((32, 8)).astype(np.float32)
    with pytest.raises(RuntimeInputError, match=r"matmul\(\) takes 3 arguments: arg0, arg1, arg2; got 2"):
        ex.matmul(a, b)
    c = np.zeros((8, 16), np.float32).T  # not C-contiguous: the function writes it
    with pytest.raises(RuntimeInputError, match="'arg2' is written by matmul"):
        ex.matmul(a, b, c)
    with pytest.raises(KeyError, match="no function 'nope'"):
        ex["nope"]


def test_non_contiguous_inputs_are_copied(rng):
    ex = mlcir.build(MATMUL_MEMREF)
    a = rng.standard_normal((32, 16)).astype(np.float32).T  # a transposed view
    b = rng.standard_normal((32, 8)).astype(np.float32)
    c = np.zeros((16, 8), np.float32)
    ex.matmul(a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-5, atol=1e-5)


@pytest.mark.usefixtures("ctx")
def test_library_function_errors_surface_as_python_errors():
    def fails(_x, _out):
        raise ValueError("deliberate failure")

    mlcir.register_func("test.fails", fails, override=True)
    ex = mlcir.build(library_module("test.fails"))
    with pytest.raises(RuntimeError, match="library function 'test.fails' raised ValueError: "
                                           "deliberate failure"):
        ex.main(np.zeros(4, np.float32))


@pytest.mark.usefixtures("ctx")
def test_library_function_whose_signature_cannot_take_the_call_is_a_build_error():
    """Registered with one argument, called with two (the input and the output): refused at
    build, not a RuntimeError from the trampoline at run time."""
    def one_argument(x):
        return x

    mlcir.register_func("test.one_argument", one_argument, override=True)
    with pytest.raises(mlcir.BuildError, match=r"'test.one_argument' is called with 2 arrays "
                                               r"\(its inputs, then its outputs\), but its "
                                               r"signature \(x\) cannot take them"):
        mlcir.build(library_module("test.one_argument"))


@pytest.mark.usefixtures("ctx")
def test_unregistered_library_function_is_a_build_error():
    with pytest.raises(mlcir.BuildError, match="'nobody.registered.this' is called but not registered"):
        mlcir.build(library_module("nobody.registered.this"))


def test_time_evaluator_reports_repeats(rng):
    ex = mlcir.build(MATMUL_MEMREF)
    a = rng.standard_normal((16, 32)).astype(np.float32)
    b = rng.standard_normal((32, 8)).astype(np.float32)
    c = np.zeros((16, 8), np.float32)
    result = ex.time_evaluator("matmul", number=5, repeat=4, warmup=2)(a, b, c)
    assert len(result.results) == 4 and result.number == 5
    assert 0 < result.min <= result.median <= result.max
    assert "mean (ms)" in str(result)
    # linalg.matmul accumulates into C: every timed and warm-up call really ran.
    np.testing.assert_allclose(c, (2 + 5 * 4) * (a @ b), rtol=1e-4, atol=1e-4)


def test_min_repeat_ms_grows_the_number_of_calls(monkeypatch):
    """`min_repeat_ms` grows `number` until one repeat lasts that long (a fake clock that
    each call advances by 1 ms makes it deterministic on a loaded machine)."""
    from mlcir.runtime import evaluator

    clock = [0.0]
    monkeypatch.setattr(evaluator.time, "perf_counter", lambda: clock[0])

    def call() -> None:
        clock[0] += 1e-3

    result = evaluator.time_calls(call, number=1, repeat=3, warmup=0, min_repeat_ms=5)
    # 1 call lasts 1 ms: scaled to the target (10% margin) that is 5 calls, which last 5 ms.
    assert result.number == 5
    assert result.results == pytest.approx((1e-3,) * 3)


def test_warmup_s_calls_untimed_until_that_time_has_passed(monkeypatch):
    """``warmup_s`` keeps calling, untimed, until that long after the warm-up began (a fake
    clock that each call advances by 1 ms): 1 warm-up call, then 9 more to reach 10 ms."""
    from mlcir.runtime import evaluator

    clock = [0.0]
    calls = [0]
    monkeypatch.setattr(evaluator.time, "perf_counter", lambda: clock[0])

    def call() -> None:
        clock[0] += 1e-3
        calls[0] += 1

    result = evaluator.time_calls(call, number=2, repeat=1, warmup=1, warmup_s=0.01)
    assert calls[0] == 10 + 2
    assert result.results == pytest.approx((1e-3,))
    with pytest.raises(mlcir.RuntimeInputError, match="warmup_s"):
        evaluator.time_calls(call, warmup_s=-1.0)


def test_inputs_are_never_overwritten(rng):
    # linalg.add writes into its `outs` operand %a; the caller's array must stay intact.
    ex = mlcir.build(TENSOR_FUNC)
    a = rng.standard_normal((4, 5)).astype(np.float32)
    b = rng.standard_normal((4, 5)).astype(np.float32)
    a_before = a.copy()
    out = np.empty((4, 5), np.float32)
    ex.scale_add(a, b, out)
    np.testing.assert_array_equal(a, a_before)
    np.testing.assert_allclose(out, a + b, rtol=1e-6)


def test_read_only_memref_arguments_are_inputs():
    ex = mlcir.build(MATMUL_MEMREF)
    assert [a.kind for a in ex.matmul.signature.args] == ["input", "input", "inout"]


def test_build_rejects_bad_modules():
    with pytest.raises(mlcir.ParseError, match="<build>:1:"):
        mlcir.build("func.func @f( {")
    with pytest.raises(mlcir.BuildError, match="no public function"):
        mlcir.build("func.func private @f() { return }")
    with pytest.raises(ValueError, match="unknown target 'tpu'"):
        mlcir.build(MATMUL_MEMREF, target="tpu")


def test_boolean_tensors_run_stored_as_bytes():
    """MLIR 22.1's memref-to-LLVM lowering asserts (aborts the process) on i1 loads/stores:
    i1 tensors are stored as bytes (mlcir-bool-storage); numpy bool arrays go in and out."""
    text = """
func.func @main(%a: tensor<4xi1>) -> tensor<4xi1> {
  %e = tensor.empty() : tensor<4xi1>
  %r = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>],
                       iterator_types = ["parallel"]} ins(%a : tensor<4xi1>) outs(%e : tensor<4xi1>) {
  ^bb0(%x: i1, %o: i1):
    %t = arith.constant true
    %n = arith.xori %x, %t : i1
    linalg.yield %n : i1
  } -> tensor<4xi1>
  return %r : tensor<4xi1>
}"""
    got = mlcir.build(text).main(np.array([True, False, False, True]))
    assert got.dtype == np.bool_
    np.testing.assert_array_equal(got, [False, True, True, False])


def test_boolean_memrefs_are_refused_before_codegen_aborts():
    text = """
func.func @main(%a: memref<4xi1>, %b: memref<4xi1>) {
  memref.copy %a, %b : memref<4xi1> to memref<4xi1>
  return
}"""
    with pytest.raises(mlcir.BuildError, match=r"<build>:2:1: error: 'func.func' op uses a "
                                               r"boolean \(i1\) memref, .* use i8 memrefs"):
        mlcir.build(text)


def test_inputs_and_outputs_by_name(rng):
    """A graph function's arguments and results carry names (ONNX's, or graph.name)."""
    text = """
func.func @main(%x: tensor<2x3xf32> {graph.name = "image"}, %w: tensor<3x4xf32> {graph.name = "weight"})
    -> (tensor<2x4xf32> {graph.name = "logits"}) {
  %0 = "graph.matmul"(%x, %w) : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}"""
    ex = mlcir.build(text)
    x = rng.standard_normal((2, 3)).astype(np.float32)
    w = rng.standard_normal((3, 4)).astype(np.float32)
    np.testing.assert_allclose(ex.main(weight=w, image=x), x @ w, rtol=1e-6)
    np.testing.assert_allclose(ex.main(x, weight=w), x @ w, rtol=1e-6)
    out = np.zeros((2, 4), np.float32)
    ex.main(x, w, logits=out)
    np.testing.assert_allclose(out, x @ w, rtol=1e-6)
    outputs = ex.main.run({"image": x, "weight": w})
    assert list(outputs) == ["logits"]
    np.testing.assert_allclose(outputs["logits"], x @ w, rtol=1e-6)
    with pytest.raises(mlcir.RuntimeInputError, match=r"main\(\) has no argument 'imag' "
                                                      r"\(arguments: image, weight\)"):
        ex.main(imag=x, weight=w)
    with pytest.raises(mlcir.RuntimeInputError, match=r"main\(\) is missing argument 'weight'"):
        ex.main(image=x)
    with pytest.raises(mlcir.RuntimeInputError, match=r"main\(\) got argument 'image' twice"):
        ex.main(x, image=x, weight=w)


def test_parse_needs_no_callers_context():
    from mlir import ir

    assert ir.Context.current is None
    first = mlcir.parse("func.func @f() { return }")
    second = mlcir.parse("func.func @g() { return }")
    assert first.context is second.context  # mlcir's own context
    with pytest.raises(mlcir.ParseError, match="<string>:1:"):
        mlcir.parse("func.func @f( {")
    assert mlcir.build(first).function_names == ["f"]


def test_upstream_elementwise_ops_on_tensors_build(rng):
    ex = mlcir.build("""
    func.func @main(%a: tensor<2x3xf32>, %b: tensor<2x3xf32>) -> tensor<2x3xf32> {
      %0 = arith.addf %a, %b : tensor<2x3xf32>
      %1 = math.exp %0 : tensor<2x3xf32>
      %2 = arith.mulf %1, %a : tensor<2x3xf32>
      return %2 : tensor<2x3xf32>
    }""")
    a = rng.standard_normal((2, 3)).astype(np.float32)
    b = rng.standard_normal((2, 3)).astype(np.float32)
    np.testing.assert_allclose(ex.main(a, b), np.exp(a + b) * a, rtol=1e-5)
