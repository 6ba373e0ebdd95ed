"""AutoTVM in mlcir (issue 45): templates, config spaces, tuners, records, apply_history_best.

Config-space sizes are counted by hand; the search tuners are compared on a synthetic
objective (deterministic, no processes); one end-to-end run measures a small space with
mlcir's builder and runner, including a config the template rejects, a build that crashes and
a run that crashes.
"""

from __future__ import annotations

import json
import logging
import math

import numpy as np
import pytest

import mlcir
from mlcir import autotvm, te
from mlcir.autotvm.measure import MeasureErrorNo, MeasureInput, MeasureResult
from mlcir.autotvm.record import RecordError, load_from_file, to_database
from mlcir.tune.database import trace_key


@autotvm.template("test/matmul")
def matmul(N: int, L: int, M: int, dtype: str):
    A = te.placeholder((N, L), name="A", dtype=dtype)
    B = te.placeholder((L, M), name="B", dtype=dtype)
    k = te.reduce_axis((0, L), name="k")
    C = te.compute((N, M), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    sch = mlcir.Schedule(te.create_prim_func([A, B, C]))
    c = sch.get_block("C")
    y, x, kk = sch.get_loops(c)
    cfg = autotvm.get_config()
    cfg.define_split("tile_y", y, num_outputs=2)
    cfg.define_knob("tile_x", [1, 2, 4, 8, 16])
    yo, yi = cfg["tile_y"].apply(sch, c, y)
    xo, xi = sch.split(x, [None, cfg["tile_x"].val])
    sch.reorder(yo, xo, kk, yi, xi)
    return sch, [A, B, C]


@autotvm.template("test/small")
def small(n: int):
    """18 configs; tile_x == 3 is rejected by the template (an instantiation error)."""
    A = te.placeholder((n, n), name="A")
    B = te.placeholder((n, n), name="B")
    k = te.reduce_axis((0, n), name="k")
    C = te.compute((n, n), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    sch = mlcir.Schedule(te.create_prim_func([A, B, C]))
    c = sch.get_block("C")
    y, x, kk = sch.get_loops(c)
    cfg = autotvm.get_config()
    cfg.define_split("tile_y", y, num_outputs=2, max_factor=4)
    cfg.define_knob("tile_x", [1, 3, 8])
    cfg.define_annotate("ann", [x], policy="try_vec")
    if cfg["tile_x"].val == 3:
        cfg.raise_error("tile_x 3 does not divide the extent")
    yo, yi = cfg["tile_y"].apply(sch, c, y)
    xo, xi = sch.split(x, [None, cfg["tile_x"].val])
    sch.reorder(yo, xo, kk, yi, xi)
    cfg["ann"].apply(sch, c, [xi])
    return sch, [A, B, C]


def _space(**defs):
    """A config space built by hand: ``name=(kind, *args, kwargs)``."""
    space = autotvm.ConfigSpace()
    for name, (kind, *args) in defs.items():
        kwargs = args.pop() if args and isinstance(args[-1], dict) else {}
        getattr(space, f"define_{kind}")(name, *args, **kwargs)
    return space


# -- config spaces -----------------------------------------------------------------------------
def test_the_guide_template_space_prints_like_tvm():
    task = autotvm.task.create("test/matmul", args=(512, 512, 512, "float32"), target="llvm")
    assert len(task.config_space) == 50  # 10 divisors of 512 x 5 candidates
    assert str(task.config_space) == (
        "ConfigSpace (len=50, range_length=50, space_map=\n"
        "   0 tile_y: Split(policy=factors, product=512, num_outputs=2) len=10\n"
        "   1 tile_x: OtherOption([1, 2, 4, 8, 16]) len=5\n)")
    assert task.flop == 2 * 512 ** 3
    # the first knob varies fastest, as in TVM
    config = task.config_space.get(36)
    assert config["tile_y"].size == (-1, 64) and config["tile_x"].val == 8
    assert repr(config) == "[('tile_y', [-1, 64]), ('tile_x', 8)],None,36"
    with pytest.raises(autotvm.ConfigError, match="out of range"):
        task.config_space.get(50)


@pytest.mark.parametrize("extent, kwargs, length", [
    (12, {}, 6),                                    # 1 2 3 4 6 12
    (12, {"policy": "power2"}, 4),                  # 1 2 4 8 (8: a partial outer tile)
    (12, {"policy": "verbose"}, 7),                 # 1 2 3 4 6 8 12
    (16, {"max_factor": 4}, 3),                     # 1 2 4
    (8, {"num_outputs": 3}, 10),                    # (a, b) with a*b dividing 8
    (8, {"num_outputs": 3, "filter": lambda e: e.size[-1] >= 4}, 3),  # (1,4) (2,4) (1,8)
])
def test_split_space_lengths(extent, kwargs, length):
    space = _space(s=("split", extent, kwargs))
    assert len(space) == length
    assert all(e.size[0] == -1 for e in space.space_map["s"].entities)


def test_a_power2_split_that_does_not_divide_leaves_a_partial_tile():
    A = te.placeholder((12, 4), name="A")
    C = te.compute((12, 4), lambda i, j: A[i, j] * 2.0, name="C")
    sch = mlcir.Schedule(te.create_prim_func([A, C]))
    c = sch.get_block("C")
    y, _ = sch.get_loops(c)
    space = autotvm.ConfigSpace()
    space.define_split("s", y, policy="power2", num_outputs=3)
    entity = space.space_map["s"].entities[-1]
    assert entity.size == (-1, 1, 8)  # the innermost factor varies slowest
    loops = entity.apply(sch, c, y)
    assert [sch.get(lp).extent for lp in loops] == [2, 1, 8]


def test_other_knobs_lengths_and_order():
    space = _space(r=("reorder", ["a", "b", "c"], {"policy": "all"}),
                   i=("reorder", ["a", "b", "c", "d"], {"policy": "interval", "interval": (1, 3)}),
                   u=("annotate", ["a", "b"], "try_unroll"),
                   v=("annotate", ["a", "b"], "try_vec"),
                   w=("annotate", ["a", "b"], "try_unroll_vec"))
    assert space.dims == [6, 2, 4, 2, 6]
    assert len(space) == 6 * 2 * 4 * 2 * 6
    assert [e.perm for e in space.space_map["i"].entities] == [(0, 1, 2, 3), (0, 2, 1, 3)]
    for index in (0, 7, 100, len(space) - 1):
        assert space.knob2point(space.point2knob(index)) == index


def test_bad_definitions_are_named():
    space = _space(k=("knob", [1, 2]))
    with pytest.raises(autotvm.ConfigError, match="'k' is defined twice"):
        space.define_knob("k", [3])
    with pytest.raises(autotvm.ConfigError, match="num_outputs must be >= 2"):
        space.define_split("s", 8, num_outputs=1)
    with pytest.raises(autotvm.ConfigError, match="unknown policy 'halves'"):
        space.define_split("s", 8, policy="halves")
    with pytest.raises(autotvm.ConfigError, match="'e' has no choices"):
        space.define_knob("e", [])
    with pytest.raises(autotvm.ConfigError, match="no knob 'missing'"):
        space["missing"]
    with pytest.raises(autotvm.TemplateError, match="no autotvm template named 'nope'"):
        autotvm.task.create("nope", args=(1,))
    with pytest.raises(mlcir.MlcirError, match="outside an @autotvm.template"):
        autotvm.get_config()


def test_a_config_runs_and_computes_the_product():
    task = autotvm.task.create("test/matmul", args=(64, 32, 48, "float32"))
    config = task.config_space.get(task.config_space.knob2point([3, 2]))  # tile_y 8, tile_x 4
    sch, tensors = task.instantiate(config)
    assert len(tensors) == 3
    # the split is a transform.tune.knob of the schedule's transform script
    assert 'transform.tune.knob<"main.C.i_0"> = 8' in str(sch.as_transform())
    rng = np.random.default_rng(0)
    a = rng.standard_normal((64, 32)).astype(np.float32)
    b = rng.standard_normal((32, 48)).astype(np.float32)
    np.testing.assert_allclose(mlcir.build(sch.mod).main(a, b), a @ b, rtol=1e-4, atol=1e-4)


def test_a_template_call_outside_any_context_falls_back(caplog):
    with caplog.at_level(logging.WARNING, logger="autotvm"):
        sch, _ = matmul(16, 16, 16, "float32")
    assert "fallback configuration" in caplog.text
    assert "decision=[16, 1]" in str(sch.trace)  # every knob's first choice


# -- tuners on a synthetic objective (no measurement) -------------------------------------------
def _synthetic_task():
    space = _space(a=("split", 64, {}), b=("split", 64, {}), c=("knob", [1, 2, 4, 8, 16]))
    task = autotvm.task.Task("synthetic", (), mlcir.target.Target.parse("llvm"), matmul,
                             config_space=space, flop=1e9)
    return task


def _seconds(config) -> float:
    """A bumpy landscape with its best at a=(-1, 8), b=(-1, 16), c=4."""
    a, b, c = config["a"].size[1], config["b"].size[1], config["c"].val
    return 1e-3 * (1 + (math.log2(a) - 3) ** 2 + 0.5 * (math.log2(b) - 4) ** 2
                   + 2 * abs(math.log2(c) - 2) + 0.3 * ((a * b * c) % 3))


def _drive(tuner, n_trial: int) -> tuple[float, list[int]]:
    """Tune without processes: every proposed config is 'measured' by :func:`_seconds`."""
    proposed: list[int] = []
    best = 0.0
    while len(proposed) < n_trial and tuner.has_next():
        configs = tuner.next_batch(min(8, n_trial - len(proposed)))
        if not configs:
            break
        inputs = [MeasureInput(tuner.task.target, tuner.task, c) for c in configs]
        results = [MeasureResult([_seconds(c)], MeasureErrorNo.NO_ERROR, 0.0) for c in configs]
        proposed += [c.index for c in configs]
        best = max([best] + [tuner.task.flop / r.mean for r in results])
        tuner.update(inputs, results)
    return best, proposed


def test_grid_search_measures_every_config_once_in_order():
    task = _synthetic_task()
    _, proposed = _drive(autotvm.tuner.GridSearchTuner(task), 10_000)
    assert proposed == list(range(len(task.config_space)))


@pytest.mark.parametrize("make", [
    lambda t: autotvm.tuner.GATuner(t, pop_size=16, seed=1),
    lambda t: autotvm.tuner.XGBTuner(t, plan_size=16, feature_type="knob", seed=1),
    lambda t: autotvm.tuner.XGBTuner(t, plan_size=16, feature_type="knob", loss_type="rank",
                                     seed=1),
    lambda t: autotvm.tuner.XGBTuner(t, plan_size=16, feature_type="knob",
                                     loss_type="rank-binary", seed=1),
], ids=["ga", "xgb-reg", "xgb-rank", "xgb-rank-binary"])
def test_search_tuners_do_at_least_as_well_as_random(make):
    task = _synthetic_task()
    random_best, _ = _drive(autotvm.tuner.RandomTuner(task, seed=1), 64)
    best, proposed = _drive(make(task), 64)
    assert len(proposed) == len(set(proposed)) == 64  # never the same config twice
    assert best >= random_best


def test_itervar_features_are_the_scheduled_loop_nest():
    from mlcir.tune.features import LENGTH

    task = autotvm.task.create("test/small", args=(32,))
    tuner = autotvm.tuner.XGBTuner(task, plan_size=4, feature_type="itervar", seed=0)
    rejected = task.config_space.knob2point([0, 1, 0])  # tile_x 3
    assert tuner.features(rejected) == [0.0] * LENGTH
    a, b = tuner.features(0), tuner.features(task.config_space.knob2point([2, 2, 1]))
    assert len(a) == len(b) == LENGTH and a != b
    measured = []
    while len(measured) < 12:
        configs = tuner.next_batch(4)
        inputs = [MeasureInput(task.target, task, c) for c in configs]
        tuner.update(inputs, [MeasureResult([1e-3 / c["tile_y"].size[1]], 0, 0.0)
                              for c in configs])
        measured += [c.index for c in configs]
    assert len(set(measured)) == 12 and tuner.train_ct == 3


def test_the_xgb_tuner_checks_its_options():
    task = _synthetic_task()
    with pytest.raises(mlcir.TuningError, match="unknown loss_type 'l2'"):
        autotvm.tuner.XGBTuner(task, loss_type="l2")
    with pytest.raises(mlcir.TuningError, match="unknown feature_type 'ast'"):
        autotvm.tuner.XGBTuner(task, feature_type="ast")


# -- measuring, records, apply_history_best, the database ------------------------------------------
@pytest.mark.slow
def test_tune_log_apply_and_convert(tmp_path, monkeypatch, caplog, capsys):
    task = autotvm.task.create("test/small", args=(32,), target="llvm -threads=1")
    space = task.config_space
    assert space.dims == [3, 3, 2] and len(space) == 18
    crash_build = space.knob2point([1, 0, 0])  # tile_y 2, tile_x 1, no vec
    crash_run = space.knob2point([2, 2, 1])    # tile_y 4, tile_x 8, vec
    keys = {trace_key(task.instantiate(space.get(crash_build))[0].trace.as_json()): "build-crash",
            trace_key(task.instantiate(space.get(crash_run))[0].trace.as_json()): "run-crash"}
    monkeypatch.setenv("MLCIR_TUNE_FAULTS", json.dumps(keys))
    log = tmp_path / "matmul.log"
    option = autotvm.measure_option(builder=autotvm.LocalBuilder(timeout=120),
                                    runner=autotvm.LocalRunner(number=2, repeat=1, timeout=60))
    tuner = autotvm.tuner.GridSearchTuner(task)
    with caplog.at_level(logging.DEBUG, logger="autotvm"):
        tuner.tune(len(space), measure_option=option,
                   callbacks=[autotvm.callback.log_to_file(str(log)),
                              autotvm.callback.progress_bar(len(space))])
    assert "No: 18\tGFLOPS: " in caplog.text
    assert "Progress: (18/18)" in capsys.readouterr().out

    rows = list(load_from_file(log))
    assert [inp.config.index for inp, _ in rows] == list(range(18))
    errors = {inp.config.index: res.error_no for inp, res in rows}
    assert errors[crash_build] == MeasureErrorNo.COMPILE_HOST
    assert errors[crash_run] == MeasureErrorNo.RUNTIME_DEVICE
    for index in range(18):
        if space.point2knob(index)[1] == 1:  # tile_x 3: rejected by the template
            assert errors[index] == MeasureErrorNo.INSTANTIATION_ERROR
    ok = [(inp, res) for inp, res in rows if res.ok]
    assert len(ok) == 18 - 6 - 2
    best_inp, best_res = min(ok, key=lambda r: r[1].mean)
    assert tuner.best_config == best_inp.config

    # apply_history_best: the template builds its best config
    with autotvm.apply_history_best(str(log)):
        sch, _ = small(32)
    assert sch.trace.as_json() == best_inp.trace
    rng = np.random.default_rng(1)
    a, b = (rng.standard_normal((32, 32)).astype(np.float32) for _ in range(2))
    np.testing.assert_allclose(mlcir.build(sch.mod).main(a, b), a @ b, rtol=1e-4, atol=1e-4)

    # the records become mlcir's tuning database, which mlcir.build applies
    db = to_database(log, tmp_path / "work")
    assert len(db.records()) == 18 - 6  # the rejected configs have no schedule to keep
    best = db.best(task.workload_hash, task.target.key)[0]
    assert best.trace == best_inp.trace
    ex = mlcir.build(task.kernel, target="llvm -threads=1", records=db)
    np.testing.assert_allclose(ex.main(a, b), a @ b, rtol=1e-4, atol=1e-4)


def test_a_corrupt_log_names_its_file_and_line(tmp_path):
    log = tmp_path / "bad.log"
    log.write_text('{"input": ["llvm", "test/small", [32], {}], "config": {"index": 0, '
                   '"entity": []}, "result": [[0.1], 0, 0.1, 0]}\n\nnot json\n')
    with pytest.raises(RecordError, match=r"bad\.log:3: not an autotvm record"):
        list(load_from_file(log))


# -- one space, two views ------------------------------------------------------------------------
def test_split_knobs_are_tune_knobs_that_mlcir_opt_applies(tmp_path):
    from mlcir.autotvm import transform_view

    task = autotvm.task.create("test/matmul", args=(64, 64, 64, "float32"))
    sch, _ = task.instantiate(task.config_space.get(3))  # tile_y (-1, 8)
    script = sch.as_transform()
    assert transform_view.knobs(script) == [
        transform_view.IRKnob("main.C.i_0", (1, 2, 4, 8, 16, 32, 64), 8)]
    space = transform_view.config_space_from_script(script)
    assert len(space) == 7
    text = transform_view.with_selected(script, space.get(1))  # i_0 = 2
    assert 'transform.tune.knob<"main.C.i_0"> = 2' in text
    with pytest.raises(autotvm.ConfigError, match="3 is not one of its options"):
        transform_view.with_selected(script, {"main.C.i_0": 3})
    (tmp_path / "kernel.mlir").write_text(str(sch.original))
    (tmp_path / "script.mlir").write_text(text)
    import subprocess
    import sys
    from pathlib import Path

    opt = Path(sys.executable).parent / "mlcir-opt"
    out = subprocess.run([str(opt), str(tmp_path / "kernel.mlir"),
                          f"--transform-script={tmp_path / 'script.mlir'}"],
                         capture_output=True, text=True, check=True).stdout
    assert "-> (tensor<2x64xf32>)" in out  # rows tiled by 2, as selected


@pytest.mark.slow
def test_a_model_is_tuned_with_autotvm_and_built_with_its_records(tmp_path, monkeypatch):
    from mlcir.autotvm.record import ApplyHistoryBest
    from mlcir.frontend import from_onnx

    model = from_onnx("examples/models/digits_mlp.onnx")
    tasks = autotvm.task.extract_from_program(model, target="llvm -threads=1")
    assert [t.label for t in tasks] == ["fused_matmul_packed_add_relu", "fused_matmul_add"]
    for task in tasks:  # the default space's tiles and choices as knobs
        assert set(task.config_space.space_map) and all(
            name.startswith(("tile_", "choice_")) for name in task.config_space.space_map)
    log = tmp_path / "model.log"
    option = autotvm.measure_option(builder=autotvm.LocalBuilder(timeout=120),
                                    runner=autotvm.LocalRunner(number=1, repeat=1, timeout=60))
    for task in tasks:
        tuner = autotvm.tuner.RandomTuner(task, seed=3)
        tuner.tune(3, measure_option=option, callbacks=[autotvm.callback.log_to_file(log)])
    rows = list(load_from_file(log))
    assert len(rows) == 6 and all(res.ok for _, res in rows)
    # each task's default schedule is its first config measured (tuning is never slower)
    for task, (inp, _) in zip(tasks, rows[::3]):
        assert task.default_index is not None and inp.config.index == task.default_index
        default_sch = mlcir.tune.default_schedule(task.kernel, "llvm -threads=1")
        assert inp.trace == default_sch.trace.as_json()

    used = []
    trace_for = ApplyHistoryBest.trace_for
    monkeypatch.setattr(ApplyHistoryBest, "trace_for",
                        lambda self, w, t: used.append(trace_for(self, w, t)) or used[-1])
    x = np.random.default_rng(0).standard_normal((1, 64)).astype(np.float32)
    want = mlcir.build(model, target="llvm -threads=1").main(x)
    with autotvm.apply_history_best(log):
        got = mlcir.build(model, target="llvm -threads=1").main(x)
    assert sum(u is not None for u in used) == 2  # both kernels got their best record
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


@autotvm.template("test/packed")
def packed(n: int):
    """A template whose compute depends on its config (B packed by ``bn`` columns)."""
    cfg = autotvm.get_config()
    cfg.define_knob("bn", [4, 8])
    bn = cfg["bn"].val
    A = te.placeholder((n, n), name="A")
    B = te.placeholder((n, n), name="B")
    pB = te.compute((n // bn, n, bn), lambda x, y, z: B[y, x * bn + z], name="packedB")
    k = te.reduce_axis((0, n), name="k")
    C = te.compute((n, n), lambda i, j: te.sum(A[i, k] * pB[j // bn, k, j % bn], axis=k),
                   name="C")
    return mlcir.Schedule(te.create_prim_func([A, B, C])), [A, B, C]


def test_each_config_keeps_its_own_kernel_in_the_database(tmp_path):
    task = autotvm.task.create("test/packed", args=(16,))
    rows = []
    for index in range(len(task.config_space)):
        config = task.config_space.get(index)
        sch, _ = task.instantiate(config)
        inp = MeasureInput(task.target, task, config, sch.trace.as_json(),
                           mlcir.tune.workload_hash(sch.original))
        rows.append((inp, MeasureResult([1e-3 * (index + 1)], 0, 0.0)))
    assert rows[0][0].workload != rows[1][0].workload
    db = to_database(rows, tmp_path)
    assert {r.workload for r in db.records()} == {inp.workload for inp, _ in rows}
