"""Schedule primitives: each one on a real kernel, the result compared with numpy; illegal uses
rejected with a ScheduleError naming the primitive and the reason."""

from __future__ import annotations

import re

import numpy as np
import pytest

import mlcir
from mlcir.schedule import ScheduleError, Trace
from mlcir.testing import kernels


def run(sch: mlcir.Schedule, text: str, reference, seed: int = 0) -> float:
    """Build the scheduled kernel, run it on random inputs, return the max relative error."""
    inputs = kernels.random_inputs(text, seed)
    ex = mlcir.build(sch.mod)
    out = ex.main(*inputs)
    ref = reference(*inputs)
    return float(np.abs(out - ref).max() / max(np.abs(ref).max(), 1e-6))


@pytest.fixture(scope="module")
def mm():
    return kernels.matmul(64, 96, 48)


@pytest.fixture(scope="module")
def mbr():
    return kernels.matmul_bias_relu(32, 64, 48)


def test_course_example(mm):
    text, ref = mm
    sch = mlcir.Schedule(text, seed=3)
    block_c = sch.get_block("C", func_name="main")
    i, j, k = sch.get_loops(block_c)
    j_factors = sch.sample_perfect_tile(j, n=2, max_innermost_factor=16)
    j_0, j_1 = sch.split(j, factors=j_factors)
    sch.reorder(i, j_0, k, j_1)
    init = sch.decompose_reduction(block_c, k)
    assert sch.get(init) == "C_init"
    assert run(sch, text, ref) < 1e-5
    printed = str(sch.trace)
    assert 'b0 = sch.get_block(name="C", func_name="main")' in printed
    assert "sch.sample_perfect_tile(loop=l2, n=2, max_innermost_factor=16, decision=[" in printed
    assert "sch.reorder(l1, l6, l3, l7)" in printed


def test_split_reorder_vectorize_parallel_unroll(mm):
    text, ref = mm
    sch = mlcir.Schedule(text)
    c = sch.get_block("C")
    i, j, k = sch.get_loops(c)
    i0, i1 = sch.split(i, [None, 8])
    j0, j1 = sch.split(j, [3, None])
    k0, k1 = sch.split(k, [None, 1])
    sch.reorder(i0, j0, k0, k1, i1, j1)
    sch.parallel(i0)
    sch.vectorize(i1)
    sch.unroll(k0, factor=4)
    assert [sch.get(loop).extent for loop in (i0, i1, j0, j1, k0, k1)] == [8, 8, 3, 32, 48, 1]
    assert run(sch, text, ref) < 1e-5
    ir_text = str(sch.mod)
    assert "scf.forall" in ir_text and "vector.contract" in ir_text


def test_fuse_then_parallel(mbr):
    text, ref = mbr
    sch = mlcir.Schedule(text)
    e = sch.get_block("E")
    i, j = sch.get_loops(e)
    i0, i1 = sch.split(i, [4, None])
    j0, j1 = sch.split(j, [4, None])
    sch.reorder(i0, j0, i1, j1)
    fused = sch.fuse(i0, j0)
    assert sch.get(fused).extent == 16 and sch.get(fused).name == "i_0_j_0_fused"
    sch.parallel(fused)
    assert run(sch, text, ref) < 1e-5


def test_fuse_serial_loops_are_coalesced(mbr):
    text, ref = mbr
    sch = mlcir.Schedule(text)
    d = sch.get_block("D")
    i, j = sch.get_loops(d)
    sch.fuse(i, j)
    assert run(sch, text, ref) < 1e-5
    assert "affine.delinearize_index" in str(sch.mod)


def test_compute_inline_and_reverse_compute_inline(mbr):
    text, ref = mbr
    sch = mlcir.Schedule(text)
    sch.compute_inline(sch.get_block("D"))  # bias add disappears into the relu block E
    assert run(sch, text, ref) < 1e-5
    sch = mlcir.Schedule(text)
    sch.reverse_compute_inline(sch.get_block("E"))  # relu disappears into D
    assert run(sch, text, ref) < 1e-5
    mod = str(sch.mod)
    assert 'loop.block = "D"' in mod and 'loop.block = "E"' not in mod
    with pytest.raises(ScheduleError, match="block 'E' was inlined"):
        sch.get_block("E")


