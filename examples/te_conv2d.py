"""TVM's tensor-expression guide, convolution (the HWCN convolution of "How to optimize
convolution"), in mlcir, scheduled for a CPU.

    python examples/te_conv2d.py

The input is padded by its own compute (``Apad``: ``te.if_then_else`` over the border, so the
read of ``A`` there is never used) and the convolution ``B`` sums over the input channels and
the kernel window (``te.reduce_axis`` x3). The schedule tiles the output channels, puts the
window and channel loops outside the tile, vectorizes the channel tile and runs output rows
on threads. Checked against numpy, and timed.
"""

from __future__ import annotations

import numpy as np

import mlcir
from mlcir import te
from mlcir.tune import evaluate

BATCH, IN_CHANNEL, OUT_CHANNEL, IN_SIZE, KERNEL, PAD, STRIDE = 4, 16, 32, 14, 3, 1, 1
OUT_SIZE = (IN_SIZE - KERNEL + 2 * PAD) // STRIDE + 1


def conv2d() -> tuple[te.Tensor, te.Tensor, te.Tensor]:
    A = te.placeholder((IN_SIZE, IN_SIZE, IN_CHANNEL, BATCH), name="A")
    W = te.placeholder((KERNEL, KERNEL, IN_CHANNEL, OUT_CHANNEL), name="W")
    padded = IN_SIZE + 2 * PAD
    Apad = te.compute(
        (padded, padded, IN_CHANNEL, BATCH),
        lambda yy, xx, cc, nn: te.if_then_else(
            te.all(yy >= PAD, yy - PAD < IN_SIZE, xx >= PAD, xx - PAD < IN_SIZE),
            A[yy - PAD, xx - PAD, cc, nn], 0.0),
        name="Apad")
    rc = te.reduce_axis((0, IN_CHANNEL), name="rc")
    ry = te.reduce_axis((0, KERNEL), name="ry")
    rx = te.reduce_axis((0, KERNEL), name="rx")
    B = te.compute(
        (OUT_SIZE, OUT_SIZE, OUT_CHANNEL, BATCH),
        lambda yy, xx, ff, nn: te.sum(
            Apad[yy * STRIDE + ry, xx * STRIDE + rx, rc, nn] * W[ry, rx, rc, ff],
            axis=[ry, rx, rc]),
        name="B")
    return A, W, B


def kernel() -> mlcir.Schedule:
    return mlcir.Schedule(te.create_prim_func(list(conv2d())))


def schedule(sch: mlcir.Schedule) -> None:
    """Output rows on threads; per output pixel, the window and input channels outside an
    8 x batch tile of output channels, vectorized."""
    yy, xx, ff, nn, ry, rx, rc = sch.get_loops(sch.get_block("B"))
    fo, fi = sch.split(ff, factors=[None, 8])
    sch.reorder(yy, xx, fo, ry, rx, rc, fi, nn)
    sch.parallel(yy)
    sch.vectorize(fi)
    pad_y, *_ = sch.get_loops(sch.get_block("Apad"))
    sch.parallel(pad_y)


def reference(a: np.ndarray, w: np.ndarray) -> np.ndarray:
    padded = np.pad(a, ((PAD, PAD), (PAD, PAD), (0, 0), (0, 0)))
    out = np.zeros((OUT_SIZE, OUT_SIZE, OUT_CHANNEL, BATCH), np.float32)
    for y in range(KERNEL):
        for x in range(KERNEL):
            window = padded[y:y + OUT_SIZE * STRIDE:STRIDE, x:x + OUT_SIZE * STRIDE:STRIDE]
            out += np.einsum("hwcn,cf->hwfn", window, w[y, x])
    return out


def check(sch: mlcir.Schedule, seed: int = 0) -> None:
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((IN_SIZE, IN_SIZE, IN_CHANNEL, BATCH)).astype(np.float32)
    w = rng.standard_normal((KERNEL, KERNEL, IN_CHANNEL, OUT_CHANNEL)).astype(np.float32)
    np.testing.assert_allclose(mlcir.build(sch.mod).main(a, w), reference(a, w),
                               rtol=1e-4, atol=1e-3)


def main() -> None:
    naive = kernel()
    check(naive)
    print(f"unscheduled: {evaluate(naive) * 1e3:8.3f} ms")
    sch = kernel()
    schedule(sch)
    check(sch)
    print(f"scheduled:   {evaluate(sch) * 1e3:8.3f} ms")
    print(sch.trace)


if __name__ == "__main__":
    main()
