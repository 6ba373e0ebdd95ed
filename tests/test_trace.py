"""Traces: printed as Python that replays, JSON round trips, replay with replaced decisions,
seeds, and the transform-dialect form applied without any Python schedule code."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

import mlcir
from mlcir.schedule import ScheduleError, Trace
from mlcir.schedule.materialize import apply_schedule_script
from mlcir.testing import kernels


def stochastic_schedule_mm(sch: mlcir.Schedule) -> None:
    c = sch.get_block("C", func_name="main")
    i, j, k = sch.get_loops(c)
    i0, i1 = sch.split(i, sch.sample_perfect_tile(i, n=2, max_innermost_factor=16))
    j0, j1 = sch.split(j, sch.sample_perfect_tile(j, n=2, max_innermost_factor=16))
    sch.reorder(i0, j0, k, i1, j1)
    sch.decompose_reduction(c, k)
    sch.unroll(k, factor=sch.sample_categorical([1, 2, 4], [0.3, 0.3, 0.4]))


@pytest.fixture(scope="module")
def mm():
    return kernels.matmul(64, 64, 32)


def test_print_replays_as_python(mm):
    text, _ = mm
    sch = mlcir.Schedule(text, seed=7)
    stochastic_schedule_mm(sch)
    code = sch.trace.as_python()
    namespace: dict = {"mlcir": mlcir}
    exec(code, namespace)
    replay = mlcir.Schedule(text, seed=999)  # a different seed: decisions come from the text
    namespace["apply_trace"](replay)
    assert str(replay.mod) == str(sch.mod)
    assert replay.trace.as_python() == code


def test_json_round_trip_is_lossless(mm):
    text, _ = mm
    sch = mlcir.Schedule(text, seed=11)
    stochastic_schedule_mm(sch)
    data = sch.trace.as_json()
    again = Trace.from_json(json.loads(json.dumps(data)))
    assert again.as_json() == data
    assert again.as_python() == sch.trace.as_python()
    replay = mlcir.Schedule(text)
    again.apply_to_schedule(replay)
    assert str(replay.mod) == str(sch.mod)


def test_a_schedule_is_rebuilt_from_a_trace(mm):
    text, _ = mm
    sch = mlcir.Schedule(text, seed=11)
    stochastic_schedule_mm(sch)
    replay = mlcir.Schedule(text, seed=999, trace=Trace.from_json(sch.trace.to_json_string()))
    assert replay.trace.as_python() == sch.trace.as_python()
    assert str(replay.as_transform()) == str(sch.as_transform())
    assert str(replay.mod) == str(sch.mod)


def test_replay_with_a_replaced_decision(mm):
    text, ref = mm
    sch = mlcir.Schedule(text, seed=5)
    stochastic_schedule_mm(sch)
    index, inst = next((i, x) for i, x in enumerate(sch.trace.insts) if x.kind.is_sampling)
    mutated = sch.trace.with_decision(inst, [8, 8])
    replay = mlcir.Schedule(text)
    mutated.apply_to_schedule(replay)
    assert replay.trace.insts[index].decision == [8, 8]
    assert str(replay.mod) != str(sch.mod) or sch.trace.insts[index].decision == [8, 8]
    inputs = kernels.random_inputs(text)
    np.testing.assert_allclose(mlcir.build(replay.mod).main(*inputs), ref(*inputs), rtol=1e-4, atol=1e-4)
    with pytest.raises(ScheduleError, match="decision \\[3, 3\\] is not a tiling"):
        sch.trace.with_decision(index, [3, 3]).apply_to_schedule(mlcir.Schedule(text))
    # decision_provider: the mutation hook of a search
    replay2 = mlcir.Schedule(text)
    sch.trace.apply_to_schedule(replay2, decision_provider=lambda i, _x: [4, 16] if i == index else None)
    assert replay2.trace.insts[index].decision == [4, 16]


def test_seed_fixes_every_decision(mm):
    text, _ = mm
    decisions = []
    for _ in range(2):
        sch = mlcir.Schedule(text, seed=1234)
        stochastic_schedule_mm(sch)
        decisions.append(sch.trace.decisions)
    assert decisions[0] == decisions[1]
    other = mlcir.Schedule(text, seed=4321)
    stochastic_schedule_mm(other)
    seen = {json.dumps(decisions[0])}
    for seed in range(20):
        s = mlcir.Schedule(text, seed=seed)
        stochastic_schedule_mm(s)
        seen.add(json.dumps(s.trace.decisions))
    assert len(seen) > 5  # the space really is sampled


def test_transform_module_has_knobs_and_replays_without_python(mm, tmp_path):
    text, _ = mm
    sch = mlcir.Schedule(text, seed=3)
    stochastic_schedule_mm(sch)
    script = sch.as_transform()
    printed = str(script)
    assert "transform.named_sequence @__transform_main" in printed
    decision = sch.trace.insts[2].decision  # i's tiling
    assert f'transform.tune.knob<"main.C.i_0"> = {decision[1]} : i64 from options' in printed
    # Applying the module (as mlcir-opt --transform-script does) gives the same kernel.
    payload = mlcir.parse(text, context=sch.context)
    apply_schedule_script(payload, script)
    assert str(payload) == str(sch.mod)
    kernel_file, script_file = tmp_path / "kernel.mlir", tmp_path / "sched.mlir"
    kernel_file.write_text(text)
    script_file.write_text(printed)
    out = subprocess.run([sys.executable, "-m", "mlcir.tools.mlcir_opt", str(kernel_file),
                          f"--transform-script={script_file}"], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    with sch.context:
        assert str(mlcir.parse(out.stdout)) == str(mlcir.parse(str(sch.mod)))


def test_trace_from_bad_json_is_a_clear_error():
    with pytest.raises(ScheduleError, match="not a trace"):
        Trace.from_json({"nope": 1})
    with pytest.raises(ScheduleError, match="unknown primitive 'teleport'"):
        Trace.from_json({"version": 1, "insts": [["teleport", [], {}, []]], "decisions": []})
    with pytest.raises(ScheduleError, match="schema version 99"):
        Trace.from_json({"version": 99, "insts": []})
    with pytest.raises(ScheduleError, match="uses b7 before it is defined"):
        Trace.from_json({"version": 1, "insts": [["get_loops", ["$b7"], {}, ["l0"]]]})


def test_simplified_drops_unused_lookups(mm):
    text, _ = mm
    sch = mlcir.Schedule(text)
    c = sch.get_block("C")
    sch.get_loops(c)  # unused
    i, j, k = sch.get_loops(c)
    sch.parallel(i)
    simple = sch.trace.simplified()
    assert [x.kind.name for x in simple.insts] == ["get_block", "get_loops", "parallel"]
