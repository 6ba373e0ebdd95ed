"""The differential model fuzzer (``python -m mlcir.testing.fuzz_models``): random valid ONNX
models built by mlcir agree with onnxruntime or are refused with a clear error; a failing
model is shrunk. CI runs a 200-case slice with a fixed seed (docs/fuzzing.md has the large
runs)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper

from mlcir.errors import FrontendError
from mlcir.frontend import from_onnx
from mlcir.testing import fuzz_models
from mlcir.testing.model_generator import OPS, generate

CASES = 200
MAX_REFUSED = 0.05


@pytest.mark.slow
def test_random_models_match_onnxruntime_or_are_refused_clearly():
    results = fuzz_models.fuzz(CASES, seed=0, jobs=2, tune_fraction=0.02)  # 3 tuned
    report = fuzz_models.summary(results)
    bad = [r for r in results if r["outcome"] in fuzz_models.BAD]
    assert not bad, report
    refused = [r for r in results if r["outcome"] == "refused"]
    assert len(refused) <= MAX_REFUSED * CASES, report
    assert all(r["reason"].split(":")[0].endswith("Error") for r in refused), report
    assert any(r["tune"] and r["outcome"] == "ok" for r in results), report
    assert {r["dtype"] for r in results} == {"float32", "float64", "int32", "int64"}
    assert any(r["symbolic"] for r in results)


@pytest.mark.parametrize("seed", range(40))
def test_generated_models_are_valid_and_run_in_onnxruntime(seed):
    """Valid by construction: the checker accepts the model, onnxruntime runs every feed,
    and each output has the shape the generator declared."""
    generated = generate(seed)
    onnx.checker.check_model(generated.model, full_check=True)
    session = ort.InferenceSession(generated.model.SerializeToString(),
                                   providers=["CPUExecutionProvider"])
    assert len(generated.inputs) == (2 if generated.symbolic else 1)
    for feeds in generated.inputs:
        for out, info in zip(session.run(None, feeds), generated.model.graph.output):
            dims = [d.dim_value if d.HasField("dim_value") else None
                    for d in info.type.tensor_type.shape.dim]
            assert len(dims) == out.ndim
            assert all(d is None or d == n for d, n in zip(dims, out.shape))
            if out.dtype.kind == "f":
                assert np.isfinite(out).all()


def test_generation_is_a_function_of_the_seed():
    first, again = generate(7), generate(7)
    assert first.model.SerializeToString() == again.model.SerializeToString()
    for a, b in zip(first.inputs, again.inputs):
        assert a.keys() == b.keys() and all(np.array_equal(a[k], b[k]) for k in a)
    assert generate(8).model.SerializeToString() != first.model.SerializeToString()


def test_generator_draws_every_op_kind():
    drawn = set()
    for seed in range(150):
        drawn.update(generate(seed).ops)
    assert drawn == set(OPS)


def test_generator_covers_the_types_and_broadcasting_the_issue_lists():
    """int64 beside int32, batched MatMul weights broadcast against the activations, casts
    between integer and float types, and the ops added after the first runs."""
    dtypes, casts, broadcast, op_types = set(), set(), False, set()
    for seed in range(300):
        generated = generate(seed)
        dtypes.add(generated.dtype)
        inits = {t.name: tuple(t.dims) for t in generated.model.graph.initializer}
        op_types.update(node.op_type for node in generated.model.graph.node)
        for node in generated.model.graph.node:
            if node.op_type == "Cast":
                casts.add(node.attribute[0].i)
            if node.op_type == "MatMul" and len(inits.get(node.input[1], ())) == 3:
                broadcast = True
    assert dtypes == {"float32", "float64", "int32", "int64"}
    assert {TensorProto.INT32, TensorProto.INT64, TensorProto.DOUBLE, TensorProto.FLOAT} <= casts
    assert broadcast
    assert {"Exp", "Log", "Reciprocal", "Pow", "Atan", "Asinh", "Celu", "PRelu", "Mod",
            "LessOrEqual", "And", "Or", "Xor", "Not", "ArgMax", "ArgMin", "ReduceL1", "ReduceL2",
            "ReduceSumSquare", "ReduceLogSumExp", "ReduceProd", "Trilu", "InstanceNormalization",
            "MeanVarianceNormalization", "SpaceToDepth", "DepthToSpace"} <= op_types


def test_a_size_cap_keeps_the_ops_and_makes_the_dims_small():
    """The shrinker regenerates a failing seed with capped sizes: seed 0 (a Conv over a
    3x8x12x12 image) at cap 2 still has its Conv; its channels are 2 and its image 5x5."""
    first = generate(0)
    assert "conv" in first.ops
    found, cap = fuzz_models.smallest_sizes(0, 30, lambda g: "conv" in g.ops)
    assert cap == 2
    dims = [tuple(d.dim_value for d in i.type.tensor_type.shape.dim)
            for i in found.model.graph.input]
    assert dims == [(3, 2, 5, 5)]
    session = ort.InferenceSession(found.model.SerializeToString(),
                                   providers=["CPUExecutionProvider"])
    session.run(None, found.inputs[0])
    never, none = fuzz_models.smallest_sizes(0, 30, lambda _: False)
    assert none is None and never.model.SerializeToString() == first.model.SerializeToString()


def test_compare_tolerances():
    compare = fuzz_models.compare
    x = np.array([1.0, -2.0, 3.0], np.float32)
    assert compare(x, x + 1e-6) is None
    assert "max difference" in compare(x, x + np.float32(0.1))
    assert "NaN" in compare(np.array([np.nan, 1.0]), np.array([1.0, 1.0]))
    assert compare(np.array([1, 2], np.int32), np.array([1, 3], np.int32)) == "1 of 2 elements differ"
    assert "shape" in compare(x, x[:2])
    assert "dtype" in compare(x, x.astype(np.float64))


def _chain_with(op: str) -> onnx.ModelProto:
    """relu -> OP -> relu -> add, with an extra output: OP is what fails."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 5])
    nodes = [helper.make_node("Relu", ["x"], ["a"]),
             helper.make_node(op, ["a"], ["b"]),
             helper.make_node("Relu", ["b"], ["c"]),
             helper.make_node("Add", ["c", "a"], ["d"]),
             helper.make_node("Neg", ["d"], ["e"])]
    outs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, [2, 5]) for n in ("e", "a")]
    return helper.make_model(helper.make_graph(nodes, "g", [x], outs),
                             opset_imports=[helper.make_opsetid("", 17)])


