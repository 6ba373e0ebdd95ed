/* run_model: run a function of a compiled mlcir model's library from C, on .npy files.
 *
 *     cc run_model.c -I$(mlcir config --includedir) -ldl -o run_model
 *     ./run_model model.so main x.npy -o y.npy
 *     ./run_model model.so --info
 *
 * The inputs are the function's arguments in order; each -o names where an output is written:
 * the results in order, then the arguments the function writes in place. A result with a
 * dynamic dim needs its shape: --shape NAME=D0,D1,... The reference for using mlcir.h; see
 * docs/deploy.md.
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mlcir.h"

#define MAX_TENSORS 256
#define MAX_RANK 16

typedef struct {
  void *data;
  int32_t rank;
  int64_t shape[MAX_RANK];
  int64_t bytes;
} buffer;

static void fail(const char *format, const char *a, const char *b) {
  fprintf(stderr, "run_model: error: ");
  fprintf(stderr, format, a, b);
  fputc('\n', stderr);
  exit(1);
}

static void *allocate(int64_t bytes) {
  void *data = 0;
  if (posix_memalign(&data, 64, bytes > 0 ? (size_t)bytes : 1) != 0)
    fail("out of memory%s%s", "", "");
  memset(data, 0, bytes > 0 ? (size_t)bytes : 1);
  return data;
}

static int64_t elements(const int64_t *shape, int32_t rank) {
  int64_t n = 1;
  for (int32_t i = 0; i < rank; ++i) n *= shape[i];
  return n;
}

static const char *shape_text(const int64_t *shape, int32_t rank) {
  static char text[512];
  int at = snprintf(text, sizeof text, "[");
  for (int32_t i = 0; i < rank && at < (int)sizeof text - 32; ++i)
    at += shape[i] < 0 ? snprintf(text + at, sizeof text - at, "%s?", i ? ", " : "")
                       : snprintf(text + at, sizeof text - at, "%s%lld", i ? ", " : "",
                                  (long long)shape[i]);
  snprintf(text + at, sizeof text - at, "]");
  return text;
}

/* Whether two .npy descrs name the same type ('<f4' and '=f4' on a little-endian machine,
 * '|u1' and '<u1'). */
static int same_descr(const char *a, const char *b) {
  return strlen(a) == 3 && strlen(b) == 3 && strcmp(a + 1, b + 1) == 0 &&
         (a[0] == b[0] || a[0] == '|' || b[0] == '|' || a[0] == '=' || b[0] == '=');
}

/* Read a C-ordered .npy file into a 64-byte aligned buffer. */
static buffer read_npy(const char *path, const mlcir_tensor *spec) {
  FILE *f = fopen(path, "rb");
  if (!f) fail("cannot open %s: %s", path, strerror(errno));
  unsigned char magic[8];
  if (fread(magic, 1, 8, f) != 8 || memcmp(magic, "\x93NUMPY", 6) != 0)
    fail("%s is not a .npy file%s", path, "");
  uint32_t header_bytes = 0;
  unsigned char length[4] = {0};
  if (magic[6] == 1) {
    if (fread(length, 1, 2, f) != 2) fail("%s: truncated header%s", path, "");
    header_bytes = length[0] | (length[1] << 8);
  } else {
    if (fread(length, 1, 4, f) != 4) fail("%s: truncated header%s", path, "");
    header_bytes = length[0] | (length[1] << 8) | (length[2] << 16) | ((uint32_t)length[3] << 24);
  }
  char *header = calloc(header_bytes + 1, 1);
  if (fread(header, 1, header_bytes, f) != header_bytes) fail("%s: truncated header%s", path, "");
  char descr[16] = "";
  const char *at = strstr(header, "'descr':");
  if (!at || sscanf(at + 8, " '%15[^']'", descr) != 1) fail("%s: no descr in its header%s", path, "");
  if (strstr(header, "'fortran_order': True"))
    fail("%s is in Fortran order; write it C-ordered (np.ascontiguousarray)%s", path, "");
  if (!same_descr(descr, spec->npy_descr)) {
    char want[64];
    snprintf(want, sizeof want, "%s ('%s')", spec->dtype, spec->npy_descr);
    fprintf(stderr, "run_model: error: %s: argument '%s' is %s, the file holds '%s'\n", path,
            spec->name, want, descr);
    exit(1);
  }
  buffer b = {0};
  at = strstr(header, "'shape':");
  at = at ? strchr(at, '(') : 0;
  if (!at) fail("%s: no shape in its header%s", path, "");
  for (++at; *at && *at != ')';) {
    char *end;
    long long dim = strtoll(at, &end, 10);
    if (end == at) { ++at; continue; }
    if (b.rank == MAX_RANK) fail("%s: too many dims%s", path, "");
    b.shape[b.rank++] = dim;
    at = end;
  }
  free(header);
  int ok = b.rank == spec->rank;
  for (int32_t i = 0; ok && i < b.rank; ++i)
    ok = spec->shape[i] < 0 || spec->shape[i] == b.shape[i];
  if (!ok) {
    char want[512];
    snprintf(want, sizeof want, "%s", shape_text(spec->shape, spec->rank));
    fprintf(stderr, "run_model: error: %s: argument '%s' has shape %s, the file holds %s\n",
            path, spec->name, want, shape_text(b.shape, b.rank));
    exit(1);
  }
  b.bytes = elements(b.shape, b.rank) * spec->itemsize;
  b.data = allocate(b.bytes);
  if (fread(b.data, 1, (size_t)b.bytes, f) != (size_t)b.bytes)
    fail("%s: the data is truncated%s", path, "");
  fclose(f);
  return b;
}

