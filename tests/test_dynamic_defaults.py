"""Default schedules of kernels with dynamic dims (issue 40, item 1): planned at a
representative size, replayed on the dynamic kernel with the dynamic loops' outer factors left
to the run time, their tiling loops peeled (whole tiles, then the rest one row at a time)."""

from __future__ import annotations

import numpy as np
import pytest
from mlir import ir

import mlcir
from mlcir.frontend import from_onnx
from mlcir.schedule import ScheduleError
from mlcir.targets import build_plan
from mlcir.targets.cpu.defaults import NO_REDUCTION, default_schedule, fallback_reason
from mlcir.targets.kernels import extract_kernel, kernel_functions, workload_kernel
from mlcir.targets.stages import run_stages
from mlcir.testing import onnx_models as models
from mlcir.testing.onnx_models import reference

AVX2 = "llvm -mcpu=x86-64-v3 -threads=1"

DYNAMIC_MATMUL = """
func.func @main(%a: tensor<?x64xf32>, %b: tensor<64x32xf32>) -> tensor<?x32xf32> {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %a, %c0 : tensor<?x64xf32>
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty(%n) : tensor<?x32xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<?x32xf32>) -> tensor<?x32xf32>
  %r = linalg.matmul ins(%a, %b : tensor<?x64xf32>, tensor<64x32xf32>)
                     outs(%f : tensor<?x32xf32>) -> tensor<?x32xf32>
  return %r : tensor<?x32xf32>
}
"""


def _kernels(model, target: str = AVX2) -> dict[str, ir.Module]:
    module = from_onnx(model)
    with module.context, ir.Location.unknown():
        work = run_stages(module, build_plan(target, "packed"), schedule="none",
                          until="kernels").prepared.work
        return {fn.sym_name.value: workload_kernel(extract_kernel(fn))
                for fn in kernel_functions(work)}


def test_a_dynamic_loop_splits_into_static_tiles_under_a_run_time_loop():
    sch = mlcir.Schedule(DYNAMIC_MATMUL)
    i, _, _ = sch.get_loops(sch.get_block("matmul"))
    outer, inner = sch.split(i, [None, 8])
    assert sch.get(outer).extent < 0 and sch.get(inner).extent == 8
    with pytest.raises(ScheduleError, match="dynamic extent: its inner factors must be static"):
        sch.split(outer, [2, None])


def test_a_dynamic_loop_is_not_a_vector_tile():
    sch = mlcir.Schedule(DYNAMIC_MATMUL)
    i, j, k = sch.get_loops(sch.get_block("matmul"))
    sch.reorder(j, k, i)
    sch.vectorize(i)
    assert "inside the vector tile has a dynamic extent" in str(sch.mod)  # loop.not_vectorized


def test_a_dynamic_loop_unrolls_only_by_a_factor():
    sch = mlcir.Schedule(DYNAMIC_MATMUL)
    i, _, _ = sch.get_loops(sch.get_block("matmul"))
    with pytest.raises(ScheduleError, match="dynamic extent: unroll it by a factor"):
        sch.unroll(i)
    sch.unroll(i, factor=2)
    assert sch.get(i).annotations["unroll"] == 2


def test_a_dynamic_loop_takes_only_a_given_tiling():
    sch = mlcir.Schedule(DYNAMIC_MATMUL)
    i, _, _ = sch.get_loops(sch.get_block("matmul"))
    with pytest.raises(ScheduleError, match="dynamic extent: give a decision"):
        sch.sample_perfect_tile(i, n=2)
    factors = sch.sample_perfect_tile(i, n=2, max_innermost_factor=8, decision=[16, 8])
    sch.split(i, factors)
    assert [sch.get(f) for f in factors] == [16, 8]


def _row_tiles(kernel: str, rows_outside: bool) -> mlcir.Schedule:
    """The matmul in 8-row x 16-column vector tiles, the rows' tile loop outside the
    columns' or inside it."""
    sch = mlcir.Schedule(kernel)
    i, j, k = sch.get_loops(sch.get_block("matmul"))
    i0, i1 = sch.split(i, [None, 8])
    j0, j1 = sch.split(j, [None, 16])
    sch.reorder(*((i0, j0) if rows_outside else (j0, i0)), k, i1, j1)
    sch.vectorize(i1)
    return sch


