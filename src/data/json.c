/* A scanning JSON reader (see json.h).  Recursion depth is bounded so hostile input cannot
 * exhaust the stack. */
#include "json.h"

#include "unicode.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define JSON_MAX_DEPTH 256

typedef struct {
  const char *s;
  size_t n, i;
  ptdp_json_error *err;
  ptdp_json_buf *out; /* where strings are unescaped, or NULL to only validate */
} scanner;

void ptdp_json_buf_free(ptdp_json_buf *b)
{
  free(b->data);
  b->data = NULL;
  b->len = b->cap = 0;
}

static int fail(scanner *sc, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(sc->err->msg, sizeof sc->err->msg, fmt, ap);
  va_end(ap);
  sc->err->at = sc->i;
  return -1;
}

static int buf_put(ptdp_json_buf *b, const char *p, size_t k)
{
  if (b->len + k + 1 > b->cap) {
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + k + 1) cap *= 2;
    char *d = realloc(b->data, cap);
    if (!d) return -1;
    b->data = d;
    b->cap = cap;
  }
  memcpy(b->data + b->len, p, k);
  b->len += k;
  b->data[b->len] = '\0';
  return 0;
}

static void skip_ws(scanner *sc)
{
  while (sc->i < sc->n) {
    char c = sc->s[sc->i];
    if (c != ' ' && c != '\t' && c != '\n' && c != '\r') break;
    sc->i++;
  }
}

static int hex4(scanner *sc, uint32_t *v)
{
  if (sc->n - sc->i < 4) return fail(sc, "truncated \\u escape");
  *v = 0;
  for (int k = 0; k < 4; k++) {
    char c = sc->s[sc->i++];
    int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
    if (d < 0) return fail(sc, "bad hex digit in \\u escape");
    *v = (*v << 4) | (uint32_t)d;
  }
  return 0;
}

static int put_utf8(scanner *sc, uint32_t cp)
{
  char u[4];
  size_t k;
  if (cp < 0x80) u[0] = (char)cp, k = 1;
  else if (cp < 0x800) u[0] = (char)(0xC0 | cp >> 6), u[1] = (char)(0x80 | (cp & 63)), k = 2;
  else if (cp < 0x10000)
    u[0] = (char)(0xE0 | cp >> 12), u[1] = (char)(0x80 | ((cp >> 6) & 63)), u[2] = (char)(0x80 | (cp & 63)), k = 3;
  else
    u[0] = (char)(0xF0 | cp >> 18), u[1] = (char)(0x80 | ((cp >> 12) & 63)),
    u[2] = (char)(0x80 | ((cp >> 6) & 63)), u[3] = (char)(0x80 | (cp & 63)), k = 4;
  if (sc->out && buf_put(sc->out, u, k)) return fail(sc, "out of memory");
  return 0;
}

/* At an opening quote: scan (and unescape into sc->out) one string. */
static int scan_string(scanner *sc)
{
  sc->i++; /* opening quote */
  while (1) {
    size_t start = sc->i;
    while (sc->i < sc->n) { /* a run of plain bytes */
      unsigned char c = (unsigned char)sc->s[sc->i];
      if (c == '"' || c == '\\' || c < 0x20 || c >= 0x80) break;
      sc->i++;
    }
    if (sc->out && sc->i > start && buf_put(sc->out, sc->s + start, sc->i - start))
      return fail(sc, "out of memory");
    if (sc->i >= sc->n) return fail(sc, "unterminated string");
    unsigned char c = (unsigned char)sc->s[sc->i];
    if (c == '"') {
      sc->i++;
      return 0;
    }
    if (c < 0x20) return fail(sc, "control character 0x%02x inside a string", c);
    if (c >= 0x80) {
      uint32_t cp;
      int k = ptdp_utf8_decode((const unsigned char *)sc->s + sc->i, sc->n - sc->i, &cp);
      if (cp == PTDP_UC_INVALID) return fail(sc, "invalid UTF-8 byte 0x%02x inside a string", c);
      if (sc->out && buf_put(sc->out, sc->s + sc->i, (size_t)k)) return fail(sc, "out of memory");
      sc->i += (size_t)k;
      continue;
    }
    /* escape */
    if (++sc->i >= sc->n) return fail(sc, "unterminated escape");
    char e = sc->s[sc->i++];
    const char *lit = NULL;
    switch (e) {
    case '"': lit = "\""; break;
    case '\\': lit = "\\"; break;
    case '/': lit = "/"; break;
    case 'b': lit = "\b"; break;
    case 'f': lit = "\f"; break;
    case 'n': lit = "\n"; break;
    case 'r': lit = "\r"; break;
    case 't': lit = "\t"; break;
    case 'u': {
      uint32_t v, w;
      if (hex4(sc, &v)) return -1;
      if (v >= 0xDC00 && v <= 0xDFFF) return fail(sc, "unpaired low surrogate \\u%04X", v);
      if (v >= 0xD800 && v <= 0xDBFF) {
        if (sc->n - sc->i < 2 || sc->s[sc->i] != '\\' || sc->s[sc->i + 1] != 'u')
          return fail(sc, "unpaired high surrogate \\u%04X", v);
        sc->i += 2;
        if (hex4(sc, &w)) return -1;
        if (w < 0xDC00 || w > 0xDFFF) return fail(sc, "unpaired high surrogate \\u%04X", v);
        v = 0x10000 + ((v - 0xD800) << 10) + (w - 0xDC00);
      }
      if (put_utf8(sc, v)) return -1;
      continue;
    }
    default: return fail(sc, "bad escape \\%c", e);
    }
    if (sc->out && buf_put(sc->out, lit, 1)) return fail(sc, "out of memory");
  }
}

