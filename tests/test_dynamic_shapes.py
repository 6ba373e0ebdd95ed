"""Dynamic shapes end to end: models with a symbolic batch (hand-built and PyTorch-exported)
compile once and run at any batch against onnxruntime, from Python and the CLI; result shapes
computed on the host match the kernels' results; inputs that disagree on a symbol are an
error naming both; saved models keep their symbols; tuned sizes dispatch to their static
specialisations."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from mlir import ir
from mlir.dialects import func

import mlcir
from mlcir.errors import DimMismatchError, RuntimeInputError
from mlcir.frontend import from_onnx
from mlcir.passes.specialize import add_specializations
from mlcir.runtime.model_file import read_metadata
from mlcir.runtime.shapes import compile_expression, result_shapes
from mlcir.testing import onnx_models as om

BATCHES = (1, 3, 17, 64)
PYTORCH = Path(__file__).parent / "models" / "pytorch"
MLCIR = Path(sys.executable).with_name("mlcir")


def symbolic_batch(model: onnx.ModelProto, symbol: str = "N") -> onnx.ModelProto:
    """``model`` with the batch dim (dim 0) of its graph inputs and outputs the symbol
    ``symbol`` and no stale intermediate shapes. (PyTorch is too large to install here to
    re-export with ``dynamic_axes``; this rewrites the files exported with batch 1.)"""
    model = onnx.ModelProto.FromString(model.SerializeToString())
    for vi in list(model.graph.input) + list(model.graph.output):
        vi.type.tensor_type.shape.dim[0].dim_param = symbol
    del model.graph.value_info[:]
    return model


def _check_batches(model: onnx.ModelProto, ex: mlcir.Executable, make_inputs, rtol=1e-4,
                   atol=1e-5) -> None:
    for batch in BATCHES:
        inputs = make_inputs(batch)
        want = om.reference(model, inputs)
        got = ex.main(*inputs.values())
        got = list(got) if isinstance(got, tuple) else [got]
        shapes = result_shapes(ex.main.signature, [a.shape for a in inputs.values()])
        for (name, expected), actual, host in zip(want.items(), got, shapes):
            assert actual.shape == expected.shape == host, (name, batch)
            np.testing.assert_allclose(actual, expected, rtol=rtol, atol=atol,
                                       err_msg=f"{name} at batch {batch}")


@pytest.mark.parametrize("name", ["mlp", "mnist_cnn"])
def test_hand_built_models_with_a_symbolic_batch(name):
    model = getattr(om, name)(batch="N")
    ex = mlcir.build(from_onnx(model))
    assert "[N, " in ex.main.signature.describe()
    _check_batches(model, ex, getattr(om, f"{name}_inputs"))


def _pytorch_inputs(model: onnx.ModelProto):
    dims = [d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim][1:]
    return lambda batch: {"x": np.random.default_rng(batch).standard_normal(
        [batch, *dims]).astype(np.float32)}


# attn_* and block_dynamo: the tracing exporters baked batch 1 into their Reshape shapes (and
# a dynamic export computes them with Shape/Gather/Concat on the batch, which the frontend
# does not import yet), so only these two run at another batch.
@pytest.mark.parametrize("file", ["lenet_ts.onnx", "block_ts.onnx"])
def test_pytorch_models_with_a_dynamic_batch(file):
    model = symbolic_batch(onnx.load(str(PYTORCH / file)))
    ex = mlcir.build(from_onnx(model))
    assert ex.main.signature.results[0].symbols[0] == "N"
    _check_batches(model, ex, _pytorch_inputs(model))


def test_pytorch_model_with_a_dynamic_batch_through_the_cli(tmp_path):
    model = symbolic_batch(onnx.load(str(PYTORCH / "lenet_ts.onnx")))
    onnx.save(model, tmp_path / "lenet_n.onnx")
    subprocess.run([str(MLCIR), "compile", tmp_path / "lenet_n.onnx", "-o",
                    tmp_path / "lenet.mlcir"], check=True, capture_output=True, timeout=600)
    function = read_metadata(tmp_path / "lenet.mlcir")["functions"][0]
    assert function["args"][0]["symbols"] == ["N", None, None, None]  # saved symbolic dims
    make_inputs = _pytorch_inputs(model)
    for batch in BATCHES:
        inputs = make_inputs(batch)
        np.savez(tmp_path / "in.npz", **inputs)
        result = subprocess.run([str(MLCIR), "run", tmp_path / "lenet.mlcir", "--inputs",
                                 tmp_path / "in.npz", "--outputs", tmp_path / "out.npz"],
                                capture_output=True, text=True, timeout=600)
        assert result.returncode == 0, result.stderr
        with np.load(tmp_path / "out.npz") as out:
            (want,) = om.reference(model, inputs).values()
            np.testing.assert_allclose(out[model.graph.output[0].name], want, rtol=1e-4,
                                       atol=1e-5)


# One graph op per row, symbolic dims in its inputs: the host's shape (from the op's shape
# rule) must be the shape of what the kernel computed, at several sizes.
SINGLE_OPS = [
    ("Add", {"a": ["N", 4], "b": [4]}, {}, None),
    ("MatMul", {"a": ["N", "S", 8], "b": [8, 5]}, {}, None),
    ("Transpose", {"x": ["N", 3, "S"]}, {"perm": [2, 0, 1]}, None),
    ("Softmax", {"x": ["N", 7]}, {"axis": -1}, None),
    ("ReduceSum", {"x": ["N", 6, 5]}, {"keepdims": 0}, {"axes": np.array([1], np.int64)}),
    ("Concat", {"a": ["N", 2], "b": ["M", 2]}, {"axis": 0}, None),
    ("Flatten", {"x": ["N", 3, 4]}, {"axis": 1}, None),
    ("Relu", {"x": ["N", "S"]}, {}, None),
]


@pytest.mark.parametrize("op_type, shapes, attrs, initializers", SINGLE_OPS,
                         ids=[r[0] for r in SINGLE_OPS])
def test_host_shapes_are_the_kernels_shapes(op_type, shapes, attrs, initializers):
    model = om.single_op(op_type, shapes, attrs=attrs, initializers=initializers)
    ex = mlcir.build(from_onnx(model))
    for n, s, m in ((1, 1, 1), (3, 5, 2), (17, 2, 9)):
        arrays = om.single_op_inputs(model, dims={"N": n, "S": s, "M": m})
        (expected,) = om.reference(model, arrays).values()
        got = ex.main(*arrays.values())
        host = result_shapes(ex.main.signature, [a.shape for a in arrays.values()])
        assert got.shape == host[0] == expected.shape
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)


def test_inputs_that_disagree_on_a_symbol_name_both():
    model = om.single_op("Add", {"a": ["N", 4], "b": ["N", 4]})
    ex = mlcir.build(from_onnx(model))
    a = np.ones((3, 4), np.float32)
    np.testing.assert_array_equal(ex.main(a, a), a + a)
    with pytest.raises(DimMismatchError, match=r"inputs 'a' and 'b' share the symbolic dim "
                                               r"'N'.*'a' dim 0 is 3, 'b' dim 0 is 5"):
        ex.main(a, np.ones((5, 4), np.float32))
    assert issubclass(DimMismatchError, RuntimeInputError)


def test_dim_expressions():
    assert compile_expression("N")({"N": 7}) == 7
    assert compile_expression("2*(N - 1) + S // 2")({"N": 4, "S": 9}) == 10
    assert compile_expression("x.0 + 3")({"x.0": 1}) == 4
    with pytest.raises(ValueError, match="bad dim expression"):
        compile_expression("N +")


def test_saved_model_keeps_its_symbols(tmp_path):
    model = om.mlp(batch="N")
    mlcir.build(from_onnx(model)).save(tmp_path / "mlp.mlcir")
    loaded = mlcir.load(tmp_path / "mlp.mlcir")
    assert loaded.main.signature.describe() == "main(x: float32[N, 784]) -> (float32[N, 10])"
    _check_batches(model, loaded, om.mlp_inputs)


def test_a_specialised_size_dispatches_to_its_static_function(tmp_path):
    model = om.mlp(batch="N")
    mod = from_onnx(model)
    with mod.context:
        assert add_specializations(mod, [{"x": [1, 784]}, {"x": [64, 784]}]) == [
            "main__1x784", "main__64x784"]
    ex = mlcir.build(mod)
    for batch, chosen in ((1, "main__1x784"), (3, "main"), (64, "main__64x784")):
        x = om.mlp_inputs(batch)["x"]
        assert ex.main.dispatch(x).signature.name == chosen
        assert ex[chosen].signature.args[0].shape == ((batch, 784) if chosen != "main"
                                                      else (None, 784))
    _check_batches(model, ex, om.mlp_inputs)
    ex.save(tmp_path / "spec.mlcir")
    loaded = mlcir.load(tmp_path / "spec.mlcir")
    assert loaded.main.dispatch(om.mlp_inputs(64)["x"]).signature.name == "main__64x784"


def test_tuned_sizes_dispatch_to_their_tuned_kernels(tmp_path):
    """``mlcir tune --input-shapes`` with two sizes tunes their static kernels; the records
    carry the sizes, so ``compile`` and ``build`` with them dispatch those sizes to the tuned
    specialisations and any other size to the dynamic kernels."""
    model = om.mlp(batch="N")
    onnx.save(model, tmp_path / "mlp_n.onnx")
    result = subprocess.run(
        [str(MLCIR), "tune", tmp_path / "mlp_n.onnx", "-o", tmp_path / "records.json",
         "--trials", "4", "--trials-per-round", "2", "--strategy", "random", "--cost-model",
         "random", "--quiet", "--input-shapes", "x:[1,784]", "x:[8,784]"],
        capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr
    from mlcir.driver import staged_module
    from mlcir.tune.apply import as_database

    db = as_database(tmp_path / "records.json")
    assert [s.shape_dict() for s in db.specializations] == [{"x": [1, 784]}, {"x": [8, 784]}]
    ex = mlcir.build(from_onnx(model), records=tmp_path / "records.json")
    assert [name for _, name in ex.main.signature.specializations] == [
        "main__1x784", "main__8x784"]
    for batch, chosen in ((1, "main__1x784"), (8, "main__8x784"), (5, "main")):
        assert ex.main.dispatch(om.mlp_inputs(batch)["x"]).signature.name == chosen
    _check_batches(model, ex, om.mlp_inputs)
    # The tuned schedules went to static kernels only (the dynamic ones are no tasks).
    staged = staged_module(from_onnx(model), "llvm", records=db, schedule="none",
                           until="scheduled")
    mod, scheduled = staged.prepared.work, staged.schedule_sources
    kernels = {op.sym_name.value: op for op in mod.body.operations
               if isinstance(op, func.FuncOp)}
    assert scheduled
    for name in scheduled:
        fn_type = ir.FunctionType(kernels[name].attributes["function_type"].value)
        assert all(ir.ShapedType(t).has_static_shape for t in fn_type.inputs), name
    subprocess.run([str(MLCIR), "compile", tmp_path / "mlp_n.onnx", "--tuning-records",
                    tmp_path / "records.json", "-o", tmp_path / "tuned.mlcir"], check=True,
                   capture_output=True, timeout=600)
    (function,) = [f for f in read_metadata(tmp_path / "tuned.mlcir")["functions"]
                   if f["name"] == "main"]
    assert [s["function"] for s in function["specializations"]] == ["main__1x784",
                                                                    "main__8x784"]
