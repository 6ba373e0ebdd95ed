"""The ``blas`` UMA backend: f32 matmuls and Gemms as CBLAS ``sgemm`` calls (``sgemv`` for one
row).

The BLAS is the OpenBLAS numpy's wheels ship (``numpy.libs/libscipy_openblas64_*.so``:
``scipy_cblas_sgemm64_``, 64-bit integers), linked by path with its folder as run path: nothing
to install. ``MLCIR_BLAS_LIBRARY`` names another CBLAS library (its ``cblas_sgemm`` with
``int``, or the ``64_``/``scipy_`` ILP64 spellings). Patterns (``blas_gemm.c``):

- ``linear``: ``add(matmul(a, b), bias)``, ``b`` a matrix, ``bias`` ``[n]``/``[1, n]`` (a Gemm)
- ``matmul``: ``matmul(a, b)``, ``b`` a matrix shared by every row of ``a``, or with the same
  batch dims as ``a`` (``trans_b``: ``b`` written ``permute_dims`` of its last two axes)
- ``conv1x1``: a 1x1 stride-1 unpadded NCHW ``conv2d`` (``w @ x`` per image)

Its threads are OpenBLAS's (``OPENBLAS_NUM_THREADS``, or ``threadpoolctl`` from Python).
"""

from __future__ import annotations

import ctypes
import functools
import math
import os
from pathlib import Path

from mlir import ir

from mlcir.errors import BuildError
from mlcir.passes.patterns import Match, is_op, wildcard

from .backend import UMABackend, shape

# (sgemm symbol, sgemv symbol, their integer type), most specific first.
_SPELLINGS = (("scipy_cblas_sgemm64_", "scipy_cblas_sgemv64_", "int64_t"),
              ("cblas_sgemm64_", "cblas_sgemv64_", "int64_t"),
              ("cblas_sgemm", "cblas_sgemv", "int"))


@functools.lru_cache(maxsize=None)
def blas_library() -> tuple[Path, str, str, str]:
    """The CBLAS library, its sgemm and sgemv symbols and integer type (module docstring)."""
    env = os.environ.get("MLCIR_BLAS_LIBRARY")
    if env:
        candidates = [Path(env)]
    else:
        import numpy

        libs = Path(numpy.__file__).resolve().parent.parent / "numpy.libs"
        candidates = sorted(libs.glob("libscipy_openblas*.so")) + sorted(
            libs.glob("libopenblas*.so"))
    for path in candidates:
        try:
            lib = ctypes.CDLL(str(path))
        except OSError:
            continue
        for sgemm, sgemv, int_type in _SPELLINGS:
            if hasattr(lib, sgemm) and hasattr(lib, sgemv):
                return path, sgemm, sgemv, int_type
    raise BuildError("UMA backend 'blas': no CBLAS library found (numpy's wheels ship "
                     "numpy.libs/libscipy_openblas64_*.so; or set MLCIR_BLAS_LIBRARY)"
                     f"; looked at: {', '.join(map(str, candidates)) or 'nothing'}")


def _f32(*values: ir.Value) -> bool:
    return all(str(ir.ShapedType(v.type).element_type) == "f32" for v in values)


def _rows(a: ir.Value) -> int:
    return math.prod(shape(a)[:-1])


def _matmul_args(a: ir.Value, b: ir.Value, trans_b: bool) -> tuple[int, int, int, int, int]:
    """(batch, batch_b, m, k, n) of ``a @ b`` (``b`` stored transposed when ``trans_b``)."""
    sa, sb = shape(a), shape(b)
    k = sa[-1]
    n = sb[-2] if trans_b else sb[-1]
    if len(sb) == 2:
        return 1, 1, _rows(a), k, n
    return math.prod(sa[:-2]), math.prod(sb[:-2]), sa[-2], k, n


def _flops(a: ir.Value, b: ir.Value, trans_b: bool) -> float:
    batch, _, m, k, n = _matmul_args(a, b, trans_b)
    return 2.0 * batch * m * k * n


def _matmul_reason(a: ir.Value, b: ir.Value) -> str | None:
    if not _f32(a, b):
        return "only f32 matmuls go to sgemm"
    sa, sb = shape(a), shape(b)
    if len(sa) < 2 or len(sb) < 2:
        return "matrix-vector products stay with mlcir"
    if len(sb) > 2 and (sa[:-2] != sb[:-2]):
        return f"broadcast batch dims {sa[:-2]} and {sb[:-2]} stay with mlcir"
    return None


