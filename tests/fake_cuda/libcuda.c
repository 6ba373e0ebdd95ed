/* A recording stand-in for the NVIDIA driver (libcuda.so.1), used by tests/test_cuda.py to
   check, on machines without a GPU, what a saved cuda model asks of the driver when it is loaded
   and called through the MLIR CUDA runtime (libmlir_cuda_runtime.so): which kernel modules its
   constructors load (PTX for which chip, or cubin), which kernels it launches with which grid
   and block, which bytes it copies. It computes nothing: "device" memory is host memory,
   filled with 1.0f when allocated; kernels do not run. Records go to $MLCIR_FAKE_CUDA_LOG, one
   line each; $MLCIR_FAKE_CUDA_CC ("8.0") is the compute capability it reports. Only the
   functions libmlir_cuda_runtime.so imports are defined. */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int CUresult;
typedef unsigned long long CUdeviceptr;

static void record(const char *format, ...) __attribute__((format(printf, 1, 2)));
static void record(const char *format, ...) {
  const char *path = getenv("MLCIR_FAKE_CUDA_LOG");
  FILE *f = path ? fopen(path, "a") : stderr;
  va_list args;
  va_start(args, format);
  vfprintf(f, format, args);
  va_end(args);
  fputc('\n', f);
  if (path) fclose(f);
}

static uint64_t fnv1a(const unsigned char *p, size_t n) {
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 1099511628211ull;
  return h;
}

CUresult cuInit(unsigned flags) { return 0; }
CUresult cuDeviceGetCount(int *count) { *count = 1; return 0; }
CUresult cuDeviceGet(int *device, int ordinal) { *device = ordinal; return 0; }
CUresult cuDeviceGetAttribute(int *value, int attribute, int device) {
  const char *cc = getenv("MLCIR_FAKE_CUDA_CC");  /* "8.0" */
  int major = cc ? cc[0] - '0' : 8, minor = cc ? cc[2] - '0' : 0;
  *value = attribute == 75 ? major : attribute == 76 ? minor : 1024;
  return 0;
}
CUresult cuDevicePrimaryCtxRetain(void **context, int device) { static int c; *context = &c; return 0; }
CUresult cuCtxPushCurrent_v2(void *context) { return 0; }
CUresult cuCtxPopCurrent_v2(void **context) { if (context) *context = 0; return 0; }
CUresult cuGetErrorName(CUresult error, const char **name) { *name = "FAKE_ERROR"; return 0; }

static CUresult load(void **module, const void *image) {
  const char *text = image;
  const char *target = strstr(text, ".target ");
  if (memcmp(text, "\x7f" "ELF", 4) == 0) record("load cubin");
  else record("load ptx %.*s", target ? (int)strcspn(target, "\n") : 0, target ? target : "");
  *module = (void *)image;
  return 0;
}
CUresult cuModuleLoadData(void **module, const void *image) { return load(module, image); }
CUresult cuModuleLoadDataEx(void **module, const void *image, unsigned n, void *options,
                            void **values) { return load(module, image); }
CUresult cuModuleUnload(void *module) { return 0; }
CUresult cuModuleGetFunction(void **function, void *module, const char *name) {
  *function = strdup(name);
  return 0;
}
CUresult cuFuncSetAttribute(void *function, int attribute, int value) { return 0; }
CUresult cuLaunchKernel(void *function, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                        unsigned by, unsigned bz, unsigned shared, void *stream, void **params,
                        void **extra) {
  record("launch %s grid %u %u %u block %u %u %u", (const char *)function, gx, gy, gz, bx, by, bz);
  return 0;
}
CUresult cuLaunchKernelEx(const void *config, void *function, void **params, void **extra) { return 1; }

CUresult cuMemAlloc_v2(CUdeviceptr *pointer, size_t bytes) {
  float *memory = malloc(bytes ? bytes : 1);
  for (size_t i = 0; i < bytes / sizeof(float); ++i) memory[i] = 1.0f;
  *pointer = (CUdeviceptr)memory;
  return 0;
}
CUresult cuMemAllocManaged(CUdeviceptr *pointer, size_t bytes, unsigned flags) { return cuMemAlloc_v2(pointer, bytes); }
CUresult cuMemFree_v2(CUdeviceptr pointer) { free((void *)pointer); return 0; }
CUresult cuMemcpy(CUdeviceptr dst, CUdeviceptr src, size_t bytes) {
  record("copy %zu %016llx", bytes, (unsigned long long)fnv1a((const unsigned char *)src, bytes));
  memcpy((void *)dst, (const void *)src, bytes);
  return 0;
}
CUresult cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t bytes, void *stream) { return cuMemcpy(dst, src, bytes); }
CUresult cuMemsetD16Async(CUdeviceptr dst, unsigned short value, size_t n, void *stream) { return 1; }
CUresult cuMemsetD32Async(CUdeviceptr dst, unsigned value, size_t n, void *stream) { return 1; }
CUresult cuMemHostRegister_v2(void *pointer, size_t bytes, unsigned flags) { return 0; }
CUresult cuMemHostUnregister(void *pointer) { return 0; }
CUresult cuStreamCreate(void **stream, unsigned flags) { *stream = malloc(1); return 0; }
CUresult cuStreamDestroy_v2(void *stream) { free(stream); return 0; }
CUresult cuStreamSynchronize(void *stream) { return 0; }
CUresult cuStreamWaitEvent(void *stream, void *event, unsigned flags) { return 0; }
CUresult cuEventCreate(void **event, unsigned flags) { *event = malloc(1); return 0; }
CUresult cuEventDestroy_v2(void *event) { free(event); return 0; }
CUresult cuEventRecord(void *event, void *stream) { return 0; }
CUresult cuEventSynchronize(void *event) { return 0; }
CUresult cuTensorMapEncodeTiled(void) { return 1; }
