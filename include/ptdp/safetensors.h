/* safetensors files (Hugging Face's tensor container), read and written to the format's
 * specification:
 *
 *   bytes [0, 8)        N, the header's length, an unsigned 64-bit little-endian integer
 *   bytes [8, 8 + N)    the header: a JSON object (UTF-8, starting with '{'); for each tensor
 *                       NAME: {"dtype": "F32", "shape": [d0, d1, ...], "data_offsets": [b, e]},
 *                       and optionally "__metadata__": an object of strings
 *   bytes [8 + N, end)  the data: tensor NAME's bytes are [8 + N + b, 8 + N + e), row-major,
 *                       little-endian; the tensors cover the data exactly, without holes
 *
 * The reader takes nothing on trust (a file may be hostile): N within the file and at most
 * 100,000,000 (the reference implementation's limit), the JSON strict, every entry with exactly
 * those three keys, a known dtype, at most PTDP_ST_MAX_DIMS dimensions, e - b equal to the
 * product of the shape times the element size (computed without overflow), the tensors
 * contiguous and non-overlapping and ending at the end of the file, names unique and non-empty.
 * Any violation is an input error naming the file and the tensor; nothing is read outside it.
 *
 * The writer pads the header with spaces to a multiple of 8 bytes (so the data starts 8-byte
 * aligned, as the reference implementation writes it) and lays the tensors out in the order
 * given.  Internal to src/convert (not installed). */
#ifndef PTDP_SAFETENSORS_H
#define PTDP_SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>

#define PTDP_ST_MAX_DIMS 8
#define PTDP_ST_MAX_HEADER 100000000ull

/* The format's element types (their names are the enum's suffixes). */
typedef enum {
  PTDP_ST_BOOL = 0, PTDP_ST_U8, PTDP_ST_I8, PTDP_ST_F8_E5M2, PTDP_ST_F8_E4M3, PTDP_ST_I16, PTDP_ST_U16,
  PTDP_ST_F16, PTDP_ST_BF16, PTDP_ST_I32, PTDP_ST_U32, PTDP_ST_F32, PTDP_ST_I64, PTDP_ST_U64, PTDP_ST_F64,
  PTDP_ST_NDTYPES
} ptdp_st_dtype;

typedef struct {
  char *name;
  ptdp_st_dtype dtype;
  int ndim;
  int64_t shape[PTDP_ST_MAX_DIMS];
  uint64_t begin, end; /* data_offsets: bytes of the data section */
} ptdp_st_tensor;

typedef struct {
  char *key, *value;
} ptdp_st_meta;

typedef struct {
  char *path;          /* for messages */
  int fd;              /* open file (-1: parsed from memory) */
  uint64_t data_start; /* 8 + N */
  uint64_t data_size;
  int ntensors;
  ptdp_st_tensor *tensors; /* in the order of their data */
  int nmeta;
  ptdp_st_meta *meta;
} ptdp_safetensors;

/* "F32" for PTDP_ST_F32; NULL for a value out of range. */
const char *ptdp_st_dtype_name(ptdp_st_dtype t);
/* Bytes per element (1 for BOOL and the F8 types). */
int ptdp_st_dtype_size(ptdp_st_dtype t);
/* The dtype named s, or -1. */
int ptdp_st_dtype_of(const char *s);
/* Elements of a tensor (the product of its shape; 1 for a scalar). */
int64_t ptdp_st_tensor_elems(const ptdp_st_tensor *t);

/* Parse a file's header from its first n bytes (head; n may exceed 8 + N), the file being
 * file_size bytes long; what names it in messages.  *out is freed with ptdp_safetensors_close. */
int ptdp_safetensors_parse(const uint8_t *head, size_t n, uint64_t file_size, const char *what, ptdp_safetensors **out);
/* Open and parse the file at path (the data is read later, by ptdp_safetensors_read_f32). */
int ptdp_safetensors_open(const char *path, ptdp_safetensors **out);
void ptdp_safetensors_close(ptdp_safetensors **st);
/* The tensor named name, or NULL. */
const ptdp_st_tensor *ptdp_safetensors_find(const ptdp_safetensors *st, const char *name);
/* The metadata value of key, or NULL. */
const char *ptdp_safetensors_meta(const ptdp_safetensors *st, const char *key);
/* Tensor t of an opened file into out (ptdp_st_tensor_elems floats): F32 as it is, F16 and BF16
 * widened (exactly); another dtype is an input error naming the tensor. */
int ptdp_safetensors_read_f32(const ptdp_safetensors *st, const ptdp_st_tensor *t, float *out);

/* A tensor to write: its fp32 values, stored as dtype (F32, or BF16 / F16 rounded to nearest
 * even as ptdp/half.h rounds). */
typedef struct {
  const char *name;
  ptdp_st_dtype dtype;
  int ndim;
  int64_t shape[PTDP_ST_MAX_DIMS];
  const float *data;
} ptdp_st_out;

/* Bytes tensor t takes in a file. */
uint64_t ptdp_st_out_bytes(const ptdp_st_out *t);
/* Write n tensors (in this order) and nmeta metadata strings to path (created or replaced). */
int ptdp_safetensors_write(const char *path, const ptdp_st_out *t, int n, const ptdp_st_meta *meta, int nmeta);

#endif
