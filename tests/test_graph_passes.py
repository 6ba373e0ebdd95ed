"""graph-fold-constants (numbers against numpy, the size limit, resource blobs, the new ops),
graph-dce (what is dead goes, nothing else), graph-dispatch-library (an MLP whose layers run
as counted Python functions, built and checked against numpy)."""

from __future__ import annotations

import numpy as np
import pytest
from mlir import ir
from mlir.dialects import func

import mlcir
from mlcir.dialects import graph
from mlcir.passes import run_pipeline
from mlcir.passes.bind_params import bind_params
from mlcir.passes.constants import constant_array, make_constant
from mlcir.passes.dce import dead_code_elimination
from mlcir.passes.dispatch_library import DispatchRule, dispatch_library, register_dispatch_rule
from mlcir.passes.fold_constants import fold_constants
from mlcir.passes.patterns import is_op, wildcard
from mlcir.runtime import register_func
from mlcir.dialects.dtypes import mlir_element_type
from mlcir.testing import mlp


def _t(shape, dtype=np.float32):
    return ir.RankedTensorType.get(list(shape), mlir_element_type(np.dtype(dtype)))


def _module(inputs, body):
    """``main(*inputs)`` whose results are what ``body(*arguments)`` builds."""
    module = ir.Module.create()
    with ir.InsertionPoint(module.body):
        fn = func.FuncOp("main", ir.FunctionType.get([_t(s) for s in inputs], []))
        with ir.InsertionPoint(fn.add_entry_block()):
            results = body(*fn.arguments)
            results = results if isinstance(results, (list, tuple)) else [results]
            func.ReturnOp(results)
        fn.attributes["function_type"] = ir.TypeAttr.get(ir.FunctionType.get(
            [_t(s) for s in inputs], [r.type for r in results]))
    return module


def _ops(module, prefix="graph."):
    names = []

    def visit(op):
        if op.name.startswith(prefix):
            names.append(op.name)
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)
    return names


def _returned_constants(module):
    fn = module.body.operations[0]
    ret = list(fn.regions[0].blocks[0].operations)[-1]
    return [constant_array(v) for v in ret.operands]


# ----------------------------------------------------------------------------------------------
# graph-fold-constants


@pytest.mark.usefixtures("ctx")
def test_folding_a_chain_matches_numpy(rng):
    w = rng.standard_normal((6, 4)).astype(np.float32)
    s = rng.standard_normal((4, 1)).astype(np.float32)
    x = rng.standard_normal((4, 6)).astype(np.float32)

    def body(x_arg):
        wt = graph.permute_dims(make_constant(w, _t(w.shape)), axes=[1, 0])
        scaled = graph.multiply(wt, graph.exp(make_constant(s, _t(s.shape))))
        return [graph.add(x_arg, scaled), scaled]

    with ir.Location.unknown():
        module = _module([(4, 6)], body)
        before = mlcir.build(module).main(x)
        assert fold_constants(module) == 3
    assert _ops(module) == ["graph.add"]
    expected = w.T * np.exp(s)
    np.testing.assert_allclose(_returned_constants(module)[1], expected, rtol=1e-6)
    after = mlcir.build(module).main(x)
    np.testing.assert_allclose(after[0], x + expected, rtol=1e-6)
    np.testing.assert_allclose(after[0], before[0], rtol=1e-6)


