"""The graph and loop dialects: builders, verifiers with locations, IRDL in sync."""

from __future__ import annotations

import inspect

import pytest
from mlir import ir
from mlir.dialects import func

import mlcir
from mlcir.dialects import graph, irdl_sources, loop, write_irdl_files
from mlcir.dialects.opdef import ShapeError
from mlcir.ir import verify_module


def _fn(*types):
    module = ir.Module.create()
    with ir.InsertionPoint(module.body):
        fn = func.FuncOp("f", ir.FunctionType.get(list(types), []))
        block = fn.add_entry_block()
    return module, block


def t(*shape, elem="f32"):
    return ir.RankedTensorType.get([ir.ShapedType.get_dynamic_size() if d is None else d
                                    for d in shape], ir.Type.parse(elem))


@pytest.mark.usefixtures("ctx")
def test_builders_infer_result_types():
    with ir.Location.unknown():
        _, block = _fn(t(2, 3, 4), t(4, 5), t(5), t(1, None))
        a, w, v, d = block.arguments
        with ir.InsertionPoint(block):
            mm = graph.matmul(a, w)
            assert str(mm.type) == "tensor<2x3x5xf32>"
            assert str(graph.add(mm, v).type) == "tensor<2x3x5xf32>"
            assert str(graph.permute_dims(mm, axes=[2, 0, 1]).type) == "tensor<5x2x3xf32>"
            assert str(graph.relu(d).type) == "tensor<1x?xf32>"
            assert str(graph.matmul(w, v).type) == "tensor<4xf32>"
            assert str(graph.ewise_fma(v, v, v).type) == "tensor<5xf32>"


@pytest.mark.usefixtures("ctx")
def test_builders_reject_bad_operands_naming_the_op():
    with ir.Location.unknown():
        _, block = _fn(t(2, 3), t(4, 5), t(2, 3, elem="f16"))
        a, w, h = block.arguments
        with ir.InsertionPoint(block):
            with pytest.raises(ShapeError, match="'graph.matmul': contracting dimensions differ"):
                graph.matmul(a, w)
            with pytest.raises(ShapeError, match="'graph.add': operands have different element types"):
                graph.add(a, h)
            with pytest.raises(ShapeError, match="'graph.relu' takes 1 operands"):
                graph.build("relu", [a, a])
            with pytest.raises(ShapeError, match=r"missing attributes \['axes'\]"):
                graph.permute_dims(a)


def test_every_op_has_a_builder_made_from_its_row():
    for name, opdef in graph.OPS.items():
        builder = getattr(graph, name)
        assert builder.__name__ == name
        summary, _, attr_lines = builder.__doc__.partition("\n\n")
        assert summary == opdef.summary, name
        assert attr_lines.splitlines() == [f"{a.name}: {a.doc}" for a in opdef.attrs], name
        params = inspect.signature(builder).parameters
        positional = [p for p, v in params.items() if v.kind is v.POSITIONAL_OR_KEYWORD]
        keyword = [p for p, v in params.items() if v.kind is v.KEYWORD_ONLY]
        assert positional == list(opdef.operands), name
        assert keyword == [a.name for a in opdef.attrs] + ["loc"], name
    # The builtins' names keep their builders (graph.sum is the reduction, not builtins.sum).
    assert graph.sum.__doc__.startswith(graph.OPS["sum"].summary)
    assert str(inspect.signature(graph.clip)) == (
        "(x: 'ir.Value', *, min: 'float' = <required>, max: 'float' = <required>, "
        "loc: 'ir.Location | None' = None) -> 'ir.Value'")


