/* Private to src/convert: a strict JSON reader that builds a small tree, for the files Hugging
 * Face writes (the safetensors header, config.json, model.safetensors.index.json), and a writer
 * of JSON strings.
 *
 * Strict means RFC 8259: one value and white space around it, no comments, no trailing commas,
 * strings of valid UTF-8 with no control characters, \u escapes paired into code points
 * (\u0000 refused: names are C strings here).  A file
 * can be hostile, so the reader also bounds the nesting (64 levels) and the number of values
 * (JD_MAX_VALUES, 1 Mi: at most 64 MiB of tree; a model of 1,000 tensors makes 10,000), and
 * keeps every integer literal exactly (the safetensors offsets are 64-bit): a number is
 * "integral" when it has no fraction or exponent, and then u is its magnitude (up to 2^64 - 1,
 * else it is refused) and neg its sign.
 *
 * src/data/json.c scans JSON for the tokenizer's files with callbacks over the raw text; it is
 * private to its folder, below this one, and gives no tree: hence this one. */
#ifndef PTDP_CONVERT_JSON_DOC_H
#define PTDP_CONVERT_JSON_DOC_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define JD_MAX_DEPTH 64
#define JD_MAX_VALUES (1 << 20)

typedef enum { JD_NULL = 0, JD_FALSE, JD_TRUE, JD_NUMBER, JD_STRING, JD_ARRAY, JD_OBJECT } jd_kind;

typedef struct jd_value jd_value;
struct jd_value {
  jd_kind kind;
  int integral, neg;  /* JD_NUMBER: an integer literal, its sign */
  uint64_t u;         /* its magnitude when integral */
  double num;         /* JD_NUMBER: the value (strtod) */
  char *str;          /* JD_STRING: decoded, NUL-terminated (len bytes; \u0000 is refused) */
  size_t len;
  int n;              /* JD_ARRAY, JD_OBJECT: number of items */
  jd_value *items;    /* [n] */
  char **keys;        /* JD_OBJECT: [n] decoded keys, NUL-terminated */
};

/* Parse s[0 .. n) into *out (freed with jd_free also after a failure).  Returns 0, or an input
 * error naming `what` and the byte offset of the problem. */
int jd_parse(const char *s, size_t n, const char *what, jd_value *out);
void jd_free(jd_value *v);
/* The member key of an object (the first if repeated; NULL if none or v is not an object). */
const jd_value *jd_get(const jd_value *v, const char *key);
/* Whether key occurs more than once in object v. */
int jd_has_duplicate_keys(const jd_value *v);

/* Write s as a JSON string literal (quotes, escapes) to f. */
void jd_write_string(FILE *f, const char *s);

#endif
