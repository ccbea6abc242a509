/* The JSON reader (see ptdp/json.h): one recursive-descent grammar, scan_value, which only checks
 * the text when handed no value to fill and builds a tree when handed one.  Every object keeps
 * the keys it has read in a map (key -> offset of its opening quote) to refuse a repeated one. */
#include "ptdp/json.h"

#include "ptdp/error.h"
#include "ptdp/strmap.h"
#include "ptdp/unicode.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
  const char *s;
  size_t n, i;
  ptdp_json_error *err;
  ptdp_json_buf *out;    /* where a string is unescaped, or NULL to only check it */
  ptdp_json_buf key;     /* an object's key, unescaped to compare it with the others */
  int tree;              /* building a tree: \u0000 refused, numbers converted, values counted */
  int repeats;           /* PTDP_JSON_KEYS_REPEAT: keys not compared */
  long long values;      /* values made so far in a tree */
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
  sc->err->at = sc->err->first = sc->i;
  sc->err->fault = PTDP_JSON_SYNTAX;
  return -1;
}

static int no_memory(scanner *sc)
{
  fail(sc, "out of memory");
  sc->err->fault = PTDP_JSON_NO_MEMORY;
  return -1;
}

/* Line and column (1-based; the column counts bytes) of offset at. */
static void line_col(const scanner *sc, size_t at, size_t *line, size_t *col)
{
  size_t start = 0;
  *line = 1;
  for (size_t i = 0; i < at && i < sc->n; i++)
    if (sc->s[i] == '\n') ++*line, start = i + 1;
  *col = at - start + 1;
}

/* The key in b, first read at offset first, again at offset again (control characters shown
 * as '?', a long key cut). */
static int duplicate(scanner *sc, const ptdp_json_buf *b, size_t first, size_t again)
{
  char name[64];
  size_t k = 0;
  for (size_t i = 0; i < b->len && k + 4 < sizeof name; i++) {
    const unsigned char c = (unsigned char)b->data[i];
    name[k++] = c < 0x20 || c == 0x7f ? '?' : (char)c;
  }
  if (k < b->len) memcpy(name + k, "...", 3), k += 3;
  name[k] = '\0';
  if (memchr(sc->s, '\n', again)) {
    size_t l1, c1, l2, c2;
    line_col(sc, first, &l1, &c1);
    line_col(sc, again, &l2, &c2);
    snprintf(sc->err->msg, sizeof sc->err->msg, "the key \"%s\" appears twice in one object: at line %zu, column %zu "
             "(byte %zu) and at line %zu, column %zu (byte %zu)", name, l1, c1, first, l2, c2, again);
  } else {
    snprintf(sc->err->msg, sizeof sc->err->msg,
             "the key \"%s\" appears twice in one object: at byte %zu and at byte %zu", name, first, again);
  }
  sc->err->first = first;
  sc->err->at = again;
  sc->err->fault = PTDP_JSON_DUPLICATE_KEY;
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
  if (k) memcpy(b->data + b->len, p, k);
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
  if (sc->out && buf_put(sc->out, u, k)) return no_memory(sc);
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
    if (sc->out && sc->i > start && buf_put(sc->out, sc->s + start, sc->i - start)) return no_memory(sc);
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
      if (sc->out && buf_put(sc->out, sc->s + sc->i, (size_t)k)) return no_memory(sc);
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
      if (v == 0 && sc->tree) return fail(sc, "\\u0000 (a NUL character) in a string");
      if (put_utf8(sc, v)) return -1;
      continue;
    }
    default: return fail(sc, "bad escape \\%c", e);
    }
    if (sc->out && buf_put(sc->out, lit, 1)) return no_memory(sc);
  }
}

/* At an opening quote: the string unescaped into b (its contents replaced). */
static int string_into(scanner *sc, ptdp_json_buf *b)
{
  ptdp_json_buf *save = sc->out;
  b->len = 0;
  if (buf_put(b, "", 0)) return no_memory(sc);
  sc->out = b;
  const int rc = scan_string(sc);
  sc->out = save;
  return rc;
}

/* At an object's key: read it into b and refuse it if the object's map of keys (created at the
 * first key) has it already; with repeats allowed, only checked unless the caller wants it in b. */
