/* memrefCopy, the one MLIR C runner utility lowered code calls (a copy between memrefs of
 * different layouts), for libraries linked without libmlir_c_runner_utils: the utilities are
 * not built for other architectures. */
#include <stdint.h>
#include <string.h>

typedef struct { int64_t rank; void *descriptor; } unranked_memref;
typedef struct { char *allocated; char *aligned; int64_t offset; int64_t rest[]; } ranked_memref;

void memrefCopy(int64_t element_size, unranked_memref *src_memref, unranked_memref *dst_memref) {
  ranked_memref *src = src_memref->descriptor, *dst = dst_memref->descriptor;
  int64_t rank = src_memref->rank;
  const int64_t *sizes = src->rest, *src_strides = src->rest + rank;
  const int64_t *dst_strides = dst->rest + rank;
  int64_t count = 1;
  for (int64_t i = 0; i < rank; ++i) count *= sizes[i];
  if (count == 0) return;
  char *from = src->aligned + src->offset * element_size;
  char *to = dst->aligned + dst->offset * element_size;
  if (rank == 0) {
    memcpy(to, from, element_size);
    return;
  }
  int64_t index[rank > 0 ? rank : 1];
  memset(index, 0, sizeof index);
  for (int64_t n = 0; n < count; ++n) {
    int64_t src_offset = 0, dst_offset = 0;
    for (int64_t i = 0; i < rank; ++i) {
      src_offset += index[i] * src_strides[i];
      dst_offset += index[i] * dst_strides[i];
    }
    memcpy(to + dst_offset * element_size, from + src_offset * element_size, element_size);
    for (int64_t i = rank - 1; i >= 0; --i) {
      if (++index[i] < sizes[i]) break;
      index[i] = 0;
    }
  }
}