static int scan_value(scanner *sc, int depth);

static int scan_number(scanner *sc)
{
  size_t st = sc->i;
  if (sc->i < sc->n && sc->s[sc->i] == '-') sc->i++;
  size_t d0 = sc->i;
  while (sc->i < sc->n && sc->s[sc->i] >= '0' && sc->s[sc->i] <= '9') sc->i++;
  if (sc->i == d0) return fail(sc, "bad number");
  if (sc->s[d0] == '0' && sc->i - d0 > 1) return fail(sc, "number with a leading zero");
  if (sc->i < sc->n && sc->s[sc->i] == '.') {
    size_t f0 = ++sc->i;
    while (sc->i < sc->n && sc->s[sc->i] >= '0' && sc->s[sc->i] <= '9') sc->i++;
    if (sc->i == f0) return fail(sc, "bad fraction");
  }
  if (sc->i < sc->n && (sc->s[sc->i] == 'e' || sc->s[sc->i] == 'E')) {
    sc->i++;
    if (sc->i < sc->n && (sc->s[sc->i] == '+' || sc->s[sc->i] == '-')) sc->i++;
    size_t e0 = sc->i;
    while (sc->i < sc->n && sc->s[sc->i] >= '0' && sc->s[sc->i] <= '9') sc->i++;
    if (sc->i == e0) return fail(sc, "bad exponent");
  }
  (void)st;
  return 0;
}

static int scan_literal(scanner *sc, const char *w)
{
  size_t k = strlen(w);
  if (sc->n - sc->i < k || memcmp(sc->s + sc->i, w, k) != 0) return fail(sc, "unexpected character '%c'", sc->s[sc->i]);
  sc->i += k;
  return 0;
}

/* Scan an array or object body after its opening bracket. */
static int scan_container(scanner *sc, int depth, char close)
{
  sc->i++;
  skip_ws(sc);
  if (sc->i < sc->n && sc->s[sc->i] == close) {
    sc->i++;
    return 0;
  }
  while (1) {
    skip_ws(sc);
    if (close == '}') {
      if (sc->i >= sc->n || sc->s[sc->i] != '"') return fail(sc, "expected a string key");
      if (scan_string(sc)) return -1;
      skip_ws(sc);
      if (sc->i >= sc->n || sc->s[sc->i] != ':') return fail(sc, "expected ':'");
      sc->i++;
    }
    if (scan_value(sc, depth + 1)) return -1;
    skip_ws(sc);
    if (sc->i >= sc->n) return fail(sc, "unterminated %s", close == '}' ? "object" : "array");
    if (sc->s[sc->i] == ',') {
      sc->i++;
      continue;
    }
    if (sc->s[sc->i] == close) {
      sc->i++;
      return 0;
    }
    return fail(sc, "expected ',' or '%c'", close);
  }
}

