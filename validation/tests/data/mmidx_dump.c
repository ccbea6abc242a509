/* mmidx_dump PREFIX: open PREFIX.idx/.bin with ptdp's validating reader and print
 *   dtype=<name> sequences=<S> documents=<D-1>
 *   doc_idx: <D entries>
 *   <tokens of sequence 0>
 *   ...
 * (the same text read_mmidx.py prints); exit 1 with ptdp's message on a bad file. */
#include "ptdp/error.h"
#include "ptdp/indexed_dataset.h"

#include <stdio.h>
#include <stdlib.h>

static int run(const char *prefix)
{
  ptdp_indexed_dataset *ds;
  PTDP_CALL(ptdp_indexed_dataset_open(&ds, prefix));
  const ptdp_mmidx *ix = ptdp_indexed_dataset_index(ds);
  printf("dtype=%s sequences=%lld documents=%lld\ndoc_idx:", ptdp_mmidx_dtype_name(ix->dtype),
         (long long)ix->num_sequences, (long long)ix->num_doc_indices - 1);
  for (int64_t k = 0; k < ix->num_doc_indices; k++) printf(" %lld", (long long)ptdp_mmidx_doc_index(ix, k));
  printf("\n");
  for (int64_t i = 0; i < ix->num_sequences; i++) {
    int32_t len = ptdp_mmidx_length(ix, i);
    int32_t *t;
    PTDP_ALLOC(t, (size_t)len * 4 + 4);
    PTDP_CALL(ptdp_indexed_dataset_get(ds, i, 0, len, t));
    for (int32_t j = 0; j < len; j++) printf(j ? " %d" : "%d", (int)t[j]);
    printf("\n");
    free(t);
  }
  ptdp_indexed_dataset_close(&ds);
  return 0;
}

int main(int argc, char **argv)
{
  if (argc != 2) {
    fprintf(stderr, "usage: mmidx_dump PREFIX\n");
    return 2;
  }
  return run(argv[1]) ? 1 : 0;
}