class BlasBackend(UMABackend):
    """f32 matmuls and Gemms to the CBLAS sgemm of numpy's OpenBLAS (module docstring)."""

    target_name = "blas"
    sources = (Path(__file__).with_name("blas_gemm.c"),)

    def __init__(self) -> None:
        super().__init__()
        a, b, bias = wildcard("a"), wildcard("b"), wildcard("bias")
        self.register_pattern(
            "linear", is_op("graph.add")(is_op("graph.matmul")(a, b), bias),
            "mlcir_blas_linear", inputs=("a", "b", "bias"), int_type="int64_t",
            ints=lambda m: [_rows(m["a"]), shape(m["a"])[-1], shape(m["b"])[-1]],
            check=self._linear_reason, flops=lambda m: _flops(m["a"], m["b"], False))
        swapped = is_op("graph.permute_dims")(wildcard("bt"))
        self.register_pattern(
            "matmul_t", is_op("graph.matmul")(a, swapped.named("b_t")), "mlcir_blas_matmul",
            inputs=("a", "bt"), int_type="int64_t",
            ints=lambda m: [*_matmul_args(m["a"], m["bt"], True), 1],
            check=self._transposed_reason, flops=lambda m: _flops(m["a"], m["bt"], True))
        self.register_pattern(
            "conv1x1", is_op("graph.conv2d", strides=[1, 1], padding=[0, 0, 0, 0], groups=1)(
                wildcard("x"), wildcard("w")),
            "mlcir_blas_conv1x1", int_type="int64_t", check=self._conv1x1_reason,
            ints=lambda m: [*shape(m["x"])[:2], math.prod(shape(m["x"])[2:]), shape(m["w"])[0]],
            flops=lambda m: 2.0 * math.prod(shape(m["x"])) * shape(m["w"])[0])
        self.register_pattern(
            "matmul", is_op("graph.matmul")(a, b), "mlcir_blas_matmul", inputs=("a", "b"),
            int_type="int64_t", ints=lambda m: [*_matmul_args(m["a"], m["b"], False), 0],
            check=lambda m: _matmul_reason(m["a"], m["b"]),
            flops=lambda m: _flops(m["a"], m["b"], False))

    @property
    def libraries(self) -> tuple[str, ...]:  # type: ignore[override]
        return (str(blas_library()[0]),)

    @property
    def cflags(self) -> tuple[str, ...]:  # type: ignore[override]
        _, sgemm, sgemv, int_type = blas_library()
        return (f"-DMLCIR_SGEMM={sgemm}", f"-DMLCIR_SGEMV={sgemv}", f"-DMLCIR_BLASINT={int_type}")

    @staticmethod
    def _linear_reason(match: Match) -> str | None:
        a, b, bias = match["a"], match["b"], match["bias"]
        if len(shape(b)) != 2:
            return "linear: the weight must be a matrix"
        reason = _matmul_reason(a, b)
        if reason is None and not _f32(bias):
            reason = "linear: the bias must be f32"
        n = shape(b)[-1]
        if reason is None and shape(bias) not in ([n], [1, n]):
            reason = f"linear: the bias {shape(bias)} is not a row of {n}"
        return reason

    @staticmethod
    def _conv1x1_reason(match: Match) -> str | None:
        x, w = match["x"], match["w"]
        if not _f32(x, w):
            return "conv1x1: only f32 convolutions go to sgemm"
        if shape(w)[2:] != [1, 1]:
            return f"conv1x1: a {shape(w)[2]}x{shape(w)[3]} kernel is not 1x1"
        return None

    @staticmethod
    def _transposed_reason(match: Match) -> str | None:
        bt = match["bt"]
        axes = list(ir.DenseI64ArrayAttr(match.ops[1].attributes["axes"]))
        rank = len(axes)
        if rank < 2 or axes != list(range(rank - 2)) + [rank - 1, rank - 2]:
            return f"matmul_t: permute_dims {axes} does not swap the last two axes"
        return _matmul_reason(match["a"], bt)


BlasBackend().register()
