/* Unit tests of the JSON reader (src/text/json.c): a key repeated in an object is refused at any
 * depth, in both readings (scanned and a tree), naming the key and both places (line and column
 * in a text of several lines, byte offsets always), also when the two spellings differ only in
 * escapes; JSON lines' reading (PTDP_JSON_KEYS_REPEAT) hands every member on so the caller keeps
 * the last; the two readings agree on what they accept; integer literals are exact.  No MPI. */
#include "ptdp/error.h"
#include "ptdp/json.h"

#include <stdint.h>
#include <string.h>

#include "../expect.h"

static int count_member(void *ctx, const char *key, size_t key_len, const char *val, size_t val_len)
{
  (void)key, (void)key_len, (void)val, (void)val_len;
  ++*(int *)ctx;
  return 0;
}

static int count_item(void *ctx, size_t index, const char *item, size_t item_len)
{
  (void)index, (void)item, (void)item_len;
  ++*(int *)ctx;
  return 0;
}

/* The last value of "a" (JSON lines: the caller keeps the last, as Python's json does). */
static int last_a(void *ctx, const char *key, size_t key_len, const char *val, size_t val_len)
{
  if (key_len == 1 && key[0] == 'a') *(char *)ctx = val_len ? val[0] : '?';
  return 0;
}

/* Scanned: s refused for a repeated key, first and again its places, and msg holding want. */
static void scanned_duplicate(const char *s, size_t first, size_t again, const char *want)
{
  ptdp_json_error err = {0};
  int n = 0;
  const int rc = ptdp_json_object_each(s, strlen(s), PTDP_JSON_KEYS_UNIQUE, count_member, &n, &err);
  EXPECT(rc == -1 && err.fault == PTDP_JSON_DUPLICATE_KEY, "%s: refused for its repeated key (rc %d, fault %d: %s)",
         s, rc, (int)err.fault, err.msg);
  EXPECT(err.first == first && err.at == again, "%s: places %zu and %zu, want %zu and %zu", s, err.first, err.at, first,
         again);
  EXPECT(strstr(err.msg, want) != NULL, "%s: message '%s' holds '%s'", s, err.msg, want);
}

/* A tree: s refused, the message (the error stack's) holding want. */
static void tree_refused(const char *s, const char *want)
{
  ptdp_json_value v;
  ptdp_error_clear();
  const int rc = ptdp_json_parse(s, strlen(s), "dir/config.json", &v);
  const char *msg = ptdp_error_message();
  EXPECT(rc == PTDP_ERR_INPUT && msg && strstr(msg, want), "tree of %s: refused (rc %d), saying '%s': %s", s, rc, want,
         msg ? msg : "(none)");
  ptdp_json_free(&v);
  ptdp_error_clear();
}

static void test_duplicates(void)
{
  /* one line: byte offsets of the two opening quotes */
  scanned_duplicate("{\"a\": 1, \"b\": 2, \"a\": 3}", 1, 17, "the key \"a\" appears twice in one object: at byte 1 and at byte 17");
  /* nested, and the same key spelled with an escape */
  scanned_duplicate("{\"m\": {\"vocab\": {\"x\": 0, \"\\u0078\": 1}}}", 17, 25, "the key \"x\" appears twice");
  scanned_duplicate("{\"l\": [{\"k\": 1}, {\"k\": 2, \"k\": 3}]}", 18, 26, "\"k\" appears twice");
  /* several lines: line and column too */
  const char *config = "{\n  \"n_embd\": 64,\n  \"layer_norm_epsilon\": 1e-5,\n  \"layer_norm_epsilon\": 0.1\n}\n";
  scanned_duplicate(config, 20, 50, "at line 3, column 3 (byte 20) and at line 4, column 3 (byte 50)");
  tree_refused(config, "dir/config.json: the key \"layer_norm_epsilon\" appears twice in one object: at line 3, column 3 "
                       "(byte 20) and at line 4, column 3 (byte 50)");
  tree_refused("{\"w\": {\"dtype\": \"F32\", \"dtype\": \"F16\"}}", "the key \"dtype\" appears twice");
  tree_refused("[{}, {\"a\": 1, \"b\": {}, \"a\": 1}]", "the key \"a\" appears twice");
  /* keys that only look alike are different keys */
  int n = 0;
  ptdp_json_error err = {0};
  const char *distinct = "{\"a\": 1, \"A\": 2, \"a \": 3, \"\": 4, \"\\u00e9\": 5, \"e\\u0301\": 6}";
  EXPECT(ptdp_json_object_each(distinct, strlen(distinct), PTDP_JSON_KEYS_UNIQUE, count_member, &n, &err) == 0 && n == 6,
         "six distinct keys accepted (%d seen: %s)", n, err.msg);
  ptdp_json_value v;
  EXPECT(ptdp_json_parse(distinct, strlen(distinct), "t", &v) == 0 && v.n == 6, "and as a tree");
  ptdp_json_free(&v);
  /* the same key in two objects is no repetition */
  const char *siblings = "{\"a\": {\"k\": 1}, \"b\": {\"k\": 2}, \"c\": [{\"k\": 3}, {\"k\": 4}]}";
  EXPECT(ptdp_json_parse(siblings, strlen(siblings), "t", &v) == 0, "one key in sibling objects accepted");
  ptdp_json_free(&v);
  /* JSON lines: every member handed on, the caller keeps the last, nested repeats pass too */
  char last = 0;
  const char *line = "{\"a\": 1, \"m\": {\"k\": 1, \"k\": 2}, \"a\": 2}";
  EXPECT(ptdp_json_object_each(line, strlen(line), PTDP_JSON_KEYS_REPEAT, last_a, &last, &err) == 0 && last == '2',
         "JSON lines: the last value of a repeated key kept (%c: %s)", last, err.msg);
  const char *list = "[{\"k\": 1, \"k\": 2}]";
  EXPECT(ptdp_json_array_each(list, strlen(list), PTDP_JSON_KEYS_REPEAT, count_item, &n, &err) == 0,
         "JSON lines: a list holding an object with a repeated key passes");
  EXPECT(ptdp_json_array_each(list, strlen(list), PTDP_JSON_KEYS_UNIQUE, count_item, &n, &err) ==
             -1 && err.fault == PTDP_JSON_DUPLICATE_KEY,
         "elsewhere the same list is refused");
}