static int scan_key(scanner *sc, ptdp_strmap *seen, ptdp_json_buf *b)
{
  const size_t at = sc->i;
  if (sc->i >= sc->n || sc->s[sc->i] != '"') return fail(sc, "expected a string key");
  if (sc->repeats && b == &sc->key) return scan_string(sc); /* only checked */
  if (string_into(sc, b)) return -1;
  if (sc->repeats) return 0;
  if (!seen->slots && ptdp_strmap_init(seen, 8)) return no_memory(sc);
  int64_t first;
  if (ptdp_strmap_get(seen, b->data, b->len, &first)) return duplicate(sc, b, (size_t)first, at);
  if (ptdp_strmap_put(seen, b->data, b->len, (int64_t)at)) return no_memory(sc);
  return 0;
}

/* A number: the grammar of RFC 8259; in a tree its value by strtod and an integer literal exactly. */
static int scan_number(scanner *sc, ptdp_json_value *v)
{
  const size_t start = sc->i;
  const int neg = sc->i < sc->n && sc->s[sc->i] == '-';
  if (neg) sc->i++;
  size_t d0 = sc->i;
  int integral = 1, overflow = 0;
  uint64_t u = 0;
  for (; sc->i < sc->n && sc->s[sc->i] >= '0' && sc->s[sc->i] <= '9'; sc->i++) {
    const uint64_t d = (uint64_t)(sc->s[sc->i] - '0');
    if (u > (UINT64_MAX - d) / 10) overflow = 1;
    u = u * 10 + d;
  }
  if (sc->i == d0) return fail(sc, "bad number");
  if (sc->s[d0] == '0' && sc->i - d0 > 1) return fail(sc, "number with a leading zero");
  if (sc->i < sc->n && sc->s[sc->i] == '.') {
    integral = 0;
    size_t f0 = ++sc->i;
    while (sc->i < sc->n && sc->s[sc->i] >= '0' && sc->s[sc->i] <= '9') sc->i++;
    if (sc->i == f0) return fail(sc, "bad fraction");
  }
  if (sc->i < sc->n && (sc->s[sc->i] == 'e' || sc->s[sc->i] == 'E')) {
    integral = 0;
    sc->i++;
    if (sc->i < sc->n && (sc->s[sc->i] == '+' || sc->s[sc->i] == '-')) sc->i++;
    size_t e0 = sc->i;
    while (sc->i < sc->n && sc->s[sc->i] >= '0' && sc->s[sc->i] <= '9') sc->i++;
    if (sc->i == e0) return fail(sc, "bad exponent");
  }
  if (!v) return 0;
  if (integral && overflow) return fail(sc, "an integer beyond 2^64 - 1");
  char buf[64];
  const size_t len = sc->i - start;
  if (len >= sizeof buf && !integral) return fail(sc, "a number literal of more than 63 characters");
  if (len >= sizeof buf) v->num = (double)u * (neg ? -1 : 1); /* long integer literals: digits only */
  else {
    memcpy(buf, sc->s + start, len);
    buf[len] = '\0';
    v->num = strtod(buf, NULL);
  }
  v->kind = PTDP_JSON_NUMBER;
  v->integral = integral;
  v->neg = neg;
  v->u = u;
  return 0;
}

static int scan_literal(scanner *sc, const char *w, ptdp_json_kind kind, ptdp_json_value *v)
{
  size_t k = strlen(w);
  if (sc->n - sc->i < k || memcmp(sc->s + sc->i, w, k) != 0) return fail(sc, "unexpected character '%c'", sc->s[sc->i]);
  sc->i += k;
  if (v) v->kind = kind;
  return 0;
}

static int scan_value(scanner *sc, int depth, ptdp_json_value *v);

/* Grow a tree's array or object by one item (doubling), the new item zeroed. */
static int grow(scanner *sc, ptdp_json_value *v, int *cap, int object)
{
  if (v->n == *cap) {
    const int nc = *cap ? 2 * *cap : 4;
    ptdp_json_value *it = realloc(v->items, sizeof *it * (size_t)nc);
    if (!it) return no_memory(sc);
    v->items = it;
    if (object) {
      char **k = realloc(v->keys, sizeof *k * (size_t)nc);
      if (!k) return no_memory(sc);
      v->keys = k;
    }
    *cap = nc;
  }
  memset(&v->items[v->n], 0, sizeof v->items[0]);
  if (object) v->keys[v->n] = NULL;
  v->n++;
  return 0;
}

