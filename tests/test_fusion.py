"""graph-fuse-ops: the groups the rules give, identical layers sharing one primitive with the
weights as arguments, fused builds agreeing with unfused ones and numpy (MLP, a small CNN, a
softmax/layer_norm chain), and fused kernels scheduled by the default design space."""

from __future__ import annotations

import numpy as np
import pytest
from mlir import ir
from mlir.dialects import func

import mlcir
from mlcir.dialects import graph
from mlcir.passes import run_pipeline
from mlcir.passes.bind_params import bind_params
from mlcir.passes.constants import make_constant
from mlcir.passes.fuse_ops import fuse_ops, partition
from mlcir.passes.pipelines import cpu_bufferize, cpu_to_llvm
from mlcir.schedule import Schedule, ScheduleError
from mlcir.testing import mlp
from mlcir.tune import default_space, extract_tasks, random_inputs

OPS = graph.OPS
# Kernels as an AVX-512 build makes them (what these expectations were written for).
AVX512_BUILD = "llvm -mcpu=skylake-avx512"
# The CPU pipeline without the graph passes: one kernel per op (the reference for fusion).
UNFUSED = ", ".join(["graph-to-loop", "graph-lower-library-calls", "mlcir-entry-points"]
                    + cpu_bufferize() + cpu_to_llvm(0))


def _t(*shape):
    return ir.RankedTensorType.get(list(shape), ir.F32Type.get())


def _module(inputs, body):
    """``main(*inputs)`` returning what ``body(*arguments)`` builds (current context)."""
    module = ir.Module.create()
    with ir.InsertionPoint(module.body):
        fn = func.FuncOp("main", ir.FunctionType.get([_t(*s) for s in inputs], []))
        with ir.InsertionPoint(fn.add_entry_block()):
            results = body(*fn.arguments)
            results = list(results) if isinstance(results, (list, tuple)) else [results]
            func.ReturnOp(results)
        fn.attributes["function_type"] = ir.TypeAttr.get(ir.FunctionType.get(
            [_t(*s) for s in inputs], [r.type for r in results]))
    return module


def _group_names(module):
    block = module.body.operations[0].regions[0].blocks[0]
    return [g.name if len(g.ops) > 1 else g.ops[0].name for g in partition(block)]


def _calls(module):
    calls = []

    def visit(op):
        if op.name == "func.call":
            calls.append(ir.FlatSymbolRefAttr(op.attributes["callee"]).value)
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)
    return calls


# ----------------------------------------------------------------------------------------------
# The rules


def test_mlp_groups_follow_the_rules():
    params = mlp.random_params(0)
    module = mlp.build_module("compiled")
    with module.context, ir.Location.unknown():
        # weights as arguments: each permute_dims is alone (an anchor takes no producer)
        assert _group_names(module) == ["graph.permute_dims", "fused_matmul_add_relu",
                                        "graph.permute_dims", "fused_matmul_add"]
        bind_params(module, params)
        run_pipeline(module, "graph-fold-constants, graph-fuse-ops")
        assert _calls(module) == ["fused_matmul_add_relu", "fused_matmul_add"]
        text = str(module)
    # the weights stay in main, passed as arguments
    for name in ("fused_matmul_add_relu", "fused_matmul_add"):
        body = text.split(f"func.func private @{name}(", 1)[1].split("return", 1)[0]
        assert "arith.constant" not in body
    assert text.split("func.func private", 1)[0].count("arith.constant") == 4


@pytest.mark.usefixtures("ctx")
def test_fusion_rules_for_each_kind():
    def body(x, w, b):
        t = graph.tanh(b)
        return [
            # a reduction takes its elementwise producers and its epilogues
            graph.multiply(graph.sum(graph.exp(graph.add(x, b)), axes=[1], keepdims=1), x),
            # an injective producer of a reduction stays apart; two heavy ops never share a group
            graph.softmax(graph.matmul(graph.permute_dims(x, axes=[1, 0]), x), axis=1),
            # injective ops merge with light producers and consumers
            graph.relu(graph.reshape(graph.negative(w), shape=[256])),
            # a value with two users ends its group (the tanh is read twice)
            graph.add(t, graph.sigmoid(t)),
        ]

    with ir.Location.unknown():
        module = _module([(8, 16), (16, 16), (16,)], body)
    assert _group_names(module) == [
        "graph.tanh",
        "fused_add_exp_sum_multiply",
        "graph.permute_dims", "graph.matmul", "graph.softmax",
        "fused_negative_reshape_relu",
        "fused_sigmoid_add",
    ]