def test_the_tiles_of_a_dynamic_loop_are_peeled_and_need_no_masks():
    """The loop right above the vector tile's level of a dynamic dim is peeled: whole 8-row
    tiles, then single rows; both vectorize at static shapes."""
    sch = _row_tiles(DYNAMIC_MATMUL, rows_outside=True)
    text = str(sch.mod)
    assert "vector.mask" not in text and "vector.create_mask" not in text
    assert text.count('loop.name = "matmul.i_0"') == 2  # the whole tiles' loop and the rest's
    _check_matmul(mlcir.build(sch.mod, target=AVX2))


def test_the_default_schedule_of_a_dynamic_matmul_is_right_at_every_size():
    sch = default_schedule(DYNAMIC_MATMUL, AVX2)
    assert sch.trace.insts, fallback_reason(DYNAMIC_MATMUL, AVX2)
    _check_matmul(mlcir.build(sch.mod, target=AVX2))


def _check_matmul(ex) -> None:
    rng = np.random.default_rng(0)
    b = rng.standard_normal((64, 32), dtype=np.float32)
    for rows in (1, 7, 8, 9, 41, 131):
        a = rng.standard_normal((rows, 64), dtype=np.float32)
        out = np.empty((rows, 32), np.float32)  # (a kernel's result shape is not inferred)
        ex.main(a, b, out)
        np.testing.assert_allclose(out, a @ b, rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("make", [models.mlp, models.transformer_encoder, models.mnist_cnn])
def test_every_kernel_with_a_dynamic_batch_is_scheduled_unless_its_kind_is_left_alone(make):
    """A dynamic kernel is left unscheduled only for a reason that leaves its kind alone at
    static sizes too (plain elementwise loops, a row reduction LLVM vectorizes), never for
    its dynamic dims."""
    reasons = [fallback_reason(kernel, AVX2) for kernel in _kernels(make(batch="N")).values()]
    assert any(reason is None for reason in reasons)
    for reason in reasons:
        assert reason is None or reason == NO_REDUCTION or "reduces the contiguous axis" \
            in reason, reason


@pytest.mark.parametrize("make, inputs, kw", [
    (models.mlp, models.mlp_inputs, {}),
    (models.transformer_encoder, models.transformer_encoder_inputs, {}),
    (models.bert_encoder_layer, models.bert_encoder_layer_inputs, {"seq": 16, "width": 64}),
    (models.resnet_block, models.resnet_block_inputs, {}),
])
def test_one_dynamic_build_is_right_at_every_size(make, inputs, kw):
    """Sizes around the planned tiles (1, a prime, past a whole tile), drawn with a fixed seed,
    against onnxruntime on the dynamic file."""
    model = make(batch="N", **kw)
    ex = mlcir.build(from_onnx(model), target=AVX2)
    sizes = [1, 2, 13] + list(np.random.default_rng(40).integers(3, 40, size=2))
    for batch in sizes:
        feeds = inputs(batch=int(batch), **kw)
        expected = list(reference(model, feeds).values())
        got = ex.main(*feeds.values())
        got = got if isinstance(got, (list, tuple)) else [got]
        for g, e in zip(got, expected):
            np.testing.assert_allclose(g, e, rtol=1e-4, atol=1e-4)


STATIC_MATMUL_37 = DYNAMIC_MATMUL.replace("?x64", "37x64").replace("?x32", "37x32").replace(
    "tensor.empty(%n)", "tensor.empty()")


def test_a_static_partial_row_tile_is_peeled_not_masked():
    """37 rows with 8-row tiles: 4 whole tiles, then one row, both at static shapes (a masked
    last tile ran the whole kernel through masked transfers: docs/decisions.md#partial-tiles)."""
    sch = _row_tiles(STATIC_MATMUL_37, rows_outside=False)
    text = str(sch.mod)
    assert "vector.mask" not in text and "vector.create_mask" not in text
    ex = mlcir.build(sch.mod, target=AVX2)
    rng = np.random.default_rng(1)
    a = rng.standard_normal((37, 64), dtype=np.float32)
    b = rng.standard_normal((64, 32), dtype=np.float32)
    np.testing.assert_allclose(ex.main(a, b), a @ b, rtol=1e-5, atol=1e-4)


def test_a_partial_tile_of_the_lanes_stays_masked():
    sch = mlcir.Schedule(STATIC_MATMUL_37.replace("64x32", "64x30").replace("37x32", "37x30"))
    i, j, k = sch.get_loops(sch.get_block("matmul"))
    j0, j1 = sch.split(j, [None, 16])
    sch.reorder(i, j0, k, j1)
    sch.vectorize(j1)
    assert "vector.create_mask" in str(sch.mod)


def test_a_dynamic_batch_reads_packed_weights_with_few_rows_per_tile():
    """graph-pack-weights packs the weights of a matmul whose rows are dynamic; the default
    register tile over such rows has at most DYNAMIC_ROWS_MAX rows (the rows it leaves over run
    one at a time), and the build is right at every batch."""
    from mlcir.targets.cpu.defaults import DYNAMIC_ROWS_MAX, decisions

    model = models.mlp("N")
    kernels = _kernels(model)
    packed = next(k for name, k in kernels.items() if "matmul_packed" in name)
    assert "tensor<?x784xf32>" in str(packed) and "x784x16xf32>" in str(packed)
    rows = [d for name, d in decisions(default_schedule(packed, AVX2))
            if name == "sample_perfect_tile" and len(d) == 3][0]
    assert rows[-1] <= DYNAMIC_ROWS_MAX
    ex = mlcir.build(from_onnx(model), AVX2)
    for batch in (1, 3, 4, 37):
        inputs = models.mlp_inputs(batch)
        np.testing.assert_allclose(ex.main(**inputs), reference(model, inputs)["logits"],
                                   rtol=1e-4, atol=1e-5)


def test_the_user_gives_the_size_dynamic_dims_are_planned_at():
    from mlcir.targets.cpu.defaults import decisions

    planned = {hint: decisions(default_schedule(DYNAMIC_MATMUL, f"{AVX2} -dynamic-hint={hint}"))
               for hint in (2, 128)}
    assert planned[128] == decisions(default_schedule(DYNAMIC_MATMUL, AVX2))  # the default
    assert planned[2] != planned[128]
    # The rows' split is planned within the hint: a tile of at most 2 rows.
    assert all(d[-1] <= 2 for name, d in planned[2][:1])
    _check_matmul(mlcir.build(DYNAMIC_MATMUL, target=f"{AVX2} -dynamic-hint=2"))
    from mlcir.errors import TargetError
    from mlcir.target import Target

    with pytest.raises(TargetError, match="-dynamic-hint=0' must be at least 1"):
        Target.parse("llvm -dynamic-hint=0")


@pytest.fixture(scope="module")
def dynamic_bert():
    from mlcir.testing import whole_models

    return whole_models.bert_base(layers=1, hidden=64, heads=4, intermediate=128, dynamic=True)


def test_a_dynamic_bert_is_right_at_random_sizes(dynamic_bert):
    """One build, batch and sequence drawn at random (seeded), with 1 and a prime among them."""
    from mlcir.testing import whole_models

    ex = mlcir.build(from_onnx(dynamic_bert), target=AVX2)
    rng = np.random.default_rng(40)
    sizes = [(1, 1), (1, 13)] + [(int(rng.integers(1, 5)), int(rng.integers(2, 80)))
                                 for _ in range(4)]
    for batch, seq in sizes:
        inputs = whole_models.model_inputs(dynamic_bert, seed=seq,
                                           dims={"batch": batch, "sequence": seq})
        np.testing.assert_allclose(ex.main(**inputs), reference(dynamic_bert, inputs)["y"],
                                   rtol=1e-4, atol=1e-4, err_msg=f"{batch}x{seq}")


def test_the_attention_products_of_a_dynamic_bert_are_scheduled(dynamic_bert):
    """Scores (both sides dynamic: rows one at a time, the columns peeled) and the
    probabilities times values (a reduction over the dynamic sequence, one step at a time)."""
    from mlcir.driver import staged_module

    sources = staged_module(from_onnx(dynamic_bert), AVX2, until="scheduled").schedule_sources
    products = {name: source for name, source in sources.items() if "matmul" in name}
    assert len(products) >= 4 and set(products.values()) == {"default"}, sources
