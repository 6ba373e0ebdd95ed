"""Benchmark (issue 6): float32 matmul on an NVIDIA GPU, untuned / hand-scheduled / tuned,
next to cupy or torch (cuBLAS) when importable, else next to the GPU's fp32 peak.

    python bench/cuda_matmul.py [--sizes 1024,4096] [--trials 64] [--arch sm_90]
    python bench/cuda_matmul.py --build-only        # no GPU: compile everything, time nothing

For each size N (C = A @ B, all N x N): the default mapping (no schedule), a hand schedule
(16 x 16 output tiles per block, A and B staged in shared memory per k step of 16), and the
best of ``--trials`` candidates of the default GPU design space (evolutionary search, XGBoost
cost model; records kept in ``--work-dir``). Kernels are timed alone: ``<name>__device`` on
device buffers (mlcir.targets.cuda.time_device), no host<->device copies, best of 5 repeats.
Every variant's result is checked against numpy (float64) first. The reference is cuBLAS
through cupy or torch (TF32 off, so it is the same fp32 arithmetic), timed with CUDA events;
without either, the fp32 peak of the device (H100 SXM: 67 TFLOPS) is the yardstick.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import mlcir
from mlcir.target import Target
from mlcir.targets import cuda
from mlcir.runtime.compile import as_module
from mlcir.testing import kernels
from mlcir.tune.space import default_space

# fp32 (non-tensor-core) peaks, TFLOPS, by device name fragment.
PEAKS = {"H100 SXM": 67.0, "H100 PCIe": 51.0, "H100": 67.0, "H200": 67.0, "A100": 19.5}


def reference_gemm(a: np.ndarray, b: np.ndarray, repeat: int = 5) -> tuple[str, float] | None:
    """(library, best seconds) of cuBLAS through cupy or torch, or None."""
    try:
        import cupy

        da, db = cupy.asarray(a), cupy.asarray(b)
        start, stop = cupy.cuda.Event(), cupy.cuda.Event()
        cupy.matmul(da, db)
        best = float("inf")
        for _ in range(repeat):
            start.record()
            cupy.matmul(da, db)
            stop.record()
            stop.synchronize()
            best = min(best, cupy.cuda.get_elapsed_time(start, stop) / 1e3)
        return "cupy (cuBLAS)", best
    except ImportError:
        pass
    try:
        import torch

        torch.backends.cuda.matmul.allow_tf32 = False
        ta, tb = torch.from_numpy(a).cuda(), torch.from_numpy(b).cuda()
        torch.matmul(ta, tb)
        torch.cuda.synchronize()
        best = float("inf")
        for _ in range(repeat):
            start = torch.cuda.Event(enable_timing=True)
            stop = torch.cuda.Event(enable_timing=True)
            start.record()
            torch.matmul(ta, tb)
            stop.record()
            stop.synchronize()
            best = min(best, start.elapsed_time(stop) / 1e3)
        return "torch (cuBLAS)", best
    except ImportError:
        return None


def device_peak() -> tuple[str, float] | None:
    """(device name, fp32 peak TFLOPS) from the driver, when the name is known."""
    import ctypes

    lib = ctypes.CDLL(cuda.DRIVER_LIBRARY)
    device = ctypes.c_int()
    name = ctypes.create_string_buffer(256)
    if lib.cuInit(0) or lib.cuDeviceGet(ctypes.byref(device), 0) or \
            lib.cuDeviceGetName(name, 256, device):
        return None
    text = name.value.decode()
    for key, peak in PEAKS.items():
        if key in text:
            return text, peak
    return text, float("nan")


def variants(text: str, size: int, trials: int, work_dir: str, target: Target):
    """(name, module) of each variant; tuning happens here."""
    yield "untuned (default mapping)", as_module(text)
    yield "hand schedule (shared 16x16)", kernels.shared_memory_matmul_schedule(text).mod
    if trials > 0:
        start = time.perf_counter()
        best = mlcir.tune.tune_kernel(text, target=target, work_dir=os.path.join(work_dir, str(size)),
                                      max_trials=trials, verbose=1)
        secs = time.perf_counter() - start
        if best is None:
            print(f"  tuning N={size}: no candidate could be measured ({secs:.0f} s)")
        else:
            print(f"  tuning N={size}: {best.trials} trials in {secs:.0f} s; best trace:\n{best.trace}")
            yield f"tuned ({trials} trials)", best.mod


def run(sizes: list[int], trials: int, arch: str, work_dir: str) -> None:
    target = Target.parse(f"cuda -arch={arch}")
    peak = device_peak()
    print(f"device: {peak[0] if peak else 'unknown'}; target '{target}'; "
          f"binary format: {cuda.binary_format(target).reason}")
    rows = []
    for size in sizes:
        text, _ = kernels.matmul(size, size, size)
        a, b = kernels.random_inputs(text)
        want = a.astype(np.float64) @ b.astype(np.float64)
        flops = 2.0 * size ** 3
        ref = reference_gemm(a, b)
        for name, module in variants(text, size, trials, work_dir, target):
            ex = mlcir.build(module, target=target)
            timing, (c,) = cuda.time_device(ex, "main", a, b, number=3 if size >= 4096 else 10,
                                            repeat=5, warmup=1)
            error = float(np.abs(c - want).max() / np.abs(want).max())
            gflops = flops / timing.min / 1e9
            versus = (f"{gflops / (flops / ref[1] / 1e9):.2f} x {ref[0]}" if ref else
                      f"{gflops / 1e3 / peak[1]:.1%} of the fp32 peak" if peak and peak[1] == peak[1]
                      else "")
            rows.append((size, name, timing.min * 1e3, gflops, versus, error))
        if ref:
            rows.append((size, ref[0], ref[1] * 1e3, flops / ref[1] / 1e9, "1.00 x", 0.0))
    print(f"\n{'N':>6}  {'variant':<32} {'ms':>9} {'GFLOPS':>9}  {'vs reference':<28} rel. error")
    for size, name, ms, gflops, versus, error in rows:
        print(f"{size:>6}  {name:<32} {ms:>9.3f} {gflops:>9.1f}  {versus:<28} {error:.1e}")


def build_only(sizes: list[int], arch: str, samples: int = 3) -> None:
    """Compile every variant (and a few sampled traces of the GPU space) without a GPU."""
    target = Target.parse(f"cuda -arch={arch}")
    print(f"binary format: {cuda.binary_format(target).reason}")
    for size in sizes:
        text, _ = kernels.matmul(size, size, size)
        mods = [("untuned", as_module(text)),
                ("hand schedule", kernels.shared_memory_matmul_schedule(text).mod)]
        for seed in range(samples):
            sch = mlcir.Schedule(text, seed=seed)
            default_space(target)(sch)
            mods.append((f"space sample {seed}", sch.mod))
        for name, module in mods:
            start = time.perf_counter()
            with module.context:
                fmt = cuda.compile_cuda(module, target)
                objects = cuda.kernel_binaries(module)
            print(f"N={size:<5} {name:<16} {len(objects)} kernel(s), {fmt.format}, "
                  f"{sum(len(d) for _, d in objects.values())} bytes, "
                  f"{time.perf_counter() - start:.2f} s")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1024,4096")
    parser.add_argument("--trials", type=int, default=64)
    parser.add_argument("--arch", default="sm_90")
    parser.add_argument("--work-dir", default=None, help="tuning records (default: a temp dir)")
    parser.add_argument("--build-only", action="store_true",
                        help="compile the variants to PTX/cubin and stop (no GPU needed)")
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")]
    if args.build_only:
        build_only(sizes, args.arch)
        return 0
    problem = cuda.driver_problem()
    if problem is not None:
        print(f"cannot run: {problem.summary} (use --build-only to compile without a GPU)",
              file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="mlcir-cuda-bench-") as tmp:
        run(sizes, args.trials, args.arch, args.work_dir or tmp)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