@pytest.mark.usefixtures("ctx")
def test_group_size_and_dynamic_results():
    with ir.Location.unknown():
        chain = _module([(4, 4)], lambda x: graph.exp(graph.relu(graph.tanh(graph.abs(x)))))
        run_pipeline(chain, "graph-fuse-ops{max-ops=2}")
        assert _calls(chain) == ["fused_abs_tanh", "fused_relu_exp"]
    dynamic = mlcir.parse("""
    func.func @main(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
      %0 = "graph.exp"(%x) : (tensor<?x4xf32>) -> tensor<?x4xf32>
      %1 = "graph.relu"(%0) : (tensor<?x4xf32>) -> tensor<?x4xf32>
      return %1 : tensor<?x4xf32>
    }""")
    assert fuse_ops(dynamic) == ["fused_exp_relu"]  # dynamic groups fuse like static ones
    ex = mlcir.build(dynamic)
    for rows in (1, 3, 17):
        x = np.random.default_rng(rows).standard_normal((rows, 4)).astype(np.float32)
        np.testing.assert_allclose(ex.main(x), np.maximum(np.exp(x), 0), rtol=1e-6)
        out = np.empty_like(x)
        ex.main(x, out)  # destination passing still works
        np.testing.assert_allclose(out, np.maximum(np.exp(x), 0), rtol=1e-6)


@pytest.mark.usefixtures("ctx")
def test_ops_in_a_loop_body_fuse_and_the_loop_runs():
    """A loop in a graph function (a recurrent network's steps): the ops of its body fuse
    like the function's own, and the state carried through materialize_in_destination
    runs in place."""
    source = """
    func.func @main(%x: tensor<4x8xf32>, %h0: tensor<1x8xf32>) -> tensor<1x8xf32> {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c4 = arith.constant 4 : index
      %r = scf.for %i = %c0 to %c4 step %c1 iter_args(%h = %h0) -> (tensor<1x8xf32>) {
        %row = tensor.extract_slice %x[%i, 0] [1, 8] [1, 1]
            : tensor<4x8xf32> to tensor<1x8xf32>
        %s = "graph.add"(%h, %row) : (tensor<1x8xf32>, tensor<1x8xf32>) -> tensor<1x8xf32>
        %t = "graph.tanh"(%s) : (tensor<1x8xf32>) -> tensor<1x8xf32>
        %n = bufferization.materialize_in_destination %t in %h
            : (tensor<1x8xf32>, tensor<1x8xf32>) -> tensor<1x8xf32>
        scf.yield %n : tensor<1x8xf32>
      }
      return %r : tensor<1x8xf32>
    }"""
    x = np.random.default_rng(0).standard_normal((4, 8)).astype(np.float32)
    want = np.zeros((1, 8), np.float32)
    for row in x:
        want = np.tanh(want + row)
    built = mlcir.build(mlcir.parse(source))
    np.testing.assert_allclose(built.main(x, np.zeros((1, 8), np.float32)), want, rtol=1e-6)
    assert fuse_ops(mlcir.parse(source)) == ["fused_add_tanh"]


def _layers(count, rng):
    """``count`` identical dense+relu layers with different weights (constants)."""
    weights = [(rng.standard_normal((32, 32)) * 0.2).astype(np.float32) for _ in range(count)]
    biases = [rng.standard_normal(32).astype(np.float32) for _ in range(count)]

    def body(x):
        for w, b in zip(weights, biases):
            x = graph.relu(graph.add(graph.matmul(x, make_constant(w, _t(32, 32))),
                                     make_constant(b, _t(32))))
        return x

    with ir.Location.unknown():
        module = _module([(4, 32)], body)

    def reference(x):
        for w, b in zip(weights, biases):
            x = np.maximum(x @ w + b, 0)
        return x

    return module, reference