@pytest.mark.usefixtures("ctx")
def test_folding_respects_the_size_limit(rng):
    col = rng.standard_normal((64, 1)).astype(np.float32)
    row = rng.standard_normal((1, 64)).astype(np.float32)
    big = rng.standard_normal((100, 100)).astype(np.float32)

    def body():
        outer = graph.add(make_constant(col, _t(col.shape)), make_constant(row, _t(row.shape)))
        transposed = graph.permute_dims(make_constant(big, _t(big.shape)), axes=[1, 0])
        return [outer, transposed]

    with ir.Location.unknown():
        limited = _module([], body)
        # 4096 elements out of 64+64: growth past the limit, skipped; the 10000-element
        # transpose does not grow its operand: folded although it is past the limit too.
        assert fold_constants(limited, max_elements=1000) == 1
        assert _ops(limited) == ["graph.add"]
        np.testing.assert_array_equal(_returned_constants(limited)[1], big.T)
        unlimited = _module([], body)
        run_pipeline(unlimited, "graph-fold-constants")
    assert _ops(unlimited) == []
    outer, transposed = _returned_constants(unlimited)
    np.testing.assert_allclose(outer, col + row, rtol=1e-6)
    np.testing.assert_array_equal(transposed, big.T)
    assert "dense_resource" in str(unlimited)  # big results are blobs


def test_folding_reads_bound_weights_and_keeps_the_model_numbers(rng):
    params = mlp.random_params(0)
    module = mlp.build_module("compiled")
    x = rng.standard_normal((1, 784)).astype(np.float32)
    with module.context, ir.Location.unknown():
        bind_params(module, params)
        assert "dense_resource" in str(module)
        assert fold_constants(module) == 2  # the two permute_dims of the weights
        assert _ops(module).count("graph.permute_dims") == 0
        transposed = [constant_array(op.operands[1]) for op in
                      module.body.operations[0].regions[0].blocks[0].operations
                      if op.name == "graph.matmul"]
    np.testing.assert_array_equal(transposed[0], params["w0"].T)
    np.testing.assert_array_equal(transposed[1], params["w1"].T)
    ref = mlp.reference(x, params)
    np.testing.assert_allclose(mlcir.build(module).main(x), ref, rtol=1e-5,
                               atol=1e-5 * np.abs(ref).max())


POOL = dict(kernel=[2, 2], strides=[2, 2], padding=[0, 0, 0, 0], dilation=[1, 1], ceil_mode=0)


@pytest.mark.parametrize("name, attrs, operands", [
    ("sum", {"axes": [1], "keepdims": 0}, [(3, 5)]),
    ("mean", {"axes": [0], "keepdims": 1}, [(3, 5)]),
    ("softmax", {"axis": 1}, [(3, 5)]),
    ("layer_norm", {"axes": [1], "epsilon": 1e-5}, [(3, 5), (5,), (5,)]),
    ("reshape", {"shape": [5, 3]}, [(3, 5)]),
    ("strided_slice", {"begin": [2, 0], "end": [0, 5], "strides": [-1, 2]}, [(3, 5)]),
    ("broadcast_to", {"shape": [2, 3, 5]}, [(3, 1)]),
    ("take", {"axis": 1}, [(3, 5), np.array([4, -1, 0], np.int64)]),
    ("clip", {"min": -0.5, "max": 0.5}, [(3, 5)]),
    ("astype", {"dtype": "i64"}, [(3, 5)]),
    ("divide", {}, [np.array([7, -7, 3], np.int32), np.array([2, 2, -2], np.int32)]),
    ("max_pool2d", POOL, [(1, 2, 4, 4)]),
])
@pytest.mark.usefixtures("ctx")
def test_folding_uses_each_ops_evaluate(rng, name, attrs, operands):
    arrays = [o if isinstance(o, np.ndarray) else (rng.standard_normal(o) * 3).astype(np.float32)
              for o in operands]
    attrs = {k: ir.Type.parse(v) if k == "dtype" else v for k, v in attrs.items()}

    def body():
        return graph.build(name, [make_constant(a, _t(a.shape, a.dtype)) for a in arrays], attrs)

    with ir.Location.unknown():
        module = _module([], body)
        unfolded = mlcir.build(module).main()
        assert fold_constants(module) == 1
    folded = _returned_constants(module)[0]
    assert folded.dtype == unfolded.dtype
    np.testing.assert_allclose(folded, graph.OPS[name].evaluate(*arrays, **attrs), rtol=1e-6)
    np.testing.assert_allclose(folded, unfolded, rtol=1e-5, atol=1e-6)  # the compiled op agrees


