/* The "blas" UMA backend: matmuls and Gemms as CBLAS sgemm calls (docs/uma.md).
   MLCIR_SGEMM names the library's cblas_sgemm (numpy's OpenBLAS: scipy_cblas_sgemm64_) and
   MLCIR_BLASINT its integer type (int64_t for ILP64), both set by mlcir.uma.blas. */
#include <stdint.h>
#include <string.h>

#ifndef MLCIR_SGEMM
#define MLCIR_SGEMM cblas_sgemm
#endif
#ifndef MLCIR_BLASINT
#define MLCIR_BLASINT int
#endif

typedef MLCIR_BLASINT blasint;
enum { ROW_MAJOR = 101, NO_TRANS = 111, TRANS = 112 };
void MLCIR_SGEMM(int order, int trans_a, int trans_b, blasint m, blasint n, blasint k,
                 float alpha, const float *a, blasint lda, const float *b, blasint ldb,
                 float beta, float *c, blasint ldc);

/* c[batch, m, n] = a[batch, m, k] @ b, b being [k, n] shared by every batch (batch_b == 1) or
   [batch, k, n]; trans_b: b is stored [.., n, k]. */
void mlcir_blas_matmul(const float *a, const float *b, float *c, int64_t batch,
                       int64_t batch_b, int64_t m, int64_t k, int64_t n, int64_t trans_b) {
  int tb = trans_b ? TRANS : NO_TRANS;
  blasint ldb = trans_b ? k : n;
  if (batch_b == 1) {
    MLCIR_SGEMM(ROW_MAJOR, NO_TRANS, tb, batch * m, n, k, 1.0f, a, k, b, ldb, 0.0f, c, n);
    return;
  }
  for (int64_t i = 0; i < batch; ++i)
    MLCIR_SGEMM(ROW_MAJOR, NO_TRANS, tb, m, n, k, 1.0f, a + i * m * k, k, b + i * k * n, ldb,
                0.0f, c + i * m * n, n);
}

/* c[rows, n] = a[rows, k] @ b[k, n] + bias[n] (a Gemm, a linear layer). */
void mlcir_blas_linear(const float *a, const float *b, const float *bias, float *c,
                       int64_t rows, int64_t k, int64_t n) {
  for (int64_t r = 0; r < rows; ++r) memcpy(c + r * n, bias, (size_t)n * sizeof(float));
  MLCIR_SGEMM(ROW_MAJOR, NO_TRANS, NO_TRANS, rows, n, k, 1.0f, a, k, b, n, 1.0f, c, n);
}
