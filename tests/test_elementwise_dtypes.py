"""Every elementwise, unary, binary and reduction graph op in every element type ONNX allows
for it that mlcir runs (float16, float32, float64, int8 to int64), compiled and compared with
the op's numpy semantics (``OpDef.evaluate``); and the ONNX ops of other types than float32
against onnxruntime.

The ops that take or give boolean tensors (comparisons, logic, where, isnan/isinf; stored as
bytes at run time) and the shifts are swept too, with bool operands where ONNX allows them.
To keep compiles few, one module per element type and op family holds every op, each on its
own arguments (so nothing fuses and every op is its own kernel).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import onnx
import pytest
from mlir import ir
from mlir.dialects import func
from onnx import helper

import mlcir
from mlcir.dialects import graph
from mlcir.dialects.dtypes import mlir_element_type
from mlcir.dialects.opdef import ShapeError
from mlcir.frontend import from_onnx
from mlcir.testing import onnx_models as om

FLOATS = ("f16", "f32", "f64")
INTS = ("i8", "i16", "i32", "i64")
NUMERIC = FLOATS + INTS
NUMPY = {"f16": np.float16, "f32": np.float32, "f64": np.float64, "i8": np.int8,
         "i16": np.int16, "i32": np.int32, "i64": np.int64, "i1": np.bool_}
TOLERANCE = {"f16": 2e-3, "f32": 2e-6, "f64": 1e-12}

# graph op -> (element types: those its ONNX op allows that mlcir compiles, input domain, attrs)
UNARY: dict[str, tuple[tuple[str, ...], str, dict[str, Any]]] = {
    "relu": (NUMERIC, "normal", {}),          # Relu (opset 14: int8..int64 too)
    "negative": (NUMERIC, "normal", {}),      # Neg
    "abs": (NUMERIC, "normal", {}),           # Abs
    "sign": (NUMERIC, "normal", {}),          # Sign
    "exp": (FLOATS, "normal", {}), "log": (FLOATS, "positive", {}),
    "sqrt": (FLOATS, "positive", {}), "rsqrt": (FLOATS, "positive", {}),
    "tanh": (FLOATS, "normal", {}), "sigmoid": (FLOATS, "normal", {}),
    "erf": (FLOATS, "normal", {}),  # ONNX Erf also allows integers; mlcir refuses them
    "sin": (FLOATS, "normal", {}), "cos": (FLOATS, "normal", {}), "tan": (FLOATS, "unit", {}),
    "asin": (FLOATS, "unit", {}), "acos": (FLOATS, "unit", {}), "atan": (FLOATS, "normal", {}),
    "sinh": (FLOATS, "normal", {}), "cosh": (FLOATS, "normal", {}),
    "asinh": (FLOATS, "normal", {}), "acosh": (FLOATS, "above-one", {}),
    "atanh": (FLOATS, "unit", {}), "floor": (FLOATS, "normal", {}),
    "ceil": (FLOATS, "normal", {}), "round": (FLOATS, "halves", {}),
    "bitwise_not": (INTS, "normal", {}),
    "clip": (NUMERIC, "normal", {"min": -1.5, "max": 2.5}),
    "leaky_relu": (FLOATS, "normal", {"alpha": 0.1}),
    "gelu": (FLOATS, "normal", {"approximate": "none"}),
    "thresholded_relu": (FLOATS, "normal", {"alpha": 0.5}),
    "shrink": (FLOATS, "normal", {"lambd": 0.5, "bias": 0.25}),
}
BINARY: dict[str, tuple[tuple[str, ...], str]] = {
    "add": (NUMERIC, "normal"), "subtract": (NUMERIC, "normal"),
    "multiply": (NUMERIC, "normal"), "divide": (NUMERIC, "nonzero"),
    "maximum": (NUMERIC, "normal"), "minimum": (NUMERIC, "normal"),
    "power": (FLOATS, "positive"),  # ONNX Pow allows int32/int64 too; mlcir refuses them
    "mod": (NUMERIC, "nonzero"), "fmod": (NUMERIC, "nonzero"),
    "bitwise_and": (INTS, "normal"), "bitwise_or": (INTS, "normal"),
    "bitwise_xor": (INTS, "normal"),
}
REDUCTIONS: dict[str, tuple[tuple[str, ...], dict[str, Any]]] = {
    "sum": (NUMERIC, {"axes": [1], "keepdims": 0}),
    "mean": (NUMERIC, {"axes": [0, 1], "keepdims": 1}),
    "max": (NUMERIC, {"axes": [1], "keepdims": 1}),
    "min": (NUMERIC, {"axes": [0], "keepdims": 0}),
    "prod": (NUMERIC, {"axes": [0], "keepdims": 1}),
    "softmax": (FLOATS, {"axis": 1}),
    "log_softmax": (FLOATS, {"axis": 1}),
}
# graph op -> (operand element types it is swept in, input domain, attrs); the result is
# boolean for comparisons and tests, the operands' type otherwise.
BOOLEAN: dict[str, tuple[tuple[str, ...], str, dict[str, Any]]] = {
    "equal": (NUMERIC + ("i1",), "small", {}), "less": (NUMERIC, "small", {}),
    "less_equal": (NUMERIC, "small", {}), "greater": (NUMERIC, "small", {}),
    "greater_equal": (NUMERIC, "small", {}),
    "logical_and": (("i1",), "normal", {}), "logical_or": (("i1",), "normal", {}),
    "logical_xor": (("i1",), "normal", {}), "logical_not": (("i1",), "normal", {}),
    "where": (NUMERIC + ("i1",), "normal", {}),
    "isnan": (FLOATS, "special", {}),
    "isinf": (FLOATS, "special", {"detect_positive": 1, "detect_negative": 0}),
    "shift_left": (INTS, "shift", {}), "shift_right_logical": (INTS, "shift", {}),
}
SHAPE = (3, 8)


def test_the_sweep_covers_every_elementwise_binary_and_reduction_op():
    swept = set(UNARY) | set(BINARY) | set(REDUCTIONS) | set(BOOLEAN) | {"ewise_fma", "astype",
                                                                         "layer_norm"}
    kinds = ("elementwise", "broadcast", "reduction")
    assert {name for name, op in graph.OPS.items() if op.pattern in kinds} - swept == set()


def _array(dtype: str, domain: str, rng: np.random.Generator, shape=SHAPE) -> np.ndarray:
    t = NUMPY[dtype]
    if dtype in INTS:
        v = rng.integers(-20, 21, shape)
        if domain in ("nonzero", "positive"):
            v = np.where(v == 0, 7, v)
        return v.astype(t)
    v = rng.standard_normal(shape)
    v = {"normal": v * 2, "positive": np.abs(v) + 0.5, "unit": np.tanh(v) * 0.95,
         "above-one": np.abs(v) + 1.05, "nonzero": np.where(np.abs(v) < 0.1, 0.5, v * 3),
         "halves": np.round(v * 3) + 0.5}[domain]
    return v.astype(t)


def _build(dtype: str, calls: list[tuple[str, int, dict[str, Any]]]):
    """``main`` taking each call's operands as its own arguments and returning every result."""
    ctx = mlcir.make_context()
    with ctx, ir.Location.unknown():
        module = ir.Module.create()
        t = ir.RankedTensorType.get(list(SHAPE), ir.Type.parse(dtype))
        arg_types = [t] * sum(n for _, n, _ in calls)
        with ir.InsertionPoint(module.body):
            fn = func.FuncOp("main", ir.FunctionType.get(arg_types, []))
            with ir.InsertionPoint(fn.add_entry_block()):
                args = list(fn.arguments)
                results = []
                for name, n, attrs in calls:
                    results.append(graph.build(name, args[:n], attrs))
                    args = args[n:]
                func.ReturnOp(results)
            fn.attributes["function_type"] = ir.TypeAttr.get(
                ir.FunctionType.get(arg_types, [r.type for r in results]))
    return mlcir.build(module)