@pytest.mark.usefixtures("ctx")
def test_folding_leaves_ops_of_arguments_alone():
    with ir.Location.unknown():
        module = _module([(4,)], lambda x: graph.relu(graph.add(x, make_constant(
            np.ones(4, np.float32), _t((4,))))))
        assert fold_constants(module) == 0
    assert _ops(module) == ["graph.add", "graph.relu"]


# ----------------------------------------------------------------------------------------------
# graph-dce

DCE_MODULE = """
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %k = arith.constant dense<1.0> : tensor<4xf32>
  %k2 = arith.constant dense<2.0> : tensor<4xf32>
  %a = "graph.add"(%x, %k) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %d0 = "graph.multiply"(%a, %k2) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %d1 = "graph.exp"(%d0) : (tensor<4xf32>) -> tensor<4xf32>
  %e = tensor.empty() : tensor<4xf32>
  %f = call @fused(%x) : (tensor<4xf32>) -> tensor<4xf32>
  %r = "graph.relu"(%a) : (tensor<4xf32>) -> tensor<4xf32>
  return %r : tensor<4xf32>
}
func.func private @fused(%x: tensor<4xf32>) -> tensor<4xf32> attributes {graph.primitive} {
  %0 = "graph.exp"(%x) : (tensor<4xf32>) -> tensor<4xf32>
  %1 = "graph.relu"(%0) : (tensor<4xf32>) -> tensor<4xf32>
  return %1 : tensor<4xf32>
}
func.func private @kernel(%x: tensor<4xf32>, %out: tensor<4xf32>) -> tensor<4xf32> attributes {loop.kernel} {
  %unused = arith.constant 3.0 : f32
  return %x : tensor<4xf32>
}
func.func @public_helper(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}
"""


@pytest.mark.usefixtures("ctx")
def test_dce_removes_what_is_dead_and_nothing_else(rng):
    module = mlcir.parse(DCE_MODULE)
    x = rng.standard_normal(4).astype(np.float32)
    before = mlcir.build(module).main(x)
    assert dead_code_elimination(module) == 3  # multiply, exp, the call of @fused
    text = str(module)
    main = str(module.body.operations[0])
    assert _ops(module) == ["graph.add", "graph.relu"]
    assert "dense<2.000000e+00>" not in main and "tensor.empty" not in main and "call" not in main
    assert "dense<1.000000e+00>" in main
    assert "@fused" not in text and "@kernel" not in text  # private and no longer called
    assert "func.func @public_helper" in text              # public: kept
    np.testing.assert_array_equal(mlcir.build(module).main(x), before)
    assert dead_code_elimination(module) == 0  # nothing left to do


@pytest.mark.usefixtures("ctx")
def test_dce_keeps_library_calls_and_leaves_kernels_alone():
    module = mlcir.parse("""
    func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
      %e = tensor.empty() : tensor<4xf32>
      %l = call @lib(%x, %e) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
      %e2 = tensor.empty() : tensor<4xf32>
      %k = call @kernel(%x, %e2) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
      return %k : tensor<4xf32>
    }
    func.func private @lib(tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32> attributes {graph.library = "env.relu"}
    func.func private @kernel(%x: tensor<4xf32>, %out: tensor<4xf32>) -> tensor<4xf32> attributes {loop.kernel} {
      %unused = arith.constant 3.0 : f32
      return %x : tensor<4xf32>
    }""")
    before = str(module)
    assert dead_code_elimination(module) == 0
    assert str(module) == before


# ----------------------------------------------------------------------------------------------
# graph-dispatch-library


@pytest.fixture
def counted_library():
    """``env.linear``/``env.relu`` registered as numpy functions that count their calls."""
    calls = {"env.linear": 0, "env.relu": 0}

    def linear(x, w, b, out):
        calls["env.linear"] += 1
        np.add(x @ w.T, b, out=out)

    def relu(x, out):
        calls["env.relu"] += 1
        np.maximum(x, 0, out=out)

    register_func("env.linear", linear, override=True)
    register_func("env.relu", relu, override=True)
    yield calls
    mlp.register_library()


