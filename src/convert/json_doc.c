/* A strict JSON reader that builds a tree, and a string writer: see json_doc.h. */
#include "json_doc.h"

#include "ptdp/error.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
  const char *s;
  size_t n, at;
  const char *what;
  long long values; /* values made so far: bounded by JD_MAX_VALUES */
} cursor;

static int fail(const cursor *c, const char *why)
{
  return PTDP_FAIL(PTDP_ERR_INPUT, "%s: not valid JSON at byte %zu: %s", c->what, c->at, why);
}

static void skip_space(cursor *c)
{
  while (c->at < c->n && (c->s[c->at] == ' ' || c->s[c->at] == '\t' || c->s[c->at] == '\n' || c->s[c->at] == '\r'))
    c->at++;
}

static int literal(cursor *c, const char *word, jd_kind kind, jd_value *v)
{
  const size_t k = strlen(word);
  if (c->n - c->at < k || memcmp(c->s + c->at, word, k)) return fail(c, "an unknown word");
  c->at += k;
  v->kind = kind;
  return 0;
}

/* Append code point cp as UTF-8 to out (room for 4 bytes checked by the caller). */
static size_t put_utf8(char *out, uint32_t cp)
{
  if (cp < 0x80) return out[0] = (char)cp, 1;
  if (cp < 0x800) return out[0] = (char)(0xC0 | cp >> 6), out[1] = (char)(0x80 | (cp & 0x3F)), 2;
  if (cp < 0x10000) {
    out[0] = (char)(0xE0 | cp >> 12), out[1] = (char)(0x80 | (cp >> 6 & 0x3F)), out[2] = (char)(0x80 | (cp & 0x3F));
    return 3;
  }
  out[0] = (char)(0xF0 | cp >> 18), out[1] = (char)(0x80 | (cp >> 12 & 0x3F));
  out[2] = (char)(0x80 | (cp >> 6 & 0x3F)), out[3] = (char)(0x80 | (cp & 0x3F));
  return 4;
}

/* Length of the valid UTF-8 sequence at s[0 .. n), or 0 (overlong forms, surrogates and code
 * points past U+10FFFF are invalid). */