def test_reverse_compute_at_epilogue_vectorized(mbr):
    text, ref = mbr
    sch = mlcir.Schedule(text)
    c, d = sch.get_block("C"), sch.get_block("D")
    sch.reverse_compute_inline(sch.get_block("E"))
    i, j, k = sch.get_loops(c)
    i0, i1 = sch.split(i, [None, 8])
    j0, j1 = sch.split(j, [None, 32])
    k0, k1 = sch.split(k, [None, 1])
    sch.reorder(i0, j0, k0, k1, i1, j1)
    sch.reverse_compute_at(d, j0)
    sch.vectorize(i1)
    sch.decompose_reduction(c, k0)
    loops = sch.get_loops(d)
    assert [sch.get(loop).extent for loop in loops] == [4, 2, 8, 32]  # i0, j0 shared, then D's tile
    sch.vectorize(loops[2])
    assert run(sch, text, ref) < 1e-5


def test_cache_read_of_the_input_a_reverse_compute_at_follows(mbr):
    """The cache copies the consumer's tile of the producer's result, under the shared
    loops (after the producer's tile, where TVM places it)."""
    text, ref = mbr
    sch = mlcir.Schedule(text)
    c, d = sch.get_block("C"), sch.get_block("D")
    i, _, _ = sch.get_loops(c)
    sch.reverse_compute_at(d, i)
    sch.cache_read(d, 0, "local")
    assert "bufferization.materialize_in_destination" in str(sch.as_transform()) or \
        "promote_tensor" in str(sch.as_transform())
    assert run(sch, text, ref) < 1e-5


def test_compute_at_producer(mbr):
    text, ref = mbr
    sch = mlcir.Schedule(text)
    d, e = sch.get_block("D"), sch.get_block("E")
    i, j = sch.get_loops(e)
    j0, j1 = sch.split(j, [None, 16])
    sch.compute_at(d, j0)
    # D covers what one j0 iteration of E reads: 1 row (i is outside j0) by 16 columns.
    assert [sch.get(loop).extent for loop in sch.get_loops(d)] == [32, 4, 1, 16]
    assert run(sch, text, ref) < 1e-5


def test_cache_read_and_cache_write(mm):
    text, ref = mm
    sch = mlcir.Schedule(text)
    c = sch.get_block("C")
    i, j, k = sch.get_loops(c)
    j0, j1 = sch.split(j, [None, 32])
    sch.reorder(j0, i, k, j1)
    b_cache = sch.cache_read(c, 1, "global")
    sch.compute_at(b_cache, j0)
    c_cache = sch.cache_write(c, 0, "local")
    sch.reverse_compute_at(c_cache, i)
    assert run(sch, text, ref) < 1e-5
    assert "bufferization.alloc_tensor" in str(sch.mod)


def test_conv2d_tiled_and_vectorized():
    text, ref = kernels.conv2d(1, 4, 10, 10, 8, 3, 3)
    sch = mlcir.Schedule(text)
    conv = sch.get_block("conv")
    n, f, oh, ow, c, kh, kw = sch.get_loops(conv)
    f0, f1 = sch.split(f, [None, 4])
    sch.reorder(n, f0, oh, c, kh, kw, f1, ow)
    sch.vectorize(f1)
    assert run(sch, text, ref) < 1e-5


def test_reduction_and_softmax():
    text, ref = kernels.row_sum(16, 64)
    sch = mlcir.Schedule(text)
    s = sch.get_block("S")
    i, j = sch.get_loops(s)
    j0, j1 = sch.split(j, [None, 16])
    sch.parallel(i)
    sch.decompose_reduction(s, j0)
    assert run(sch, text, ref) < 1e-5

    text, ref = kernels.softmax(8, 64)
    sch = mlcir.Schedule(text)
    sch.compute_inline(sch.get_block("exp"))  # exp is recomputed in sum and norm
    norm = sch.get_block("norm")
    i, j = sch.get_loops(norm)
    sch.split(j, [None, 16])
    assert run(sch, text, ref) < 1e-5