/* An array or object after its opening bracket (into v when building a tree). */
static int scan_container(scanner *sc, int depth, char close, ptdp_json_value *v)
{
  const int object = close == '}';
  ptdp_strmap seen = {0};
  int rc = 0, cap = 0;
  if (v) v->kind = object ? PTDP_JSON_OBJECT : PTDP_JSON_ARRAY;
  sc->i++;
  skip_ws(sc);
  if (sc->i < sc->n && sc->s[sc->i] == close) {
    sc->i++;
    return 0;
  }
  while (1) {
    if (v && (rc = grow(sc, v, &cap, object))) break;
    skip_ws(sc);
    if (object) {
      if ((rc = scan_key(sc, &seen, &sc->key))) break;
      if (v && !(v->keys[v->n - 1] = strdup(sc->key.data))) {
        rc = no_memory(sc);
        break;
      }
      skip_ws(sc);
      if (sc->i >= sc->n || sc->s[sc->i] != ':') {
        rc = fail(sc, "expected ':'");
        break;
      }
      sc->i++;
    }
    if ((rc = scan_value(sc, depth + 1, v ? &v->items[v->n - 1] : NULL))) break;
    skip_ws(sc);
    if (sc->i >= sc->n) {
      rc = fail(sc, "unterminated %s", object ? "object" : "array");
      break;
    }
    if (sc->s[sc->i] == ',') {
      sc->i++;
      continue;
    }
    if (sc->s[sc->i] == close) {
      sc->i++;
      break;
    }
    rc = fail(sc, "expected ',' or '%c'", close);
    break;
  }
  ptdp_strmap_free(&seen);
  return rc;
}

/* A string into a tree: decoded into sc->key's buffer, then copied. */
static int tree_string(scanner *sc, ptdp_json_value *v)
{
  v->kind = PTDP_JSON_STRING;
  if (string_into(sc, &sc->key)) return -1;
  if (!(v->str = malloc(sc->key.len + 1))) return no_memory(sc);
  memcpy(v->str, sc->key.data, sc->key.len + 1);
  v->len = sc->key.len;
  return 0;
}

static int scan_value(scanner *sc, int depth, ptdp_json_value *v)
{
  if (depth > PTDP_JSON_MAX_DEPTH) return fail(sc, "nesting deeper than %d", PTDP_JSON_MAX_DEPTH);
  if (v && ++sc->values > PTDP_JSON_MAX_VALUES) return fail(sc, "more than %d values", PTDP_JSON_MAX_VALUES);
  skip_ws(sc);
  if (sc->i >= sc->n) return fail(sc, "unexpected end of input");
  switch (sc->s[sc->i]) {
  case '"': return v ? tree_string(sc, v) : scan_string(sc);
  case '{': return scan_container(sc, depth, '}', v);
  case '[': return scan_container(sc, depth, ']', v);
  case 't': return scan_literal(sc, "true", PTDP_JSON_TRUE, v);
  case 'f': return scan_literal(sc, "false", PTDP_JSON_FALSE, v);
  case 'n': return scan_literal(sc, "null", PTDP_JSON_NULL, v);
  default:
    if (sc->s[sc->i] == '-' || (sc->s[sc->i] >= '0' && sc->s[sc->i] <= '9')) return scan_number(sc, v);
    return fail(sc, "unexpected character '%c'", sc->s[sc->i]);
  }
}

/* ---------------------------------------------------------------- scanned */

