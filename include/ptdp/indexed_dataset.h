/* Megatron-LM's indexed dataset (MMIDIDX): PREFIX.bin holds the tokens of every sequence back
 * to back; PREFIX.idx describes them.  Layout of the .idx (little-endian, no padding):
 *
 *   offset            size    field
 *   0                 9       magic "MMIDIDX\0\0"
 *   9                 8       u64 version = 1
 *   17                1       u8 dtype code of the .bin (see ptdp_mmidx_dtype)
 *   18                8       u64 S, the number of sequences
 *   26                8       u64 D, the number of document indices (= documents + 1)
 *   34                4*S     int32 sequence lengths, in tokens
 *   34+4S             8*S     int64 sequence pointers: byte offset of each sequence in the .bin
 *   34+12S            8*D     int64 document indices: doc k is sequences [idx[k], idx[k+1]);
 *                             idx[0] = 0, non-decreasing, idx[D-1] = S
 *
 * This is what Megatron's IndexedDatasetBuilder writes (document count = len(document_indices),
 * so D counts the leading 0).  ptdp_preprocess writes one sequence per document, as Megatron's
 * tools/preprocess_data.py does without --split-sentences.  The arrays start at offset 34, so
 * they are not aligned: read them through the accessors below. */
#ifndef PTDP_INDEXED_DATASET_H
#define PTDP_INDEXED_DATASET_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* Megatron's DType codes. */
typedef enum {
  PTDP_DTYPE_UINT8 = 1,
  PTDP_DTYPE_INT8 = 2,
  PTDP_DTYPE_INT16 = 3,
  PTDP_DTYPE_INT32 = 4,
  PTDP_DTYPE_INT64 = 5,
  PTDP_DTYPE_FLOAT64 = 6,
  PTDP_DTYPE_FLOAT32 = 7,
  PTDP_DTYPE_UINT16 = 8
} ptdp_mmidx_dtype;

#define PTDP_MMIDX_HEADER_BYTES 34

/* Bytes per element of a dtype code, 0 if the code is unknown. */
size_t ptdp_mmidx_dtype_size(int code);
const char *ptdp_mmidx_dtype_name(int code);
/* Megatron's choice: uint16 for a vocabulary under 65500 tokens, else int32. */
int ptdp_mmidx_dtype_for_vocab(int vocab_size);

/* A validated index: views into the .idx bytes. */
typedef struct {
  int dtype;
  size_t elem_size;
  int64_t num_sequences;     /* S */
  int64_t num_doc_indices;   /* D = documents + 1 */
  const unsigned char *lengths, *pointers, *doc_idx;
} ptdp_mmidx;

/* Validate idx[0..idx_size) as an index for a .bin of bin_size bytes: magic, version, dtype,
 * counts against the file size, lengths >= 0, pointers contiguous (pointer[i+1] = pointer[i]
 * + length[i]*elem_size, pointer[0] = 0) and covering the .bin exactly, document indices
 * starting at 0, non-decreasing, ending at S.  name is used in error messages. */
int ptdp_mmidx_parse(ptdp_mmidx *ix, const void *idx, size_t idx_size, uint64_t bin_size, const char *name);

static inline int32_t ptdp_mmidx_length(const ptdp_mmidx *ix, int64_t i)
{
  int32_t v;
  memcpy(&v, ix->lengths + 4 * i, 4);
  return v;
}
static inline int64_t ptdp_mmidx_pointer(const ptdp_mmidx *ix, int64_t i)
{
  int64_t v;
  memcpy(&v, ix->pointers + 8 * i, 8);
  return v;
}
static inline int64_t ptdp_mmidx_doc_index(const ptdp_mmidx *ix, int64_t i)
{
  int64_t v;
  memcpy(&v, ix->doc_idx + 8 * i, 8);
  return v;
}

/* ---- reading: PREFIX.idx validated, PREFIX.bin memory-mapped */
typedef struct ptdp_indexed_dataset ptdp_indexed_dataset;

int ptdp_indexed_dataset_open(ptdp_indexed_dataset **ds, const char *prefix);
/* Same, with the two paths given. */
int ptdp_indexed_dataset_open_files(ptdp_indexed_dataset **ds, const char *idx_path, const char *bin_path);
void ptdp_indexed_dataset_close(ptdp_indexed_dataset **ds);
const ptdp_mmidx *ptdp_indexed_dataset_index(const ptdp_indexed_dataset *ds);
int64_t ptdp_indexed_dataset_num_sequences(const ptdp_indexed_dataset *ds);
int64_t ptdp_indexed_dataset_num_documents(const ptdp_indexed_dataset *ds);
int32_t ptdp_indexed_dataset_length(const ptdp_indexed_dataset *ds, int64_t seq);
/* Tokens [offset, offset+count) of sequence seq, converted to int32 (integer dtypes only). */
int ptdp_indexed_dataset_get(const ptdp_indexed_dataset *ds, int64_t seq, int64_t offset, int64_t count, int32_t *out);

/* ---- writing, as Megatron's IndexedDatasetBuilder: sequences appended, documents closed.
 * Data go to BIN.tmp and IDX.tmp; finish renames both into place (the .bin first), so an
 * interrupted run never leaves an .idx that looks complete.  abort removes the temporaries. */
typedef struct ptdp_mmidx_writer ptdp_mmidx_writer;

int ptdp_mmidx_writer_open(ptdp_mmidx_writer **w, const char *bin_path, const char *idx_path, int dtype);
/* Append one sequence; every id must fit the dtype. */
int ptdp_mmidx_writer_add_sequence(ptdp_mmidx_writer *w, const int32_t *ids, size_t n);
/* Close the current document (it may hold zero sequences, as Megatron allows). */
int ptdp_mmidx_writer_end_document(ptdp_mmidx_writer *w);
int ptdp_mmidx_writer_finish(ptdp_mmidx_writer **w);
void ptdp_mmidx_writer_abort(ptdp_mmidx_writer **w);

#endif