@pytest.mark.usefixtures("ctx")
def test_identical_layers_share_one_primitive_and_one_task(rng):
    module, reference = _layers(4, rng)
    tasks = extract_tasks(module, AVX512_BUILD)  # a 32-column weight is one panel: not packed
    assert [(t.name, t.weight) for t in tasks] == [("fused_matmul_add_relu", 4)]
    fused = mlcir.ir.clone_module(module)
    assert fuse_ops(fused) == ["fused_matmul_add_relu"]
    assert _calls(fused) == ["fused_matmul_add_relu"] * 4
    x = rng.standard_normal((4, 32)).astype(np.float32)
    np.testing.assert_allclose(mlcir.build(module).main(x), reference(x), rtol=1e-4, atol=1e-4)


# ----------------------------------------------------------------------------------------------
# Fused and unfused builds agree


def _check_fused_against_unfused(module, args, reference):
    fused = mlcir.build(module)
    unfused = mlcir.build(module, pipeline=UNFUSED)
    got, base = fused.main(*args), unfused.main(*args)
    got = got if isinstance(got, tuple) else (got,)
    base = base if isinstance(base, tuple) else (base,)
    for g, b, r in zip(got, base, reference):
        np.testing.assert_allclose(g, r, rtol=1e-4, atol=1e-4 * max(1.0, np.abs(r).max()))
        np.testing.assert_allclose(g, b, rtol=1e-5, atol=1e-5 * max(1.0, np.abs(r).max()))


def test_fused_mlp_agrees(rng):
    params = mlp.random_params(3)
    module = mlp.build_module("compiled")
    with module.context:
        bind_params(module, params)
    x = rng.standard_normal((1, 784)).astype(np.float32)
    _check_fused_against_unfused(module, [x], [mlp.reference(x, params)])


@pytest.mark.usefixtures("ctx")
def test_fused_cnn_agrees(rng):
    w = (rng.standard_normal((8, 3, 3, 3)) * 0.3).astype(np.float32)
    b = rng.standard_normal((1, 8, 1, 1)).astype(np.float32)
    conv = dict(strides=[1, 1], padding=[1, 1, 1, 1], dilation=[1, 1], groups=1)
    pool = dict(kernel=[2, 2], strides=[2, 2], padding=[0, 0, 0, 0], dilation=[1, 1], ceil_mode=0)
    with ir.Location.unknown():
        module = _module([(2, 3, 16, 16)], lambda x: graph.max_pool2d(graph.relu(graph.add(
            graph.conv2d(x, make_constant(w, _t(*w.shape)), **conv),
            make_constant(b, _t(*b.shape)))), **pool))
        fused = mlcir.ir.clone_module(module)
        fuse_ops(fused)
        assert _calls(fused) == ["fused_conv2d_add_relu"]
    x = rng.standard_normal((2, 3, 16, 16)).astype(np.float32)
    ref = OPS["max_pool2d"].evaluate(
        np.maximum(OPS["conv2d"].evaluate(x, w, **conv) + b, 0), **pool)
    _check_fused_against_unfused(module, [x], [ref])