def _check(dtype: str, names: list[str], got, wants: list[np.ndarray]) -> None:
    got = got if isinstance(got, tuple) else (got,)
    assert len(got) == len(wants)
    for name, value, want in zip(names, got, wants):
        assert value.dtype == want.dtype, name
        assert value.shape == want.shape, name
        if dtype in INTS:
            np.testing.assert_array_equal(value, want, err_msg=f"{name} on {dtype}")
        else:
            tol = TOLERANCE[dtype]
            np.testing.assert_allclose(value.astype(np.float64), want.astype(np.float64),
                                       rtol=tol, atol=tol, err_msg=f"{name} on {dtype}")


def _sweep(dtype: str, calls: list[tuple[str, list[np.ndarray], dict[str, Any]]]) -> None:
    if not calls:
        pytest.skip(f"no op of this family takes {dtype}")
    ex = _build(dtype, [(name, len(arrays), attrs) for name, arrays, attrs in calls])
    inputs = [a for _, arrays, _ in calls for a in arrays]
    wants = [np.asarray(graph.OPS[name].evaluate(*arrays, **attrs)).astype(NUMPY[dtype])
             for name, arrays, attrs in calls]
    _check(dtype, [name for name, _, _ in calls], ex.main(*inputs), wants)


@pytest.mark.parametrize("dtype", NUMERIC)
def test_unary_ops(dtype):
    rng = np.random.default_rng(0)
    _sweep(dtype, [(name, [_array(dtype, domain, rng)], attrs)
                   for name, (dtypes, domain, attrs) in UNARY.items() if dtype in dtypes])