static void write_npy(const char *path, const mlcir_tensor *spec, const buffer *b) {
  char header[1024];
  int n = snprintf(header, sizeof header, "{'descr': '%s', 'fortran_order': False, 'shape': (",
                   spec->npy_descr);
  for (int32_t i = 0; i < b->rank; ++i)
    n += snprintf(header + n, sizeof header - n, "%lld,%s", (long long)b->shape[i],
                  i + 1 < b->rank ? " " : "");
  n += snprintf(header + n, sizeof header - n, "), }");
  int total = 10 + n + 1;
  int pad = (64 - total % 64) % 64;
  memset(header + n, ' ', pad);
  header[n + pad] = '\n';
  n += pad + 1;
  FILE *f = fopen(path, "wb");
  if (!f) fail("cannot write %s: %s", path, strerror(errno));
  unsigned char prefix[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, n & 0xff, (n >> 8) & 0xff};
  if (fwrite(prefix, 1, 10, f) != 10 || fwrite(header, 1, n, f) != (size_t)n ||
      fwrite(b->data, 1, (size_t)b->bytes, f) != (size_t)b->bytes || fclose(f) != 0)
    fail("cannot write %s: %s", path, strerror(errno));
}

static void print_tensor(const char *what, const mlcir_tensor *t) {
  printf("  %s %s: %s%s%s\n", what, t->name, t->dtype, shape_text(t->shape, t->rank),
         t->written ? " (written in place)" : "");
}

static void usage(void) {
  fprintf(stderr, "usage: run_model MODEL.so FUNCTION INPUT.npy... [-o OUTPUT.npy]... "
                  "[--shape NAME=D0,D1,...]...\n       run_model MODEL.so --info\n");
  exit(2);
}