def test_cache_read_after_compute_inline_stages_the_input_it_names():
    """After inlining exp into sum, sum reads (X, max): input #1 is the row max, not sum's
    accumulator (the fused op's operands are its kept inputs, the producer's, then outputs)."""
    import re

    text, ref = kernels.softmax(8, 64)
    sch = mlcir.Schedule(text)
    sch.compute_inline(sch.get_block("exp"))
    s = sch.get_block("sum")
    cache = sch.cache_read(s, 1, "global")
    i, _ = sch.get_loops(s)
    sch.compute_at(cache, i)
    ir_text = str(sch.mod)
    staged = re.search(r"(%\w+) = bufferization.materialize_in_destination", ir_text).group(1)
    (sum_op,) = [line for line in ir_text.splitlines() if 'loop.block = "sum"' in line
                 and "linalg.generic" in line]
    assert re.search(rf"ins\(%\w+, {staged} :", sum_op), sum_op
    assert run(sch, text, ref) < 1e-5


def test_annotate_and_unannotate_show_in_ir(mm):
    text, ref = mm
    sch = mlcir.Schedule(text)
    c = sch.get_block("C")
    i, j, k = sch.get_loops(c)
    i0, i1 = sch.split(i, [2, None])
    sch.annotate(i0, "my_tag", 7)
    sch.annotate(i1, "drop_me", "x")
    sch.unannotate(i1, "drop_me")
    mod = str(sch.mod)
    assert "loop.my_tag = 7" in mod and "drop_me" not in mod
    assert run(sch, text, ref) < 1e-5


def test_annotation_values_are_tvms_lists_and_dicts_too(mm):
    """TVM's annotation values include lists and str-keyed dicts of them; they become MLIR
    array and dictionary attributes, and replay from a trace's JSON."""
    text, ref = mm
    sch = mlcir.Schedule(text)
    i, _, _ = sch.get_loops(sch.get_block("C"))
    sch.annotate(i, "tiles", [1, "x", 2.5, [True]])
    sch.annotate(i, "meta", {"n": [2, 3]})
    sch.annotate(sch.get_block("C"), "note", ["a"])  # on the block's op
    mod = str(sch.mod)
    assert 'loop.meta = {n = [2, 3]}' in mod
    assert re.search(r'linalg.matmul .*loop.note = \["a"\]', mod)
    assert 'loop.tiles = [1, "x", 2.500000e+00, [true]]' in mod
    again = mlcir.Schedule(text, trace=Trace.from_json(sch.trace.to_json_string()))
    assert str(again.mod) == mod
    assert run(sch, text, ref) < 1e-5
    with pytest.raises(ScheduleError, match=r"annotate \(instruction \d+\): annotation values "
                       r"must be int, float, str or bool, or lists or str-keyed dicts of them; "
                       r"got NoneType"):
        sch.annotate(i, "bad", [1, None])
    with pytest.raises(ScheduleError, match=r"got a dict with a key that is not a str"):
        sch.annotate(i, "bad", {1: 2})


@pytest.mark.parametrize("prim, message", [
    (lambda s, loops: s.split(loops["i"], [5, 12]), r"split \(instruction \d+\): factors \[5, 12\] of loop i \(extent 64\) multiply to 60, less than 64"),
    (lambda s, loops: s.split(loops["i"], [None, None]), r"at most one factor may be None"),
    (lambda s, loops: s.parallel(loops["k"]), r"parallel \(instruction \d+\): loop k is a reduction loop"),
    (lambda s, loops: s.reorder(loops["i"], loops["i"]), r"reorder .*a loop is given twice"),
    (lambda s, loops: s.bind(loops["i"], "warp.x"), r"unknown thread axis 'warp.x'"),
    (lambda s, loops: s.decompose_reduction(s.get_block("C_init"), loops["k"]), r"does not enclose block 'C_init'"),
    (lambda s, _loops: s.compute_inline(s.get_block("C")), r"compute_inline .*block 'C' is a reduction"),
    (lambda s, loops: s.sample_perfect_tile(loops["j"], n=2, decision=[5, 5]), r"decision \[5, 5\] is not a tiling of loop j \(extent 96\)"),
    (lambda s, _loops: s.sample_categorical([1, 2], [0.5, 0.5], decision=2), r"decision 2 is not an index"),
    (lambda s, _loops: s.get_block("nope"), r"no block named 'nope'; blocks: main:C, main:C_init"),
])
def test_illegal_primitives_are_named(mm, prim, message):
    text, _ = mm
    sch = mlcir.Schedule(text)
    c = sch.get_block("C")
    i, j, k = sch.get_loops(c)
    with pytest.raises(ScheduleError, match=message):
        prim(sch, {"i": i, "j": j, "k": k})