def test_a_failing_model_is_shrunk_to_what_fails():
    """Bernoulli is not imported (refused): shrinking keeps refusing models and ends at the
    Bernoulli node alone with what feeds it."""
    model = _chain_with("Bernoulli")
    feeds = [{"x": np.random.default_rng(0).standard_normal((2, 5)).astype(np.float32)}]
    options = {"threads": 1, "layout": "packed", "tune": False}
    assert fuzz_models.check_model(model.SerializeToString(), feeds, options)["outcome"] \
        == "refused"
    small = fuzz_models.shrink(model, feeds, options, "refused", budget=20)
    ops = [n.op_type for n in small.graph.node]
    assert "Bernoulli" in ops and len(ops) < len(model.graph.node)
    assert len(small.graph.output) == 1
    onnx.checker.check_model(small)


def test_symbolic_dims_of_the_inputs_are_shrunk():
    """A refused model with the input ``[N, 5]`` run at N = 3 and 6: shrinking its inputs
    keeps one feed, at N = 1 (each step checked in a worker)."""
    model = _chain_with("Bernoulli")
    for value in (*model.graph.input, *model.graph.output):
        value.type.tensor_type.shape.dim[0].dim_param = "N"
    rng = np.random.default_rng(0)
    feeds = [{"x": rng.standard_normal((n, 5)).astype(np.float32)} for n in (3, 6)]
    options = {"threads": 1, "layout": "none", "tune": False}
    small = fuzz_models.shrink_feeds(
        model, feeds, lambda f: fuzz_models.fails_alike(model, f, options, "refused"))
    assert len(small) == 1 and small[0]["x"].shape == (1, 5)
    np.testing.assert_array_equal(small[0]["x"], feeds[0]["x"][:1])
    assert fuzz_models.shrink_feeds(model, feeds, lambda _: False) == feeds


