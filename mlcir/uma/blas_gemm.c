/* The "blas" UMA backend: matmuls and Gemms as CBLAS sgemm calls, sgemv for one row
   (docs/uma.md). MLCIR_SGEMM / MLCIR_SGEMV name the library's cblas_sgemm / cblas_sgemv (numpy's
   OpenBLAS: scipy_cblas_sgemm64_) and MLCIR_BLASINT its integer type (int64_t for ILP64), all
   set by mlcir.uma.blas. */
#include <stdint.h>
#include <string.h>

#ifndef MLCIR_SGEMM
#define MLCIR_SGEMM cblas_sgemm
#endif
#ifndef MLCIR_SGEMV
#define MLCIR_SGEMV cblas_sgemv
#endif
#ifndef MLCIR_BLASINT
#define MLCIR_BLASINT int
#endif

typedef MLCIR_BLASINT blasint;
enum { ROW_MAJOR = 101, NO_TRANS = 111, TRANS = 112 };
void MLCIR_SGEMM(int order, int trans_a, int trans_b, blasint m, blasint n, blasint k,
                 float alpha, const float *a, blasint lda, const float *b, blasint ldb,
                 float beta, float *c, blasint ldc);
void MLCIR_SGEMV(int order, int trans, blasint m, blasint n, float alpha, const float *a,
                 blasint lda, const float *x, blasint incx, float beta, float *y, blasint incy);

/* c[rows, n] = a[rows, k] @ b + beta * c: one row is a matrix-vector product (sgemm packs all
   of b for it: 4x slower at 1x784x128). */
static void gemm(int64_t rows, int64_t k, int64_t n, const float *a, const float *b,
                 int trans_b, float beta, float *c) {
  if (rows == 1) {  /* c[n] = b^T a (b [k, n]) or b a (b stored [n, k]) */
    if (trans_b) MLCIR_SGEMV(ROW_MAJOR, NO_TRANS, n, k, 1.0f, b, k, a, 1, beta, c, 1);
    else MLCIR_SGEMV(ROW_MAJOR, TRANS, k, n, 1.0f, b, n, a, 1, beta, c, 1);
    return;
  }
  MLCIR_SGEMM(ROW_MAJOR, NO_TRANS, trans_b ? TRANS : NO_TRANS, rows, n, k, 1.0f, a, k, b,
              trans_b ? k : n, beta, c, n);
}

/* c[batch, m, n] = a[batch, m, k] @ b, b being [k, n] shared by every batch (batch_b == 1) or
   [batch, k, n]; trans_b: b is stored [.., n, k]. */
void mlcir_blas_matmul(const float *a, const float *b, float *c, int64_t batch,
                       int64_t batch_b, int64_t m, int64_t k, int64_t n, int64_t trans_b) {
  if (batch_b == 1) {
    gemm(batch * m, k, n, a, b, (int)trans_b, 0.0f, c);
    return;
  }
  for (int64_t i = 0; i < batch; ++i)
    gemm(m, k, n, a + i * m * k, b + i * k * n, (int)trans_b, 0.0f, c + i * m * n);
}

/* c[rows, n] = a[rows, k] @ b[k, n] + bias[n] (a Gemm, a linear layer). */
void mlcir_blas_linear(const float *a, const float *b, const float *bias, float *c,
                       int64_t rows, int64_t k, int64_t n) {
  for (int64_t r = 0; r < rows; ++r) memcpy(c + r * n, bias, (size_t)n * sizeof(float));
  gemm(rows, k, n, a, b, 0, 1.0f, c);
}

/* y[n, oc, hw] = w[oc, ic] @ x[n, ic, hw]: a 1x1 stride-1 unpadded NCHW convolution. */
void mlcir_blas_conv1x1(const float *x, const float *w, float *y, int64_t n, int64_t ic,
                        int64_t hw, int64_t oc) {
  for (int64_t i = 0; i < n; ++i)
    MLCIR_SGEMM(ROW_MAJOR, NO_TRANS, NO_TRANS, oc, hw, ic, 1.0f, w, ic, x + i * ic * hw, hw,
                0.0f, y + i * oc * hw, hw);
}