def test_split_loops_are_gone(mm):
    text, _ = mm
    sch = mlcir.Schedule(text)
    i, j, k = sch.get_loops(sch.get_block("C"))
    sch.split(i, [None, 8])
    with pytest.raises(ScheduleError, match="no longer exists"):
        sch.split(i, [2, None])


def test_a_loop_that_cannot_be_a_vector_tile_stays_scalar(mm):
    """TVM's fallback: vectorize is accepted, and a tile MLIR cannot vectorize stays scalar
    loops, with the reason on the block's op."""
    text, ref = mm
    sch = mlcir.Schedule(text)
    i, j, k = sch.get_loops(sch.get_block("C"))
    i0, i1 = sch.split(i, [None, 8])
    sch.reorder(i0, i1, j, k)  # i1 is innermost level, but j and k inside it are whole dims
    sch.vectorize(j)
    mod = str(sch.mod)
    assert 'loop.not_vectorized = "the tile under loop j has 4608 elements' in mod
    assert "vector." not in mod
    assert run(sch, text, ref) < 1e-5
    sch = mlcir.Schedule(text)
    i, j, k = sch.get_loops(sch.get_block("C"))
    sch.parallel(i)
    sch.vectorize(i)  # a loop has one kind (TVM's for_kind): the last one set wins
    assert sch.get(i).annotations == {"vectorize": True}


def test_unroll_limits_the_copies_of_a_body(mm):
    text, _ = mm
    sch = mlcir.Schedule(text)
    i, j, k = sch.get_loops(sch.get_block("C"))
    sch.unroll(k)  # 48 copies
    with pytest.raises(ScheduleError, match=r"unroll .*would make 4608 copies of the loop body in "
                                            r"block 'C' \(at most 512\); unroll by a factor"):
        sch.unroll(j)
    sch.unroll(j, factor=4)  # 192 copies


def test_compute_at_rules(mbr):
    text, _ = mbr
    sch = mlcir.Schedule(text)
    c, d, e = sch.get_block("C"), sch.get_block("D"), sch.get_block("E")
    i, j, k = sch.get_loops(c)
    with pytest.raises(ScheduleError, match="loop k at or above the target loop is a reduction "
                                            "loop, but 'D' needs complete results of 'C'"):
        sch.reverse_compute_at(d, k)
    with pytest.raises(ScheduleError, match="block 'E' does not read block 'C'"):
        sch.reverse_compute_at(e, i)
    sch.reverse_compute_at(d, i)
    with pytest.raises(ScheduleError, match="block 'D' is computed at loop i of block 'C', "
                                            "inside the loops to reorder: they are not a single "
                                            "chain"):
        sch.reorder(j, i)


def _imports_within_schedule_package() -> dict[str, set[str]]:
    """Module of mlcir/schedule -> the modules of that package it imports (anywhere in it)."""
    import ast
    from pathlib import Path

    import mlcir.schedule

    folder = Path(mlcir.schedule.__file__).parent
    names = {p.stem for p in folder.glob("*.py")}
    graph = {}
    for path in folder.glob("*.py"):
        deps = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.level == 1:
                deps.update([node.module.split(".")[0]] if node.module else
                            [alias.name for alias in node.names])
            elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("mlcir.schedule."):
                deps.add(node.module.split(".")[2])
        graph[path.stem] = {d for d in deps if d in names and d != path.stem}
    return graph


