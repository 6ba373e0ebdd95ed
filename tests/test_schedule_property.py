"""Property: hundreds of random traces (fixed seeds) of random primitives and decisions either
build and match numpy or are rejected with a ScheduleError — never a wrong result, never a
crash. Each kernel's traces run in a subprocess so that an abort in LLVM (an assertions build)
fails this test with the seed that caused it instead of killing pytest."""

from __future__ import annotations

import json
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import pytest

KERNELS = ["matmul", "matmul_bias_relu", "conv2d", "row_sum", "softmax"]
SEEDS_PER_KERNEL = 60


def _run(kernel: str) -> tuple[str, subprocess.CompletedProcess]:
    cmd = [sys.executable, "-m", "mlcir.testing.random_schedules", "--kernel", kernel,
           "--seeds", f"0:{SEEDS_PER_KERNEL}", "--steps", "8"]
    try:
        return kernel, subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    except subprocess.TimeoutExpired as error:
        out = error.stdout.decode() if isinstance(error.stdout, bytes) else (error.stdout or "")
        return kernel, subprocess.CompletedProcess(cmd, -9, out, "timed out")


@pytest.fixture(scope="module")
def results():
    with ThreadPoolExecutor(max_workers=2) as pool:
        return dict(pool.map(_run, KERNELS))


@pytest.mark.slow
@pytest.mark.parametrize("kernel", KERNELS)
def test_random_traces_never_give_wrong_results_or_crash(results, kernel):
    proc = results[kernel]
    lines = proc.stdout.splitlines()
    records = [json.loads(line) for line in lines if line.startswith("{")]
    started = [line.split()[1] for line in lines if line.startswith("START")]
    assert proc.returncode == 0, (f"the process died (status {proc.returncode}) on seed "
                                  f"{started[-1] if started else '?'}:\n{proc.stderr[-3000:]}")
    assert len(records) == SEEDS_PER_KERNEL
    bad = [r for r in records if r["status"] not in ("ok", "rejected")]
    assert not bad, "\n\n".join(f"seed {r['seed']}: {r['status']} {r.get('reason', r.get('error'))}"
                                f"\n{r['trace']}" for r in bad)
    ok = sum(r["status"] == "ok" for r in records)
    assert ok >= 0.8 * SEEDS_PER_KERNEL, f"only {ok} of {SEEDS_PER_KERNEL} random traces built"
    for r in records:
        if r["status"] == "rejected":
            assert r["reason"], f"seed {r['seed']}: rejected without a reason"
