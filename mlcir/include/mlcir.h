/* mlcir.h: the C interface of a compiled mlcir model's shared library (model.so).
 *
 * A saved model (.mlcir) is a zip archive; its member model.so is an ordinary shared library
 * for the model's target (see docs/deploy.md). Besides the compiled code, the library exports
 * one data symbol, MLCIR_MODEL_SYMBOL, describing its functions, so that a program needs
 * nothing but the .so:
 *
 *     void *lib = dlopen("model.so", RTLD_NOW);
 *     const mlcir_model *model = dlsym(lib, MLCIR_MODEL_SYMBOL);
 *     const mlcir_function *fn = mlcir_find_function(model, "main");
 *
 * A function takes its arguments, then one destination per result, each as a pointer to a
 * memref descriptor (mlcir_memref below: the layout of MLIR's StridedMemRefType for the
 * argument's rank). The caller owns every buffer, results included: allocate each result with
 * its shape (a dynamic dim, -1 in `shape`, is the caller's to know) and call
 *
 *     void *descriptors[] = {&x, &y};     // arguments, then results
 *     fn->call(descriptors);
 *
 * Functions registered in Python (mlcir.register_func) cannot be called from C: a model whose
 * code calls them lists their names in `library_functions`, and must be run from Python.
 */
#ifndef MLCIR_H
#define MLCIR_H

#include <stdint.h>
#include <string.h>

#define MLCIR_ABI_VERSION 1
#define MLCIR_MODEL_SYMBOL "mlcir_model_info"

/* One argument or result of a function. */
typedef struct mlcir_tensor {
  const char *name;       /* as in the source model (an ONNX input or output name) */
  const char *dtype;      /* numpy's name: "float32", "int64", ... */
  const char *npy_descr;  /* numpy's .npy descr: "<f4", "<i8", "|u1", ... */
  int32_t itemsize;       /* bytes per element */
  int32_t rank;
  const int64_t *shape;   /* rank dims; -1 for a dynamic dim */
  int32_t written;        /* 1: an argument the function writes in place */
} mlcir_tensor;

/* A compiled function: `call` takes num_args + num_results memref descriptor pointers. */
typedef struct mlcir_function {
  const char *name;
  void (*call)(void **descriptors);
  int32_t num_args;
  const mlcir_tensor *args;
  int32_t num_results;
  const mlcir_tensor *results;
} mlcir_function;

/* What the library exports as MLCIR_MODEL_SYMBOL. */
typedef struct mlcir_model {
  int32_t abi_version;                  /* MLCIR_ABI_VERSION of the mlcir that built it */
  const char *target;                   /* "llvm -mtriple=aarch64-linux-gnu -mcpu=..." */
  int32_t num_functions;
  const mlcir_function *functions;
  int32_t num_library_functions;        /* Python library functions the code calls */
  const char *const *library_functions; /* their registered names */
} mlcir_model;

/* The memref descriptor of an argument of rank R: two pointers, an offset (in elements), then
 * R sizes and R strides (in elements). mlcir_memref_fill writes one for a C-contiguous buffer
 * into `storage`, which must hold mlcir_memref_words(rank) int64 words. */
static inline int32_t mlcir_memref_words(int32_t rank) { return 3 + 2 * rank; }

static inline void *mlcir_memref_fill(int64_t *storage, void *data, int32_t rank,
                                      const int64_t *sizes) {
  void *pointers[2] = {data, data};
  memcpy(storage, pointers, sizeof pointers);  /* allocated, aligned (64-bit pointers) */
  storage[2] = 0;
  int64_t stride = 1;
  for (int32_t i = rank - 1; i >= 0; --i) {
    storage[3 + i] = sizes[i];
    storage[3 + rank + i] = stride;
    stride *= sizes[i];
  }
  return storage;
}

static inline const mlcir_function *mlcir_find_function(const mlcir_model *model,
                                                        const char *name) {
  for (int32_t i = 0; i < model->num_functions; ++i)
    if (strcmp(model->functions[i].name, name) == 0) return &model->functions[i];
  return 0;
}

#endif /* MLCIR_H */