def test_schedule_modules_import_one_way():
    """The front (schedule.py) is imported by nothing but the package; the trace does not know
    the schedule; and no module of the package imports itself back through another."""
    graph = _imports_within_schedule_package()
    assert {m for m, deps in graph.items() if "schedule" in deps} == {"__init__"}
    assert graph["trace"] <= {"instruction", "errors"}

    def reaches(start: str, goal: str, seen: set[str]) -> bool:
        return any(d == goal or (d not in seen and reaches(d, goal, seen | {d}))
                   for d in graph[start])

    assert not [m for m in graph if reaches(m, m, {m})]


@pytest.mark.parametrize("where", [0, 1])
def test_compute_at_of_a_reduction_moves_its_init_along(mbr, where):
    """TVM's reduction block carries its init: computed at a loop of its consumer (here also
    at the inner loop, which recomputes each row of the matmul for every column tile), the
    fill comes along, so no tile adds to an earlier tile's sums."""
    text, ref = mbr
    sch = mlcir.Schedule(text)
    c, d = sch.get_block("C"), sch.get_block("D")
    i, j = sch.get_loops(d)
    j0, _ = sch.split(j, [None, 8])
    sch.reorder(j0, i)
    sch.compute_at(c, [j0, i][where])
    state = sch.state
    assert state.blocks[("main", "C_init")].attach == state.blocks[("main", "C")].attach
    assert run(sch, text, ref) < 1e-5
    replay = mlcir.Schedule(text)
    sch.trace.apply_to_schedule(replay)
    assert str(replay.mod) == str(sch.mod)


def test_decompose_reduction_after_compute_at_places_the_moved_init(mbr):
    text, ref = mbr
    sch = mlcir.Schedule(text)
    c = sch.get_block("C")
    sch.compute_at(c, sch.get_loops(sch.get_block("D"))[0])
    _, _, k = sch.get_loops(c)[1:]
    init = sch.decompose_reduction(c, k)
    assert sch.state.blocks[("main", "C_init")].attach.target == "C"
    assert sch.get(init) == "C_init"
    assert run(sch, text, ref) < 1e-5


def test_cache_stages_around_blocks_computed_inside_a_nest(mbr):
    """A cache_read of data computed at a loop goes under that loop (as TVM places it after
    the producer); a cache_write of a block whose init is computed inside its nest is
    written by that init."""
    text, ref = mbr
    sch = mlcir.Schedule(text)
    c, d = sch.get_block("C"), sch.get_block("D")
    i, _ = sch.get_loops(d)
    sch.compute_at(c, i)
    stage = sch.cache_read(d, 0, "local")
    assert sch.state.blocks[("main", sch.get(stage))].attach.loop == sch.state.blocks[
        ("main", "C")].attach.loop
    assert run(sch, text, ref) < 1e-5

    sch = mlcir.Schedule(text)
    c = sch.get_block("C")
    i, j, k = sch.get_loops(c)
    sch.decompose_reduction(c, j)
    sch.cache_write(c, 0, "local")
    assert run(sch, text, ref) < 1e-5


def _move_kernel() -> str:
    """P is read by X, then by E; F reads both."""
    from mlcir import te

    a = te.placeholder((8, 16), name="A")
    p = te.compute((8, 16), lambda i, j: a[i, j] + 1.0, name="P")
    x = te.compute((8, 16), lambda i, j: p[i, j] * p[i, j], name="X")
    e = te.compute((8, 16), lambda i, j: p[i, j] + p[i, j], name="E")
    f = te.compute((8, 16), lambda i, j: -e[i, j] + x[i, j], name="F")
    return te.create_prim_func([a, f])


def test_reverse_compute_at_moves_the_consumer_up_past_another_consumer():
    """P is read by X, then by E; computing E at P's loop moves E (and its destination) up
    right after P, before X, as TensorIR moves it into P's loops."""
    sch = mlcir.Schedule(_move_kernel())
    i, _ = sch.get_loops(sch.get_block("P"))
    sch.reverse_compute_at(sch.get_block("E"), i)
    assert [name for _, name in sch.state.blocks][:3] == ["P", "E", "X"]
    a = np.random.default_rng(0).standard_normal((8, 16)).astype(np.float32)
    p = a + 1
    np.testing.assert_allclose(mlcir.build(sch.mod).main(a), p * p - 2 * p, rtol=1e-6)
    assert "move_after" in str(sch.as_transform())