int ptdp_json_object_each(const char *s, size_t n, ptdp_json_keys keys, ptdp_json_member_fn fn, void *ctx,
                          ptdp_json_error *err)
{
  ptdp_json_buf key = {0};
  ptdp_strmap seen = {0};
  scanner sc = {.s = s, .n = n, .i = 0, .err = err, .out = NULL, .repeats = keys == PTDP_JSON_KEYS_REPEAT};
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
      if ((rc = scan_key(&sc, &seen, &key))) goto done;
      skip_ws(&sc);
      if (sc.i >= n || s[sc.i] != ':') { rc = fail(&sc, "expected ':' after a key"); goto done; }
      sc.i++;
      skip_ws(&sc);
      size_t v0 = sc.i;
      if ((rc = scan_value(&sc, 2, NULL))) goto done; /* the object is level 1 */
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
  ptdp_json_buf_free(&sc.key);
  ptdp_strmap_free(&seen);
  return rc;
}

int ptdp_json_string_value(const char *val, size_t val_len, ptdp_json_buf *out, ptdp_json_error *err)
{
  if (val_len == 0 || val[0] != '"') return 1;
  scanner sc = {.s = val, .n = val_len, .i = 0, .err = err, .out = NULL};
  return string_into(&sc, out);
}

int ptdp_json_array_each(const char *val, size_t val_len, ptdp_json_keys keys, ptdp_json_item_fn fn, void *ctx,
                         ptdp_json_error *err)
{
  if (val_len == 0 || val[0] != '[') return 1;
  scanner sc = {.s = val, .n = val_len, .i = 1, .err = err, .out = NULL, .repeats = keys == PTDP_JSON_KEYS_REPEAT};
  int rc = 0;
  err->msg[0] = '\0';
  skip_ws(&sc);
  if (sc.i < sc.n && val[sc.i] == ']') return 0;
  for (size_t k = 0;; k++) {
    skip_ws(&sc);
    size_t v0 = sc.i;
    if ((rc = scan_value(&sc, 2, NULL))) break; /* the array is level 1 */
    if ((rc = fn(ctx, k, val + v0, sc.i - v0))) break;
    skip_ws(&sc);
    if (sc.i >= sc.n) {
      rc = fail(&sc, "unterminated array");
      break;
    }
    if (val[sc.i] == ']') break;
    if (val[sc.i] != ',') {
      rc = fail(&sc, "expected ',' or ']'");
      break;
    }
    sc.i++;
  }
  ptdp_json_buf_free(&sc.key);
  return rc;
}

/* ---------------------------------------------------------------- a tree */

int ptdp_json_parse(const char *s, size_t n, const char *what, ptdp_json_value *out)
{
  ptdp_json_error err = {0};
  scanner sc = {.s = s, .n = n, .i = 0, .err = &err, .out = NULL, .tree = 1};
  memset(out, 0, sizeof *out);
  int rc = scan_value(&sc, 1, out);
  if (!rc) {
    skip_ws(&sc);
    if (sc.i != n) rc = fail(&sc, "text after the value");
  }
  ptdp_json_buf_free(&sc.key);
  if (!rc) return 0;
  if (err.fault == PTDP_JSON_NO_MEMORY) return PTDP_FAIL(PTDP_ERR_MEM, "%s: out of memory reading JSON", what);
  if (err.fault == PTDP_JSON_DUPLICATE_KEY) return PTDP_FAIL(PTDP_ERR_INPUT, "%s: %s", what, err.msg);
  return PTDP_FAIL(PTDP_ERR_INPUT, "%s: not valid JSON at byte %zu: %s", what, err.at, err.msg);
}

void ptdp_json_free(ptdp_json_value *v)
{
  if (!v) return;
  for (int i = 0; i < v->n; i++) {
    ptdp_json_free(&v->items[i]);
    if (v->keys) free(v->keys[i]);
  }
  free(v->items);
  free(v->keys);
  free(v->str);
  memset(v, 0, sizeof *v);
}

const ptdp_json_value *ptdp_json_get(const ptdp_json_value *v, const char *key)
{
  if (!v || v->kind != PTDP_JSON_OBJECT) return NULL;
  for (int i = 0; i < v->n; i++)
    if (v->keys[i] && !strcmp(v->keys[i], key)) return &v->items[i];
  return NULL;
}

void ptdp_json_write_string(FILE *f, const char *s)
{
  fputc('"', f);
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    if (*p == '"' || *p == '\\') fprintf(f, "\\%c", *p);
    else if (*p < 0x20) fprintf(f, "\\u%04x", *p);
    else fputc(*p, f);
  }
  fputc('"', f);
}