@pytest.mark.parametrize("dtype", NUMERIC)
def test_binary_ops(dtype):
    rng = np.random.default_rng(1)
    calls = []
    for name, (dtypes, domain) in BINARY.items():
        if dtype in dtypes:
            lhs = _array(dtype, "positive" if name == "power" else "normal", rng)
            rhs = _array(dtype, domain, rng)
            if name == "power":
                rhs = (rhs - 0.5).astype(rhs.dtype)  # exponents around 0..2
            calls.append((name, [lhs, rhs], {}))
    calls.append(("ewise_fma", [_array(dtype, "normal", rng) for _ in range(3)], {}))
    _sweep(dtype, calls)


def _operands(name: str, dtype: str, domain: str, rng: np.random.Generator) -> list[np.ndarray]:
    count = len(graph.OPS[name].operands)
    if dtype == "i1":
        return [rng.random(SHAPE) < 0.5 for _ in range(count)]
    if name == "where":
        return [rng.random(SHAPE) < 0.5] + [_array(dtype, "normal", rng) for _ in range(2)]
    if domain == "small":  # few distinct values: equal elements are common
        return [np.round(_array(dtype, "normal", rng) / 8).astype(NUMPY[dtype])
                for _ in range(count)]
    if domain == "special":
        x = _array(dtype, "normal", rng)
        x.flat[:6] = [np.nan, np.inf, -np.inf, 0, -np.nan, np.inf]
        return [x]
    if domain == "shift":
        bits = 8 * np.dtype(NUMPY[dtype]).itemsize
        return [_array(dtype, "normal", rng),
                rng.integers(0, bits + 2, SHAPE).astype(NUMPY[dtype])]  # with >= width
    return [_array(dtype, domain, rng) for _ in range(count)]


@pytest.mark.parametrize("dtype", NUMERIC + ("i1",))
def test_boolean_and_shift_ops(dtype):
    """Comparisons, logic, where, float tests and shifts; boolean operands and results are
    numpy bool arrays (stored as bytes)."""
    rng = np.random.default_rng(6)
    calls = [(name, _operands(name, dtype, domain, rng), attrs)
             for name, (dtypes, domain, attrs) in BOOLEAN.items() if dtype in dtypes]
    ctx = mlcir.make_context()
    with ctx, ir.Location.unknown():
        module = ir.Module.create()
        arg_types = [ir.RankedTensorType.get(list(SHAPE), mlir_element_type(a.dtype))
                     for _, arrays, _ in calls for a in arrays]
        with ir.InsertionPoint(module.body):
            fn = func.FuncOp("main", ir.FunctionType.get(arg_types, []))
            with ir.InsertionPoint(fn.add_entry_block()):
                args = list(fn.arguments)
                results = []
                for name, arrays, attrs in calls:
                    results.append(graph.build(name, args[:len(arrays)], attrs))
                    args = args[len(arrays):]
                func.ReturnOp(results)
            fn.attributes["function_type"] = ir.TypeAttr.get(
                ir.FunctionType.get(arg_types, [r.type for r in results]))
    got = mlcir.build(module).main(*[a for _, arrays, _ in calls for a in arrays])
    for (name, arrays, attrs), value in zip(calls, got):
        want = np.asarray(graph.OPS[name].evaluate(*arrays, **attrs))
        assert value.dtype == want.dtype, name
        np.testing.assert_array_equal(value, want, err_msg=f"{name} on {dtype}")