static int scan_value(scanner *sc, int depth)
{
  if (depth > JSON_MAX_DEPTH) return fail(sc, "nesting deeper than %d", JSON_MAX_DEPTH);
  skip_ws(sc);
  if (sc->i >= sc->n) return fail(sc, "unexpected end of input");
  switch (sc->s[sc->i]) {
  case '"': return scan_string(sc);
  case '{': return scan_container(sc, depth, '}');
  case '[': return scan_container(sc, depth, ']');
  case 't': return scan_literal(sc, "true");
  case 'f': return scan_literal(sc, "false");
  case 'n': return scan_literal(sc, "null");
  default:
    if (sc->s[sc->i] == '-' || (sc->s[sc->i] >= '0' && sc->s[sc->i] <= '9')) return scan_number(sc);
    return fail(sc, "unexpected character '%c'", sc->s[sc->i]);
  }
}

int ptdp_json_object_each(const char *s, size_t n, ptdp_json_member_fn fn, void *ctx, ptdp_json_error *err)
{
  ptdp_json_buf key = {0};
  scanner sc = {.s = s, .n = n, .i = 0, .err = err, .out = NULL};
  int rc = 0;
  err->msg[0] = '\0';
  skip_ws(&sc);
  if (sc.i >= n || s[sc.i] != '{') {
    rc = fail(&sc, sc.i >= n ? "empty input, expected a JSON object" : "expected '{'");
    goto done;
  }
  sc.i++;
  skip_ws(&sc);
  if (sc.i < n && s[sc.i] == '}') {
    sc.i++;
  } else {
    while (1) {
      skip_ws(&sc);
      if (sc.i >= n || s[sc.i] != '"') { rc = fail(&sc, "expected a string key"); goto done; }
      key.len = 0;
      if (buf_put(&key, "", 0)) { rc = fail(&sc, "out of memory"); goto done; }
      sc.out = &key;
      rc = scan_string(&sc);
      sc.out = NULL;
      if (rc) goto done;
      skip_ws(&sc);
      if (sc.i >= n || s[sc.i] != ':') { rc = fail(&sc, "expected ':' after a key"); goto done; }
      sc.i++;
      skip_ws(&sc);
      size_t v0 = sc.i;
      if ((rc = scan_value(&sc, 1))) goto done;
      if ((rc = fn(ctx, key.data, key.len, s + v0, sc.i - v0))) goto done;
      skip_ws(&sc);
      if (sc.i >= n) { rc = fail(&sc, "unterminated object"); goto done; }
      if (s[sc.i] == ',') { sc.i++; continue; }
      if (s[sc.i] == '}') { sc.i++; break; }
      rc = fail(&sc, "expected ',' or '}'");
      goto done;
    }
  }
  skip_ws(&sc);
  if (sc.i != n) rc = fail(&sc, "trailing characters after the object");
done:
  ptdp_json_buf_free(&key);
  return rc;
}

int ptdp_json_string_value(const char *val, size_t val_len, ptdp_json_buf *out, ptdp_json_error *err)
{
  if (val_len == 0 || val[0] != '"') return 1;
  scanner sc = {.s = val, .n = val_len, .i = 0, .err = err, .out = out};
  out->len = 0;
  if (buf_put(out, "", 0)) return fail(&sc, "out of memory");
  if (scan_string(&sc)) return -1;
  return 0;
}

int ptdp_json_array_each(const char *val, size_t val_len, ptdp_json_item_fn fn, void *ctx, ptdp_json_error *err)
{
  if (val_len == 0 || val[0] != '[') return 1;
  scanner sc = {.s = val, .n = val_len, .i = 1, .err = err, .out = NULL};
  err->msg[0] = '\0';
  skip_ws(&sc);
  if (sc.i < sc.n && val[sc.i] == ']') return 0;
  for (size_t k = 0;; k++) {
    skip_ws(&sc);
    size_t v0 = sc.i;
    if (scan_value(&sc, 1)) return -1;
    int rc = fn(ctx, k, val + v0, sc.i - v0);
    if (rc) return rc;
    skip_ws(&sc);
    if (sc.i >= sc.n) return fail(&sc, "unterminated array");
    if (val[sc.i] == ']') return 0;
    if (val[sc.i] != ',') return fail(&sc, "expected ',' or ']'");
    sc.i++;
  }
}