def test_reverse_compute_at_refuses_a_consumer_reading_another_consumer():
    text, _ = kernels.softmax(4, 10)
    sch = mlcir.Schedule(text)
    i, _ = sch.get_loops(sch.get_block("exp"))
    with pytest.raises(ScheduleError, match="block 'norm' reads block 'sum', which reads 'exp' "
                                            "and comes first: 'exp' must be complete before it"):
        sch.reverse_compute_at(sch.get_block("norm"), i)


def test_compute_inline_leaves_the_loops_of_blocks_computed_inside(mbr):
    """TVM removes an inlined block, not its loops: C, computed at D's loop, keeps that loop
    as the outer level of its own dimension when D is inlined into E."""
    text, ref = mbr
    sch = mlcir.Schedule(text)
    c, d = sch.get_block("C"), sch.get_block("D")
    i, j = sch.get_loops(d)
    i0, _ = sch.split(i, [None, 8])
    sch.compute_at(c, i0)
    sch.compute_inline(d)
    assert [sch.get(loop).extent for loop in sch.get_loops(c)] == [4, 8, 64, 48]  # i0; i, j, k
    assert sch.state.blocks[("main", "C")].attach is None
    assert run(sch, text, ref) < 1e-5


@pytest.mark.parametrize("inline", ["compute_inline", "reverse_compute_inline"])
def test_inlining_keeps_the_cache_stages_of_the_blocks_that_remain(mbr, inline):
    """The merged op's operands are renumbered; the stages follow their operands."""
    text, ref = mbr
    sch = mlcir.Schedule(text)
    d, e = sch.get_block("D"), sch.get_block("E")
    sch.cache_read(d, 1, "local")  # D's bias
    sch.cache_write(e, 0, "local")
    getattr(sch, inline)(d if inline == "compute_inline" else e)
    survivor = "E" if inline == "compute_inline" else "D"
    stages = {b.origin["kind"]: b.origin for b in sch.state.blocks.values()
              if b.origin.get("kind") and not b.inlined}
    assert {o["source"] for o in stages.values()} == {survivor}
    assert run(sch, text, ref) < 1e-5
    assert str(sch.as_transform()).count("promote_tensor") == 2


@pytest.mark.parametrize("placed", [False, True])
def test_compute_inline_moves_a_copy_of_its_input_placed_at_its_own_loops(mbr, placed):
    """D's bias copied at D's row loop, then D inlined into E: D's loops go, so the copy is
    made where D was computed (E's row loop) or, D at the root, whole before E."""
    text, ref = mbr
    sch = mlcir.Schedule(text)
    d, e = sch.get_block("D"), sch.get_block("E")
    if placed:
        sch.compute_at(d, sch.get_loops(e)[0])
    stage = sch.cache_read(d, 1, "local")
    sch.compute_at(stage, sch.get_loops(d)[-2])
    sch.compute_inline(d)
    origin = sch.state.blocks[("main", "D_read1_local")]
    assert origin.origin["source"] == "E"
    assert (origin.attach is not None) == placed
    if placed:
        assert origin.attach.target == "E"
    assert run(sch, text, ref) < 1e-5
    assert str(sch.as_transform()).count("promote_tensor") == 1
    other = mlcir.Schedule(text)  # copies of both its input and its result: refused
    other.cache_write(other.get_block("D"), 0, "local")
    other.cache_read(other.get_block("D"), 1, "local")
    with pytest.raises(ScheduleError, match="an operand of block 'D' is cached"):
        other.compute_inline(other.get_block("D"))