@pytest.mark.parametrize("dtype", NUMERIC)
def test_reductions(dtype):
    rng = np.random.default_rng(2)
    _sweep(dtype, [(name, [_array(dtype, "normal", rng)], attrs)
                   for name, (dtypes, attrs) in REDUCTIONS.items() if dtype in dtypes])


@pytest.mark.parametrize("dtype", FLOATS)
def test_layer_norm(dtype):
    rng = np.random.default_rng(3)
    x = _array(dtype, "normal", rng)
    gamma, beta = _array(dtype, "positive", rng, (8,)), _array(dtype, "normal", rng, (8,))
    ctx = mlcir.make_context()
    with ctx, ir.Location.unknown():
        module = ir.Module.create()
        et = ir.Type.parse(dtype)
        tx, tv = ir.RankedTensorType.get(list(SHAPE), et), ir.RankedTensorType.get([8], et)
        with ir.InsertionPoint(module.body):
            fn = func.FuncOp("main", ir.FunctionType.get([tx, tv, tv], [tx]))
            with ir.InsertionPoint(fn.add_entry_block()):
                func.ReturnOp([graph.build("layer_norm", list(fn.arguments),
                                           {"axes": [1], "epsilon": 1e-3})])
    want = graph.OPS["layer_norm"].evaluate(x, gamma, beta, axes=[1], epsilon=1e-3)
    _check(dtype, ["layer_norm"], mlcir.build(module).main(x, gamma, beta), [want])


@pytest.mark.parametrize("source", NUMERIC)
def test_astype_between_every_pair(source):
    rng = np.random.default_rng(4)
    x = (_array(source, "normal", rng) * (4 if source in FLOATS else 1)).astype(NUMPY[source])
    ctx = mlcir.make_context()
    with ctx, ir.Location.unknown():
        module = ir.Module.create()
        tx = ir.RankedTensorType.get(list(SHAPE), ir.Type.parse(source))
        with ir.InsertionPoint(module.body):
            fn = func.FuncOp("main", ir.FunctionType.get([tx], []))
            with ir.InsertionPoint(fn.add_entry_block()):
                results = [graph.build("astype", [fn.arguments[0]], {"dtype": target})
                           for target in NUMERIC + ("i1",)]
                func.ReturnOp(results)
            fn.attributes["function_type"] = ir.TypeAttr.get(
                ir.FunctionType.get([tx], [r.type for r in results]))
    got = mlcir.build(module).main(x)
    for target, value in zip(NUMERIC + ("i1",), got):
        want = x.astype(NUMPY[target])
        assert value.dtype == want.dtype
        np.testing.assert_array_equal(value, want, err_msg=f"{source} -> {target}")


# -- ONNX ops of other types than float32, against onnxruntime --------------------------------

ONNX_TYPES = {"f32": onnx.TensorProto.FLOAT, "f64": onnx.TensorProto.DOUBLE,
              "i8": onnx.TensorProto.INT8, "i16": onnx.TensorProto.INT16,
              "i32": onnx.TensorProto.INT32, "i64": onnx.TensorProto.INT64}


def _typed_model(op: str, dtype: str, inputs: int, attrs: dict[str, Any],
                 opset: int) -> onnx.ModelProto:
    t = ONNX_TYPES[dtype]
    names = [f"x{i}" for i in range(inputs)]
    node = helper.make_node(op, names, ["y"], **attrs)
    graph_ = helper.make_graph([node], op.lower(),
                               [helper.make_tensor_value_info(n, t, list(SHAPE)) for n in names],
                               [helper.make_tensor_value_info("y", t, list(SHAPE))])
    opsets = [helper.make_opsetid("", opset)]
    model = helper.make_model(graph_, opset_imports=opsets,
                              ir_version=helper.find_min_ir_version_for(opsets))
    onnx.checker.check_model(model, full_check=True)
    return model