/* The two readings agree: each text accepted or refused by both. */
static void test_agree(void)
{
  static const struct {
    const char *s;
    int ok;
  } cases[] = {
      {"{}", 1},
      {" {\"a\": [1, -2.5e3, true, false, null, \"\\ud83d\\ude00\"]} ", 1},
      {"{\"a\": 1,}", 0},
      {"{\"a\": 01}", 0},
      {"{\"a\": \"\\ud800\"}", 0},
      {"{\"a\": \"\xc0\xaf\"}", 0},
      {"{\"a\": \"tab\there\"}", 0},
      {"{\"a\": 1} x", 0},
      {"{\"a\" 1}", 0},
      {"{'a': 1}", 0},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    const char *s = cases[i].s;
    int n = 0;
    ptdp_json_error err = {0};
    ptdp_json_value v;
    const int scanned = ptdp_json_object_each(s, strlen(s), PTDP_JSON_KEYS_UNIQUE, count_member, &n, &err) == 0;
    const int tree = ptdp_json_parse(s, strlen(s), "t", &v) == 0;
    ptdp_json_free(&v);
    ptdp_error_clear();
    EXPECT(scanned == cases[i].ok && tree == cases[i].ok, "%s: scanned %d, tree %d, want %d", s, scanned, tree,
           cases[i].ok);
  }
  /* nesting: an object holding 255 arrays (256 levels) read, 256 arrays refused */
  char deep[600];
  for (int depth = 255; depth <= 256; depth++) {
    size_t k = 0;
    deep[k++] = '{', deep[k++] = '"', deep[k++] = 'a', deep[k++] = '"', deep[k++] = ':';
    for (int d = 0; d < depth; d++) deep[k++] = '[';
    for (int d = 0; d < depth; d++) deep[k++] = ']';
    deep[k++] = '}';
    ptdp_json_value v;
    int n = 0;
    ptdp_json_error err = {0};
    const int want = depth < 256;
    EXPECT((ptdp_json_object_each(deep, k, PTDP_JSON_KEYS_UNIQUE, count_member, &n, &err) == 0) == want &&
               (ptdp_json_parse(deep, k, "t", &v) == 0) == want,
           "%d levels of arrays inside an object: %s", depth, want ? "read" : "refused");
    ptdp_json_free(&v);
    ptdp_error_clear();
  }
}

static void test_tree(void)
{
  const char *s = "{\"o\": [0, 18446744073709551615, -7, 1.5], \"s\": \"caf\\u00e9\"}";
  ptdp_json_value v;
  EXPECT(ptdp_json_parse(s, strlen(s), "t", &v) == 0, "a tree read");
  const ptdp_json_value *o = ptdp_json_get(&v, "o"), *str = ptdp_json_get(&v, "s");
  EXPECT(o && o->kind == PTDP_JSON_ARRAY && o->n == 4, "an array of four");
  if (o && o->n == 4) {
    EXPECT(o->items[1].integral && o->items[1].u == UINT64_MAX, "2^64 - 1 exactly");
    EXPECT(o->items[2].integral && o->items[2].neg && o->items[2].u == 7, "-7: sign and magnitude");
    EXPECT(!o->items[3].integral && o->items[3].num == 1.5, "1.5 not integral");
  }
  EXPECT(str && str->kind == PTDP_JSON_STRING && !strcmp(str->str, "caf\xc3\xa9"), "a \\u escape decoded");
  EXPECT(!ptdp_json_get(&v, "x"), "no member x");
  ptdp_json_free(&v);
  tree_refused("[18446744073709551616]", "an integer beyond 2^64 - 1");
  tree_refused("[\"a\\u0000b\"]", "\\u0000");
  tree_refused("{\"a\": 1,}", "dir/config.json: not valid JSON at byte 8");
}

int main(void)
{
  ptdp_error_set_quiet(1);
  test_duplicates();
  test_agree();
  test_tree();
  return expect_summary("test_json");
}
