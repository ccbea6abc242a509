/* The one JSON reader (src/text), RFC 8259, for every JSON file ptdp reads: the GPT-2
 * vocabulary, Hugging Face's tokenizer.json and tokenizer_config.json, JSON lines for
 * ptdp-preprocess, and for ptdp-convert config.json, the safetensors header and the sharded
 * model.safetensors.index.json.  One grammar, read two ways:
 *
 *   scanned   callbacks over the raw text of an object's members or an array's items, and
 *             strings unescaped into a caller's growable buffer: no tree, for files of a
 *             million tokens and for JSON lines read at the speed of the tokenizer;
 *   a tree    ptdp_json_parse, values with their kind, strings decoded, integer literals kept
 *             exactly (the safetensors offsets are 64-bit).
 *
 * Strict either way: one value with white space around it, no comments, no trailing commas,
 * strings of valid UTF-8 with no control characters, \u escapes paired into code points,
 * nesting bounded (PTDP_JSON_MAX_DEPTH) so hostile input cannot exhaust the stack.  An object
 * that names a key twice is refused, naming the key and both places: Python's json, and so
 * transformers, takes the last value of a repeated key where a lookup would take the first, so
 * the two would build different models from one file.  JSON lines of a dataset are the one
 * exception (PTDP_JSON_KEYS_REPEAT): Megatron reads them with json.loads, and ptdp-preprocess
 * keeps the last value as it does. */
#ifndef PTDP_JSON_H
#define PTDP_JSON_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define PTDP_JSON_MAX_DEPTH 256
#define PTDP_JSON_MAX_VALUES (1 << 20) /* in one tree: at most 64 MiB of it (a model of 1,000 tensors makes 10,000) */

typedef struct {
  char *data;
  size_t len, cap;
} ptdp_json_buf;

void ptdp_json_buf_free(ptdp_json_buf *b);

typedef enum {
  PTDP_JSON_SYNTAX = 1,    /* not JSON (or, in a tree, a value it cannot hold) */
  PTDP_JSON_DUPLICATE_KEY, /* an object names a key twice: first and at are both places */
  PTDP_JSON_NO_MEMORY
} ptdp_json_fault;

/* Why a read failed: msg (for a repeated key it names the key and both places, as line and
 * column when the text has several lines, and as byte offsets), at the byte offset of the
 * problem in the text read (of the key's second occurrence), first the offset of its first. */
typedef struct {
  char msg[256];
  size_t at, first;
  ptdp_json_fault fault;
} ptdp_json_error;

/* ---------------------------------------------------------------- scanned */

/* A key repeated in an object (at any depth): refused, or handed to the callback again (the
 * caller keeps the last value, as Python does: JSON lines only). */
typedef enum { PTDP_JSON_KEYS_UNIQUE = 0, PTDP_JSON_KEYS_REPEAT } ptdp_json_keys;

/* Called for each member of a top-level object: key (unescaped, key_len bytes) and the raw
 * value text val[0..val_len).  Return non-zero to stop (propagated as the result). */
typedef int (*ptdp_json_member_fn)(void *ctx, const char *key, size_t key_len, const char *val,
                                   size_t val_len);

/* Parse s[0..n) as one JSON object (surrounding whitespace allowed) and call fn per member, each
 * value checked (to any depth) before fn sees it.  Returns 0, -1 on bad input (err filled), or
 * fn's non-zero result. */
int ptdp_json_object_each(const char *s, size_t n, ptdp_json_keys keys, ptdp_json_member_fn fn, void *ctx,
                          ptdp_json_error *err);

/* Unescape the JSON string literal val[0..val_len) (quotes included) into out (replacing its
 * contents, NUL-terminated; \u0000 is kept: use out->len).  Returns 0, 1 if val is not a
 * string, -1 on malformed input or memory failure (err filled). */
int ptdp_json_string_value(const char *val, size_t val_len, ptdp_json_buf *out, ptdp_json_error *err);

/* Called for each item of an array: its 0-based index and raw text item[0..item_len).
 * Return non-zero to stop (propagated as the result). */
typedef int (*ptdp_json_item_fn)(void *ctx, size_t index, const char *item, size_t item_len);

/* Walk the JSON array literal val[0..val_len) (brackets included), calling fn per item in
 * order.  Returns 0, 1 if val is not an array, -1 on bad input (err filled), or fn's non-zero
 * result. */
int ptdp_json_array_each(const char *val, size_t val_len, ptdp_json_keys keys, ptdp_json_item_fn fn, void *ctx,
                         ptdp_json_error *err);

/* ---------------------------------------------------------------- a tree */

typedef enum {
  PTDP_JSON_NULL = 0,
  PTDP_JSON_FALSE,
  PTDP_JSON_TRUE,
  PTDP_JSON_NUMBER,
  PTDP_JSON_STRING,
  PTDP_JSON_ARRAY,
  PTDP_JSON_OBJECT
} ptdp_json_kind;

/* A number is "integral" when its literal has no fraction or exponent, and then u is its
 * magnitude (up to 2^64 - 1, else it is refused) and neg its sign; num is strtod's value (a
 * literal that is not integral is refused past 63 characters).  Strings and keys are C
 * strings here, so \u0000 is refused in a tree. */
typedef struct ptdp_json_value ptdp_json_value;
struct ptdp_json_value {
  ptdp_json_kind kind;
  int integral, neg; /* PTDP_JSON_NUMBER: an integer literal, its sign */
  uint64_t u;        /* its magnitude when integral */
  double num;        /* PTDP_JSON_NUMBER: the value (strtod) */
  char *str;         /* PTDP_JSON_STRING: decoded, NUL-terminated (len bytes) */
  size_t len;
  int n;                  /* PTDP_JSON_ARRAY, PTDP_JSON_OBJECT: number of items */
  ptdp_json_value *items; /* [n] */
  char **keys;            /* PTDP_JSON_OBJECT: [n] decoded keys, NUL-terminated, no two equal */
};

/* Parse s[0 .. n) into *out (freed with ptdp_json_free also after a failure), at most
 * PTDP_JSON_MAX_VALUES values.  Returns 0, or an input error naming `what` (the file) and the
 * problem's place. */
int ptdp_json_parse(const char *s, size_t n, const char *what, ptdp_json_value *out);
void ptdp_json_free(ptdp_json_value *v);
/* The member key of object v (NULL if none or v is not an object). */
const ptdp_json_value *ptdp_json_get(const ptdp_json_value *v, const char *key);

/* Write s as a JSON string literal (quotes, escapes) to f. */
void ptdp_json_write_string(FILE *f, const char *s);

#endif