def test_refusals_name_the_node_and_op():
    model = _chain_with("Bernoulli")
    model.graph.node[1].name = "the_bernoulli"
    feeds = [{"x": np.zeros((2, 5), np.float32)}]
    result = fuzz_models.check_model(model.SerializeToString(), feeds,
                                     {"threads": 1, "layout": "none", "tune": False})
    assert result["outcome"] == "refused" and result["stage"] == "import"
    assert "the_bernoulli" in result["reason"] and "Bernoulli" in result["reason"]


FOUND = Path(__file__).parent / "models" / "fuzz"


def _found_case(name: str) -> tuple[bytes, list[dict[str, np.ndarray]], dict]:
    """A shrunk model the fuzzer found, its inputs (``name@i`` per feed) and build options."""
    meta = json.loads((FOUND / f"{name}.json").read_text())
    with np.load(FOUND / f"{name}.npz") as data:
        feeds: dict[int, dict[str, np.ndarray]] = {}
        for key in data.files:
            input_name, index = key.rsplit("@", 1)
            feeds.setdefault(int(index), {})[input_name] = data[key]
    options = {"threads": meta["threads"], "layout": meta["layout"], "tune": False}
    return (FOUND / f"{name}.onnx").read_bytes(), [feeds[i] for i in sorted(feeds)], options


@pytest.mark.parametrize("name", [
    # A dynamic kernel's destination size read through tensor.dim of the destination itself.
    "dynamic-slice-destination",
    # ... and through the tensor.insert_slice of a padded pooling's border strips.
    "dynamic-pool-insert-slice-destination",
    # A packed matmul's register tile with a masked partial last row (M = 9).
    "packed-matmul-row-tail-mask",
    # MeanVarianceNormalization over an axis of size 1: 0 / 0 = NaN (mlcir had an epsilon).
    "mvn-single-element-group-nan",
    "int-abs-math-absi",  # int32 Abs -> ReduceSum -> MatMul: math.absi was left unlowered
])
def test_models_the_fuzzer_found_match_onnxruntime(name):
    model, feeds, options = _found_case(name)
    result = fuzz_models.check_model(model, feeds, options)
    assert result["outcome"] == "ok", result


def test_split_along_a_static_axis_of_a_symbolic_input():
    """Split needs only the size of the dimension it splits (the fuzzer's commonest refusal)."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 6, 4])
    outs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, ["N", 3, 4]) for n in "ab"]
    model = helper.make_model(helper.make_graph(
        [helper.make_node("Split", ["x"], ["a", "b"], axis=1)], "g", [x], outs),
        opset_imports=[helper.make_opsetid("", 17)])
    rng = np.random.default_rng(0)
    feeds = [{"x": rng.standard_normal((n, 6, 4)).astype(np.float32)} for n in (1, 5)]
    result = fuzz_models.check_model(model.SerializeToString(), feeds,
                                     {"threads": 1, "layout": "packed", "tune": False})
    assert result["outcome"] == "ok", result
    model.graph.node[0].attribute[0].i = 0  # along N itself: refused, saying why
    with pytest.raises(FrontendError, match="Split along dimension 0, which is symbolic"):
        from_onnx(model)


@pytest.mark.parametrize("shape, k, upper", [
    (["N", 5], 1, 1), ([3, "N"], -1, 0), (["N", "N"], 0, 1), ([2, "N", 4], 2, 0)])
def test_trilu_with_a_symbolic_side(shape, k, upper):
    """Trilu of a value with a symbolic row or column count (refused before: its mask was a
    constant built at import): the mask comes from run-time ranges, at two sizes."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, shape)
    node = helper.make_node("Trilu", ["x", "k"], ["y"], upper=upper)
    model = helper.make_model(helper.make_graph(
        [node], "g", [x], [y], [helper.make_tensor("k", TensorProto.INT64, [], [k])]),
        opset_imports=[helper.make_opsetid("", 17)])
    rng = np.random.default_rng(0)
    feeds = [{"x": rng.standard_normal([n if d == "N" else d for d in shape]).astype(np.float32)}
             for n in (1, 6)]
    result = fuzz_models.check_model(model.SerializeToString(), feeds,
                                     {"threads": 1, "layout": "packed", "tune": False})
    assert result["outcome"] == "ok", result
