/* Private to src/data: the small JSON reader the data tools need (RFC 8259).
 *
 * Two uses: the GPT-2 vocabulary (one object of string -> integer, ~1 MB) and JSON lines
 * for ptdp-preprocess (one object per line, from which string fields are taken).  Values are
 * scanned without building a tree; strings are unescaped into a caller's growable buffer. */
#ifndef PTDP_DATA_JSON_H
#define PTDP_DATA_JSON_H

#include <stddef.h>

typedef struct {
  char *data;
  size_t len, cap;
} ptdp_json_buf;

void ptdp_json_buf_free(ptdp_json_buf *b);

/* Outcome of a parse: 0 ok, otherwise a message in err (offset `at` into the input). */
typedef struct {
  char msg[160];
  size_t at;
} ptdp_json_error;

/* Called for each member of a top-level object: key (unescaped, key_len bytes) and the raw
 * value text val[0..val_len).  Return non-zero to stop (propagated as the result). */
typedef int (*ptdp_json_member_fn)(void *ctx, const char *key, size_t key_len, const char *val,
                                   size_t val_len);

/* Parse s[0..n) as one JSON object (surrounding whitespace allowed) and call fn per member.
 * Returns 0, -1 on a syntax error (err filled), or fn's non-zero result.  Strings must be
 * valid UTF-8 and escapes well-formed (\uD800-style surrogates paired). */
int ptdp_json_object_each(const char *s, size_t n, ptdp_json_member_fn fn, void *ctx,
                          ptdp_json_error *err);

/* Unescape the JSON string literal val[0..val_len) (quotes included) into out (replacing its
 * contents, NUL-terminated).  Returns 0, 1 if val is not a string, -1 on malformed input or
 * memory failure (err filled). */
int ptdp_json_string_value(const char *val, size_t val_len, ptdp_json_buf *out, ptdp_json_error *err);

/* Called for each item of an array: its 0-based index and raw text item[0..item_len).
 * Return non-zero to stop (propagated as the result). */
typedef int (*ptdp_json_item_fn)(void *ctx, size_t index, const char *item, size_t item_len);

/* Walk the JSON array literal val[0..val_len) (brackets included), calling fn per item in
 * order.  Returns 0, 1 if val is not an array, -1 on a syntax error (err filled), or fn's
 * non-zero result. */
int ptdp_json_array_each(const char *val, size_t val_len, ptdp_json_item_fn fn, void *ctx, ptdp_json_error *err);

#endif