static size_t utf8_len(const unsigned char *s, size_t n)
{
  if (s[0] < 0x80) return 1;
  size_t k = s[0] >= 0xF0 ? 4 : s[0] >= 0xE0 ? 3 : s[0] >= 0xC2 ? 2 : 0;
  if (!k || k > n || s[0] > 0xF4) return 0;
  uint32_t cp = s[0] & (0x7F >> k);
  for (size_t i = 1; i < k; i++) {
    if ((s[i] & 0xC0) != 0x80) return 0;
    cp = cp << 6 | (s[i] & 0x3F);
  }
  const uint32_t least[5] = {0, 0, 0x80, 0x800, 0x10000};
  if (cp < least[k] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
  return k;
}

static int hex4(cursor *c, uint32_t *out)
{
  if (c->n - c->at < 4) return fail(c, "a short \\u escape");
  uint32_t v = 0;
  for (int i = 0; i < 4; i++) {
    const char h = c->s[c->at++];
    const int d = h >= '0' && h <= '9'   ? h - '0'
                  : h >= 'a' && h <= 'f' ? h - 'a' + 10
                  : h >= 'A' && h <= 'F' ? h - 'A' + 10
                                         : -1;
    if (d < 0) return fail(c, "a \\u escape with a character that is not hexadecimal");
    v = v << 4 | (uint32_t)d;
  }
  *out = v;
  return 0;
}

/* A \u escape (after the backslash and 'u'): one code point, a surrogate pair joined. */
static int unicode_escape(cursor *c, uint32_t *cp)
{
  PTDP_CALL(hex4(c, cp));
  if (*cp >= 0xDC00 && *cp <= 0xDFFF) return fail(c, "a lone low surrogate");
  if (*cp >= 0xD800 && *cp <= 0xDBFF) {
    uint32_t lo;
    if (c->n - c->at < 2 || c->s[c->at] != '\\' || c->s[c->at + 1] != 'u') return fail(c, "a lone high surrogate");
    c->at += 2;
    PTDP_CALL(hex4(c, &lo));
    if (lo < 0xDC00 || lo > 0xDFFF) return fail(c, "a high surrogate not followed by a low one");
    *cp = 0x10000 + ((*cp - 0xD800) << 10) + (lo - 0xDC00);
  }
  if (*cp == 0) return fail(c, "\\u0000 (a NUL character) in a string");
  return 0;
}

/* One escape (after the backslash) into out; *k bytes written. */
static int escape(cursor *c, char *out, size_t *k)
{
  if (c->at >= c->n) return fail(c, "an unterminated string");
  const char e = c->s[c->at++];
  static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
  const char *p = e ? strchr(from, e) : NULL;
  if (p) return out[0] = to[p - from], *k = 1, 0;
  if (e != 'u') return fail(c, "an unknown escape");
  uint32_t cp;
  PTDP_CALL(unicode_escape(c, &cp));
  *k = put_utf8(out, cp);
  return 0;
}

/* A string (at its opening quote): decoded into *str (the decoded text is never longer than the
 * literal: an escape of 6 or 12 characters gives at most 4 bytes). */
static int string(cursor *c, char **str, size_t *len)
{
  c->at++; /* the quote */
  size_t end = c->at;
  while (end < c->n && c->s[end] != '"') end += c->s[end] == '\\' ? 2 : 1;
  if (end >= c->n) return fail(c, "an unterminated string");
  char *out = malloc(end - c->at + 1);
  if (!out) return PTDP_FAIL(PTDP_ERR_MEM, "%s: out of memory for a string of %zu bytes", c->what, end - c->at);
  size_t k = 0;
  int rc = 0;
  while (!rc && c->at < end) {
    const unsigned char ch = (unsigned char)c->s[c->at];
    size_t w = 0;
    if (ch == '\\') {
      c->at++;
      rc = escape(c, out + k, &w);
    } else if (ch < 0x20) {
      rc = fail(c, "a control character in a string");
    } else if (!(w = utf8_len((const unsigned char *)c->s + c->at, end - c->at))) {
      rc = fail(c, "a string that is not valid UTF-8");
    } else {
      memcpy(out + k, c->s + c->at, w);
      c->at += w;
    }
    k += w;
  }
  if (rc) {
    free(out);
    return rc;
  }
  c->at = end + 1;
  out[k] = '\0';
  *str = out;
  *len = k;
  return 0;
}

/* A number: the grammar of RFC 8259 checked, the value by strtod, an integer literal exactly. */
static int number(cursor *c, jd_value *v)
{
  const size_t start = c->at;
  int integral = 1;
  uint64_t u = 0;
  v->neg = c->at < c->n && c->s[c->at] == '-';
  if (v->neg) c->at++;
  if (c->at >= c->n || c->s[c->at] < '0' || c->s[c->at] > '9') return fail(c, "a number without digits");
  if (c->s[c->at] == '0' && c->at + 1 < c->n && c->s[c->at + 1] >= '0' && c->s[c->at + 1] <= '9')
    return fail(c, "a number with a leading zero");
  int overflow = 0;
  for (; c->at < c->n && c->s[c->at] >= '0' && c->s[c->at] <= '9'; c->at++) {
    const uint64_t d = (uint64_t)(c->s[c->at] - '0');
    if (u > (UINT64_MAX - d) / 10) overflow = 1;
    u = u * 10 + d;
  }
  if (c->at < c->n && c->s[c->at] == '.') {
    integral = 0;
    if (++c->at >= c->n || c->s[c->at] < '0' || c->s[c->at] > '9') return fail(c, "a fraction without digits");
    while (c->at < c->n && c->s[c->at] >= '0' && c->s[c->at] <= '9') c->at++;
  }
  if (c->at < c->n && (c->s[c->at] == 'e' || c->s[c->at] == 'E')) {
    integral = 0;
    c->at++;
    if (c->at < c->n && (c->s[c->at] == '+' || c->s[c->at] == '-')) c->at++;
    if (c->at >= c->n || c->s[c->at] < '0' || c->s[c->at] > '9') return fail(c, "an exponent without digits");
    while (c->at < c->n && c->s[c->at] >= '0' && c->s[c->at] <= '9') c->at++;
  }
  if (integral && overflow) return fail(c, "an integer beyond 2^64 - 1");
  char buf[64];
  const size_t len = c->at - start;
  if (len >= sizeof buf) v->num = integral ? (double)u * (v->neg ? -1 : 1) : 0; /* long literals: digits only */
  else {
    memcpy(buf, c->s + start, len);
    buf[len] = '\0';
    v->num = strtod(buf, NULL);
  }
  if (len >= sizeof buf && !integral) return fail(c, "a number literal of more than 63 characters");
  v->kind = JD_NUMBER;
  v->integral = integral;
  v->u = u;
  return 0;
}

static int value(cursor *c, jd_value *v, int depth);

/* Grow an array or object's items by one (doubling); the new item zeroed. */
static int grow(cursor *c, jd_value *v, int *cap, int object)
{
  if (v->n == *cap) {
    const int nc = *cap ? 2 * *cap : 4;
    jd_value *it = realloc(v->items, sizeof *it * (size_t)nc);
    if (!it) return PTDP_FAIL(PTDP_ERR_MEM, "%s: out of memory for %d values", c->what, nc);
    v->items = it;
    if (object) {
      char **k = realloc(v->keys, sizeof *k * (size_t)nc);
      if (!k) return PTDP_FAIL(PTDP_ERR_MEM, "%s: out of memory for %d keys", c->what, nc);
      v->keys = k;
    }
    *cap = nc;
  }
  memset(&v->items[v->n], 0, sizeof v->items[0]);
  if (object) v->keys[v->n] = NULL;
  v->n++;
  return 0;
}

/* An array or object (at its bracket): items separated by commas, keys before colons. */
static int container(cursor *c, jd_value *v, int depth, int object)
{
  const char close = object ? '}' : ']';
  if (depth >= JD_MAX_DEPTH) return fail(c, "nesting deeper than 64 levels");
  v->kind = object ? JD_OBJECT : JD_ARRAY;
  c->at++;
  skip_space(c);
  if (c->at < c->n && c->s[c->at] == close) return c->at++, 0;
  for (int cap = 0;;) {
    PTDP_CALL(grow(c, v, &cap, object));
    if (object) {
      skip_space(c);
      if (c->at >= c->n || c->s[c->at] != '"') return fail(c, "an object key that is not a string");
      size_t len;
      PTDP_CALL(string(c, &v->keys[v->n - 1], &len));
      skip_space(c);
      if (c->at >= c->n || c->s[c->at] != ':') return fail(c, "a key without a colon");
      c->at++;
    }
    PTDP_CALL(value(c, &v->items[v->n - 1], depth + 1));
    skip_space(c);
    if (c->at < c->n && c->s[c->at] == ',') {
      c->at++;
      continue;
    }
    if (c->at < c->n && c->s[c->at] == close) return c->at++, 0;
    return fail(c, object ? "an object not closed by '}'" : "an array not closed by ']'");
  }
}

static int value(cursor *c, jd_value *v, int depth)
{
  if (++c->values > JD_MAX_VALUES) return fail(c, "more than 1 Mi values");
  skip_space(c);
  if (c->at >= c->n) return fail(c, "the text ends where a value should be");
  switch (c->s[c->at]) {
  case '{': return container(c, v, depth, 1);
  case '[': return container(c, v, depth, 0);
  case '"': v->kind = JD_STRING; return string(c, &v->str, &v->len);
  case 't': return literal(c, "true", JD_TRUE, v);
  case 'f': return literal(c, "false", JD_FALSE, v);
  case 'n': return literal(c, "null", JD_NULL, v);
  default: return number(c, v);
  }
}

int jd_parse(const char *s, size_t n, const char *what, jd_value *out)
{
  cursor c = {.s = s, .n = n, .at = 0, .what = what, .values = 0};
  memset(out, 0, sizeof *out);
  PTDP_CALL(value(&c, out, 0));
  skip_space(&c);
  if (c.at != n) return fail(&c, "text after the value");
  return 0;
}

void jd_free(jd_value *v)
{
  if (!v) return;
  for (int i = 0; i < v->n; i++) {
    jd_free(&v->items[i]);
    if (v->keys) free(v->keys[i]);
  }
  free(v->items);
  free(v->keys);
  free(v->str);
  memset(v, 0, sizeof *v);
}

const jd_value *jd_get(const jd_value *v, const char *key)
{
  if (!v || v->kind != JD_OBJECT) return NULL;
  for (int i = 0; i < v->n; i++)
    if (v->keys[i] && !strcmp(v->keys[i], key)) return &v->items[i];
  return NULL;
}

static int cmp_key(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

int jd_has_duplicate_keys(const jd_value *v)
{
  if (!v || v->kind != JD_OBJECT || v->n < 2) return 0;
  char **k = malloc(sizeof *k * (size_t)v->n);
  if (!k) return 1; /* cannot tell: the caller refuses, which is safe */
  memcpy(k, v->keys, sizeof *k * (size_t)v->n);
  qsort(k, (size_t)v->n, sizeof *k, cmp_key);
  int dup = 0;
  for (int i = 1; i < v->n && !dup; i++) dup = !strcmp(k[i - 1], k[i]);
  free(k);
  return dup;
}

void jd_write_string(FILE *f, const char *s)
{
  fputc('"', f);
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    if (*p == '"' || *p == '\\') fprintf(f, "\\%c", *p);
    else if (*p < 0x20) fprintf(f, "\\u%04x", *p);
    else fputc(*p, f);
  }
  fputc('"', f);
}