@pytest.mark.parametrize("placed", [False, True])
def test_compute_inline_into_the_copy_of_a_cache_write(mbr, placed):
    """TVM inlines a block into the copy its cache_write made: the copy then computes the
    block's values in its own place and loops (a block like any: split, vectorize), and the
    block is gone."""
    text, ref = mbr
    sch = mlcir.Schedule(text)
    d = sch.get_block("D")
    copy = sch.cache_write(d, 0, "local")
    if placed:
        i, j = sch.get_loops(d)
        sch.split(j, [None, 16])
        sch.reverse_compute_at(copy, i)
    sch.compute_inline(d)
    with pytest.raises(ScheduleError, match="block 'D' was inlined|no block 'D'"):
        sch.get_loops(sch.get_block("D"))
    loops = sch.get_loops(copy)
    # placed: the row loop taken over from D, then the copy's own (a unit loop kept)
    assert [sch.get(loop).extent for loop in loops] == ([32, 1, 64] if placed else [32, 64])
    sch.vectorize(sch.split(loops[-1], [None, 8])[1])
    assert [sch.get(c) for c in sch.get_consumers(copy)] == ["E"]
    assert run(sch, text, ref) < 1e-5
    assert "promote_tensor" not in str(sch.as_transform())
    replayed = mlcir.Schedule(text, trace=Trace.from_json(sch.trace.to_json_string()))
    assert str(replayed.mod) == str(sch.mod)


def test_reverse_compute_inline_of_a_consumer_computed_at_its_producer(mbr):
    """E computed at D's row loop, then inlined into D: E's loops go with it, D keeps its
    own (split here), as TVM keeps the producer's loops (fuzz_schedules --seed 41)."""
    text, ref = mbr
    sch = mlcir.Schedule(text)
    d, e = sch.get_block("D"), sch.get_block("E")
    i, j = sch.get_loops(d)
    sch.reverse_compute_at(e, i)
    sch.split(j, [None, 16])
    sch.reverse_compute_inline(e)
    assert [sch.get(loop).extent for loop in sch.get_loops(d)] == [32, 4, 16]
    assert sch.state.blocks[("main", "D")].attach is None
    assert run(sch, text, ref) < 1e-5
    from mlcir import te  # a consumer over another domain: B would take over C's loops
    A = te.placeholder((6, 10), name="A")
    B = te.compute((6, 10), lambda i, j: A[i, j] + 1.0, name="B")
    C = te.compute((10, 6), lambda i, j: B[j, i] * 2.0, name="C")
    other = mlcir.Schedule(te.create_prim_func([A, C]))
    other.reverse_compute_at(other.get_block("C"), other.get_loops(other.get_block("B"))[0])
    with pytest.raises(ScheduleError, match="block 'C' is computed at block 'B': the producer "
                       "cannot take over loops it shares with another block"):
        other.reverse_compute_inline(other.get_block("C"))


def test_reverse_compute_inline_keeps_a_scheduled_producers_loops(mbr):
    """D and E both scheduled, E reading D over the same domain: TVM keeps the producer's
    loops and drops the consumer's. A consumer over another domain is refused then (the
    producer would have to take over its loops)."""
    text, ref = mbr
    sch = mlcir.Schedule(text)
    d, e = sch.get_block("D"), sch.get_block("E")
    sch.split(sch.get_loops(d)[1], [None, 16])
    sch.split(sch.get_loops(e)[0], [None, 8])
    sch.reverse_compute_inline(e)
    assert [sch.get(loop).extent for loop in sch.get_loops(d)] == [32, 4, 16]
    assert run(sch, text, ref) < 1e-5
    from mlcir import te
    A = te.placeholder((6, 10), name="A")
    B = te.compute((6, 10), lambda i, j: A[i, j] + 1.0, name="B")
    C = te.compute((10, 6), lambda i, j: B[j, i] * 2.0, name="C")
    other = mlcir.Schedule(te.create_prim_func([A, C]))
    other.split(other.get_loops(other.get_block("B"))[1], [None, 2])
    with pytest.raises(ScheduleError, match="producer 'B' was already scheduled and takes over"):
        other.reverse_compute_inline(other.get_block("C"))