@pytest.mark.usefixtures("ctx")
def test_fused_softmax_layer_norm_chain_agrees(rng):
    gamma = rng.standard_normal(32).astype(np.float32)
    beta = rng.standard_normal(32).astype(np.float32)

    def body(x, y):
        s = graph.softmax(graph.multiply(x, y), axis=1)
        h = graph.add(s, y)
        n = graph.layer_norm(graph.add(h, x), make_constant(gamma, _t(32)),
                             make_constant(beta, _t(32)), axes=[1], epsilon=1e-5)
        return graph.tanh(n)

    with ir.Location.unknown():
        module = _module([(6, 32), (6, 32)], body)
        fused = mlcir.ir.clone_module(module)
        fuse_ops(fused)
        # both adds are epilogues of the softmax: the layer_norm cannot take a heavy group
        assert _calls(fused) == ["fused_multiply_softmax_add_add", "fused_layer_norm_tanh"]
    x, y = (rng.standard_normal((6, 32)).astype(np.float32) for _ in range(2))
    s = OPS["softmax"].evaluate(x * y, axis=1) + y
    ref = np.tanh(OPS["layer_norm"].evaluate(s + x, gamma, beta, axes=[1], epsilon=1e-5))
    _check_fused_against_unfused(module, [x, y], [ref])


# ----------------------------------------------------------------------------------------------
# Fused kernels are schedulable


def _fused_tasks(rng):
    """Tasks of a model with matmul+add+relu, conv2d+add+relu, softmax and layer_norm groups."""
    ctx = mlcir.make_context()
    with ctx, ir.Location.unknown():
        w = rng.standard_normal((32, 48)).astype(np.float32)
        b = rng.standard_normal(48).astype(np.float32)
        cw = rng.standard_normal((8, 4, 3, 3)).astype(np.float32)
        cb = rng.standard_normal((1, 8, 1, 1)).astype(np.float32)
        g = rng.standard_normal(48).astype(np.float32)

        def body(x, img):
            return [
                graph.relu(graph.add(graph.matmul(x, make_constant(w, _t(32, 48))),
                                     make_constant(b, _t(48)))),
                graph.relu(graph.add(graph.conv2d(
                    img, make_constant(cw, _t(8, 4, 3, 3)), strides=[1, 1],
                    padding=[1, 1, 1, 1], dilation=[1, 1], groups=1),
                    make_constant(cb, _t(1, 8, 1, 1)))),
                graph.softmax(graph.exp(x), axis=1),
                graph.relu(graph.layer_norm(
                    graph.add(graph.matmul(x, make_constant(w, _t(32, 48))),
                              make_constant(b, _t(48))),
                    make_constant(g, _t(48)), make_constant(b, _t(48)), axes=[1], epsilon=1e-5)),
            ]

        module = _module([(16, 32), (1, 4, 12, 12)], body)
        return ctx, extract_tasks(module, AVX512_BUILD)


_TASKS = None


def _tasks():
    global _TASKS
    if _TASKS is None:
        _TASKS = _fused_tasks(np.random.default_rng(0))
    return _TASKS


def test_fused_tasks_are_the_expected_groups():
    _, tasks = _tasks()
    names = sorted(t.name for t in tasks)
    # The convolution reads 4 channels, fewer than half a block: it stays NCHW
    # (graph-layout-nchwc); 32-column weights are one panel of an AVX-512 build: unpacked.
    assert names == sorted(["fused_matmul_add_relu", "fused_conv2d_add_relu", "fused_exp_softmax",
                            "fused_layer_norm_relu", "fused_matmul_add"])


@pytest.mark.parametrize("target", ["llvm", "llvm -threads=2"])
def test_default_space_schedules_fused_kernels(target):
    """Each sampled candidate (fixed seeds) matches the unscheduled kernel or is refused with
    a ScheduleError; every kernel gets at least one valid candidate."""
    ctx, tasks = _tasks()
    space = default_space(target)
    with ctx:
        for task in tasks:
            reference_ex = mlcir.build(task.module)
            inputs = random_inputs(reference_ex)
            expected = reference_ex.main(*inputs)
            valid = 0
            for seed in range(3):
                sch = Schedule(task.module, seed=seed)
                try:
                    space(sch)
                    got = mlcir.build(sch.mod, target=target).main(*inputs)
                except ScheduleError:
                    continue
                assert sch.trace.decisions, f"{task.name}: the space sampled nothing"
                np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4,
                                           err_msg=f"{task.name}, seed {seed}:\n{sch.trace}")
                valid += 1
            assert valid, f"no valid schedule of {task.name} in 3 samples"
