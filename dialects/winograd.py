"""Winograd's minimal filtering F(4x4, 3x3) (Lavin and Gray, "Fast Algorithms for
Convolutional Neural Networks", 2016): the matrices and their numpy forms.

A 3x3 stride-1 convolution computes each 4x4 tile of its output from the 6x6 tile of its input
around it: ``Y = A^T [(G g G^T) * (B^T d B)] A``, an elementwise product of 6x6 tiles. Summed
over the input channels, that product is 36 matmuls ``[tiles, C] x [C, K]``: 36 multiplications
per 16 outputs and channel pair instead of 144 (4x fewer; the transforms of d and of the
product add work linear in the channels, not in their product).

Storage order, shared by the graph ops (``winograd_input``, ``winograd_output``), the filter
transform of ``graph-winograd`` and the lowering: the transformed tile ``T[p][q]`` (``p`` the
row) is stored at batch ``6 * q + p``, the transposed order, which is what a transform applied
row-wise twice produces (:func:`transform_2d`). All three use it, so the 36 matmuls pair the
same ``(p, q)``.

Numerics: the points 0, +-1, +-2 and infinity keep F(4x4, 3x3)'s rounding error in f32 to a few
units in the fifth significant digit of a sum of 3x3xC products (docs/graph-passes.md,
"graph-winograd", measured); the transforms are exact in binary except G's 1/6 and 1/12.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Callable, Sequence, TypeVar

import numpy as np

TILE = 4       # outputs per tile along H and W (m)
KERNEL = 3     # the filter's size (r)
ALPHA = TILE + KERNEL - 1  # 6: the input tile

# B^T: input tile -> transformed tile, applied as B^T d B.
BT = ((4, 0, -5, 0, 1, 0),
      (0, -4, -4, 1, 1, 0),
      (0, 4, -4, -1, 1, 0),
      (0, -2, -1, 2, 1, 0),
      (0, 2, -1, -2, 1, 0),
      (0, 4, 0, -5, 0, 1))
# G: 3x3 filter -> 6x6, applied as G g G^T.
G = ((Fraction(1, 4), 0, 0),
     (Fraction(-1, 6), Fraction(-1, 6), Fraction(-1, 6)),
     (Fraction(-1, 6), Fraction(1, 6), Fraction(-1, 6)),
     (Fraction(1, 24), Fraction(1, 12), Fraction(1, 6)),
     (Fraction(1, 24), Fraction(-1, 12), Fraction(1, 6)),
     (0, 0, 1))
# A^T: transformed product -> 4x4 output tile, applied as A^T m A.
AT = ((1, 1, 1, 1, 1, 0),
      (0, 1, -1, 2, -2, 0),
      (0, 1, 1, 4, 4, 0),
      (0, 1, -1, 8, -8, 1))

V = TypeVar("V")


def matrix(rows: Sequence[Sequence[object]]) -> np.ndarray:
    return np.array([[float(x) for x in row] for row in rows], dtype=np.float64)


def combine(coefficients: Sequence[object], terms: Sequence[V], add: Callable[[V, V], V],
            sub: Callable[[V, V], V], scale: Callable[[V, float], V],
            multiply_add: Callable[[V, float, V], V]) -> V:
    """``sum(c * t)`` over the nonzero coefficients, with adds and subtractions for +-1 and
    ``multiply_add(t, c, partial)`` (one FMA) for the others: how the lowering builds each row
    of a transform (no multiplication by 0 or 1)."""
    result = None
    for c, t in zip(coefficients, terms):
        c = float(c)
        if c == 0:
            continue
        if result is None:
            result = t if c == 1 else scale(t, c)
        elif c == 1:
            result = add(result, t)
        elif c == -1:
            result = sub(result, t)
        else:
            result = multiply_add(t, c, result)
    assert result is not None, "a transform row with no nonzero coefficient"
    return result


def transform_2d(mat: np.ndarray, tiles: np.ndarray) -> np.ndarray:
    """``(mat X mat^T)^T`` of each tile ``X`` (the leading two axes of ``tiles``): ``mat``
    applied along the first axis, then along the second. The transposed result is the storage
    order (module docstring)."""
    once = np.tensordot(mat, tiles, axes=(1, 0))                 # [m, b, ...] = mat X
    return np.tensordot(mat, once.swapaxes(0, 1), axes=(1, 0))   # [m, m, ...]: (mat X mat^T)^T


def filter_transform(oihw: np.ndarray) -> np.ndarray:
    """A 3x3 filter ``[K, C, 3, 3]`` as the 36 right operands ``[36, C, K]`` (batch
    ``6 * q + p`` holding ``(G g G^T)[p][q]``), in float64 then the filter's dtype."""
    k, c, kh, kw = oihw.shape
    assert (kh, kw) == (KERNEL, KERNEL), oihw.shape
    g = oihw.astype(np.float64).transpose(2, 3, 1, 0)            # [3, 3, C, K]
    u = transform_2d(matrix(G), g)                               # [6 (q), 6 (p), C, K]
    return np.ascontiguousarray(u.reshape(ALPHA * ALPHA, c, k).astype(oihw.dtype))


def input_transform(x: np.ndarray) -> np.ndarray:
    """``x`` ``[N, Cb, 4 tH + 2, 4 tW + 2, c]`` (padded, NCHW<c>c) -> ``[36, N tH tW, Cb c]``:
    each 6x6 input tile, 4 apart, as ``B^T d B`` in storage order; rows are tiles in
    ``(n, th, tw)`` order, columns channels."""
    n, cb, hp, wp, c = x.shape
    th, tw = (hp - 2) // TILE, (wp - 2) // TILE
    rows = np.arange(th)[:, None] * TILE + np.arange(ALPHA)[None, :]     # [tH, 6]
    cols = np.arange(tw)[:, None] * TILE + np.arange(ALPHA)[None, :]     # [tW, 6]
    d = x[:, :, rows[:, :, None, None], cols[None, None, :, :], :]       # [N, Cb, tH, 6, tW, 6, c]
    d = d.astype(np.float64).transpose(3, 5, 0, 2, 4, 1, 6)              # [6, 6, N, tH, tW, Cb, c]
    v = transform_2d(matrix(BT), d)
    return np.ascontiguousarray(v.reshape(ALPHA * ALPHA, n * th * tw, cb * c).astype(x.dtype))


def output_transform(m: np.ndarray, tiles: Sequence[int], block: int) -> np.ndarray:
    """The 36 products ``[36, N tH tW, K]`` (storage order) -> ``y`` ``[N, K/block, 4 tH,
    4 tW, block]``: ``A^T m A`` per tile."""
    th, tw = tiles
    _, t, k = m.shape
    n = t // (th * tw)
    x = m.astype(np.float64).reshape(ALPHA, ALPHA, n, th, tw, k // block, block)  # [q, p, ...]
    y = transform_2d(matrix(AT), x)                                 # [4 (i), 4 (j), ...]
    # y[i, j, n, th, tw, kb, c] -> [n, kb, th, i, tw, j, c]
    y = y.transpose(2, 5, 3, 0, 4, 1, 6).reshape(n, k // block, th * TILE, tw * TILE, block)
    return np.ascontiguousarray(y.astype(m.dtype))
