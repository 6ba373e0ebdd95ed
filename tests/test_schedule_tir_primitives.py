"""TensorIR primitives beyond the basics (issue 18): rfactor, get_producers / get_consumers,
add_unit_loop, sample_compute_location. Results against numpy, errors by type and message,
each in traces (Python and JSON) and replayed."""

from __future__ import annotations

import re

import numpy as np
import pytest

import mlcir
from mlcir import te
from mlcir.schedule import ScheduleError, Trace
from mlcir.testing import kernels


def replayed(sch: mlcir.Schedule, kernel) -> mlcir.Schedule:
    """``sch``'s trace through JSON onto a fresh schedule; the same Python and the same IR."""
    again = mlcir.Schedule(kernel, trace=Trace.from_json(sch.trace.to_json_string()))
    assert str(again.trace) == str(sch.trace)
    assert str(again.mod) == str(sch.mod)
    return again


# -- rfactor ---------------------------------------------------------------------------------

@pytest.mark.parametrize("level", [0, 1])
@pytest.mark.parametrize("factor_axis", [0, 1, 2])
def test_rfactor_of_a_matmul_either_level_any_axis(level, factor_axis):
    text, reference = kernels.matmul(8, 16, 32)
    sch = mlcir.Schedule(text)
    c = sch.get_block("C")
    _, _, k = sch.get_loops(c)
    levels = sch.split(k, [None, 4])
    rf = sch.rfactor(levels[level], factor_axis)
    assert sch.get(rf) == "C_rf"
    # The rf block keeps the factored loop as a spatial loop; C reduces over it.
    kinds = [sch.get(loop).kind for loop in sch.get_loops(rf)]
    assert kinds.count("reduction") == 1 and len(kinds) == 4
    assert [sch.get(loop).kind for loop in sch.get_loops(c)].count("reduction") == 1
    a, b = kernels.random_inputs(text)
    np.testing.assert_allclose(mlcir.build(sch.mod).main(a, b), reference(a, b), rtol=1e-4,
                               atol=1e-4)
    assert f"rfactor(loop=l{4 + level}, factor_axis={factor_axis})" in str(sch.trace)
    replayed(sch, text)
    script = str(sch.as_transform())
    assert "transform.structured.split_reduction" in script
    assert ("inner_parallel" in script) == (level == 1)


def test_rfactor_then_schedule_the_rf_block_tvm_style():
    """A row sum as TVM's rfactor tutorial: k split by 16, the inner level factored out and
    vectorized in the rf block, the rows in parallel; the write-back reduces the 16 lanes."""
    text, reference = kernels.row_sum(64, 256)
    sch = mlcir.Schedule(text)
    s = sch.get_block("S")
    i, k = sch.get_loops(s)
    ko, ki = sch.split(k, [None, 16])
    rf = sch.rfactor(ki, factor_axis=1)
    ri, rko, rki = sch.get_loops(rf)
    assert [sch.get(loop).extent for loop in (ri, rko, rki)] == [64, 16, 16]
    sch.reorder(ri, rko, rki)
    sch.parallel(ri)
    sch.vectorize(rki)
    sch.decompose_reduction(rf, rko)
    x = np.random.default_rng(0).standard_normal((64, 256)).astype(np.float32)
    np.testing.assert_allclose(mlcir.build(sch.mod).main(x), reference(x), rtol=1e-4, atol=1e-4)
    replayed(sch, text)
    assert "vector" in str(sch.mod)


def test_rfactor_of_a_te_kernel():
    n = 1024
    A = te.placeholder((n,), name="A")
    k = te.reduce_axis((0, n), "k")
    total = te.compute((), lambda: te.sum(A[k] * A[k], axis=k), name="total")
    kernel = te.create_prim_func([A, total])
    sch = mlcir.Schedule(kernel)
    (loop,) = sch.get_loops(sch.get_block("total"))
    _, inner = sch.split(loop, [None, 32])
    rf = sch.rfactor(inner)
    sch.vectorize(sch.get_loops(rf)[0])
    a = np.random.default_rng(1).standard_normal(n).astype(np.float32)
    np.testing.assert_allclose(mlcir.build(sch.mod).main(a), np.dot(a, a), rtol=1e-4)


def test_rfactor_errors_name_the_instruction():
    text, _ = kernels.matmul(8, 16, 32)
    sch = mlcir.Schedule(text)
    c = sch.get_block("C")
    i, _, k = sch.get_loops(c)
    with pytest.raises(ScheduleError, match=r"rfactor \(instruction 2\): loop i of block 'C' is "
                       "not a reduction loop"):
        sch.rfactor(i)
    with pytest.raises(ScheduleError, match="split the reduction loop of block 'C' in two"):
        sch.rfactor(k)
    ko, ki = sch.split(k, [None, 4])
    with pytest.raises(ScheduleError, match=r"factor_axis 3 is not a position of the "
                       r"3-dimensional intermediate \(0..2\)"):
        sch.rfactor(ki, 3)
    sch.rfactor(ki)
    with pytest.raises(ScheduleError, match="block 'C_rf' is a cache stage, an rf block"):
        sch.rfactor(ko)
    conv, _ = kernels.conv2d()
    sch = mlcir.Schedule(conv)
    loops = sch.get_loops(sch.get_block("conv"))
    with pytest.raises(ScheduleError, match="block 'conv' has 3 reduction dimensions"):
        sch.rfactor(loops[4])
    sch = mlcir.Schedule(text)
    c = sch.get_block("C")
    i, j, k = sch.get_loops(c)
    ko, ki = sch.split(k, [None, 4])
    sch.decompose_reduction(c, ko)
    with pytest.raises(ScheduleError, match="block 'C_init' is computed at a loop of 'C': "
                       "rfactor before"):
        sch.rfactor(ki)