@pytest.mark.parametrize("how", ["registered rules", "pass option", "patterns"])
def test_dispatched_mlp_runs_the_library_functions(counted_library, rng, how):
    params = mlp.random_params(0)
    module = mlp.build_module("compiled")
    x = rng.standard_normal((1, 784)).astype(np.float32)
    with module.context, ir.Location.unknown():
        if how == "registered rules":
            assert dispatch_library(module, ["env.linear", "env.relu"]) == 3
        elif how == "pass option":
            run_pipeline(module, "graph-dispatch-library{rules=env.linear,env.relu}")
        else:
            linear = is_op("graph.add")(
                is_op("graph.matmul")(wildcard("x"),
                                      is_op("graph.permute_dims", axes=[1, 0])(wildcard("w"))),
                wildcard("b"))
            assert dispatch_library(module, {"env.linear": linear,
                                             "env.relu": is_op("graph.relu")(wildcard("x"))}) == 3
        assert _ops(module) == []
    ex = mlcir.build(module)
    y = ex.main(x, params["w0"], params["b0"], params["w1"], params["b1"])
    ref = mlp.reference(x, params)
    np.testing.assert_allclose(y, ref, rtol=1e-5, atol=1e-5 * np.abs(ref).max())
    assert counted_library == {"env.linear": 2, "env.relu": 1}


def test_partial_dispatch_mixes_kernels_and_library_calls(counted_library, rng):
    params = mlp.random_params(1)
    module = mlp.build_module("compiled")
    x = rng.standard_normal((1, 784)).astype(np.float32)
    with module.context, ir.Location.unknown():
        assert dispatch_library(module, ["env.relu"]) == 1
        assert sorted(set(_ops(module))) == ["graph.add", "graph.matmul", "graph.permute_dims"]
    y = mlcir.build(module).main(x, params["w0"], params["b0"], params["w1"], params["b1"])
    ref = mlp.reference(x, params)
    np.testing.assert_allclose(y, ref, rtol=1e-5, atol=1e-5 * np.abs(ref).max())
    assert counted_library == {"env.linear": 0, "env.relu": 1}


def test_dispatch_rules_are_checked(ctx):
    module = mlp.build_module("compiled", ctx)
    with pytest.raises(mlcir.PassError, match="no dispatch rule named 'env.gelu' "
                                              r"\(registered: env.linear, env.relu"):
        dispatch_library(module, ["env.gelu"])
    with pytest.raises(mlcir.PassError, match=r"dispatch rule 'env.x': argument\(s\) y are not "
                                              r"names of its pattern \(names: x\)"):
        register_dispatch_rule(DispatchRule("env.x", is_op("graph.relu")(wildcard("x")), ("y",)))
    with pytest.raises(mlcir.PassError, match="graph-dispatch-library needs rules="):
        run_pipeline(module, "graph-dispatch-library")


def test_graph_passes_are_registered_with_their_options():
    from mlcir.passes import get_pass

    expected = {"graph-fold-constants": ["max_elements"], "graph-dce": [],
                "graph-fuse-ops": ["max_ops"], "graph-fuse-ewise-fma": [],
                "graph-dispatch-library": ["rules"], "graph-pack-weights": ["panel"],
                "graph-layout-nchwc": ["lanes"], "graph-pad-windows": [], "graph-winograd": []}
    for name, options in expected.items():
        cls = get_pass(name)
        assert cls is not None and cls.name == name and cls.summary
        assert [f.name for f in cls.options()] == options
    from mlcir.passes.pipelines import KERNELS

    assert KERNELS == ["graph-fold-constants", "graph-layout-nchwc", "graph-pack-weights",
                       "graph-dce", "graph-pad-windows", "graph-winograd", "graph-fuse-ops", "graph-to-loop",
                       "mlcir-bool-storage"]
