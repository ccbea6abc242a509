/* libFuzzer harness for the .idx validator: the input's first 8 bytes give the .bin size,
 * the rest is the .idx.  ptdp_mmidx_parse must accept or reject without crashing, and
 * whatever it accepts must be safe to walk (every sequence inside the .bin).
 * Built by validation/fuzz/run_fuzz.sh, not by make check. */
#include "ptdp/error.h"
#include "ptdp/indexed_dataset.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  if (size < 8) return 0;
  uint64_t bin_size;
  memcpy(&bin_size, data, 8);
  bin_size %= (uint64_t)1 << 20;
  ptdp_error_set_quiet(1);
  ptdp_error_clear();
  /* a private copy, so reads past the .idx are caught by ASan */
  size_t n = size - 8;
  uint8_t *idx = malloc(n ? n : 1);
  memcpy(idx, data + 8, n);
  ptdp_mmidx ix;
  if (ptdp_mmidx_parse(&ix, idx, n, bin_size, "fuzz.idx") == 0) {
    for (int64_t i = 0; i < ix.num_sequences; i++) {
      int64_t end = ptdp_mmidx_pointer(&ix, i) + (int64_t)ptdp_mmidx_length(&ix, i) * (int64_t)ix.elem_size;
      if (end > (int64_t)bin_size) abort(); /* accepted an index that points outside the .bin */
    }
    for (int64_t k = 1; k < ix.num_doc_indices; k++)
      if (ptdp_mmidx_doc_index(&ix, k) < ptdp_mmidx_doc_index(&ix, k - 1)) abort();
  }
  free(idx);
  return 0;
}