def test_rfactor_refuses_a_combiner_upstream_does_not_recognise():
    A = te.placeholder((64,), name="A")
    k = te.reduce_axis((0, 64), "k")
    # sum of squares minus the accumulator: not one combiner op on the accumulator.
    odd = te.compute((1,), lambda _: te.sum(A[k], axis=k), name="odd")
    kernel = te.create_prim_func([A, odd])
    text = str(kernel).replace("arith.addf %out", "arith.subf %out")
    sch = mlcir.Schedule(text)
    (_, loop) = sch.get_loops(sch.get_block("odd"))
    _, inner = sch.split(loop, [None, 8])
    with pytest.raises(ScheduleError, match=r"rfactor \(instruction \d+\): upstream "
                       "split_reduction cannot factor block 'odd'"):
        sch.rfactor(inner)


# -- get_producers / get_consumers ------------------------------------------------------------

def test_producers_and_consumers_follow_the_dataflow_and_inlining():
    text, _ = kernels.matmul_bias_relu()
    sch = mlcir.Schedule(text)
    c, d, e = (sch.get_block(n) for n in "CDE")
    assert [sch.get(b) for b in sch.get_producers(c)] == ["C_init"]
    assert [sch.get(b) for b in sch.get_consumers(c)] == ["D"]
    assert [sch.get(b) for b in sch.get_producers(e)] == ["D"]
    assert sch.get_consumers(e) == []
    sch.compute_inline(d)
    assert [sch.get(b) for b in sch.get_producers(e)] == ["C"]
    assert [sch.get(b) for b in sch.get_consumers(c)] == ["E"]
    with pytest.raises(ScheduleError, match=r"get_producers \(instruction \d+\): block 'D' was "
                       "inlined"):
        sch.get_producers(d)
    python = str(sch.trace)
    assert "b3, = sch.get_producers(block=b0)" in python
    assert "sch.get_consumers(block=b2)\n" in python and "b7, = sch.get_consumers(block=b0)" in python
    replayed(sch, text)
    assert "get_producers" not in str(sch.trace.simplified())


# -- add_unit_loop ---------------------------------------------------------------------------

def test_add_unit_loop_above_a_loop_and_a_block():
    text, reference = kernels.matmul_bias_relu()
    sch = mlcir.Schedule(text)
    c = sch.get_block("C")
    i, j, k = sch.get_loops(c)
    unit = sch.add_unit_loop(j)
    assert sch.get(unit).extent == 1
    loops = sch.get_loops(c)
    assert [sch.get(loop).extent for loop in loops] == [64, 1, 128, 96]
    sch.add_unit_loop(sch.get_block("E"))
    assert [sch.get(loop).extent for loop in sch.get_loops(sch.get_block("E"))] == [1, 64, 128]
    # The unit loop is a place to attach at: D is computed under it, i.e. per row of C.
    sch.reverse_compute_at(sch.get_block("D"), unit)
    a, b, bias = kernels.random_inputs(text)
    np.testing.assert_allclose(mlcir.build(sch.mod).main(a, b, bias), reference(a, b, bias),
                               rtol=1e-4, atol=1e-4)
    assert "l4 = sch.add_unit_loop(block_or_loop=l2)" in str(sch.trace)
    replayed(sch, text)


def test_add_unit_loop_refuses_a_scalar_block():
    A = te.placeholder((8,), name="A")
    k = te.reduce_axis((0, 8), "k")
    total = te.compute((), lambda: te.sum(A[k], axis=k), name="total")
    sch = mlcir.Schedule(te.create_prim_func([A, total]))
    with pytest.raises(ScheduleError, match=r"add_unit_loop \(instruction 1\): block "
                       "'total_init' has no loop of its own"):
        sch.add_unit_loop(sch.get_block("total_init"))


# -- sample_compute_location -----------------------------------------------------------------

def test_sample_compute_location_draws_legal_loops_and_replays_its_decision():
    text, reference = kernels.matmul_bias_relu()
    seen = set()
    for seed in range(6):
        sch = mlcir.Schedule(text, seed=seed)
        e = sch.get_block("E")
        i, j = sch.get_loops(e)
        sch.split(j, [None, 16])
        d = sch.get_block("D")
        loop = sch.sample_compute_location(d)
        seen.add(sch.trace.decisions[max(sch.trace.decisions)])
        sch.compute_at(d, loop)
        a, b, bias = kernels.random_inputs(text)
        np.testing.assert_allclose(mlcir.build(sch.mod).main(a, b, bias), reference(a, b, bias),
                                   rtol=1e-4, atol=1e-4)
        again = replayed(sch, text)
        assert again.trace.decisions == sch.trace.decisions
    assert seen == {0, 1, 2}
    assert "sch.sample_compute_location(block=b" in str(sch.trace) and "decision=" in str(sch.trace)
    forced = sch.trace.with_decision(len(sch.trace.insts) - 2, 0)
    assert mlcir.Schedule(text, trace=forced).trace.decisions[len(sch.trace.insts) - 2] == 0


def test_sample_compute_location_errors():
    text, _ = kernels.matmul_bias_relu()
    sch = mlcir.Schedule(text)
    with pytest.raises(ScheduleError, match=r"sample_compute_location \(instruction 1\): "
                       "decision 7 is not an index of the 2 candidate loops"):
        sch.sample_compute_location(sch.get_block("D"), decision=7)
    root = sch.sample_compute_location(sch.get_block("E"))  # E has no consumer: the root
    with pytest.raises(ScheduleError, match=r"split: LoopRV\(\d+\) is the root mark of "
                       r"sample_compute_location \(no loop\): only compute_at and "
                       "reverse_compute_at take it"):
        sch.split(root, [2, None])


@pytest.mark.parametrize("prim", ["compute_at", "reverse_compute_at"])
def test_sample_compute_location_gives_the_root_where_no_loop_is_legal(prim):
    """TVM's sample_compute_location also draws the root, and gives it where no loop is
    legal: computed "at" the root, the block stays where it is (we refused)."""
    text, reference = kernels.matmul_bias_relu(17, 30, 23)
    sch = mlcir.Schedule(text)
    e = sch.get_block("E")
    root = sch.sample_compute_location(e)
    assert sch.get(root).name == "root" and sch.trace.decisions[max(sch.trace.decisions)] == -1
    plain = str(sch.mod)
    getattr(sch, prim)(e, root)
    assert str(sch.mod) == plain
    sch.split(sch.get_loops(e)[0], [None, 4])
    again = replayed(sch, text)
    assert str(again.mod) == str(sch.mod)
    a, b, bias = kernels.random_inputs(text)
    np.testing.assert_allclose(mlcir.build(sch.mod).main(a, b, bias), reference(a, b, bias),
                               rtol=1e-4, atol=1e-4)


