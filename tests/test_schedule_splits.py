"""Splits as TensorIR has them: factors that do not divide the extent (the outer loop rounds
up, the last tile is partial), ``sample_partitioned_tile``, and any order of the split levels
of one dimension — each checked against numpy with the primitives that follow."""

from __future__ import annotations

import re

import numpy as np
import pytest

import mlcir
from mlcir.schedule import ScheduleError, Trace
from mlcir.testing import kernels


def _run(sch: mlcir.Schedule, text: str, reference) -> float:
    inputs = kernels.random_inputs(text, 0)
    out = mlcir.build(sch.mod, target="llvm -opt-level=1").main(*inputs)
    ref = reference(*inputs)
    return float(np.abs(out - ref).max() / np.abs(ref).max())


@pytest.fixture
def mbr():
    return kernels.matmul_bias_relu(17, 30, 23)  # prime and odd extents


def _tiled(sch: mlcir.Schedule):
    c = sch.get_block("C")
    i, j, k = sch.get_loops(c)
    i0, i1 = sch.split(i, [None, 4])
    j0, j1 = sch.split(j, [None, 8])
    k0, k1 = sch.split(k, [None, 5])
    sch.reorder(i0, j0, k0, i1, k1, j1)
    return c, (i0, i1, j0, j1, k0, k1)


def test_a_split_that_does_not_divide_rounds_the_outer_loop_up(mbr):
    text, ref = mbr
    sch = mlcir.Schedule(text)
    i, _, _ = sch.get_loops(sch.get_block("C"))
    i0, i1 = sch.split(i, [None, 4])
    assert (sch.get(i0).extent, sch.get(i1).extent) == (5, 4)  # 5 * 4 = 20 >= 17
    a, b = sch.split(i1, [3, None])  # 3 * 2 >= 4: the inner one rounds up too
    assert [sch.get(x).extent for x in (a, b)] == [3, 2]
    assert "affine.min" in str(sch.mod)
    assert _run(sch, text, ref) < 1e-5


@pytest.mark.parametrize("then", ["vectorize", "vectorize_reduction", "parallel", "unroll",
                                  "fuse", "compute_at", "cache_write", "cache_read"])
def test_partial_tiles_with_every_primitive_that_follows(mbr, then):
    text, ref = mbr
    sch = mlcir.Schedule(text)
    c, (i0, i1, j0, j1, k0, k1) = _tiled(sch)
    if then == "vectorize":
        sch.vectorize(j1)
        assert "vector.contract" in str(sch.mod) or "vector.fma" in str(sch.mod) \
            or "vector.outerproduct" in str(sch.mod)
        assert "vector.create_mask" in str(sch.mod)  # the partial tile is masked
    elif then == "vectorize_reduction":
        sch.reorder(i1, j1, k1)
        sch.vectorize(k1)
    elif then == "parallel":
        sch.parallel(i0)
        assert "scf.forall" in str(sch.mod)
    elif then == "unroll":
        sch.unroll(k1)
    elif then == "fuse":
        sch.fuse(i0, j0)
    elif then == "compute_at":
        e, d = sch.get_block("E"), sch.get_block("D")
        ei, ej = sch.get_loops(e)
        ei0, ei1 = sch.split(ei, [None, 6])
        ej0, ej1 = sch.split(ej, [None, 7])
        sch.reorder(ei0, ej0, ei1, ej1)
        sch.compute_at(d, ej0)
        sch.vectorize(ej1)
        sch.vectorize(sch.get_loops(d)[-1])
    elif then == "cache_write":
        sch.reverse_compute_at(sch.cache_write(c, 0, "local"), j0)
    elif then == "cache_read":
        sch.compute_at(sch.cache_read(c, 1, "local"), k0)
    assert _run(sch, text, ref) < 1e-5


def test_a_partial_reduction_tile_vectorizes_with_masks():
    text, ref = kernels.row_sum(7, 37)
    sch = mlcir.Schedule(text)
    i, j = sch.get_loops(sch.get_block("S"))
    j0, j1 = sch.split(j, [None, 16])
    sch.vectorize(j1)
    assert "vector.create_mask" in str(sch.mod)
    assert _run(sch, text, ref) < 1e-5


