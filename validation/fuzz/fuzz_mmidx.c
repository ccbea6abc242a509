/* Harness: Megatron's indexed dataset, .idx validation and reading (src/data/indexed_dataset.c).
 *
 * Input: the .bin's size (8 bytes, little-endian, taken modulo 1 MiB), then the .idx.
 * ptdp_mmidx_parse must accept or refuse without crashing.  Promises checked when it accepts:
 * every sequence lies inside the .bin, document boundaries never decrease; then the same
 * bytes written as PREFIX.idx and a PREFIX.bin of that size open through the file reader,
 * and the first tokens of every sequence read back (ids of the .bin's zero bytes: 0). */
#include "fuzz.h"

#include "ptdp/error.h"
#include "ptdp/indexed_dataset.h"

#include <stdlib.h>
#include <string.h>

/* The file reader over the same .idx and a zero .bin of bin_size bytes. */
static void open_and_read(const uint8_t *idx, size_t n, uint64_t bin_size)
{
  char ip[FUZZ_PATH_MAX], bp[FUZZ_PATH_MAX];
  uint8_t *bin = calloc(bin_size ? bin_size : 1, 1);
  int bad = !bin || fuzz_file("idx", idx, n, ip) || fuzz_file("bin", bin, bin_size, bp);
  free(bin);
  if (bad) return;
  ptdp_indexed_dataset *ds = NULL;
  if (ptdp_indexed_dataset_open_files(&ds, ip, bp)) fuzz_fail("the file reader refused an index the parser accepted");
  int32_t out[16];
  for (int64_t i = 0; i < ptdp_indexed_dataset_num_sequences(ds) && i < 4096; i++) {
    int32_t len = ptdp_indexed_dataset_length(ds, i), k = len < 16 ? len : 16;
    if (ptdp_indexed_dataset_get(ds, i, 0, k, out)) continue; /* a float .bin is refused here */
    for (int32_t j = 0; j < k; j++)
      if (out[j] != 0) fuzz_fail("a token of an all-zero .bin read back non-zero");
  }
  ptdp_indexed_dataset_close(&ds);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  fuzz_begin();
  if (size < 8) return 0;
  uint64_t bin_size = 0;
  for (int i = 7; i >= 0; i--) bin_size = bin_size << 8 | data[i];
  bin_size %= (uint64_t)1 << 20;
  /* a private copy, so reads past the .idx are caught by AddressSanitizer */
  size_t n = size - 8;
  uint8_t *idx = malloc(n ? n : 1);
  if (!idx) return 0;
  memcpy(idx, data + 8, n);
  ptdp_mmidx ix;
  if (ptdp_mmidx_parse(&ix, idx, n, bin_size, "fuzz.idx") == 0) {
    for (int64_t i = 0; i < ix.num_sequences; i++) {
      int64_t end = ptdp_mmidx_pointer(&ix, i) + (int64_t)ptdp_mmidx_length(&ix, i) * (int64_t)ix.elem_size;
      if (ptdp_mmidx_pointer(&ix, i) < 0 || ptdp_mmidx_length(&ix, i) < 0 || end > (int64_t)bin_size)
        fuzz_fail("accepted an index that points outside the .bin");
    }
    for (int64_t k = 1; k < ix.num_doc_indices; k++)
      if (ptdp_mmidx_doc_index(&ix, k) < ptdp_mmidx_doc_index(&ix, k - 1)) fuzz_fail("document boundaries decrease");
    open_and_read(idx, n, bin_size);
  }
  free(idx);
  ptdp_error_clear();
  return 0;
}