int main(int argc, char **argv) {
  if (argc < 3) usage();
  void *library = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (!library) fail("cannot load %s%s", dlerror(), "");
  const mlcir_model *model = dlsym(library, MLCIR_MODEL_SYMBOL);
  if (!model) fail("%s has no %s: it is not a library of an mlcir model", argv[1], MLCIR_MODEL_SYMBOL);
  if (model->abi_version != MLCIR_ABI_VERSION)
    fail("%s was built for another version of mlcir.h%s", argv[1], "");
  if (strcmp(argv[2], "--info") == 0) {
    printf("target: %s\n", model->target);
    for (int32_t i = 0; i < model->num_functions; ++i) {
      const mlcir_function *fn = &model->functions[i];
      printf("%s\n", fn->name);
      for (int32_t k = 0; k < fn->num_args; ++k) print_tensor("argument", &fn->args[k]);
      for (int32_t k = 0; k < fn->num_results; ++k) print_tensor("result", &fn->results[k]);
    }
    for (int32_t i = 0; i < model->num_library_functions; ++i)
      printf("library function (Python): %s\n", model->library_functions[i]);
    return 0;
  }
  if (model->num_library_functions > 0) {
    fprintf(stderr, "run_model: error: %s calls library function(s) registered in Python:",
            argv[1]);
    for (int32_t i = 0; i < model->num_library_functions; ++i)
      fprintf(stderr, "%s %s", i ? "," : "", model->library_functions[i]);
    fprintf(stderr, "; C cannot call them: run the model from Python (mlcir.load)\n");
    return 1;
  }
  const mlcir_function *fn = mlcir_find_function(model, argv[2]);
  if (!fn) fail("the model has no function '%s'%s", argv[2], "");

  const char *inputs[MAX_TENSORS], *outputs[MAX_TENSORS], *shapes[MAX_TENSORS];
  int num_inputs = 0, num_outputs = 0, num_shapes = 0;
  for (int i = 3; i < argc; ++i) {
    if (strcmp(argv[i], "-o") == 0 && i + 1 < argc) outputs[num_outputs++] = argv[++i];
    else if (strcmp(argv[i], "--shape") == 0 && i + 1 < argc) shapes[num_shapes++] = argv[++i];
    else if (argv[i][0] == '-') usage();
    else inputs[num_inputs++] = argv[i];
    if (num_inputs == MAX_TENSORS || num_outputs == MAX_TENSORS || num_shapes == MAX_TENSORS)
      fail("too many arguments%s%s", "", "");
  }
  if (num_inputs != fn->num_args) {
    fprintf(stderr, "run_model: error: %s() takes %d input(s):", fn->name, fn->num_args);
    for (int32_t k = 0; k < fn->num_args; ++k)
      fprintf(stderr, "%s %s", k ? "," : "", fn->args[k].name);
    fprintf(stderr, "; got %d\n", num_inputs);
    return 1;
  }

  buffer buffers[MAX_TENSORS];
  int64_t *storage[MAX_TENSORS];
  void *descriptors[MAX_TENSORS];
  int count = fn->num_args + fn->num_results;
  for (int32_t k = 0; k < fn->num_args; ++k) buffers[k] = read_npy(inputs[k], &fn->args[k]);
  for (int32_t k = 0; k < fn->num_results; ++k) {
    const mlcir_tensor *spec = &fn->results[k];
    buffer *b = &buffers[fn->num_args + k];
    b->rank = spec->rank;
    memcpy(b->shape, spec->shape, sizeof(int64_t) * spec->rank);
    size_t length = strlen(spec->name);
    for (int i = 0; i < num_shapes; ++i)
      if (strncmp(shapes[i], spec->name, length) == 0 && shapes[i][length] == '=') {
        const char *at = shapes[i] + length + 1;
        for (int32_t d = 0; d < spec->rank; ++d) {
          char *end;
          b->shape[d] = strtoll(at, &end, 10);
          if (end == at) fail("--shape %s: expected %s=D0,D1,...", shapes[i], spec->name);
          at = *end == ',' ? end + 1 : end;
        }
      }
    for (int32_t d = 0; d < spec->rank; ++d)
      if (b->shape[d] < 0)
        fail("result '%s' has a dynamic shape: give it with --shape %s=D0,D1,...", spec->name,
             spec->name);
    b->bytes = elements(b->shape, b->rank) * spec->itemsize;
    b->data = allocate(b->bytes);
  }
  for (int k = 0; k < count; ++k) {
    storage[k] = malloc(sizeof(int64_t) * mlcir_memref_words(buffers[k].rank));
    descriptors[k] = mlcir_memref_fill(storage[k], buffers[k].data, buffers[k].rank,
                                       buffers[k].shape);
  }
  fn->call(descriptors);

  int written = 0;
  for (int32_t k = 0; k < fn->num_args; ++k) written += fn->args[k].written;
  if (num_outputs > fn->num_results + written) {
    fprintf(stderr, "run_model: error: %s() has %d output(s), got %d -o\n", fn->name,
            fn->num_results + written, num_outputs);
    return 1;
  }
  int next = 0;
  for (int32_t k = 0; k < fn->num_results && next < num_outputs; ++k, ++next)
    write_npy(outputs[next], &fn->results[k], &buffers[fn->num_args + k]);
  for (int32_t k = 0; k < fn->num_args && next < num_outputs; ++k)
    if (fn->args[k].written) write_npy(outputs[next++], &fn->args[k], &buffers[k]);
  return 0;
}
