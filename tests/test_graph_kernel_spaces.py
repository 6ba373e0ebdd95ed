"""The kernels of the nn/reduction/shape ops are schedulable: random traces of the default
design space (fixed seeds, one and two threads) of every kernel of conv2d (plain, strided +
padded with a bias/relu epilogue, width stride 3 dilated, grouped, depthwise), max/avg
pooling (and a width stride 3 dilated max pool), sum/mean, softmax, gather_elements,
layer_norm, batch matmul, an elementwise chain, boolean masks and comparisons (boolean tensors
stored as bytes), strided_slice (both directions) and take each
build and match the unscheduled kernel — itself checked against numpy end to end first — or
are rejected with a ScheduleError: never a wrong result, never a crash.

The candidates run in one subprocess (``mlcir.testing.graph_kernels``) so that an abort in LLVM
(an assertions build) fails this test with the model, kernel and seed that caused it instead of
killing pytest.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from mlcir.testing.graph_kernels import models

SEEDS = 3


@pytest.fixture(scope="module")
def records():
    cmd = [sys.executable, "-m", "mlcir.testing.graph_kernels", "--seeds", f"0:{SEEDS}"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    lines = proc.stdout.splitlines()
    started = [line for line in lines if line.startswith("START")]
    assert proc.returncode == 0, (f"the process died (status {proc.returncode}) during "
                                  f"{started[-1] if started else 'start-up'}:\n"
                                  f"{proc.stderr[-3000:]}")
    return [json.loads(line) for line in lines if line.startswith("{")]


@pytest.mark.parametrize("model", sorted(models()))
def test_default_space_traces_are_valid(records, model):
    mine = [r for r in records if r["model"] == model]
    whole = [r for r in mine if r["kernel"] is None]
    assert len(whole) == 1 and whole[0]["status"] == "ok", f"the model itself: {whole}"
    traces = [r for r in mine if r["kernel"] is not None]
    assert traces and len(traces) % SEEDS == 0, f"no kernel traces for {model}"
    bad = [r for r in traces if r["status"] not in ("ok", "rejected")]
    assert not bad, "\n\n".join(
        f"{r['kernel']} seed {r['seed']} ({r['target']}): {r['status']} "
        f"{r.get('reason', r.get('error'))}\n{r['trace']}" for r in bad)
    for r in traces:
        if r["status"] == "rejected":
            assert r["reason"], f"{r['kernel']} seed {r['seed']}: rejected without a reason"
    # The space is useful, not only harmless: most traces build.
    ok = sum(r["status"] == "ok" for r in traces)
    assert ok >= 0.8 * len(traces), f"only {ok} of {len(traces)} traces of {model} built"


def _kernel(inputs, body):
    from mlcir.testing.graph_kernels import build_graph_function
    from mlcir.tune import extract_tasks

    module = build_graph_function(inputs, body)
    with module.context:
        (task,) = extract_tasks(module)
    return task.module


def test_reordered_generic_keeps_valid_iterators():
    """Reduction loops moved outside the spatial ones of a generic that is not vectorized: the
    materializer interchanges the op and restates its loop.iterators (they were stale)."""
    import numpy as np

    import mlcir
    from mlcir.testing.graph_kernels import kernel_inputs

    rng = np.random.default_rng(0)
    kernel = _kernel([rng.standard_normal((1, 4, 6, 6)).astype(np.float32),
                      rng.standard_normal((4, 2, 3, 3)).astype(np.float32)],
                     lambda g, x, w: g.conv2d(x, w, strides=[1, 1], padding=[0, 0, 0, 0],
                                              dilation=[1, 1], groups=2))
    plain = mlcir.build(kernel)
    args = kernel_inputs(plain, 0)
    sch = mlcir.Schedule(kernel)
    n, o, oh, ow, c, kh, kw = sch.get_loops(sch.get_block("conv2d"))
    sch.reorder(c, kh, kw, oh, ow)
    assert 'loop.iterators = [#loop.iterator<"spatial">, #loop.iterator<"spatial">, ' \
           '#loop.iterator<"reduction">, #loop.iterator<"reduction">, ' \
           '#loop.iterator<"reduction">, #loop.iterator<"spatial">' in str(sch.mod)
    np.testing.assert_allclose(mlcir.build(sch.mod).main(*args), plain.main(*args), rtol=1e-5)


def test_gather_blocks_are_not_inlined():
    import numpy as np

    import mlcir

    kernel = _kernel([np.ones((6, 8), np.float32), np.array([1, -1], np.int64)],
                     lambda g, x, i: g.exp(g.take(x, i, axis=0)))
    sch = mlcir.Schedule(kernel)
    with pytest.raises(mlcir.ScheduleError, match=r"compute_inline \(instruction 1\): block "
                                                  r"'take' reads its loop indices"):
        sch.compute_inline(sch.get_block("take"))