def test_reverse_compute_inline_of_a_consumer_its_producer_is_computed_inside(mbr):
    """D computed at E's loop, then E inlined into D: the merged block takes E's nest as
    scheduled (TVM keeps the loops; the block under them now computes E's result)."""
    text, ref = mbr
    sch = mlcir.Schedule(text)
    d, e = sch.get_block("D"), sch.get_block("E")
    i, j = sch.get_loops(e)
    j0, j1 = sch.split(j, [None, 16])
    sch.compute_at(d, j0)
    sch.reverse_compute_inline(e)
    assert [sch.get(loop).extent for loop in sch.get_loops(d)] == [32, 4, 16]
    assert sch.state.blocks[("main", "D")].attach is None
    assert run(sch, text, ref) < 1e-5


def test_recorded_rewrites_are_kinds_of_one_registry():
    """A recorded rewrite is a Rewrite of a kind its module registered; an unknown kind is
    refused by name. The transform module lists them as strings (``mlcir.inline``) that read
    back as the same rewrites, so a saved script applies as before."""
    from mlir import ir

    from mlcir.ir import clone_module, parse
    from mlcir.schedule.materialize import apply_schedule_script
    from mlcir.schedule.rewrite import REWRITE_KINDS, Rewrite
    from mlcir.schedule.rewrites import apply_rewrite

    assert {"compute_inline", "reverse_compute_inline", "rename_block", "transform_layout",
            "set_scope", "storage_align", "move_after", "expand_dim",
            "collapse_dims"} <= set(REWRITE_KINDS)
    rewrite = Rewrite("expand_dim", "main", "C", ("1", "4,8"))
    assert Rewrite.from_strings(rewrite.strings()) == rewrite
    sch = mlcir.Schedule(kernels.matmul_bias_relu(8, 12, 6)[0])
    sch.reverse_compute_inline(sch.get_block("E"))
    assert [r.kind for r in sch.state.rewrites] == ["reverse_compute_inline"]
    with pytest.raises(ScheduleError, match="unknown rewrite kind 'nonsense'"):
        apply_rewrite(sch._original, Rewrite("nonsense", "main", "C"))
    script = str(sch.as_transform())
    assert '"reverse_compute_inline"' in script
    with sch.context, ir.Location.unknown():
        payload = clone_module(sch._original)
        apply_schedule_script(payload, parse(script, context=sch.context, verify=False))
    assert str(payload) == str(sch.mod)


@pytest.mark.parametrize("at, then", [(0, None), (1, None), ("j", "vectorize")])
def test_a_moved_block_leaves_its_loops_to_the_blocks_computed_at_them(mbr, at, then):
    """TVM removes the block compute_at moves from its loops, not the loops: E, computed at
    a loop of the split D, keeps D's loops down to that one when D moves under C (we
    refused: D's loops could not be regenerated)."""
    text, ref = mbr
    sch = mlcir.Schedule(text)
    d, e = sch.get_block("D"), sch.get_block("E")
    i, j = sch.get_loops(d)
    i0, i1 = sch.split(i, [None, 5])
    sch.reverse_compute_at(e, {0: i0, 1: i1, "j": j}[at])
    if then == "vectorize":
        sch.vectorize(sch.get_loops(e)[-1])
    sch.reverse_compute_at(d, sch.get_loops(sch.get_block("C"))[0])
    names = [sch.get(x).name for x in sch.get_loops(e)]
    assert names == {0: ["i_0", "i_1", "j"], 1: ["i_0", "i_1", "i_2", "j"],
                     "j": ["i_0", "i_1", "j_0", "i_2", "j_1"]}[at]
    assert [sch.get(x).name for x in sch.get_loops(d)] == ["i", "i", "j"]
    assert run(sch, text, ref) < 1e-5
    sch = mlcir.Schedule(text)  # the target inside D's nest: D cannot leave it
    d, e = sch.get_block("D"), sch.get_block("E")
    i0, _ = sch.split(sch.get_loops(d)[0], [None, 5])
    sch.reverse_compute_at(e, i0)
    with pytest.raises(ScheduleError, match=r"compute_at \(instruction \d+\): other blocks are "
                       r"computed inside block 'D', whose loops were split"):
        sch.compute_at(d, sch.get_loops(e)[-1])