@pytest.mark.usefixtures("ctx")
def test_generated_builders_build_ops_that_verify():
    with ir.Location.unknown():
        module, block = _fn(t(2, 3), t(2, 3), t(1, 3, 8, 8), t(4, 3, 3, 3))
        a, b, x, w = block.arguments
        with ir.InsertionPoint(block):
            graph.relu(a)
            graph.add(a, rhs=b)
            graph.sum(a, axes=[1], keepdims=0)
            graph.clip(a, min=0.0, max=6.0)
            graph.conv2d(x, w, strides=[1, 1], padding=[1, 1, 1, 1], dilation=[1, 1], groups=1)
            graph.astype(a, dtype="i64")
            func.ReturnOp([])
        verify_module(module)
    text = str(module)
    assert '"graph.relu"(%arg0) : (tensor<2x3xf32>) -> tensor<2x3xf32>' in text
    assert '"graph.add"(%arg0, %arg1) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>' in text
    assert ('"graph.sum"(%arg0) {axes = array<i64: 1>, keepdims = 0 : i64} : '
            '(tensor<2x3xf32>) -> tensor<2xf32>') in text
    assert ('"graph.clip"(%arg0) {max = 6.000000e+00 : f64, min = 0.000000e+00 : f64} : '
            '(tensor<2x3xf32>) -> tensor<2x3xf32>') in text
    assert ('"graph.conv2d"(%arg2, %arg3) {dilation = array<i64: 1, 1>, groups = 1 : i64, '
            'padding = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : '
            '(tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x8x8xf32>') in text
    assert '"graph.astype"(%arg0) {dtype = i64} : (tensor<2x3xf32>) -> tensor<2x3xi64>' in text


def test_builders_bind_arguments_like_functions():
    with pytest.raises(TypeError):
        graph.relu()
    with pytest.raises(TypeError):
        graph.sum(None, axis=[0])  # not an attribute of graph.sum
    with pytest.raises(TypeError):
        graph.add(None, None, None)


@pytest.mark.usefixtures("ctx")
def test_parse_errors_carry_file_line_col():
    text = ("func.func @f(%a: tensor<4xf32>) -> tensor<5xf32> {\n"
            "  %0 = \"graph.relu\"(%a) : (tensor<4xf32>) -> tensor<5xf32>\n"
            "  return %0 : tensor<5xf32>\n}\n")
    with pytest.raises(mlcir.VerificationError) as info:
        mlcir.parse(text, source_name="model.mlir")
    assert str(info.value).startswith("model.mlir:2:8: error: 'graph.relu' op result #0")
    assert info.value.diagnostics[0][0] == "model.mlir:2:8"


@pytest.mark.usefixtures("ctx")
def test_derived_block_names_for_plain_linalg():
    module = mlcir.parse("""
    func.func @k(%a: tensor<8x8xf32>, %b: tensor<8x8xf32>, %c: tensor<8x8xf32>) -> tensor<8x8xf32> {
      %z = arith.constant 0.0 : f32
      %f = linalg.fill ins(%z : f32) outs(%c : tensor<8x8xf32>) -> tensor<8x8xf32>
      %m = linalg.matmul ins(%a, %b : tensor<8x8xf32>, tensor<8x8xf32>) outs(%f : tensor<8x8xf32>) -> tensor<8x8xf32>
      %s = linalg.add ins(%m, %a : tensor<8x8xf32>, tensor<8x8xf32>) outs(%c : tensor<8x8xf32>) -> tensor<8x8xf32>
      %s2 = linalg.add {loop.block = "add"} ins(%s, %a : tensor<8x8xf32>, tensor<8x8xf32>) outs(%c : tensor<8x8xf32>) -> tensor<8x8xf32>
      return %s2 : tensor<8x8xf32>
    }""")
    fn = module.body.operations[0]
    blocks = loop.name_blocks(fn.operation)
    assert [b.name for b in blocks] == ["matmul_init", "matmul", "add_1", "add"]
    assert blocks[1].iterators == ["spatial", "spatial", "reduction"]
    assert blocks[1].extents == [8, 8, 8]


def test_checked_in_irdl_matches_the_declarations(tmp_path):
    written = write_irdl_files(tmp_path)
    from mlcir.dialects import HERE

    for path in written:
        assert (HERE / path.name).read_text() == path.read_text(), (
            f"{path.name} is stale: run python -c 'from mlcir.dialects import write_irdl_files; "
            "write_irdl_files()'")
    assert "irdl.operation @matmul" in irdl_sources()