# -- transform_layout ------------------------------------------------------------------------

def test_transform_layout_packs_an_intermediate_and_both_sides_still_schedule():
    text, reference = kernels.matmul_bias_relu(64, 128, 96)
    sch = mlcir.Schedule(text)
    d, e = sch.get_block("D"), sch.get_block("E")
    sch.transform_layout(e, ("read", 0), lambda i, j: (j // 16, i, j % 16))
    # D now iterates over the packed layout: (j // 16, i, j % 16), fresh loops.
    assert [sch.get(loop).extent for loop in sch.get_loops(d)] == [8, 64, 16]
    jo, i, ji = sch.get_loops(d)
    sch.parallel(jo)
    sch.vectorize(ji)
    ei, ej = sch.get_loops(e)
    sch.vectorize(sch.split(ej, [None, 16])[1])
    a, b, bias = kernels.random_inputs(text)
    np.testing.assert_allclose(mlcir.build(sch.mod).main(a, b, bias), reference(a, b, bias),
                               rtol=1e-4, atol=1e-4)
    assert ('sch.transform_layout(block=b1, buffer=["read", 0], '
            'index_map="lambda i, j: (j // 16, i, j % 16)")') in str(sch.trace)
    replayed(sch, text)
    # The transform module carries the rewrite, so it replays without Python schedule code.
    from mlcir.ir import clone_module
    from mlcir.schedule.materialize import apply_schedule_script

    with sch.context:
        payload = clone_module(sch.original)
        apply_schedule_script(payload, sch.as_transform())
    assert str(payload) == str(sch.mod)


def test_transform_layout_of_a_tensor_a_reduction_reads_along_its_rows():
    """softmax's exp transposed: sum and norm read it by tensor.extract; sum's reduction
    loop keeps its bound through an unread tensor of the old shape (fuzz_schedules --seed 27
    --case 111 failed to verify), and a consumer placed elsewhere keeps its place."""
    text, reference = kernels.softmax(6, 20)
    sch = mlcir.Schedule(text)
    i, _ = sch.get_loops(sch.get_block("max"))
    sch.reverse_compute_at(sch.get_block("norm"), sch.get_loops(sch.get_block("sum"))[0])
    sch.transform_layout(sch.get_block("exp"), ("write", 0), "lambda i, j: (j, i)")
    x, = kernels.random_inputs(text)
    np.testing.assert_allclose(mlcir.build(sch.mod).main(x), reference(x), rtol=1e-5,
                               atol=1e-6)


def test_transform_layout_of_a_reduction_keeps_its_init():
    text, reference = kernels.matmul_bias_relu(32, 64, 48)
    sch = mlcir.Schedule(text)
    c = sch.get_block("C")
    sch.transform_layout(c, ("write", 0), lambda i, j: (j, i))
    j, i, k = sch.get_loops(c)
    assert [sch.get(loop).kind for loop in (j, i, k)] == ["spatial", "spatial", "reduction"]
    sch.decompose_reduction(c, k)
    a, b, bias = kernels.random_inputs(text)
    np.testing.assert_allclose(mlcir.build(sch.mod).main(a, b, bias), reference(a, b, bias),
                               rtol=1e-4, atol=1e-4)
    replayed(sch, text)


@pytest.mark.parametrize("buffer, index_map, message", [
    (("write", 0), lambda i, j: (i, j // 16, j % 8), "dimension 1 must appear once plainly or "
     "as the pair"),
    (("write", 0), lambda i, j: (i + j, j), "index map results must be d, d // c or d % c"),
    (("write", 0), lambda i, _: (i,), r"dimension\(s\) \[1\] are missing"),
    (("write", 0), lambda i, j: (i // 5, i % 5, j), "5 does not divide dimension 0"),
    (("write", 0), lambda i: (i,), "the index map takes 1 indices, the tensor has 2"),
    (("read", 1), lambda i: (i,), "input #1 of block 'E' has 1 inputs|block 'E' has 1 inputs"),
    (("write", 1), lambda i, j: (j, i), "block 'E' writes one tensor, no #1"),
])
def test_transform_layout_errors(buffer, index_map, message):
    text, _ = kernels.matmul_bias_relu()
    sch = mlcir.Schedule(text)
    target = sch.get_block("E") if buffer != ("write", 0) else sch.get_block("D")
    with pytest.raises(ScheduleError, match=r"transform_layout \(instruction 1\): " + message):
        sch.transform_layout(target, buffer, index_map)


def test_transform_layout_of_a_function_result_copies_it_back():
    """The signature keeps its layout: E writes the packed tensor, E_layout (a block like any
    other, here vectorized) copies it back and is returned."""
    text, reference = kernels.matmul_bias_relu(64, 128, 96)
    sch = mlcir.Schedule(text)
    e = sch.get_block("E")
    sch.transform_layout(e, ("write", 0), lambda i, j: (j // 16, i, j % 16))
    assert [sch.get(loop).extent for loop in sch.get_loops(e)] == [8, 64, 16]
    copy = sch.get_block("E_layout")
    assert [sch.get(b) for b in sch.get_producers(copy)] == ["E"]
    _, j = sch.get_loops(copy)
    sch.vectorize(sch.split(j, [None, 8])[1])
    a, b, bias = kernels.random_inputs(text)
    np.testing.assert_allclose(mlcir.build(sch.mod).main(a, b, bias), reference(a, b, bias),
                               rtol=1e-4, atol=1e-4)
    assert "tensor<8x64x16xf32>" in str(sch.mod)
    replayed(sch, text)


def test_transform_layout_of_a_scheduled_producer_keeps_its_loops():
    """D split 8 x 32 and vectorized, then packed by 16 along j: the j levels carry over, the
    32-wide level (which straddles j // 16 and j % 16) fused from both; i keeps its levels."""
    text, reference = kernels.matmul_bias_relu(64, 128, 96)
    sch = mlcir.Schedule(text)
    d = sch.get_block("D")
    i, j = sch.get_loops(d)
    io, ii = sch.split(i, [None, 8])
    jo, ji = sch.split(j, [None, 32])
    sch.reorder(io, jo, ii, ji)
    sch.parallel(io)
    sch.transform_layout(d, ("write", 0), lambda i, j: (j // 16, i, j % 16))
    # The loop handles stay valid: the same loops.
    assert [sch.get(loop).extent for loop in (io, jo, ii, ji)] == [8, 4, 8, 32]
    assert [sch.get(loop).name for loop in sch.get_loops(d)] == [
        sch.get(loop).name for loop in (io, jo, ii, ji)]
    assert sch.get(ji).name.endswith("fused")
    a, b, bias = kernels.random_inputs(text)
    np.testing.assert_allclose(mlcir.build(sch.mod).main(a, b, bias), reference(a, b, bias),
                               rtol=1e-4, atol=1e-4)
    replayed(sch, text)


@pytest.mark.parametrize("factors, index_map", [
    ([None, 2, 8], lambda i, j: (i // 4, j, i % 4)),   # 8 = 2 x 4: i // 4 and i % 4 fused
    ([None, 4], lambda i, j: (i // 4, j, i % 4)),      # the inner level is i % 4
    ([None, 16], lambda i, j: (j, i // 64, i % 64)),   # i // 64 is one iteration
    ([None, 8], lambda i, j: (j, i)),                  # a permutation
])
def test_transform_layout_carries_the_split_levels_of_a_reduction_and_its_init(factors,
                                                                              index_map):
    text, reference = kernels.matmul_bias_relu(64, 128, 96)
    sch = mlcir.Schedule(text)
    c = sch.get_block("C")
    i, _, k = sch.get_loops(c)
    sch.split(i, factors)
    sch.split(k, [None, 8])
    sch.transform_layout(c, ("write", 0), index_map)
    kinds = [sch.get(loop).kind for loop in sch.get_loops(c)]
    assert kinds[-2:] == ["reduction", "reduction"]
    a, b, bias = kernels.random_inputs(text)
    np.testing.assert_allclose(mlcir.build(sch.mod).main(a, b, bias), reference(a, b, bias),
                               rtol=1e-4, atol=1e-4)
    replayed(sch, text)


def test_after_a_permutation_the_tensor_is_read_through_a_permuted_map_and_fuses():
    """A permutation leaves every operand in place (its indexing map permuted): the producer
    is still inlined and computed at its consumer, and its consumer's cache stages stay."""
    text, reference = kernels.matmul_bias_relu(24, 40, 16)
    a, b, bias = kernels.random_inputs(text)
    for then in ("compute_inline", "compute_at", "reverse_compute_at", "cache_read"):
        sch = mlcir.Schedule(text)
        d, e = sch.get_block("D"), sch.get_block("E")
        if then == "cache_read":  # E's other input (none here): D's own input is cached
            sch.compute_at(sch.cache_read(d, 0, "local"), sch.get_loops(d)[0])
        sch.transform_layout(d, ("write", 0), lambda i, j: (j, i))
        assert "tensor.extract %" not in str(sch.mod)
        assert [sch.get(c) for c in sch.get_consumers(d)] == ["E"]
        if then == "compute_inline":
            sch.compute_inline(d)
        elif then == "compute_at":
            sch.compute_at(d, sch.split(sch.get_loops(e)[1], [None, 8])[0])
        elif then == "reverse_compute_at":
            sch.reverse_compute_at(e, sch.get_loops(d)[0])
        np.testing.assert_allclose(mlcir.build(sch.mod).main(a, b, bias), reference(a, b, bias),
                                   rtol=1e-4, atol=1e-4, err_msg=then)
        replayed(sch, text)


@pytest.mark.parametrize("before", ["compute_at", "reverse_compute_at", "decompose_reduction",
                                    "cache_write", "padded_split"])
def test_a_permutation_of_a_placed_producer_keeps_its_place(before):
    """TVM's transform_layout changes a buffer, not where blocks are computed: permuting the
    tensor of a block computed at another, hosting another, with a placed init or a cache
    stage at its loops, or split with a padded tile, keeps all of it (the region each placed
    block covers follows the renumbered dims)."""
    text, reference = kernels.matmul_bias_relu(24, 40, 20)
    sch = mlcir.Schedule(text)
    c, d = sch.get_block("C"), sch.get_block("D")
    i, j, k = sch.get_loops(c)
    if before == "compute_at":
        _, dj = sch.get_loops(d)
        djo, _ = sch.split(dj, [None, 8])
        sch.compute_at(c, djo)
    elif before == "reverse_compute_at":
        sch.reverse_compute_at(d, j)
    elif before == "decompose_reduction":
        io, _ = sch.split(i, [None, 6])
        sch.decompose_reduction(c, sch.get_loops(c)[1])
    elif before == "cache_write":
        sch.reverse_compute_at(sch.cache_write(c, 0, "local"), i)
    else:
        sch.split(j, [None, 7])
    sch.transform_layout(c, ("write", 0), lambda i, j: (j, i))
    assert "tensor.extract %" not in str(sch.mod)
    a, b, bias = kernels.random_inputs(text)
    np.testing.assert_allclose(mlcir.build(sch.mod).main(a, b, bias), reference(a, b, bias),
                               rtol=1e-4, atol=1e-4)
    replayed(sch, text)


def test_transform_layout_keeps_a_scope_set_before():
    text, reference = kernels.matmul_bias_relu(24, 40, 20)
    sch = mlcir.Schedule(text)
    d = sch.get_block("D")
    sch.set_scope(d, 0, "shared")
    sch.transform_layout(d, ("write", 0), lambda i, j: (j // 4, i, j % 4))
    assert ("bufferization.alloc_tensor() {memory_space = #gpu.address_space<workgroup>} : "
            "tensor<10x24x4xf32>") in str(sch.mod)
    local = mlcir.Schedule(text)
    local.set_scope(local.get_block("D"), 0, "local")
    local.transform_layout(local.get_block("D"), ("write", 0), lambda i, j: (j, i))
    a, b, bias = kernels.random_inputs(text)
    np.testing.assert_allclose(mlcir.build(local.mod).main(a, b, bias), reference(a, b, bias),
                               rtol=1e-4, atol=1e-4)


def test_an_identity_layout_changes_nothing():
    text, _ = kernels.matmul_bias_relu(24, 40, 20)
    sch = mlcir.Schedule(text)
    c = sch.get_block("C")
    sch.compute_at(c, sch.get_loops(sch.get_block("D"))[0])
    before = str(sch.mod)
    sch.transform_layout(c, ("write", 0), lambda i, j: (i, j))
    assert str(sch.mod) == before
    assert 'index_map="lambda i, j: (i, j)"' in str(sch.trace)
    replayed(sch, text)


@pytest.mark.parametrize("factor, message", [
    (6, "a loop of block 'D' walks 6 iterations of dimension 0, which cut across its packing "
        "by 4"),
    (5, "the split of loop dimension 0 of block 'D' does not divide its extent"),
])
def test_transform_layout_refuses_splits_the_layout_cannot_carry(factor, message):
    text, _ = kernels.matmul_bias_relu(48, 128, 96)
    sch = mlcir.Schedule(text)
    with pytest.raises(ScheduleError, match="input #1 of block 'D' is not written by a block"):
        sch.transform_layout(sch.get_block("D"), ("read", 1), lambda j: (j,))
    d = sch.get_block("D")
    i, _ = sch.get_loops(d)
    sch.split(i, [None, factor])
    with pytest.raises(ScheduleError, match=r"transform_layout \(instruction 4\): " + message):
        sch.transform_layout(d, ("write", 0), lambda i, j: (i // 4, j, i % 4))


# -- tensorize -------------------------------------------------------------------------------

def _micro_kernel_tiles(kernel) -> tuple[mlcir.Schedule, list]:
    """The matmul ``C`` tiled 8 x 32 x 1 under its outer loops: (i0, j0, k0, i1, j1, k1)."""
    sch = mlcir.Schedule(kernel)
    i, j, k = sch.get_loops(sch.get_block("C"))
    i0, i1 = sch.split(i, [None, 8])
    j0, j1 = sch.split(j, [None, 32])
    k0, k1 = sch.split(k, [None, 1])
    sch.reorder(i0, j0, k0, i1, j1, k1)
    return sch, [i0, j0, k0, i1, j1, k1]


def _micro_kernel_schedule(kernel, intrin: str) -> mlcir.Schedule:
    sch, loops = _micro_kernel_tiles(kernel)
    sch.tensorize(loops[3], intrin)
    return sch


def test_tensorize_a_matmul_tile_with_a_registered_contraction():
    from mlcir.schedule import matmul_desc, register_intrin

    register_intrin("test.matmul_8x32x1_f32", matmul_desc(8, 32, 1), override=True)
    text, reference = kernels.matmul(64, 64, 64)
    sch = _micro_kernel_schedule(text, "test.matmul_8x32x1_f32")
    a, b = kernels.random_inputs(text)
    np.testing.assert_allclose(mlcir.build(sch.mod).main(a, b), reference(a, b), rtol=1e-4,
                               atol=1e-4)
    assert "vector.contract" in str(sch.mod)
    assert 'sch.tensorize(block_or_loop=l5, tensor_intrin="test.matmul_8x32x1_f32")' in str(sch.trace)
    replayed(sch, text)
    # A te matmul has the same maps and body: the same intrinsic applies.
    A, B = te.placeholder((64, 64), name="A"), te.placeholder((64, 64), name="B")
    k = te.reduce_axis((0, 64), "k")
    C = te.compute((64, 64), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    sch = _micro_kernel_schedule(te.create_prim_func([A, B, C]), "test.matmul_8x32x1_f32")
    np.testing.assert_allclose(mlcir.build(sch.mod).main(a, b), reference(a, b), rtol=1e-4,
                               atol=1e-4)


def test_tensorize_errors():
    from mlcir.schedule import matmul_desc, register_intrin

    register_intrin("test.matmul_4x16x1_f32", matmul_desc(4, 16, 1), override=True)
    text, _ = kernels.matmul(64, 64, 64)
    with pytest.raises(ScheduleError, match=r"tensorize \(instruction 6\): the tile under loop "
                       r"i_1 of block 'C' has extents \[8, 32, 1\]; 'test.matmul_4x16x1_f32' "
                       r"computes \[4, 16, 1\]"):
        _micro_kernel_schedule(text, "test.matmul_4x16x1_f32")
    with pytest.raises(ScheduleError, match="no tensor intrinsic 'nope' \\(registered: .*test"):
        _micro_kernel_schedule(text, "nope")
    relu, _ = kernels.matmul_bias_relu(16, 16, 16)
    sch = mlcir.Schedule(relu)
    with pytest.raises(ScheduleError, match="block 'E' does not compute what "
                       "'test.matmul_4x16x1_f32' describes: its kinds are"):
        sch.tensorize(sch.get_block("E"), "test.matmul_4x16x1_f32")
    with pytest.raises(ScheduleError, match="register_intrin: intrinsic 'test.matmul_4x16x1_f32' "
                       "is already registered"):
        register_intrin("test.matmul_4x16x1_f32", matmul_desc(4, 16, 1))
    with pytest.raises(ScheduleError, match="implementation 'asm' is not one of vector.contract"):
        register_intrin("test.other", matmul_desc(4, 16, 1), impl="asm")


# -- blockize --------------------------------------------------------------------------------

def test_blockize_a_tile_then_tensorize_the_outer_block():
    """TVM's tensorize flow: blockize the micro-kernel tile, tensorize the outer block."""
    from mlcir.schedule import matmul_desc, register_intrin

    register_intrin("test.matmul_8x32x1_f32", matmul_desc(8, 32, 1), override=True)
    text, reference = kernels.matmul(64, 96, 48)
    sch, (_, _, k0, i1, _, _) = _micro_kernel_tiles(text)
    outer = sch.blockize(i1)
    assert sch.get(outer) == "C_o"
    assert [sch.get(loop).extent for loop in sch.get_loops(outer)] == [8, 3, 48]
    assert [sch.get(b) for b in sch.get_child_blocks(outer)] == ["C"]
    sch.tensorize(outer, "test.matmul_8x32x1_f32")
    a, b = kernels.random_inputs(text)
    np.testing.assert_allclose(mlcir.build(sch.mod).main(a, b), reference(a, b), rtol=1e-4,
                               atol=1e-4)
    assert "vector.contract" in str(sch.mod)
    assert "b10 = sch.blockize(target=l5)" in str(sch.trace)
    replayed(sch, text)
    # The boundary is a block boundary: loops do not move across it.
    with pytest.raises(ScheduleError, match="outer block 'C_o' \\(blockize\\) is at loop k_0 "
                                            "of block 'C', inside the loops to reorder"):
        sch.reorder(k0, i1)
    # A split of the loop above keeps the outer block under the innermost new loop.
    k00, k01 = sch.split(k0, [None, 4])
    assert [sch.get(loop).extent for loop in sch.get_loops(outer)] == [8, 3, 12, 4]


def test_annotations_of_an_outer_block_land_on_its_tile():
    """TVM annotates any block; an outer block of blockize is a view of its tile, the inner
    block's tiled op, which carries the attribute (we refused)."""
    text, ref = kernels.matmul_bias_relu(17, 30, 23)
    sch = mlcir.Schedule(text)
    i, _, _ = sch.get_loops(sch.get_block("C"))
    _, i1 = sch.split(i, [None, 4])
    outer = sch.blockize(i1)
    sch.annotate(outer, "tile_note", [1, 2])
    tiled = [line for line in str(sch.mod).splitlines() if "loop.tile_note" in line]
    assert len(tiled) == 1 and re.search(r'^ {6,}%\S+ = linalg.matmul \{loop.block = "C", '
                                         r'loop.tile_note = \[1, 2\]\}', tiled[0])
    a, b, bias = kernels.random_inputs(text)
    np.testing.assert_allclose(mlcir.build(sch.mod).main(a, b, bias), ref(a, b, bias),
                               rtol=1e-4, atol=1e-4)
    sch.unannotate(outer, "tile_note")
    assert "tile_note" not in str(sch.mod)


def test_blockize_errors():
    relu, _ = kernels.matmul_bias_relu(16, 16, 16)
    sch = mlcir.Schedule(relu)
    _, j, _ = sch.get_loops(sch.get_block("C"))
    sch.reverse_compute_at(sch.get_block("D"), j)
    with pytest.raises(ScheduleError, match="blockize \\(instruction \\d+\\): block 'D' is computed "
                                            "at loop j, under loop j: the tile holds block 'C' "
                                            "only"):
        sch.blockize(j)
    text, _ = kernels.matmul(64, 96, 48)
    sch = mlcir.Schedule(text)
    c = sch.get_block("C")
    i, j, k = sch.get_loops(c)
    outer = sch.blockize(j)
    assert sch.get(sch.blockize(j)) == "C_o_o"  # TVM wraps the outer block again
    with pytest.raises(ScheduleError, match="compute_at \\(instruction \\d+\\): block 'C_o' is the "
                                            "outer block of a blockize \\(a tile of 'C'\\)"):
        sch.compute_at(outer, i)


# -- set_scope -------------------------------------------------------------------------------

def test_set_scope_gives_the_result_a_buffer_of_its_own():
    text, reference = kernels.matmul_bias_relu(32, 64, 48)
    sch = mlcir.Schedule(text)
    c = sch.get_block("C")
    sch.set_scope(c, 0, "local")
    _, _, k = sch.get_loops(c)
    sch.decompose_reduction(c, k)
    assert str(sch.mod).count("bufferization.alloc_tensor()") == 1
    a, b, bias = kernels.random_inputs(text)
    np.testing.assert_allclose(mlcir.build(sch.mod).main(a, b, bias), reference(a, b, bias),
                               rtol=1e-4, atol=1e-4)
    replayed(sch, text)
    shared = mlcir.Schedule(text)
    shared.set_scope(shared.get_block("D"), 0, "shared")
    assert ("bufferization.alloc_tensor() {memory_space = #gpu.address_space<workgroup>} : "
            "tensor<32x64xf32>") in str(shared.mod)
    assert 'sch.set_scope(block=b0, buffer_index=0, storage_scope="shared")' in str(shared.trace)


def test_set_scope_errors():
    text, _ = kernels.matmul_bias_relu()
    sch = mlcir.Schedule(text)
    with pytest.raises(ScheduleError, match=r"set_scope \(instruction 1\): storage_scope must be "
                       "one of global, local, shared, got 'texture'"):
        sch.set_scope(sch.get_block("D"), 0, "texture")
    with pytest.raises(ScheduleError, match="the result of block 'E' is a result of function "
                       "'main': its memory is the caller's"):
        sch.set_scope(sch.get_block("E"), 0, "local")
    with pytest.raises(ScheduleError, match="block 'D' writes one buffer, no #1"):
        sch.set_scope(sch.get_block("D"), 1, "local")
    cached = sch.cache_write(sch.get_block("C"), 0, "local")
    with pytest.raises(ScheduleError, match="block 'C_write0_local' was made by the schedule"):
        sch.set_scope(cached, 0, "local")


# -- storage_align ---------------------------------------------------------------------------

def test_storage_align_pads_the_row_stride_of_an_intermediate():
    from mlcir.schedule.align import padded_stride

    assert [padded_stride(64, 16, 1), padded_stride(64, 32, 0), padded_stride(60, 32, 8)] == \
        [65, 64, 72]
    text, reference = kernels.matmul_bias_relu(32, 64, 48)
    sch = mlcir.Schedule(text)
    c, d = sch.get_block("C"), sch.get_block("D")
    sch.storage_align(c, 0, 0, 16, 1)
    sch.set_scope(d, 0, "local")
    sch.storage_align(d, 0, 0, 32, 8)
    i, j, k = sch.get_loops(c)
    j0, j1 = sch.split(j, [None, 16])
    sch.reorder(i, j0, k, j1)
    sch.vectorize(j1)
    sch.decompose_reduction(c, k)
    text_ir = str(sch.mod)
    assert "[0, 0] [32, 64] [1, 1] : tensor<32x65xf32> to tensor<32x64xf32>" in text_ir
    assert "tensor<32x72xf32> to tensor<32x64xf32>" in text_ir
    a, b, bias = kernels.random_inputs(text)
    np.testing.assert_allclose(mlcir.build(sch.mod).main(a, b, bias), reference(a, b, bias),
                               rtol=1e-4, atol=1e-4)
    assert "sch.storage_align(block=b0, buffer_index=0, axis=0, factor=16, offset=1)" in \
        str(sch.trace)
    replayed(sch, text)


def test_storage_align_errors():
    text, _ = kernels.matmul_bias_relu()
    sch = mlcir.Schedule(text)
    d = sch.get_block("D")
    with pytest.raises(ScheduleError, match=r"storage_align \(instruction 1\): only the stride of "
                       "axis 0 .* can be padded, got axis 1"):
        sch.storage_align(d, 0, 1, 16, 0)
    with pytest.raises(ScheduleError, match="need factor >= 1 and 0 <= offset < factor"):
        sch.storage_align(d, 0, 0, 16, 16)
    with pytest.raises(ScheduleError, match="the result of block 'E' is a result of function"):
        sch.storage_align(sch.get_block("E"), 0, 0, 16, 1)
    init = sch.get_block("C_init")  # its fused loop split across: C's destination reshaped
    sch.split(sch.fuse(*sch.get_loops(init)), [None, 7])
    with pytest.raises(ScheduleError, match="the destination of block 'C' is not a fresh tensor"):
        sch.set_scope(sch.get_block("C"), 0, "local")


def test_storage_align_and_set_scope_in_either_order():
    """The scope goes to the wider allocation an aligned stride made; a second alignment
    replaces the first (fuzz_schedules --seed 42: both were refused)."""
    text, reference = kernels.matmul_bias_relu(32, 64, 48)
    sch = mlcir.Schedule(text)
    d = sch.get_block("D")
    sch.storage_align(d, 0, 0, 16, 1)
    sch.set_scope(d, 0, "shared")
    sch.storage_align(d, 0, 0, 32, 8)
    text_ir = str(sch.mod)
    assert ("bufferization.alloc_tensor() {memory_space = #gpu.address_space<workgroup>} : "
            "tensor<32x72xf32>") in text_ir
    assert "tensor<32x65xf32>" not in text_ir
    local = mlcir.Schedule(text)
    local.storage_align(local.get_block("D"), 0, 0, 16, 1)
    local.set_scope(local.get_block("D"), 0, "local")
    assert "tensor<32x65xf32> to tensor<32x64xf32>" in str(local.mod)
    a, b, bias = kernels.random_inputs(text)
    np.testing.assert_allclose(mlcir.build(local.mod).main(a, b, bias), reference(a, b, bias),
                               rtol=1e-4, atol=1e-4)
    replayed(sch, text)


def test_after_a_packing_the_producer_is_not_inlined_nor_computed_at_its_consumer():
    text, _ = kernels.matmul_bias_relu()
    sch = mlcir.Schedule(text)
    d, e = sch.get_block("D"), sch.get_block("E")
    sch.transform_layout(d, ("write", 0), lambda i, j: (j // 4, i, j % 4))
    # E reads D by tensor.extract: a consumer all the same, but nothing fuses through it.
    assert [sch.get(c) for c in sch.get_consumers(d)] == ["E"]
    assert [sch.get(p) for p in sch.get_producers(e)] == ["D"]
    message = "block 'E' reads block 'D' by tensor.extract .* which does not fuse"
    with pytest.raises(ScheduleError, match="compute_inline .*" + message):
        sch.compute_inline(d)
    with pytest.raises(ScheduleError, match="compute_at .*" + message):
        sch.compute_at(d, sch.get_loops(e)[0])
    with pytest.raises(ScheduleError, match="reverse_compute_at .*" + message):
        sch.reverse_compute_at(e, sch.get_loops(d)[0])


def test_a_block_reading_a_relayouted_tensor_keeps_that_dataflow():
    """After transform_layout, norm reads sum by tensor.extract, not as an operand; moving
    norm up for a reverse_compute_at at max's loop must still see it needs sum (it crashed
    with an operand that did not dominate its use: fuzz_schedules --seed 34 --case 3078)."""
    text, _ = kernels.softmax(6, 20)
    sch = mlcir.Schedule(text)
    sch.compute_inline(sch.get_block("exp"))
    sch.transform_layout(sch.get_block("sum"), ("write", 0), "lambda v0: (v0 // 3, v0 % 3)")
    i, _ = sch.get_loops(sch.get_block("max"))
    with pytest.raises(ScheduleError, match="block 'norm' reads block 'sum', which reads 'max'"):
        sch.reverse_compute_at(sch.get_block("norm"), i)


# -- cases the fuzzer found (fuzz_schedules --seed 37) ------------------------------------------

def test_a_gather_from_a_padded_reordered_tensor_reads_a_contiguous_copy():
    """T packed (R reads it by tensor.extract), then split with padding and reordered: T's
    result is the slice dropping the padded rows, a strided view, and R's vectorized gather
    linearized its offsets as if it were contiguous (max error 3.4: fuzz_schedules --seed 44
    --case 7760). The gather now reads a contiguous copy."""
    text, reference = kernels.transpose_relu([12, 19, 16], [0, 2, 1])
    sch = mlcir.Schedule(text)
    t = sch.get_block("T")
    sch.unroll(sch.get_loops(t)[0], factor=2)
    sch.transform_layout(t, ("write", 0), "lambda v0, v1, v2: (v1, v2, v0 // 6, v0 % 6)")
    sch.split(sch.get_loops(t)[-1], [2, 2, 8])  # 32 steps for 19: padded
    _, _, l0, l1, l2 = sch.get_loops(t)
    sch.reorder(l2, l0, l1)
    r = sch.get_block("R")
    sch.vectorize(sch.get_loops(r)[-1])
    assert "linalg.copy" in str(sch.mod)
    x, = kernels.random_inputs(text)
    np.testing.assert_allclose(mlcir.build(sch.mod).main(x), reference(x), rtol=1e-6)


def test_a_partial_vector_tile_writing_its_result_transposed_stays_scalar():
    """The rf block writes [k_0, i, j] and is vectorized at a partial j tile (3 of 5) with
    k_0 inside: the masked transposed write failed to lower upstream ('vector.maskedstore'
    op expected valueToStore shape to match mask shape; fuzz_schedules --seed 43 --case
    9931). The tile stays scalar, with the reason on the op."""
    text, reference = kernels.matmul_bias_relu(4, 5, 21)
    sch = mlcir.Schedule(text)
    c = sch.get_block("C")
    _, j, _ = sch.get_loops(c)
    sch.split(j, [None, 3])
    _, _, j1, k = sch.get_loops(c)
    sch.vectorize(j1)
    k0, _ = sch.split(k, [None, 3])
    sch.rfactor(k0, factor_axis=0)
    assert "writes its result in another order than the tile's loops" in str(sch.mod)
    a, b, bias = kernels.random_inputs(text)
    np.testing.assert_allclose(mlcir.build(sch.mod).main(a, b, bias), reference(a, b, bias),
                               rtol=1e-4, atol=1e-4)


def _row_sum_rfactor_with_s_at_rf_loop(cache_first: bool):
    text, _ = kernels.row_sum(9, 18)
    sch = mlcir.Schedule(text)
    s = sch.get_block("S")
    _, k = sch.get_loops(s)
    ko, _ = sch.split(k, [None, 2])
    rf = sch.rfactor(ko, 0)
    if cache_first:
        sch.cache_write(s, 0, "global")
        sch.reverse_compute_at(s, sch.get_loops(rf)[1])
    else:
        sch.reverse_compute_at(s, sch.get_loops(rf)[1])
        sch.cache_write(s, 0, "global")


@pytest.mark.parametrize("cache_first", [False, True])
def test_cache_write_of_a_consumer_computed_at_a_loop_over_its_reduction_is_refused(cache_first):
    """Case 4016: the promoted accumulator inside the loop stepping the reduction failed to
    bufferize ("Yield operand #1 is not equivalent to the corresponding iter bbArg")."""
    with pytest.raises(ScheduleError, match="the cache_write stage of 'S' would promote its "
                       "accumulator inside a loop stepping its reduction"):
        _row_sum_rfactor_with_s_at_rf_loop(cache_first)


def test_transform_layout_after_reordering_the_init_levels_is_refused():
    """Case 3770: the init's levels reordered (a dimension per level) crashed the carry-over
    of its loops with a KeyError."""
    text, _ = kernels.matmul_bias_relu(64, 30, 96)
    sch = mlcir.Schedule(text)
    init = sch.get_block("C_init")
    _, j = sch.get_loops(init)
    sch.split(j, [2, 15])
    i, j0, j1 = sch.get_loops(init)
    sch.reorder(j1, j0, i)
    sch.split(sch.get_loops(sch.get_block("D"))[1], [1, 1, 30])
    with pytest.raises(ScheduleError, match="the split levels of block 'C_init' were "
                       "reordered, which reshapes it"):
        sch.transform_layout(sch.get_block("C"), ("write", 0), lambda i, j: (j, i))


# -- a named op that is not a generic: linalg.transpose (fuzz_schedules --seed 39) ---------------

def test_inlining_and_memory_primitives_take_a_transpose():
    """Cases 4 and 45 crashed: the rewrites read a generic's ``inputs``/``outputs`` and an
    Operation's ``block`` from ``linalg.transpose`` (an OpView whose destination is ``init``)."""
    text, reference = kernels.transpose_relu((6, 10, 12), (1, 2, 0))
    x, = kernels.random_inputs(text)
    sch = mlcir.Schedule(text)
    sch.reverse_compute_inline(sch.get_block("R"))
    np.testing.assert_array_equal(mlcir.build(sch.mod).main(x), reference(x))
    replayed(sch, text)
    sch = mlcir.Schedule(text)
    t = sch.get_block("T")
    sch.set_scope(t, 0, "local")
    sch.storage_align(t, 0, 1, 16, 3)
    sch.compute_inline(t)
    np.testing.assert_array_equal(mlcir.build(sch.mod).main(x), reference(x))


def test_a_block_computed_inside_a_vector_tile_keeps_the_tile_scalar():
    """fuzz_schedules --seed 40 --case 5321 summed wrong: C's init decomposed at its j loop,
    j vectorized (the init inside the one vector operation), then C computed at D's rows.
    The tile now stays scalar, with the reason on the op."""
    text, reference = kernels.matmul_bias_relu(16, 14, 3)
    sch = mlcir.Schedule(text)
    c = sch.get_block("C")
    _, j, k = sch.get_loops(c)
    sch.decompose_reduction(c, k)
    sch.vectorize(j)
    sch.compute_at(c, sch.get_loops(sch.get_block("D"))[0])
    a, b, bias = kernels.random_inputs(text)
    np.testing.assert_allclose(mlcir.build(sch.mod).main(a, b, bias), reference(a, b, bias),
                               rtol=1e-5, atol=1e-5)
    assert "block 'C_init' is computed inside the vector tile" in str(sch.mod)
