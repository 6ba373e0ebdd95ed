"""graph.scatter_rows (the scatter of ScatterND and ScatterElements) and graph.pad (Pad with
pads known only at run time): compiled against independent numpy and against their
``evaluate``; bad operands are errors naming the op."""

from __future__ import annotations

import numpy as np
import pytest

import mlcir
from mlcir.dialects import graph
from mlcir.dialects.opdef import ShapeError
from mlcir.testing.graph_kernels import build_graph_function
from mlir import ir
from mlir.dialects import func

RNG = np.random.default_rng(0)


def reference(data, rows, updates, reduction):
    out = data.astype(np.float64 if data.dtype.kind == "f" else data.dtype).copy()
    for m, row in enumerate(rows):
        old, new = out[row], updates[m]
        out[row] = {"none": new, "add": old + new, "mul": old * new,
                    "max": np.maximum(old, new), "min": np.minimum(old, new)}[reduction]
    return out.astype(data.dtype)


def run(data, rows, updates, reduction):
    module = build_graph_function([data, rows, updates],
                                  lambda g, *a: g.scatter_rows(*a, reduction=reduction))
    return mlcir.build(module).main(data, rows, updates)


@pytest.mark.parametrize("reduction", graph.SCATTER_REDUCTIONS)
@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_scatter_rows(reduction, dtype):
    data = RNG.integers(-5, 6, (7, 3)).astype(dtype)
    rows = np.array([2, 6, 2, 0, 6], np.int64)  # duplicates: applied in order
    updates = RNG.integers(-5, 6, (5, 3)).astype(dtype)
    got = run(data, rows, updates, reduction)
    np.testing.assert_array_equal(got, reference(data, rows, updates, reduction))
    np.testing.assert_array_equal(
        got, graph.OPS["scatter_rows"].evaluate(data, rows, updates, reduction=reduction))


def test_out_of_range_rows_are_clamped_when_compiled_and_refused_when_folded():
    data, updates = np.zeros((3, 2), np.float32), np.ones((2, 2), np.float32)
    rows = np.array([-4, 9], np.int64)
    np.testing.assert_array_equal(run(data, rows, updates, "add"),
                                  [[1, 1], [0, 0], [1, 1]])
    with pytest.raises(IndexError, match="rows out of range for 3 rows"):
        graph.OPS["scatter_rows"].evaluate(data, rows, updates, reduction="add")


@pytest.mark.usefixtures("ctx")
@pytest.mark.parametrize("shapes, dtypes, reduction, message", [
    ([(3, 2), (2,), (2, 3)], ("f32", "i64", "f32"), "none", "K differs"),
    ([(3, 2), (4,), (2, 2)], ("f32", "i64", "f32"), "none", "M differs"),
    ([(3, 2), (2,), (2, 2)], ("f32", "f32", "f32"), "none", "rows must be i32 or i64"),
    ([(3, 2, 1), (2,), (2, 2)], ("f32", "i64", "f32"), "none", r"data \[R, K\], rows \[M\]"),
    ([(3, 2), (2,), (2, 2)], ("f32", "i64", "f32"), "sub", "reduction must be one of"),
])
def test_bad_operands_name_the_op(shapes, dtypes, reduction, message):
    with ir.Location.unknown():
        types = [ir.RankedTensorType.get(s, ir.Type.parse(t)) for s, t in zip(shapes, dtypes)]
        module = ir.Module.create()
        with ir.InsertionPoint(module.body):
            fn = func.FuncOp("f", ir.FunctionType.get(types, []))
            with ir.InsertionPoint(fn.add_entry_block()):
                with pytest.raises(ShapeError, match=f"^'graph.scatter_rows': {message}"):
                    graph.scatter_rows(*fn.arguments, reduction=reduction)


def pad_reference(x, pads, value, mode):
    """Crop the negative pads, then numpy.pad the positive ones (onnxruntime's order)."""
    rank = x.ndim
    begin, end = pads[:rank], pads[rank:]
    x = x[tuple(slice(max(-b, 0), n - max(-e, 0)) for b, e, n in zip(begin, end, x.shape))]
    widths = [(max(b, 0), max(e, 0)) for b, e in zip(begin, end)]
    if mode == "constant":
        return np.pad(x, widths, constant_values=value)
    return np.pad(x, widths, mode={"reflect": "reflect", "edge": "edge", "wrap": "wrap"}[mode])


@pytest.mark.parametrize("mode", graph.PAD_MODES)
@pytest.mark.parametrize("dtype", [np.float32, np.int64])
def test_pad_with_runtime_pads(mode, dtype):
    x = RNG.integers(-9, 9, (3, 5)).astype(dtype)
    value = np.array(7, dtype)
    module = build_graph_function([x, np.zeros(4, np.int64), value],
                                  lambda g, *a: g.pad(*a, mode=mode))
    ex = mlcir.build(module)
    for pads in ([1, 2, 2, 1], [0, -2, 2, 2], [1, 0, -1, -1]):
        pads = np.array(pads, np.int64)
        want = pad_reference(x, pads, value, mode)
        got = ex.main(x, pads, value, out=np.empty(want.shape, dtype))
        np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(
            got, graph.OPS["pad"].evaluate(x, pads, value, mode=mode))


def test_pad_evaluate_refuses_pads_that_do_not_fit():
    x = np.zeros((2, 3), np.float32)
    with pytest.raises(ValueError, match="do not fit axis 1 of 3 elements in mode 'reflect'"):
        graph.OPS["pad"].evaluate(x, np.array([0, 3, 0, 0]), np.float32(0), mode="reflect")


@pytest.mark.usefixtures("ctx")
@pytest.mark.parametrize("shapes, dtypes, mode, message", [
    ([(3, 2), (3,), ()], ("f32", "i64", "f32"), "edge", r"pads must have shape \[4\]"),
    ([(3, 2), (4,), ()], ("f32", "i32", "f32"), "edge", "pads must be i64"),
    ([(3, 2), (4,), (1,)], ("f32", "i64", "f32"), "edge", "value must be a 0-d tensor"),
    ([(3, 2), (4,), ()], ("f32", "i64", "f64"), "edge", "operands have different element types"),
    ([(3, 2), (4,), ()], ("f32", "i64", "f32"), "symmetric", "mode must be one of"),
])
def test_pad_bad_operands_name_the_op(shapes, dtypes, mode, message):
    with ir.Location.unknown():
        types = [ir.RankedTensorType.get(s, ir.Type.parse(t)) for s, t in zip(shapes, dtypes)]
        module = ir.Module.create()
        with ir.InsertionPoint(module.body):
            fn = func.FuncOp("f", ir.FunctionType.get(types, []))
            with ir.InsertionPoint(fn.add_entry_block()):
                with pytest.raises(ShapeError, match=f"^'graph.pad': {message}"):
                    graph.pad(*fn.arguments, mode=mode)
