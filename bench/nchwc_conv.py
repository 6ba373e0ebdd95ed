"""Benchmark (issue 14, "measure and decide"): a 3x3/1 convolution in the blocked NCHWc layout,
written with mlcir.te and scheduled by hand, against the NCHW kernel mlcir compiles from ONNX
and onnxruntime's single op.

    python bench/nchwc_conv.py [--channels 64] [--size 56] [--block 16] [--columns 8]

The NCHWc kernel reads the input as ``[N, C/c, H+2, W+2, c]`` (already padded and blocked, as
inside a chain of blocked ops, where layout changes happen only at the chain's ends) and the
filter packed as ``[O/c, C/c, KH, KW, c_in, c_out]``. Its schedule is MLAS's micro-kernel: a
register tile of ``columns`` output columns x the ``c`` output channels of one block (one
vector each), the input channels and taps stepped around it, each step a broadcast input
value times a weight vector. The output is checked against numpy; then, timed in turns in
this process: the blocked kernel's call, the NCHW executable's call (default schedule) and
``session.run`` (1 thread each), with GFLOPS against the peak of bench/peak.py.
"""

from __future__ import annotations

import argparse
import os
import sys

for _name in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE"):  # before numpy loads (MLIR notes)
    os.environ.pop(_name, None)

import numpy as np  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import mlcir  # noqa: E402
from mlcir import te  # noqa: E402
from mlcir.frontend import from_onnx  # noqa: E402
from mlcir.testing import onnx_models  # noqa: E402
from mlcir.testing.timing import interleaved, onnxruntime_session  # noqa: E402

K = 3


def blocked_conv(channels: int, size: int, block: int) -> str:
    """The kernel: Y[n, oco, h, w, oci] = sum X[n, ico, h+kh, w+kw, ici] * W[oco, ico, kh, kw,
    ici, oci]."""
    cb = channels // block
    x = te.placeholder((1, cb, size + 2, size + 2, block), name="X")
    w = te.placeholder((cb, cb, K, K, block, block), name="W")
    rco = te.reduce_axis((0, cb), name="rco")
    kh = te.reduce_axis((0, K), name="kh")
    kw = te.reduce_axis((0, K), name="kw")
    rci = te.reduce_axis((0, block), name="rci")
    y = te.compute((1, cb, size, size, block),
                   lambda n, oco, h, ow, oci: te.sum(
                       x[n, rco, h + kh, ow + kw, rci] * w[oco, rco, kh, kw, rci, oci],
                       axis=[rco, kh, kw, rci]), name="Y")
    return te.create_prim_func([x, w, y])


def micro_kernel(sch: mlcir.Schedule, columns: int) -> mlcir.Schedule:
    """columns x block register tile, reductions around it, init before them."""
    y = sch.get_block("Y")
    n, oco, h, ow, oci, rco, kh, kw, rci = sch.get_loops(y)
    wo, wi = sch.split(ow, [None, columns])
    sch.reorder(n, oco, h, wo, rco, kh, kw, rci, wi, oci)
    sch.decompose_reduction(y, rco)
    sch.vectorize(wi)
    return sch


def nchw_reference(x: np.ndarray, w: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The NCHW input (unpadded), the OIHW filter and numpy's convolution of them."""
    _, cb, hp, wp, block = x.shape
    xn = x.transpose(0, 1, 4, 2, 3).reshape(1, cb * block, hp, wp)
    wn = w.transpose(0, 5, 1, 4, 2, 3).reshape(cb * block, cb * block, K, K)
    h, wd = hp - 2, wp - 2
    ref = np.zeros((1, cb * block, h, wd), np.float32)
    for a in range(K):
        for b in range(K):
            ref += np.einsum("oc,nchw->nohw", wn[:, :, a, b], xn[:, :, a:a + h, b:b + wd])
    return np.ascontiguousarray(xn[:, :, 1:-1, 1:-1]), wn, ref


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--channels", type=int, default=64)
    parser.add_argument("--size", type=int, default=56)
    parser.add_argument("--block", type=int, default=16)
    parser.add_argument("--columns", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=30)
    args = parser.parse_args()
    c, s, block = args.channels, args.size, args.block
    rng = np.random.default_rng(0)
    x = rng.standard_normal((1, c // block, s + 2, s + 2, block)).astype(np.float32)
    x[:, :, [0, -1], :, :] = 0.0  # the padding border
    x[:, :, :, [0, -1], :] = 0.0
    w = (rng.standard_normal((c // block, c // block, K, K, block, block)) * 0.1).astype(np.float32)
    blocked = mlcir.build(micro_kernel(mlcir.Schedule(blocked_conv(c, s, block)), args.columns).mod)
    xn, wn, ref = nchw_reference(x, w)
    got = blocked.main(x, w).transpose(0, 1, 4, 2, 3).reshape(ref.shape)
    np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-4)
    model = onnx_models.single_op("Conv", {"x": [1, c, s, s]},
                                  {"kernel_shape": [K, K], "pads": [1] * 4, "strides": [1, 1]},
                                  initializers={"w": wn})
    nchw = mlcir.build(from_onnx(model), target="llvm -threads=1", schedule="default")
    np.testing.assert_allclose(nchw.main(xn), ref, rtol=1e-3, atol=1e-3)
    session = onnxruntime_session(model, threads=1)
    times = interleaved({"mlcir NCHWc (te, micro-kernel)": lambda: blocked.main(x, w),
                         "mlcir NCHW (ONNX, default schedule)": lambda: nchw.main(xn),
                         "onnxruntime": lambda: session.run(None, {"x": xn})},
                        rounds=args.rounds)
    flops = 2 * c * c * K * K * s * s
    print(f"conv 3x3/1 {c}->{c} at {s}x{s}, block {block}, register tile {args.columns} x {block}")
    for name, seconds in times.items():
        print(f"  {name:38s} {seconds * 1e6:8.0f} us  {flops / seconds / 1e9:6.1f} GFLOPS")


if __name__ == "__main__":
    main()