# onnxruntime 1.32 has no kernel for these (op, type): numpy is the reference.
NUMPY_REFERENCES = {("Erf", "f64"): np.vectorize(math.erf),
                    ("Relu", "i64"): lambda x: np.maximum(x, 0)}

ONNX_CASES = [
    # the float64 transcendental ops that crashed (a kernel symbol shadowed libm's) or failed
    *[pytest.param(op, "f64", 1, {}, 17, domain, id=f"{op}-f64") for op, domain in (
        ("Exp", "normal"), ("Log", "positive"), ("Tanh", "normal"), ("Erf", "normal"),
        ("Sqrt", "positive"), ("Sin", "normal"), ("Cos", "normal"), ("Floor", "normal"),
        ("Ceil", "normal"), ("Round", "halves"), ("Sigmoid", "normal"), ("Neg", "normal"),
        ("Abs", "normal"), ("Sign", "normal"), ("Relu", "normal"))],
    *[pytest.param(op, dtype, 1, {}, 17, "normal", id=f"{op}-{dtype}")
      for op in ("Neg", "Abs", "Sign", "Relu") for dtype in ("i32", "i64")],
    *[pytest.param("Mod", dtype, 2, {"fmod": fmod}, 17, "nonzero", id=f"Mod-fmod{fmod}-{dtype}")
      for dtype in ("i8", "i16", "i32", "i64") for fmod in (0, 1)],
    pytest.param("Mod", "f64", 2, {"fmod": 1}, 17, "nonzero", id="Mod-fmod1-f64"),
    *[pytest.param(op, dtype, 2, {}, 18, "normal", id=f"{op}-{dtype}")
      for op in ("BitwiseAnd", "BitwiseOr", "BitwiseXor") for dtype in ("i8", "i32", "i64")],
    *[pytest.param("BitwiseNot", dtype, 1, {}, 18, "normal", id=f"BitwiseNot-{dtype}")
      for dtype in ("i8", "i16", "i32", "i64")],
    *[pytest.param(op, dtype, 2, {}, 17, "nonzero", id=f"{op}-{dtype}")
      for op in ("Add", "Sub", "Mul", "Div", "Max", "Min") for dtype in ("i32", "i64", "f64")],
]


@pytest.mark.parametrize("op, dtype, inputs, attrs, opset, domain", ONNX_CASES)
def test_onnx_op_against_onnxruntime(op, dtype, inputs, attrs, opset, domain):
    model = _typed_model(op, dtype, inputs, attrs, opset)
    rng = np.random.default_rng(5)
    feeds = {f"x{i}": _array(dtype, domain if i else
                             ("normal" if domain == "nonzero" else domain), rng)
             for i in range(inputs)}
    if (op, dtype) in NUMPY_REFERENCES:
        want = NUMPY_REFERENCES[op, dtype](*feeds.values()).astype(NUMPY[dtype])
    else:
        want = om.reference(model, feeds)["y"]
    got = mlcir.build(from_onnx(model)).main(*feeds.values())
    _check(dtype, [op], got, [want])


def test_mod_with_fmod_0_on_floats_is_refused_as_onnx_says():
    with pytest.raises(mlcir.FrontendError, match="fmod=0 on floating-point inputs"):
        from_onnx(_typed_model("Mod", "f32", 2, {}, 17))


FLOAT_ONLY = sorted([name for name, (dtypes, _, _) in UNARY.items() if dtypes == FLOATS]
                    + [name for name, (dtypes, _) in BINARY.items() if dtypes == FLOATS])


@pytest.mark.parametrize("name", FLOAT_ONLY)
def test_float_only_ops_refuse_integers_with_a_clear_error(name):
    """Before any code is generated: at the builder (a ShapeError naming the op) or at the
    lowering (a LoweringError naming it)."""
    attrs = UNARY[name][2] if name in UNARY else {}
    operands = 1 if name in UNARY else 2
    with pytest.raises((ShapeError, mlcir.LoweringError),
                       match=rf"graph\.{name}'.*floating-point element type.*i32"):
        _build("i32", [(name, operands, attrs)])
