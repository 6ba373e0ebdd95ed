"""The ONNX ops exporters emit for transformers and detection/segmentation heads (issue 21):
each converter, per opset where the op changed, against onnxruntime.

Every case is one node whose runtime operands are graph inputs of fixed-seed values (their own
dtypes: int64 indices, bool masks) and whose import-time operands are initializers; the model
is imported, built with ``mlcir.build`` and compared with onnxruntime (float: rtol 1e-4 and
atol 1e-5; integers and booleans exactly).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import helper, numpy_helper

import mlcir
from mlcir.errors import FrontendError
from mlcir.frontend import from_onnx
from mlcir.testing import onnx_models as om

RTOL, ATOL = 1e-4, 1e-5


def rand(*shape: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def ints(*shape: int, low: int, high: int, seed: int = 0, dtype=np.int64) -> np.ndarray:
    return np.random.default_rng(seed).integers(low, high, shape).astype(dtype)


def node_model(op: str, feeds: dict[str, np.ndarray], inits: dict | None = None,
               attrs: dict | None = None, opset: int = 17, outputs: int = 1,
               input_shapes: dict[str, list] | None = None,
               order: list[str] | None = None) -> onnx.ModelProto:
    """One ``op`` node: ``feeds`` are graph inputs (their dtype; shape from the array unless
    ``input_shapes`` names symbolic dims), ``inits`` initializers (``None``: an omitted
    optional input); the node takes them in ``order`` (default: the feeds, then the inits).
    An output whose type onnx cannot infer (a function op's) gets the first feed's."""
    graph_inputs = [helper.make_tensor_value_info(
        name, helper.np_dtype_to_tensor_dtype(v.dtype),
        (input_shapes or {}).get(name, list(v.shape))) for name, v in feeds.items()]
    inits = inits or {}
    node_inputs = [name if inits.get(name, feeds.get(name)) is not None else ""
                   for name in (order or [*feeds, *inits])]
    initializers = [numpy_helper.from_array(np.asarray(value), name)
                    for name, value in inits.items() if value is not None]
    names = ["y"] if outputs == 1 else [f"y{i}" for i in range(outputs)]
    node = helper.make_node(op, node_inputs, names, name=op.lower(), **(attrs or {}))
    graph = helper.make_graph([node], op.lower(), graph_inputs,
                              [helper.make_empty_tensor_value_info(n) for n in names],
                              initializer=initializers)
    opsets = [helper.make_opsetid("", opset)]
    model = helper.make_model(graph, opset_imports=opsets,
                              ir_version=helper.find_min_ir_version_for(opsets))
    model = onnx.shape_inference.infer_shapes(model, strict_mode=True)
    del model.graph.value_info[:]
    for output in model.graph.output:
        if not output.type.HasField("tensor_type"):
            output.type.CopyFrom(graph_inputs[0].type)
    onnx.checker.check_model(model, full_check=True)
    return model


def compare(model: onnx.ModelProto, feeds: dict[str, np.ndarray],
            shape_dict: dict | None = None) -> list[np.ndarray]:
    ex = mlcir.build(from_onnx(model, shape_dict=shape_dict))
    got = ex.main(*feeds.values())
    got = list(got) if isinstance(got, tuple) else [got]
    want = om.reference(model, feeds)
    assert len(got) == len(want)
    for (name, expected), actual in zip(want.items(), got):
        assert actual.shape == expected.shape, name
        assert actual.dtype == expected.dtype, name
        if np.issubdtype(expected.dtype, np.floating):
            np.testing.assert_allclose(actual, expected, rtol=RTOL, atol=ATOL, err_msg=name)
        else:
            np.testing.assert_array_equal(actual, expected, err_msg=name)
    return got


def case(op: str, feeds: dict, inits: dict | None = None, attrs: dict | None = None,
         opset: int = 17, outputs: int = 1, order: list[str] | None = None,
         id: str | None = None):
    return pytest.param(op, feeds, inits or {}, attrs or {}, opset, outputs, order,
                        id=id or op)


X = rand(2, 3, 4, 5)

CASES = [
    # Einsum: the contractions of attention and their transposed/batched relatives
    case("Einsum", {"q": rand(2, 3, 5, 4), "k": rand(2, 3, 6, 4, seed=1)},
         attrs={"equation": "bhqd,bhkd->bhqk"}, opset=13, id="Einsum-attention-scores"),
    case("Einsum", {"p": rand(2, 3, 5, 6), "v": rand(2, 3, 6, 4, seed=1)},
         attrs={"equation": "bhqk,bhkd->bhqd"}, id="Einsum-attention-values"),
    case("Einsum", {"a": rand(3, 4, 5), "b": rand(3, 5, 2, seed=1)},
         attrs={"equation": "bij,bjk->bik"}, id="Einsum-batched-matmul"),
    case("Einsum", {"a": rand(4, 5), "b": rand(5, 3, seed=1)},
         attrs={"equation": "ij,jk->ik"}, id="Einsum-matmul"),
    case("Einsum", {"a": rand(5, 4), "b": rand(3, 5, seed=1)},
         attrs={"equation": "ji,kj->ik"}, id="Einsum-transposed-operands"),
    case("Einsum", {"a": rand(2, 4, 3, 5), "b": rand(2, 3, 6, 5, seed=1)},
         attrs={"equation": "bqhd,bhkd->bhqk"}, id="Einsum-heads-moved"),
    case("Einsum", {"a": rand(2, 3, 4)}, attrs={"equation": "bij->bji"},
         id="Einsum-transpose"),
    case("Einsum", {"a": rand(2, 3, 4)}, attrs={"equation": "bij->j"}, id="Einsum-sum"),
    case("Einsum", {"a": rand(3, 4), "b": rand(4, seed=1)}, attrs={"equation": "ij,j->i"},
         id="Einsum-matvec"),
    case("Einsum", {"a": rand(3), "b": rand(4, seed=1)}, attrs={"equation": "i,j->ij"},
         id="Einsum-outer"),
    case("Einsum", {"a": rand(2, 3, 4), "b": rand(2, 4, 5, seed=1)},
         attrs={"equation": "...ij,...jk"}, id="Einsum-ellipsis-implicit"),
    case("Einsum", {"a": rand(2, 3, 4), "b": rand(4, 5, seed=1), "c": rand(5, 2, seed=2)},
         attrs={"equation": "bij,jk,kl->bil"}, id="Einsum-three-operands"),
    case("Einsum", {"a": rand(2, 3, 4, 5), "b": rand(4, 5, 6, seed=1)},
         attrs={"equation": "bnij,ijk->bnk"}, id="Einsum-merged-contraction"),
    # ArgMax/ArgMin
    case("ArgMax", {"x": X}, attrs={"axis": 2}, id="ArgMax-keepdims"),
    case("ArgMax", {"x": X}, attrs={"axis": -1, "keepdims": 0}, id="ArgMax-axis-last"),
    case("ArgMin", {"x": X}, attrs={"axis": 1, "keepdims": 0}, id="ArgMin"),
    case("ArgMax", {"x": ints(3, 6, low=0, high=3, dtype=np.int32)},
         attrs={"axis": 1, "select_last_index": 1}, id="ArgMax-ties-last"),
    case("ArgMin", {"x": ints(3, 6, low=0, high=3, dtype=np.int64)},
         attrs={"axis": 1}, id="ArgMin-ties-first"),
    case("ArgMin", {"x": ints(4, 5, low=0, high=2, dtype=np.int64)},
         attrs={"axis": 0, "select_last_index": 1, "keepdims": 0}, id="ArgMin-ties-last"),
    # TopK
    case("TopK", {"x": rand(3, 10)}, {"k": np.array([4], np.int64)}, outputs=2),
    case("TopK", {"x": rand(2, 7, 3)}, {"k": np.array([3], np.int64)},
         attrs={"axis": 1, "largest": 0}, outputs=2, id="TopK-smallest-axis1"),
    case("TopK", {"x": ints(2, 9, low=0, high=4, dtype=np.int64)},
         {"k": np.array([5], np.int64)}, outputs=2, id="TopK-ties-int"),
    case("TopK", {"x": rand(6)}, {"k": np.array([6], np.int64)}, outputs=2,
         id="TopK-all-1d"),
    # CumSum
    case("CumSum", {"x": X}, {"axis": np.array(2, np.int64)}, opset=13),
    case("CumSum", {"x": X}, {"axis": np.array(-1, np.int32)},
         attrs={"exclusive": 1}, opset=14, id="CumSum-exclusive"),
    case("CumSum", {"x": X}, {"axis": np.array(1, np.int64)},
         attrs={"reverse": 1}, id="CumSum-reverse"),
    case("CumSum", {"x": X}, {"axis": np.array(0, np.int64)},
         attrs={"reverse": 1, "exclusive": 1}, id="CumSum-reverse-exclusive"),
    case("CumSum", {"x": ints(2, 8, low=0, high=2, dtype=np.int32)},
         {"axis": np.array(1, np.int64)}, id="CumSum-int32-mask"),
    case("CumSum", {"x": ints(2, 8, low=-5, high=5)}, {"axis": np.array(1, np.int64)},
         id="CumSum-int64"),
    case("CumSum", {"x": rand(3, 7).astype(np.float64)}, {"axis": np.array(0, np.int64)},
         id="CumSum-float64"),
    # Trilu
    case("Trilu", {"x": rand(2, 4, 5)}, opset=14),
    case("Trilu", {"x": rand(2, 4, 5)}, {"k": np.array(-1, np.int64)}, {"upper": 0},
         opset=14, id="Trilu-lower-k"),
    case("Trilu", {"x": rand(5, 3)}, {"k": np.array(1, np.int64)}, id="Trilu-upper-k"),
    case("Trilu", {"x": ints(4, 4, low=0, high=2).astype(bool)}, attrs={"upper": 0},
         id="Trilu-bool"),
    # GatherND
    case("GatherND", {"x": rand(4, 5, 3), "i": ints(6, 2, low=-4, high=4)}),
    case("GatherND", {"x": rand(4, 5, 3), "i": ints(2, 3, 3, low=0, high=3)},
         id="GatherND-full-tuples"),
    case("GatherND", {"x": rand(2, 5, 3), "i": ints(2, 4, 1, low=0, high=5)},
         attrs={"batch_dims": 1}, id="GatherND-batch-dims"),
    case("GatherND", {"x": rand(2, 3, 5, 4), "i": ints(2, 3, 1, low=0, high=5)},
         attrs={"batch_dims": 2}, id="GatherND-two-batch-dims"),
    # ScatterND / ScatterElements: runtime indices and updates
    case("ScatterND", {"x": rand(5, 4, 3), "i": np.array([[3], [0], [-1]], np.int64),
                       "u": rand(3, 4, 3, seed=1)}, opset=13, id="ScatterND-rows"),
    case("ScatterND", {"x": rand(5, 4, 3), "i": np.array([[[1, 2], [4, 0]]], np.int64),
                       "u": rand(1, 2, 3, seed=1)}, opset=13, id="ScatterND-slices"),
    case("ScatterND", {"x": rand(4, 3), "i": np.array([[0, 1], [3, 2], [0, 1]], np.int64),
                       "u": rand(3, seed=1)}, attrs={"reduction": "add"}, opset=16,
         id="ScatterND-v16-add-duplicates"),
    case("ScatterND", {"x": rand(4, 3), "i": np.array([[2], [2]], np.int64),
                       "u": rand(2, 3, seed=1)}, attrs={"reduction": "mul"}, opset=16,
         id="ScatterND-v16-mul"),
    *[case("ScatterND", {"x": rand(4, 3), "i": np.array([[1], [3], [1]], np.int64),
                         "u": rand(3, 3, seed=1)}, attrs={"reduction": r}, opset=18,
           id=f"ScatterND-v18-{r}") for r in ("max", "min")],
    case("ScatterND", {"x": ints(4, 3, low=-9, high=9), "i": np.array([[1], [3]], np.int64),
                       "u": ints(2, 3, low=-9, high=9, seed=1)}, opset=13,
         id="ScatterND-int64"),
    case("ScatterElements", {"x": rand(3, 5), "i": np.array([[1, 0, 4], [2, -1, 3]], np.int64),
                             "u": rand(2, 3, seed=1)}, attrs={"axis": 1}, opset=13),
    case("ScatterElements", {"x": rand(4, 3, 2),
                             "i": ints(2, 3, 2, low=-4, high=4, dtype=np.int32),
                             "u": rand(2, 3, 2, seed=1)},
         attrs={"axis": 0, "reduction": "add"}, opset=16, id="ScatterElements-v16-add"),
    *[case("ScatterElements", {"x": rand(3, 4), "i": np.array([[0, 0, 3], [2, 1, 1]],
                                                               np.int64),
                               "u": rand(2, 3, seed=1)}, attrs={"axis": 1, "reduction": r},
           opset=18, id=f"ScatterElements-v18-{r}") for r in ("mul", "max", "min")],
    # DepthToSpace / SpaceToDepth
    case("DepthToSpace", {"x": rand(2, 8, 3, 4)}, attrs={"blocksize": 2},
         id="DepthToSpace-DCR"),
    case("DepthToSpace", {"x": rand(1, 18, 2, 3)}, attrs={"blocksize": 3, "mode": "CRD"},
         id="DepthToSpace-CRD"),
    case("SpaceToDepth", {"x": rand(2, 3, 4, 6)}, attrs={"blocksize": 2}),
    # InstanceNormalization / GroupNormalization
    case("InstanceNormalization", {"x": rand(2, 3, 4, 5)},
         {"scale": rand(3, seed=1), "bias": rand(3, seed=2)}, attrs={"epsilon": 1e-3}),
    case("InstanceNormalization", {"x": rand(2, 4, 7), "s": rand(4, seed=1),
                                   "b": rand(4, seed=2)}, id="InstanceNormalization-1d"),
    case("GroupNormalization", {"x": rand(2, 6, 3, 4)},
         {"scale": rand(6, seed=1), "bias": rand(6, seed=2)},
         attrs={"num_groups": 2, "epsilon": 1e-4}, opset=21, id="GroupNormalization-eps"),
    case("GroupNormalization", {"x": rand(2, 6, 3, 4)},
         {"scale": rand(6, seed=1), "bias": rand(6, seed=2)},
         attrs={"num_groups": 3}, opset=21, id="GroupNormalization-v21"),
    # Pad
    *[case("Pad", {"x": rand(2, 3, 4, 5)}, {"pads": np.array([0, 0, 1, 2, 0, 0, 2, 1],
                                                              np.int64)},
           attrs={"mode": mode}, id=f"Pad-{mode}") for mode in ("constant", "reflect", "edge")],
    case("Pad", {"x": rand(3, 5), "v": np.array(1.5, np.float32)},
         {"pads": np.array([1, -1, 0, 2], np.int64)}, order=["x", "pads", "v"],
         id="Pad-runtime-value-negative-pad"),
    case("Pad", {"x": rand(2, 3, 4)}, {"pads": np.array([2, 1, 3, 2], np.int64),
                                        "value": None, "axes": np.array([2, -2], np.int64)},
         attrs={"mode": "edge"}, opset=18, id="Pad-v18-axes"),
    case("Pad", {"x": rand(3, 4)}, {"pads": np.array([1, 2, 2, 3], np.int64)},
         attrs={"mode": "wrap"}, opset=19, id="Pad-v19-wrap"),
    case("Pad", {"x": rand(2, 6)}, {"pads": np.array([1, -2, 0, 3], np.int64)},
         attrs={"mode": "wrap"}, opset=19, id="Pad-wrap-cropped-first"),
    case("Pad", {"x": rand(2, 6)}, {"pads": np.array([0, 2, 1, -3], np.int64)},
         attrs={"mode": "reflect"}, id="Pad-reflect-cropped-first"),
    case("Pad", {"x": ints(3, 4, low=0, high=9)}, {"pads": np.array([1, 1, 1, 1], np.int64),
                                                   "value": np.array(-7, np.int64)},
         id="Pad-int64-constant"),
    # the elementwise ops exporters emit, on more types and inputs than test_frontend's cases
    case("Mod", {"a": ints(3, 4, low=-9, high=9), "b": ints(4, low=1, high=4, seed=1)},
         id="Mod-fmod0-int64"),
    case("Mod", {"a": ints(3, 4, low=-9, high=9, dtype=np.int32),
                 "b": np.array([-3, 2, -4, 5], np.int32)}, attrs={"fmod": 1},
         id="Mod-fmod1-int32"),
    case("Mod", {"a": rand(3, 4) * 5, "b": np.array([1.5, -2.0, 0.7, 3.0], np.float32)},
         attrs={"fmod": 1}, id="Mod-fmod1-float"),
    case("Sign", {"x": np.array([[-2.5, 0.0, 3.0], [1e-8, -0.0, -7]], np.float32)},
         id="Sign-float"),
    case("Sign", {"x": ints(3, 4, low=-3, high=3, dtype=np.int32)}, id="Sign-int32"),
    *[case(op, {"x": np.array([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 0.3, -0.7], np.float32)},
           id=f"{op}-halves") for op in ("Floor", "Ceil", "Round")],
    *[case(op, {"a": rand(2, 1, 4), "b": rand(3, 1, seed=1), "c": rand(4, seed=2),
                "d": rand(1, 3, 4, seed=3)}, id=f"{op}-four-inputs-broadcast")
      for op in ("Min", "Max", "Sum", "Mean")],
    case("Max", {"a": ints(2, 3, low=-5, high=5, dtype=np.int32),
                 "b": ints(3, low=-5, high=5, seed=1, dtype=np.int32),
                 "c": ints(2, 1, low=-5, high=5, seed=2, dtype=np.int32)},
         id="Max-int32-three-inputs"),
    case("Sum", {"a": rand(2, 3)}, id="Sum-one-input"),
]


def resize_case(mode: str, transform: str, *, scales=None, sizes=None, nearest=None,
                opset: int = 13, shape=(1, 2, 4, 5), id: str):
    attrs = {"mode": mode, "coordinate_transformation_mode": transform}
    if nearest:
        attrs["nearest_mode"] = nearest
    inits = {"roi": None, "scales": None if scales is None else np.array(scales, np.float32)}
    if sizes is not None:
        inits["sizes"] = np.array(sizes, np.int64)
    return case("Resize", {"x": rand(*shape)}, inits, attrs, opset=opset, id=id)


_TRANSFORMS = ("half_pixel", "asymmetric", "align_corners", "pytorch_half_pixel")
CASES += [
    *[resize_case("nearest", t, scales=[1, 1, 2, 2], id=f"Resize-nearest-x2-{t}")
      for t in _TRANSFORMS],
    *[resize_case("linear", t, scales=[1, 1, 2, 1.5], id=f"Resize-linear-up-{t}")
      for t in _TRANSFORMS],
    *[resize_case("linear", t, sizes=[1, 2, 3, 2], id=f"Resize-linear-down-sizes-{t}")
      for t in _TRANSFORMS],
    *[resize_case("nearest", "asymmetric", sizes=[1, 2, 7, 9], nearest=m,
                  id=f"Resize-nearest-sizes-{m}")
      for m in ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil")],
    resize_case("nearest", "half_pixel", scales=[1, 1, 0.5, 0.6], id="Resize-nearest-down"),
    resize_case("linear", "half_pixel", scales=[1, 1, 2, 2], shape=(2, 3, 1, 4),
                id="Resize-linear-unit-axis"),
    case("Resize", {"x": rand(1, 2, 3, 4)},
         {"roi": None, "scales": None, "sizes": np.array([6, 5], np.int64)},
         {"mode": "linear", "axes": [2, 3]}, opset=18, id="Resize-v18-axes"),
    resize_case("linear", "half_pixel_symmetric", scales=[1, 1, 1.7, 2.5], opset=19,
                id="Resize-v19-half-pixel-symmetric"),
]


@pytest.mark.parametrize("op, feeds, inits, attrs, opset, outputs, order", CASES)
def test_op_matches_onnxruntime(op, feeds, inits, attrs, opset, outputs, order):
    model = node_model(op, feeds, inits, attrs, opset=opset, outputs=outputs, order=order)
    compare(model, feeds)


#: The ops tested here (tests/test_frontend.py checks every converter is tested somewhere).
TESTED_OPS = {p.values[0] for p in CASES}


def test_topk_unsorted_returns_the_same_set():
    feeds = {"x": rand(3, 12)}
    model = node_model("TopK", feeds, {"k": np.array([5], np.int64)}, {"sorted": 0},
                       outputs=2)
    values, indices = mlcir.build(from_onnx(model)).main(feeds["x"])
    want = om.reference(model, feeds)
    np.testing.assert_allclose(np.sort(values, axis=1), np.sort(want["y0"], axis=1))
    np.testing.assert_array_equal(np.sort(indices, axis=1), np.sort(want["y1"], axis=1))


def test_attention_einsum_with_dynamic_batch_and_sequence():
    q, k = rand(2, 3, 5, 4), rand(2, 3, 6, 4, seed=1)
    model = node_model("Einsum", {"q": q, "k": k}, attrs={"equation": "bhqd,bhkd->bhqk"},
                       input_shapes={"q": ["B", 3, "S", 4], "k": ["B", 3, "T", 4]})
    ex = mlcir.build(from_onnx(model))
    for batch, s, t in ((2, 5, 6), (1, 7, 3)):
        feeds = {"q": rand(batch, 3, s, 4, seed=s), "k": rand(batch, 3, t, 4, seed=t)}
        np.testing.assert_allclose(ex.main(*feeds.values()),
                                   om.reference(model, feeds)["y"], rtol=RTOL, atol=ATOL)


def test_ops_with_constant_inputs_fold_at_import():
    """With every input a constant, the converters run on the graph ops' numpy evaluators."""
    x = rand(2, 6, 4)
    nodes = [helper.make_node("CumSum", ["x", "axis"], ["c"]),
             helper.make_node("TopK", ["c", "k"], ["v", "i"], axis=1),
             helper.make_node("ArgMax", ["v"], ["a"], axis=2, keepdims=0),
             helper.make_node("Einsum", ["c", "c"], ["e"], equation="bij,bkj->bik"),
             helper.make_node("Cast", ["a"], ["af"], to=onnx.TensorProto.FLOAT),
             helper.make_node("ReduceSum", ["e"], ["es"], keepdims=0),
             helper.make_node("Add", ["y_in", "es"], ["y0"]),
             helper.make_node("Add", ["y_in", "af"], ["y1"])]
    graph = helper.make_graph(
        nodes, "folded", [helper.make_tensor_value_info("y_in", onnx.TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info(n, onnx.TensorProto.FLOAT, [2, 3]) for n in ("y0", "y1")],
        initializer=[numpy_helper.from_array(x, "x"),
                     numpy_helper.from_array(np.array(2, np.int64), "axis"),
                     numpy_helper.from_array(np.array([3], np.int64), "k")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    module = from_onnx(model)
    text = str(module)
    for op in ("graph.matmul", "graph.gather_elements", "graph.take", "graph.where"):
        assert op not in text
    feeds = {"y_in": rand(2, 3, seed=5)}
    got = mlcir.build(module).main(feeds["y_in"])
    want = om.reference(model, feeds)
    for actual, expected in zip(got, want.values()):
        np.testing.assert_allclose(actual, expected, rtol=RTOL, atol=1e-4)


@pytest.mark.parametrize("op, feeds, inits, attrs, opset, message", [
    ("Resize", {"x": rand(1, 1, 2, 2)}, {"roi": None, "scales": np.ones(4, np.float32)},
     {"mode": "cubic"}, 13, "mode='cubic' is not supported"),
    ("Resize", {"x": rand(1, 1, 2, 2)}, {"roi": None, "scales": np.ones(4, np.float32)},
     {"coordinate_transformation_mode": "tf_crop_and_resize"}, 13,
     "coordinate_transformation_mode='tf_crop_and_resize' is not supported"),
    ("Resize", {"x": rand(1, 1, 2, 2)}, {"roi": None, "scales": np.ones(4, np.float32)},
     {"antialias": 1}, 18, "antialias=1 is not supported"),
    ("Pad", {"x": rand(2, 3)}, {"pads": np.array([1, 1, 1, 1], np.int64)},
     {"mode": "wrap"}, 18, "mode='wrap' is not one of"),
    ("DepthToSpace", {"x": rand(1, 4, 2, 2)}, {}, {"blocksize": 2, "mode": "XYZ"}, 17,
     "mode='XYZ' must be 'DCR' or 'CRD'"),
    ("ScatterND", {"x": rand(4, 3), "i": np.array([[1]], np.int64), "u": rand(1, 3)}, {},
     {"reduction": "max"}, 16, "reduction='max' is not one of ('none', 'add', 'mul') at "
     "opset 16"),
    ("GroupNormalization", {"x": rand(1, 4, 2, 2)}, {"s": np.ones(4, np.float32),
                                                   "b": np.zeros(4, np.float32)},
     {"num_groups": 2, "stash_type": 0}, 21, "stash_type=0 is not supported"),
])
def test_unsupported_attribute_values_name_the_node(op, feeds, inits, attrs, opset, message):
    try:
        model = node_model(op, feeds, inits, attrs, opset=opset)
    except onnx.checker.ValidationError:
        pytest.skip("onnx refuses this model itself")
    with pytest.raises(FrontendError) as info:
        from_onnx(model)
    assert f"node '{op.lower()}' ({op}, opset {opset})" in str(info.value)
    assert message in str(info.value)


@pytest.mark.parametrize("op, feeds, inits, attrs, message", [
    ("Einsum", {"a": rand(3, 3)}, {}, {"equation": "ii->i"}, "a repeated index"),
    ("TopK", {"x": rand(2, 4)}, {"k": np.array([5], np.int64)}, {"axis": 1},
     "K=5 is out of range for an axis of 4 elements"),
    ("DepthToSpace", {"x": rand(1, 6, 2, 2)}, {}, {"blocksize": 2},
     "6 channels do not split into blocks of 2x2"),
    ("Pad", {"x": rand(2, 3)}, {"pads": np.array([0, 3, 0, 3], np.int64)},
     {"mode": "reflect"}, "must be smaller than its size 3"),
])
def test_errors_while_building_name_the_node(op, feeds, inits, attrs, message):
    try:
        model = node_model(op, feeds, inits, attrs)
    except (onnx.checker.ValidationError, onnx.shape_inference.InferenceError):
        model = node_model_unchecked(op, feeds, inits, attrs)
    with pytest.raises(FrontendError) as info:
        from_onnx(model)
    assert f"node '{op.lower()}' ({op}, opset 17)" in str(info.value)
    assert message in str(info.value)


def node_model_unchecked(op: str, feeds: dict, inits: dict, attrs: dict) -> onnx.ModelProto:
    """A one-node model that onnx's shape inference would refuse (to test mlcir's errors)."""
    outputs = [("y0", onnx.TensorProto.FLOAT), ("y1", onnx.TensorProto.INT64)] \
        if op == "TopK" else [("y", onnx.TensorProto.FLOAT)]
    graph = helper.make_graph(
        [helper.make_node(op, list(feeds) + list(inits), [n for n, _ in outputs],
                          name=op.lower(), **attrs)],
        op.lower(),
        [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(v.dtype), v.shape)
         for n, v in feeds.items()],
        [helper.make_tensor_value_info(n, t, [1]) for n, t in outputs],
        initializer=[numpy_helper.from_array(v, n) for n, v in inits.items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


EXPORTED = Path(__file__).parent / "models" / "ops"


@pytest.mark.parametrize("name", ["attention", "selection", "indexing", "images", "arithmetic"])
@pytest.mark.parametrize("exporter", ["ts", "dynamo"])
def test_pytorch_exports_match_onnxruntime(name, exporter):
    """Real exporter output (tests/models/ops/export.py): the ops in the graphs and the shape
    arithmetic around them as PyTorch's two exporters write them."""
    model = onnx.load(EXPORTED / f"{name}_{exporter}.onnx")
    with np.load(EXPORTED / f"{name}.npz") as data:
        feeds = {k: data[k] for k in data.files}
    compare(model, feeds)


DYNAMIC_BATCH = [
    case("ArgMax", {"x": rand(3, 4, 5)}, attrs={"axis": 2}),
    case("TopK", {"x": rand(3, 6)}, {"k": np.array([2], np.int64)}, outputs=2),
    case("CumSum", {"x": rand(3, 6)}, {"axis": np.array(1, np.int64)}),
    case("Trilu", {"x": rand(3, 4, 4)}, opset=14),
    case("GatherND", {"i": ints(3, 4, 1, low=0, high=5), "x": rand(5, 2)}, order=["x", "i"]),
    case("ScatterND", {"i": np.array([[1], [4], [0]], np.int64), "u": rand(3, 4, seed=1),
                       "x": rand(6, 4)}, order=["x", "i", "u"], opset=13),
    case("Resize", {"x": rand(3, 2, 4, 5)},
         {"roi": None, "scales": np.array([1, 1, 2, 2], np.float32)},
         {"mode": "linear"}, opset=13),
    case("Pad", {"x": rand(3, 2, 4)}, {"pads": np.array([0, 0, 1, 0, 0, 2], np.int64)},
         attrs={"mode": "reflect"}),
    case("DepthToSpace", {"x": rand(3, 8, 2, 3)}, attrs={"blocksize": 2}),
    case("SpaceToDepth", {"x": rand(3, 2, 4, 6)}, attrs={"blocksize": 2}),
    case("InstanceNormalization", {"x": rand(3, 4, 5)},
         {"scale": rand(4, seed=1), "bias": rand(4, seed=2)}),
    case("GroupNormalization", {"x": rand(3, 6, 4)},
         {"scale": rand(6, seed=1), "bias": rand(6, seed=2)}, {"num_groups": 3}, opset=21),
    case("Einsum", {"a": rand(3, 4, 5), "b": rand(5, 2, seed=1)},
         attrs={"equation": "bij,jk->bik"}),
    case("Einsum", {"a": rand(3, 2, 4, 5), "b": rand(3, 5, 2, seed=1)},
         attrs={"equation": "bhij,bjk->bhik"}, id="Einsum-broadcast-heads"),
]


@pytest.mark.parametrize("op, feeds, inits, attrs, opset, outputs, order", DYNAMIC_BATCH)
def test_ops_with_a_dynamic_batch(op, feeds, inits, attrs, opset, outputs, order):
    """The first dim of the first input, and of the inputs of the same size, symbolic ("N"):
    one build runs two batch sizes."""
    first = next(iter(feeds))
    batched = [n for n, v in feeds.items() if v.shape[:1] == feeds[first].shape[:1]]
    shapes = {n: ["N", *feeds[n].shape[1:]] for n in batched}
    model = node_model(op, feeds, inits, attrs, opset=opset, outputs=outputs,
                       input_shapes=shapes, order=order)
    ex = mlcir.build(from_onnx(model))
    for batch in (feeds[first].shape[0], 1):
        run = {n: v[:batch] if n in batched else v for n, v in feeds.items()}
        got = ex.main(*run.values())
        got = list(got) if isinstance(got, tuple) else [got]
        for actual, expected in zip(got, om.reference(model, run).values()):
            assert actual.shape == expected.shape
            np.testing.assert_allclose(actual, expected, rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("mode, pads, axes, opset", [
    ("constant", [1, 0, -1, 2, 3, 1], None, 17),
    ("reflect", [0, 2, 1, 1, 1, 0], None, 17),
    ("edge", [2, 0, 0, 0, 3, -1], None, 17),
    ("wrap", [1, -2, 0, 3], [1, 2], 19),
    ("constant", [2, 1], [-1], 18),
])
def test_pad_with_pads_known_only_at_run_time(mode, pads, axes, opset):
    """pads a graph input: the result's dims are dynamic (they depend on its values), so the
    caller passes the output array; the compiled pad matches onnxruntime for each pads."""
    x, value = rand(2, 3, 4), np.array(0.75, np.float32)
    feeds = {"x": x, "pads": np.array(pads, np.int64), "value": value}
    inits = {} if axes is None else {"axes": np.array(axes, np.int64)}
    model = node_model("Pad", feeds, inits, {"mode": mode}, opset=opset)
    ex = mlcir.build(from_onnx(model))
    for scale in (1, 0):  # two pads of one model: two result shapes
        feeds["pads"] = np.array(pads, np.int64) * scale
        want = om.reference(model, feeds)["y"]
        got = ex.main(*feeds.values(), out=np.empty_like(want))
        np.testing.assert_array_equal(got, want)