def test_a_partial_convolution_tile_stays_scalar_and_says_why():
    """Upstream vectorizes window ops only at static sizes (no masks): such a tile falls back
    to scalar loops, with the reason on the op."""
    text, ref = kernels.conv2d(1, 3, 9, 9, 5, 3, 3)
    sch = mlcir.Schedule(text)
    n, f, oh, ow, c, kh, kw = sch.get_loops(sch.get_block("conv"))
    ow0, ow1 = sch.split(ow, [None, 4])
    sch.reorder(n, f, oh, ow0, c, kh, kw, ow1)
    sch.vectorize(ow1)
    assert "can be partial" in str(sch.mod)
    assert _run(sch, text, ref) < 1e-5


def test_split_factors_must_cover_the_extent(mbr):
    text, _ = mbr
    sch = mlcir.Schedule(text)
    i, _, _ = sch.get_loops(sch.get_block("C"))
    with pytest.raises(ScheduleError, match=r"factors \[4, 4\] of loop i \(extent 17\) "
                                            "multiply to 16, less than 17"):
        sch.split(i, [4, 4])


def test_sample_partitioned_tile_draws_non_dividing_tiles_and_replays(mbr):
    text, ref = mbr
    decisions = []
    for seed in range(6):
        sch = mlcir.Schedule(text, seed=seed)
        i, _, _ = sch.get_loops(sch.get_block("C"))
        factors = sch.sample_partitioned_tile(i, n=3, partition_pos=1, innerpart_factor=2,
                                              max_innermost_factor=8)
        values = [sch.get(f) for f in factors]
        inner = values[1] * values[2]
        assert inner % 2 == 0 and inner <= 17 and values[2] <= 8
        assert values[0] == -(-17 // inner)  # the outer part covers the rest, rounding up
        decisions.append(tuple(values))
        sch.split(i, factors)
    assert any(17 % (d[1] * d[2]) for d in decisions)  # some do not divide
    replayed = mlcir.Schedule(text, trace=Trace.from_json(sch.trace.as_json()))
    assert replayed.trace.as_python() == sch.trace.as_python()
    assert "sample_partitioned_tile(loop=l1, n=3, partition_pos=1, innerpart_factor=2, " \
           "max_innermost_factor=8, decision=" in sch.trace.as_python()
    assert _run(replayed, text, ref) < 1e-5


def test_sample_partitioned_tile_checks_its_decision(mbr):
    text, _ = mbr
    sch = mlcir.Schedule(text)
    i, _, _ = sch.get_loops(sch.get_block("C"))
    with pytest.raises(ScheduleError, match=r"decision \[2, 4\] is not a partitioned tiling of "
                                            r"loop i \(extent 17\)"):
        sch.sample_partitioned_tile(i, n=2, decision=[2, 4])  # 2 * 4 < 17
    assert sch.sample_partitioned_tile(i, n=2, decision=[5, 4]) is not None


def test_split_levels_in_any_order():
    """TensorIR accepts any order of one chain's loops: here the inner level of i and of k
    go outside their outer levels (each level becomes a dimension of the op)."""
    text, ref = kernels.matmul_bias_relu(16, 24, 12)
    sch = mlcir.Schedule(text)
    i, j, k = sch.get_loops(sch.get_block("C"))
    i0, i1 = sch.split(i, [4, 4])
    k0, k1 = sch.split(k, [3, 4])
    j0, j1 = sch.split(j, [3, 8])
    sch.reorder(k1, i1, j0, i0, k0, j1)
    sch.vectorize(j1)
    assert [sch.get(x).name for x in sch.get_loops(sch.get_block("C"))] == \
        ["k_1", "i_1", "j_0", "i_0", "k_0", "j_1"]
    mod = str(sch.mod)
    assert "tensor.expand_shape" in mod and "tensor.collapse_shape" in mod
    assert _run(sch, text, ref) < 1e-5
    # The rewrite is part of the recorded transform module, so mlcir-opt replays it.
    assert "expand_dim" in str(sch.as_transform())


def test_reordered_levels_of_a_convolution_window_dim():
    text, ref = kernels.conv2d(1, 3, 8, 8, 4, 3, 3)
    sch = mlcir.Schedule(text)
    n, f, oh, ow, c, kh, kw = sch.get_loops(sch.get_block("conv"))
    oh0, oh1 = sch.split(oh, [2, 3])
    sch.reorder(oh1, n, f, oh0)
    assert _run(sch, text, ref) < 1e-5


def test_reordered_levels_of_a_split_that_does_not_divide(mbr):
    """A dimension is padded to the product of its levels: a spatial one's extra rows are
    computed and dropped, a reduction's extra steps give its combiner its neutral value."""
    text, ref = mbr
    sch = mlcir.Schedule(text)
    i, j, k = sch.get_loops(sch.get_block("C"))
    i0, i1 = sch.split(i, [None, 4])  # 5 x 4 = 20 rows for 17
    j0, j1 = sch.split(j, [None, 8])
    sch.reorder(i1, j0, i0, k, j1)
    sch.vectorize(j1)
    assert "tensor.pad" in str(sch.mod)
    assert _run(sch, text, ref) < 1e-5
    k0, k1 = sch.split(k, [None, 4])  # 6 x 4 = 24 steps for 23
    sch.reorder(k1, k0)
    assert _run(sch, text, ref) < 1e-5


@pytest.mark.parametrize("block", ["max", "sum"])
@pytest.mark.parametrize("vectorize", [False, True])
def test_reordered_levels_of_a_reduction_that_does_not_divide(block, vectorize):
    """max and sum of a softmax: the padded steps add the combiner's neutral value (-inf,
    0), in a form the vectorizer still reads as a reduction."""
    text, ref = kernels.softmax(5, 31)
    sch = mlcir.Schedule(text)
    b = sch.get_block(block)
    _, k = sch.get_loops(b)
    k0, k1 = sch.split(k, [None, 4])  # 8 x 4 = 32 steps for 31
    sch.reorder(k1, k0)
    if vectorize:
        sch.vectorize(sch.get_loops(b)[-1])
    assert "arith.select" in str(sch.mod) or vectorize
    assert _run(sch, text, ref) < 1e-5


def test_a_fused_loop_splits_where_its_inner_factors_tile_its_last_part(mbr):
    """TVM splits a fused loop; a split whose inner factors tile the fused loop's innermost
    part is the same loops as splitting that part first, which tiling expresses."""
    text, ref = mbr
    sch = mlcir.Schedule(text)
    i, j = sch.get_loops(sch.get_block("D"))
    fused = sch.fuse(i, j)
    outer, inner = sch.split(fused, [None, 10])
    assert [sch.get(outer).extent, sch.get(inner).extent] == [17 * 30 // 10, 10]
    sch.parallel(outer)
    sch.vectorize(inner)
    assert _run(sch, text, ref) < 1e-5


@pytest.mark.parametrize("block, vectorize", [("D", False), ("D", True), ("E", True),
                                              ("C", False), ("C_init", True)])
def test_a_fused_loop_splits_across_its_parts(mbr, block, vectorize):
    """TVM's ``fuse`` then ``split`` by a factor that cuts rows (7 of 30 columns): the fused
    dims become one dim (tensors collapsed; the bias, a matmul's operands read by
    tensor.extract at the row and column the fused index gives), split with a partial last
    tile, parallel and vectorized like any."""
    text, ref = mbr
    sch = mlcir.Schedule(text)
    b = sch.get_block(block)
    i, j = sch.get_loops(b)[:2]
    outer, inner = sch.split(sch.fuse(i, j), [None, 7])
    assert [sch.get(outer).extent, sch.get(inner).extent] == [-(-17 * 30 // 7), 7]
    sch.parallel(outer)
    if vectorize:
        sch.vectorize(inner)
    assert _run(sch, text, ref) < 1e-5
    again = mlcir.Schedule(text, trace=Trace.from_json(sch.trace.to_json_string()))
    assert str(again.mod) == str(sch.mod)


def test_a_split_across_fused_parts_of_a_block_reading_its_indices():
    """R reads the packed T by tensor.extract at its loop indices (linalg.index): the
    collapse rewrites those indices too, and reordered levels of the one fused dim expand
    it again (fuzz_schedules --seed 42 --case 7997 and 9221 failed late on them)."""
    text, ref = kernels.transpose_relu([6, 10], [1, 0])
    x, = kernels.random_inputs(text)
    for reorder in (False, True):
        sch = mlcir.Schedule(text)
        sch.transform_layout(sch.get_block("T"), ("write", 0), "lambda v0, v1: (v0 // 2, v1, v0 % 2)")
        r = sch.get_block("R")
        fused = sch.fuse(*sch.get_loops(r))
        f0, f1 = sch.split(fused, [None, 4] if not reorder else [15, 4])
        if reorder:
            sch.reorder(f1, f0)
        np.testing.assert_allclose(mlcir.build(sch.mod).main(x), ref(x), rtol=1e-6)
    sch = mlcir.Schedule(text)  # padded: the padded steps would read past the data
    r = sch.get_block("R")
    f0, f1 = sch.split(sch.fuse(*sch.get_loops(r)), [None, 7])
    with pytest.raises(ScheduleError, match="is padded, and block 'R' reads data at its loop "
                       "indices"):
        sch.reorder(f1, f0)


@pytest.mark.parametrize("then", ["parallel", "split", "split_across"])
def test_a_fused_loop_fuses_again(then):
    """TVM fuses any consecutive loops, a fused one too: fuse(fuse(i, j), k) is one loop
    over the three dims (seed 43: 21 refusals of 10,000)."""
    text, ref = kernels.transpose_relu([5, 6, 7], [2, 0, 1])
    x, = kernels.random_inputs(text)
    sch = mlcir.Schedule(text)
    r = sch.get_block("R")
    i, j, k = sch.get_loops(r)
    fused = sch.fuse(sch.fuse(i, j), k)
    assert sch.get(fused).extent == 210
    if then == "parallel":
        sch.parallel(fused)
    elif then == "split":
        sch.vectorize(sch.split(fused, [None, 6])[1])  # tiles the innermost part (6)
    else:
        sch.parallel(sch.split(fused, [None, 4])[0])
    np.testing.assert_allclose(mlcir.build(sch.mod).main(x), ref(x), rtol=1e-6)


def test_a_split_across_fused_parts_reshapes_the_block(mbr):
    text, _ = mbr
    sch = mlcir.Schedule(text)
    d = sch.get_block("D")
    i, j = sch.get_loops(d)
    sch.split(sch.fuse(i, j), [None, 7])
    with pytest.raises(ScheduleError, match=r"compute_at .*block 'D' reads reshaped operands "
                       r"\(a fused loop of it was split across its parts\)"):
        sch.compute_at(d, sch.get_loops(sch.get_block("E"))[0])
    sch = mlcir.Schedule(text)  # a fused loop whose parts are split levels
    i, j = sch.get_loops(sch.get_block("D"))
    j0, j1 = sch.split(j, [None, 10])
    with pytest.raises(ScheduleError, match=r"split .*its parts must be whole dimensions"):
        sch.split(sch.fuse(i, j0), [None, 2])


def test_reordered_levels_of_an_init_fill(mbr):
    text, ref = mbr
    sch = mlcir.Schedule(text)
    init = sch.get_block("C_init")
    i, _ = sch.get_loops(init)
    i0, i1 = sch.split(i, [None, 4])
    sch.reorder(i1, i0)
    assert _run(sch, text, ref) < 1e-5
    with pytest.raises(ScheduleError, match=r"is reshaped \(its split levels were reordered\)"):
        sch.decompose_reduction(sch.get_block("C"), sch.get_loops(sch.get_block("C"))[1])


def test_fusing_every_level_of_a_partial_split_undoes_it(mbr):
    """5 x 4 levels for 17 rows fuse back into the 17 rows, not 20 (a vector tile of 20 rows
    over 17 failed to build: fuzz_schedules --seed 31 --case 9658)."""
    text, ref = mbr
    sch = mlcir.Schedule(text)
    i, j, k = sch.get_loops(sch.get_block("C"))
    i0, i1 = sch.split(i, [None, 4])
    fused = sch.fuse(i0, i1)
    assert sch.get(fused).extent == 17
    sch.vectorize(fused)
    assert _run(sch, text, ref) < 1e-5


def test_reordered_levels_of_an_rfactor_block_are_refused():
    text, _ = kernels.row_sum(8, 24)
    sch = mlcir.Schedule(text)
    s = sch.get_block("S")
    _, j = sch.get_loops(s)
    j0, j1 = sch.split(j, [None, 4])
    sch.rfactor(j1)
    i, j = sch.get_loops(sch.get_block("S"))
    a, b = sch.split(i, [2, 4])
    with pytest.raises(ScheduleError, match="which rfactor made .*reorder the levels before "
                                            "rfactor"):
        sch.reorder(b, a)


@pytest.mark.parametrize("shape, perm, split_dim", [
    ([16, 8, 56], [1, 2, 0], 1),          # [C, H, W] -> [H, W, C], W = 56 split by 16
    ([1, 4, 16, 8, 56], [0, 1, 3, 4, 2], 3),  # NCHW (viewed) -> NCHW16c, as layout_transform
    ([16, 56], [1, 0], 0),
])
def test_a_transpose_with_a_partial_vector_tile_is_right(shape, perm, split_dim):
    """Upstream's masked vectorization of a transposed read gave wrong values (and a
    segfault with a split by 12); such a tile is left scalar, with the reason on the op."""
    out = [shape[p] for p in perm]
    t = lambda s: "tensor<" + "x".join(map(str, s)) + "xf32>"  # noqa: E731
    text = (f"func.func @main(%x: {t(shape)}) -> {t(out)} {{\n"
            f"  %0 = tensor.empty() : {t(out)}\n"
            f"  %t = linalg.transpose ins(%x : {t(shape)}) outs(%0 : {t(out)}) "
            f"permutation = {perm}\n  return %t : {t(out)}\n}}\n")
    for factor in (16, 12):
        sch = mlcir.Schedule(text)
        loops = sch.get_loops(sch.get_block("transpose"))
        outer, inner = sch.split(loops[split_dim], [None, factor])
        sch.reorder(*loops[:split_dim], outer, inner, *loops[split_dim + 1:])
        sch.vectorize(inner)
        x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
        np.testing.assert_array_equal(mlcir.build(sch.mod).main(x), x.transpose(perm))
        assert ("reads an operand transposed" in str(sch.mod)) == (len(shape) > 2)


def _named_splits(sch: mlcir.Schedule, block: str, factors: dict[str, list]) -> dict:
    """Split ``block``'s loops by ``factors`` (by dim name); every loop by its name."""
    loops = dict(zip("ijk", sch.get_loops(sch.get_block(block))))
    named = {}
    for name, rv in loops.items():
        if name in factors:
            named.update({f"{name}_{n}": x for n, x in enumerate(sch.split(rv, factors[name]))})
        else:
            named[name] = rv
    return named


def _fused_in_a_loop(mod: str, block: str) -> bool:
    """``block``'s op is inside a loop of the function (not computed whole at its top)."""
    return re.search(rf'^ {{6,}}%\S+ = linalg\.\w+ .*loop.block = "{block}"', mod, re.M) \
        is not None


@pytest.mark.parametrize("factors, order, at", [
    ({"i": [None, 4], "j": [None, 8]}, "i_1 j_0 i_0 j_1 k", "j_0"),
    ({"i": [None, 4], "j": [None, 8]}, "i_1 j_1 i_0 j_0 k", "i_0"),
    ({"i": [None, 4], "j": [None, 8]}, "j_1 i_0 j_0 i_1 k", "j_0"),
    ({"i": [None, 4], "j": [None, 8]}, "j_1 i_1 i_0 j_0 k", "i_1"),
    ({"i": [None, 2, 3], "j": [None, 8]}, "i_2 j_0 i_0 i_1 j_1 k", "i_1"),
    ({"i": [None, 4], "j": [None, 8], "k": [None, 5]}, "i_0 j_0 k_1 k_0 i_1 j_1", "j_0"),
])
@pytest.mark.parametrize("then", [None, "vectorize", "parallel"])
def test_reverse_compute_at_under_reordered_split_levels(mbr, factors, order, at, then):
    """Issue 43: TVM computes an epilogue at any loop of a matmul whose split levels were
    reordered (i_1 outside i_0). The epilogue's dims that index those levels are expanded the
    same way, so it reads the matmul's levels directly and fuses; with a partial split (17
    rows by 4) the padded rows are computed and dropped alike."""
    text, ref = mbr
    sch = mlcir.Schedule(text)
    loops = _named_splits(sch, "C", factors)
    sch.reorder(*[loops[n] for n in order.split()])
    d = sch.get_block("D")
    sch.reverse_compute_at(d, loops[at])
    if then == "vectorize":
        sch.vectorize(sch.get_loops(d)[-1])
    elif then == "parallel":
        sch.parallel(loops[order.split()[0]])
    assert then == "vectorize" or _fused_in_a_loop(str(sch.mod), "D")  # (else vector ops)
    assert _run(sch, text, ref) < 1e-5
    again = mlcir.Schedule(text, trace=Trace.from_json(sch.trace.to_json_string()))
    assert str(again.mod) == str(sch.mod)


@pytest.mark.parametrize("order, at", [("i_1 j_0 i_0 j_1", "j_0"), ("j_1 i_1 j_0 i_0", "i_1"),
                                       ("j_1 i_1 j_0 i_0", "j_0"), ("i_1 i_0 j_0 j_1", "i_0")])
@pytest.mark.parametrize("vectorize", [False, True])
def test_compute_at_into_reordered_split_levels(mbr, order, at, vectorize):
    """The mirror: the matmul (with its init fill, which moves with it) computed at a loop of
    a bias add whose levels were reordered is expanded like the bias add's dims."""
    text, ref = mbr
    sch = mlcir.Schedule(text)
    loops = _named_splits(sch, "D", {"i": [None, 4], "j": [None, 8]})
    sch.reorder(*[loops[n] for n in order.split()])
    c = sch.get_block("C")
    sch.compute_at(c, loops[at])
    if vectorize:
        sch.vectorize(sch.get_loops(c)[-1])
    mod = str(sch.mod)
    assert vectorize or _fused_in_a_loop(mod, "C") and _fused_in_a_loop(mod, "C_init")
    assert _run(sch, text, ref) < 1e-5


def test_compute_at_follows_levels_reordered_twice(mbr):
    """A level that is a dimension of its own (i_1) split and reordered again: the moved
    block replays both expansions, in order."""
    text, ref = mbr
    sch = mlcir.Schedule(text)
    d = sch.get_block("D")
    i, j = sch.get_loops(d)
    i0, i1 = sch.split(i, [None, 4])
    sch.reorder(i1, i0)
    a, b = sch.split(i1, [None, 3])  # 2 x 3 = 6 for the 4 rows of a level: padded again
    sch.reorder(b, a)
    sch.compute_at(sch.get_block("C"), sch.get_loops(d)[1])
    assert _fused_in_a_loop(str(sch.mod), "C")
    assert _run(sch, text, ref) < 1e-5


@pytest.mark.parametrize("prim", ["reverse_compute_at", "compute_at"])
def test_a_moved_block_drops_its_reordered_levels(mbr, prim):
    """TVM regenerates the loops of the block compute_at moves: its own reordered levels go,
    and the reshape they made with them (the block computes at its new place as any)."""
    text, ref = mbr
    sch = mlcir.Schedule(text)
    moved = "D" if prim == "reverse_compute_at" else "C"
    loops = _named_splits(sch, moved, {"i": [None, 4]})
    sch.reorder(loops["i_1"], loops["i_0"])
    assert "expand_dim" in str(sch.as_transform())
    target = sch.get_loops(sch.get_block("C" if moved == "D" else "D"))[0]
    getattr(sch, prim)(sch.get_block(moved), target)
    assert [sch.get(x).name for x in sch.get_loops(sch.get_block(moved))] == \
        (["i", "i", "j"] if moved == "D" else ["i", "i", "j", "k"])
    assert "expand_dim" not in str(sch.as_transform())
    assert _fused_in_a_loop(str(sch.mod), moved)
    assert _run(sch, text, ref) < 1e-5


def test_reordered_levels_and_compute_locations_still_refused(mbr):
    """What stays refused: the moved block's own levels reordered when something was made on
    top of its reshape (here a cache stage of its reshaped operand)."""
    text, _ = mbr
    sch = mlcir.Schedule(text)
    loops = _named_splits(sch, "D", {"i": [None, 4]})
    sch.reorder(loops["i_1"], loops["i_0"])
    sch.cache_read(sch.get_block("D"), 0, "local")
    with pytest.raises(ScheduleError, match=r"reverse_compute_at \(instruction \d+\): block 'D' "
                       r"reads reshaped operands \(its split levels were reordered\): nothing "
                       r"fuses through the reshape; reverse_compute_at first"):
        sch.reverse_compute_at(sch.get_block("D"), sch.get_loops(sch.get_block("C"))[0])


@pytest.mark.parametrize("kind, index, at", [("read", 0, None), ("read", 1, 1), ("read", 0, 2),
                                             ("write", 0, None), ("write", 0, 0),
                                             ("write", 0, 2)])
def test_caches_of_a_block_whose_levels_were_reordered(mbr, kind, index, at):
    """A cache stage of a reshaped operand copies its levels (one dim each), at the root or
    at a loop of the block (TVM caches any buffer a block reads or writes)."""
    text, ref = mbr
    sch = mlcir.Schedule(text)
    c = sch.get_block("C")
    loops = _named_splits(sch, "C", {"i": [None, 4], "j": [None, 8]})
    sch.reorder(*[loops[n] for n in "i_1 j_0 i_0 k j_1".split()])
    if kind == "read":
        stage = sch.cache_read(c, index, "local")
        if at is not None:
            sch.compute_at(stage, sch.get_loops(c)[at])
    else:
        stage = sch.cache_write(c, index, "local")
        if at is not None:
            sch.reverse_compute_at(stage, sch.get_loops(c)[at])
    assert "bufferization.alloc_tensor" in str(sch.mod)
    assert _run(sch, text, ref) < 1e-5


def test_compute_inline_drops_the_inlined_blocks_reordered_levels(mbr):
    """An inlined block's loops go with it (TVM), its reordered levels and their reshape too;
    a consumer whose levels were reordered still takes no inline (nothing fuses through its
    reshape)."""
    text, ref = mbr
    sch = mlcir.Schedule(text)
    loops = _named_splits(sch, "D", {"i": [None, 4]})
    sch.reorder(loops["i_1"], loops["i_0"])
    sch.compute_inline(sch.get_block("D"))
    assert "expand_dim" not in str(sch.as_transform())
    assert _run(sch, text, ref) < 1e-5
    sch = mlcir.Schedule(text)
    loops = _named_splits(sch, "E", {"i": [None, 4]})
    sch.reorder(loops["i_1"], loops["i_0"])
    with pytest.raises(ScheduleError, match=r"compute_inline \(instruction \d+\): block 'E' "
                       r"reads reshaped operands \(its split levels were reordered\)"):
        sch.compute_inline(sch.get_block("D"))


def test_a_reduction_moves_only_with_an_init_that_followed_it(mbr):
    """An init fill whose own levels were reordered is reshaped apart from its reduction: it
    cannot move with it (its dims are not the reduction's levels)."""
    text, _ = mbr
    sch = mlcir.Schedule(text)
    init = _named_splits(sch, "C_init", {"j": [None, 8]})
    sch.reorder(init["j_1"], init["j_0"])
    d = _named_splits(sch, "D", {"i": [None, 4]})
    sch.reorder(d["i_1"], d["i_0"])
    with pytest.raises(ScheduleError, match=r"compute_at \(instruction \d+\): the init of "
                       r"reduction 'C' \('C_init'\) is not a fill of its own, placed at the "
                       r"root: it cannot move with it"):
        sch.compute_at(sch.get_block("C"), d["i_0"])


@pytest.mark.parametrize("order, fused, names", [
    ("i_0 i_1 i_2 j", "i_0 i_1 i_2 j", [("i_j_fused", 17 * 30)]),
    ("i_0 i_1 i_2 j", "i_1 i_2 j", [("i_0", 3), ("i_1_j_fused", 6 * 30)]),
    ("i_0 j i_1 i_2", "j i_1 i_2", [("i_0", 3), ("j_i_1_fused", 30 * 6)]),
])
def test_fuse_of_levels_of_one_dim_with_other_loops(mbr, order, fused, names):
    """TVM fuses any consecutive loops: consecutive levels of one dim fuse first (here 3 x 3 x
    2 for 17 rows), then with the other loops (we refused them mixed)."""
    text, ref = mbr
    sch = mlcir.Schedule(text)
    loops = _named_splits(sch, "D", {"i": [None, 3, 2]})
    sch.reorder(*[loops[n] for n in order.split()])
    sch.parallel(sch.fuse(*[loops[n] for n in fused.split()]))
    assert [(sch.get(x).name, sch.get(x).extent) for x in sch.get_loops(sch.get_block("D"))] \
        == names
    assert _run(sch, text, ref) < 1e-5
    sch = mlcir.Schedule(text)
    loops = _named_splits(sch, "D", {"i": [None, 3, 2]})
    sch.reorder(*[loops[n] for n in "i_0 i_1 j i_2".split()])
    with pytest.raises(ScheduleError, match=r"fuse \(instruction \d+\): the loops mix split "
                       r"levels of one dimension with other dimensions, apart from each other"):
        sch.fuse(loops["i_1"], loops["j"], loops["i_2"])
