/* Table-driven options: defaults, decks and command lines.  See include/ptdp/options.h. */
#include "ptdp/options.h"

#include "ptdp/config.h"
#include "ptdp/error.h"

#include <assert.h>
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* Canonical form of a key: leading dashes dropped, '_' read as '-'. */
static void canon_key(const char *key, char *out, size_t n)
{
  while (*key == '-') key++;
  size_t i = 0;
  for (; key[i] && i + 1 < n; i++) out[i] = key[i] == '_' ? '-' : key[i];
  out[i] = '\0';
}

int ptdp_options_find(const ptdp_options *o, const char *key)
{
  char k[256];
  canon_key(key, k, sizeof k);
  for (int i = 0; i < o->count; i++)
    if (strcmp(o->table[i].name, k) == 0) return i;
  return -1;
}

/* Levenshtein distance, bounded strings (keys are short). */
static int edit_distance(const char *a, const char *b)
{
  size_t la = strlen(a), lb = strlen(b);
  if (la > 63 || lb > 63) return 1000;
  int d[64][64];
  for (size_t i = 0; i <= la; i++) d[i][0] = (int)i;
  for (size_t j = 0; j <= lb; j++) d[0][j] = (int)j;
  for (size_t i = 1; i <= la; i++)
    for (size_t j = 1; j <= lb; j++) {
      int c = d[i - 1][j - 1] + (a[i - 1] != b[j - 1]);
      int del = d[i - 1][j] + 1, ins = d[i][j - 1] + 1;
      d[i][j] = c < del ? (c < ins ? c : ins) : (del < ins ? del : ins);
    }
  return d[la][lb];
}

/* The key of o nearest to k (canonical) and its distance: edit distance, or 2 for a key that
 * contains the typed text or is contained in it (a good guess too). */
static const char *nearest(const ptdp_options *o, const char *k, int *distance)
{
  int best = -1, bestd = 1 << 30;
  for (int i = 0; i < o->count; i++) {
    int dd = edit_distance(k, o->table[i].name);
    if (dd > 1 && strlen(k) >= 4 && (strstr(o->table[i].name, k) || strstr(k, o->table[i].name))) dd = 2;
    if (dd < bestd) bestd = dd, best = i;
  }
  *distance = bestd;
  return best >= 0 ? o->table[best].name : NULL;
}

/* Close enough to suggest: 2 edits for short keys, a third of the length for longer ones. */
static int close_enough(const char *k, int distance)
{
  size_t len = strlen(k);
  return distance <= (len < 6 ? 2 : (int)(len / 3) + 1);
}

const char *ptdp_options_suggest(const ptdp_options *o, const char *key)
{
  char k[256];
  canon_key(key, k, sizeof k);
  int d;
  const char *s = nearest(o, k, &d);
  return s && close_enough(k, d) ? s : NULL;
}

static void *field(const ptdp_options *o, int i) { return (char *)o->target + o->table[i].offset; }

static int parse_bool(const char *v, int *out)
{
  if (!strcmp(v, "true") || !strcmp(v, "1") || !strcmp(v, "yes")) return *out = 1, 0;
  if (!strcmp(v, "false") || !strcmp(v, "0") || !strcmp(v, "no")) return *out = 0, 0;
  return -1;
}

int ptdp_options_choice_index(const char *choices, const char *value)
{
  size_t lv = strlen(value);
  int index = 0;
  for (const char *p = choices; *p; index++) {
    const char *bar = strchr(p, '|');
    size_t l = bar ? (size_t)(bar - p) : strlen(p);
    if (l == lv && strncmp(p, value, l) == 0) return index;
    if (!bar) break;
    p = bar + 1;
  }
  return -1;
}

void ptdp_options_choice_text(const char *choices, int index, char *buf, size_t n)
{
  if (n) buf[0] = '\0';
  const char *p = choices;
  for (int k = 0; k < index && p; k++) {
    p = strchr(p, '|');
    if (p) p++;
  }
  if (!p || index < 0) return;
  const char *bar = strchr(p, '|');
  snprintf(buf, n, "%.*s", (int)(bar ? (size_t)(bar - p) : strlen(p)), p);
}

static void range_text(const ptdp_option *op, char *buf, size_t n)
{
  switch (op->type) {
  case PTDP_OPT_INT: snprintf(buf, n, "[%.0f, %.0f]", op->min, op->max); break;
  case PTDP_OPT_REAL: snprintf(buf, n, "[%g, %g]", op->min, op->max); break;
  case PTDP_OPT_BOOL: snprintf(buf, n, "true|false"); break;
  case PTDP_OPT_ENUM: snprintf(buf, n, "%s", op->choices); break;
  case PTDP_OPT_LIST: snprintf(buf, n, "text..."); break;
  default: snprintf(buf, n, "text"); break;
  }
}

/* An integer as Python's int() reads it (Megatron's argparse type=int): an optional sign, decimal
 * digits, single '_' between digits.  0: read; 1: not an integer; 2: beyond long long. */
static int parse_integer(const char *text, long long *out)
{
  const char *p = text;
  const int neg = *p == '-';
  if (*p == '+' || *p == '-') p++;
  unsigned long long v = 0;
  int digits = 0, over = 0;
  for (; *p; p++) {
    if (*p == '_' && digits && isdigit((unsigned char)p[1])) continue;
    if (!isdigit((unsigned char)*p)) break;
    const unsigned d = (unsigned)(*p - '0');
    if (v > (ULLONG_MAX - d) / 10) over = 1;
    else v = 10 * v + d;
    digits++;
  }
  if (!digits || *p) return 1;
  const unsigned long long limit = neg ? (unsigned long long)LLONG_MAX + 1 : (unsigned long long)LLONG_MAX;
  if (over || v > limit) return 2;
  *out = !neg ? (long long)v : v == limit ? LLONG_MIN : -(long long)v;
  return 0;
}

/* Why text that is not an integer was refused, when it is a number written another way: an
 * exponent or a fraction (with the digits to write instead when it is a whole number in range). */
static void integer_hint(const ptdp_option *op, const char *text, char *buf, size_t n)
{
  char *end;
  const double d = strtod(text, &end);
  if (n) buf[0] = '\0';
  if (end == text || *end || !isfinite(d) || !strpbrk(text, ".eE")) return;
  if (d == floor(d) && d >= op->min && d <= op->max)
    snprintf(buf, n, " (an integer key takes digits, not an exponent or a fraction: write %.0f)", d);
  else snprintf(buf, n, " (an integer key takes digits, not an exponent or a fraction)");
}

static int set_int(const ptdp_option *op, long long *f, const char *value, const char *where, const char *range)
{
  long long v = 0;
  const int rc = parse_integer(value, &v);
  char hint[160];
  integer_hint(op, value, hint, sizeof hint);
  PTDP_CHECK(rc != 1, "invalid value '%s' for %s (%s): expected an integer in %s%s", value, op->name, where, range,
             hint);
  PTDP_CHECK(rc != 2, "invalid value '%s' for %s (%s): expected an integer in %s (it is beyond 64 bits)", value,
             op->name, where, range);
  /* v converts to double exactly for |v| <= 2^53, past every table's bound */
  PTDP_CHECK(v >= op->min && v <= op->max, "value %lld for %s (%s) is out of range %s", v, op->name, where, range);
  *f = v;
  return 0;
}

/* The error for a key no table of c has, with the nearest key of any table. */
static int unknown_key(const ptdp_cmdline *c, const char *key, const char *where)
{
  char k[256];
  canon_key(key, k, sizeof k);
  const char *best = NULL;
  int bestd = 1 << 30;
  for (int g = 0; g < c->ngroups; g++) {
    int d;
    const char *s = nearest(c->group[g], k, &d);
    if (s && d < bestd) bestd = d, best = s;
  }
  if (best && !close_enough(k, bestd)) best = NULL;
  if (c->program && best)
    PTDP_CHECK(0, "unknown key '%s' (%s); did you mean '%s'? (%s --help lists every key)", k, where, best, c->program);
  if (c->program) PTDP_CHECK(0, "unknown key '%s' (%s); %s --help lists every key", k, where, c->program);
  if (best) PTDP_CHECK(0, "unknown key '%s' (%s); did you mean '%s'?", k, where, best);
  PTDP_CHECK(0, "unknown key '%s' (%s)", k, where);
}

/* A command line of the one table o (the single-table entry points). */
static void single(ptdp_cmdline *c, ptdp_options *o) { ptdp_cmdline_single(c, o, o->program, NULL, 1); }

int ptdp_options_set(ptdp_options *o, const char *key, const char *value, ptdp_opt_source src, const char *where)
{
  int i = ptdp_options_find(o, key);
  if (i < 0) {
    ptdp_cmdline c;
    single(&c, o);
    return unknown_key(&c, key, where);
  }
  const ptdp_option *op = &o->table[i];
  char range[PTDP_OPT_STRLEN];
  range_text(op, range, sizeof range);
  PTDP_CHECK(value != NULL, "key '%s' (%s) needs a value: %s", op->name, where, range);
  char *end = NULL;
  switch (op->type) {
  case PTDP_OPT_INT: PTDP_CALL(set_int(op, field(o, i), value, where, range)); break;
  case PTDP_OPT_REAL: {
    errno = 0;
    double v = strtod(value, &end);
    PTDP_CHECK(end != value && *end == '\0' && errno == 0 && isfinite(v),
               "invalid value '%s' for %s (%s): expected a number in %s", value, op->name, where, range);
    PTDP_CHECK(v >= op->min && v <= op->max, "value %g for %s (%s) is out of range %s", v, op->name, where, range);
    *(double *)field(o, i) = v;
    break;
  }
  case PTDP_OPT_BOOL: {
    int b;
    PTDP_CHECK(parse_bool(value, &b) == 0, "invalid value '%s' for %s (%s): expected true or false", value,
               op->name, where);
    *(int *)field(o, i) = b;
    break;
  }
  case PTDP_OPT_ENUM: {
    int c = ptdp_options_choice_index(op->choices, value);
    PTDP_CHECK(c >= 0, "invalid value '%s' for %s (%s): expected one of %s", value, op->name, where, op->choices);
    *(int *)field(o, i) = c;
    break;
  }
  case PTDP_OPT_STRING:
  case PTDP_OPT_LIST:
    PTDP_CHECK(strlen(value) < PTDP_OPT_STRLEN, "value for %s (%s) is longer than %d characters", op->name, where,
               PTDP_OPT_STRLEN - 1);
    snprintf((char *)field(o, i), PTDP_OPT_STRLEN, "%s", value);
    break;
  }
  if (o->source) o->source[i] = src;
  return 0;
}

int ptdp_options_init(ptdp_options *o, const ptdp_option *table, int count, void *target)
{
  memset(o, 0, sizeof *o);
  o->table = table;
  o->count = count;
  o->target = target;
  PTDP_CALLOC(o->source, count, sizeof *o->source);
  for (int i = 0; i < count; i++) {
    int err = ptdp_options_set(o, table[i].name, table[i].deflt, PTDP_SRC_DEFAULT, "default");
    if (err) { /* a default the table cannot parse: a bug of the table, reported; nothing kept */
      ptdp_options_free(o);
      return ptdp_error_trace(err, __FILE__, __LINE__, __func__);
    }
  }
  return 0;
}

void ptdp_options_free(ptdp_options *o)
{
  free(o->source);
  o->source = NULL;
}

static char *trim(char *s)
{
  while (isspace((unsigned char)*s)) s++;
  char *e = s + strlen(s);
  while (e > s && isspace((unsigned char)e[-1])) *--e = '\0';
  return s;
}

/* The flat index over c's tables of table g's option i (for the deck's line of each key). */
static int flat_index(const ptdp_cmdline *c, const ptdp_options *o, int i)
{
  int base = 0;
  for (int g = 0; g < c->ngroups && c->group[g] != o; g++) base += c->group[g]->count;
  return base + i;
}

static int flat_count(const ptdp_cmdline *c)
{
  int n = 0;
  for (int g = 0; g < c->ngroups; g++) n += c->group[g]->count;
  return n;
}

/* One deck line (comment already cut): "key = value"; seen_line[flat index] is the line that set a key. */
static int deck_line(ptdp_cmdline *c, char *line, int lineno, const char *where, int *seen_line)
{
  char *s = trim(line);
  if (!*s) return 0;
  char *eq = strchr(s, '=');
  PTDP_CHECK(eq, "%s: expected 'key = value', found '%s'", where, s);
  *eq = '\0';
  char *key = trim(s), *val = trim(eq + 1);
  PTDP_CHECK(*key && *val, "%s: %s", where, *key ? "missing value after '='" : "missing key before '='");
  int i;
  const ptdp_options *o = ptdp_cmdline_find(c, key, &i);
  const int k = o ? flat_index(c, o, i) : -1;
  PTDP_CHECK(k < 0 || !seen_line[k], "%s: key '%s' already set on line %d", where, o ? o->table[i].name : key,
             k >= 0 ? seen_line[k] : 0);
  PTDP_CALL(ptdp_cmdline_set(c, key, val, PTDP_SRC_DECK, where));
  if (k >= 0) seen_line[k] = lineno;
  return 0;
}

static int read_lines(ptdp_cmdline *c, FILE *f, const char *path, int *seen_line)
{
  char line[4 * PTDP_OPT_STRLEN], where[PTDP_OPT_STRLEN + 32];
  int lineno = 0;
  while (fgets(line, sizeof line, f)) {
    lineno++;
    snprintf(where, sizeof where, "%s line %d", path, lineno);
    PTDP_CHECK(strchr(line, '\n') || feof(f), "%s: line too long", where);
    char *hash = strchr(line, '#');
    if (hash) *hash = '\0';
    PTDP_CALL(deck_line(c, line, lineno, where, seen_line));
  }
  if (ferror(f)) return PTDP_FAIL(PTDP_ERR_IO, "error reading deck '%s'", path);
  return 0;
}

int ptdp_cmdline_read_deck(ptdp_cmdline *c, const char *path)
{
  struct stat st;
  PTDP_CHECK(stat(path, &st) == 0, "cannot open input deck '%s': %s", path, strerror(errno));
  PTDP_CHECK(!S_ISDIR(st.st_mode), "input deck '%s' is a directory, not a file of 'key = value' lines", path);
  FILE *f = fopen(path, "r");
  PTDP_CHECK(f != NULL, "cannot open input deck '%s': %s", path, strerror(errno));
  for (int g = 0; g < c->ngroups; g++) snprintf(c->group[g]->deck, sizeof c->group[g]->deck, "%s", path);
  int *seen_line = calloc((size_t)flat_count(c) + 1, sizeof(int));
  int err = seen_line ? read_lines(c, f, path, seen_line)
                      : PTDP_FAIL(PTDP_ERR_MEM, "out of memory reading deck '%s'",
                                        path);
  free(seen_line);
  fclose(f);
  return err;
}

int ptdp_options_read_deck(ptdp_options *o, const char *path)
{
  ptdp_cmdline c;
  single(&c, o);
  return ptdp_cmdline_read_deck(&c, path);
}

/* The value of the key at argv[*a] (without "=value"), advancing *a past what it takes: a bool
 * takes a following true/false, a list every following argument up to the next "--", any other
 * key the next argument unless it starts with "--".  NULL: none (an error but for a bool). */
static const char *next_value(const ptdp_option *op, int argc, char **argv, int *a, char *buf, size_t n)
{
  const int has_next = *a + 1 < argc && strncmp(argv[*a + 1], "--", 2) != 0;
  int b;
  if (op && op->type == PTDP_OPT_BOOL) return has_next && parse_bool(argv[*a + 1], &b) == 0 ? argv[++*a] : "true";
  if (!has_next) return NULL;
  if (!op || op->type != PTDP_OPT_LIST) return argv[++*a];
  size_t len = 0;
  buf[0] = '\0';
  while (*a + 1 < argc && strncmp(argv[*a + 1], "--", 2) != 0) {
    const char *v = argv[++*a];
    len += (size_t)snprintf(buf + len, len < n ? n - len : 0, "%s%s", len ? " " : "", v);
  }
  return buf; /* too long for the buffer: ptdp_options_set refuses it by its length */
}

int ptdp_cmdline_parse(ptdp_cmdline *c, int argc, char **argv)
{
  int a = 0;
  if (c->deck && a < argc && strncmp(argv[a], "--", 2) != 0) PTDP_CALL(ptdp_cmdline_read_deck(c, argv[a++]));
  for (; a < argc; a++) {
    const char *arg = argv[a];
    PTDP_CHECK(strncmp(arg, "--", 2) == 0 && arg[2],
               "unexpected argument '%s' on the command line: expected --key value%s", arg,
               c->deck ? " (the deck, if any, comes first)" : "");
    char key[256], list[4 * PTDP_OPT_STRLEN];
    const char *eq = strchr(arg, '='), *val;
    if (eq) { /* --key=value */
      snprintf(key, sizeof key, "%.*s", (int)(eq - arg), arg);
      val = eq + 1;
    } else {
      snprintf(key, sizeof key, "%s", arg);
      int i;
      const ptdp_options *o = ptdp_cmdline_find(c, key, &i);
      val = next_value(o ? &o->table[i] : NULL, argc, argv, &a, list, sizeof list);
    }
    PTDP_CALL(ptdp_cmdline_set(c, key, val, PTDP_SRC_CMDLINE, "command line"));
  }
  return 0;
}

int ptdp_options_parse_args(ptdp_options *o, int argc, char **argv)
{
  ptdp_cmdline c;
  single(&c, o);
  return ptdp_cmdline_parse(&c, argc, argv);
}

int ptdp_options_given(const ptdp_options *o, const char *key)
{
  const int i = ptdp_options_find(o, key);
  return i >= 0 && o->source && (o->source[i] == PTDP_SRC_DECK || o->source[i] == PTDP_SRC_CMDLINE);
}

void ptdp_cmdline_init(ptdp_cmdline *c, const char *program, const char *synopsis, int deck)
{
  memset(c, 0, sizeof *c);
  c->program = program;
  c->synopsis = synopsis;
  c->deck = deck;
}

void ptdp_cmdline_add(ptdp_cmdline *c, ptdp_options *o, const char *heading)
{
  assert(c->ngroups < PTDP_CMDLINE_GROUPS);
  if (!o->program) o->program = c->program; /* a later ptdp_options_set names the program too */
  c->heading[c->ngroups] = heading;
  c->group[c->ngroups++] = o;
}

void ptdp_cmdline_single(ptdp_cmdline *c, ptdp_options *o, const char *program, const char *synopsis, int deck)
{
  ptdp_cmdline_init(c, program, synopsis, deck);
  ptdp_cmdline_add(c, o, NULL);
}

void ptdp_cmdline_print_single(const char *synopsis, const ptdp_option *table, int count, FILE *out)
{
  const ptdp_options o = {.table = table, .count = count};
  if (synopsis) fputs(synopsis, out);
  ptdp_options_print_help(&o, out);
}

/* The keys of c's tables that start with k (canonical): how many, and the first two. */
static int prefixed(const ptdp_cmdline *c, const char *k, ptdp_options **o, int *index, const char **second)
{
  int n = 0;
  const size_t len = strlen(k);
  for (int g = 0; g < c->ngroups; g++)
    for (int i = 0; i < c->group[g]->count; i++) {
      if (strncmp(c->group[g]->table[i].name, k, len) != 0) continue;
      if (n == 0) *o = c->group[g], *index = i;
      if (n == 1) *second = c->group[g]->table[i].name;
      n++;
    }
  return n;
}

ptdp_options *ptdp_cmdline_find(const ptdp_cmdline *c, const char *key, int *index)
{
  for (int g = 0; g < c->ngroups; g++)
    if ((*index = ptdp_options_find(c->group[g], key)) >= 0) return c->group[g];
  char k[256];
  canon_key(key, k, sizeof k);
  ptdp_options *o = NULL;
  const char *second = NULL;
  if (c->abbrev && k[0] && prefixed(c, k, &o, index, &second) == 1) return o;
  *index = -1;
  return NULL;
}

int ptdp_cmdline_set(ptdp_cmdline *c, const char *key, const char *value, ptdp_opt_source src, const char *where)
{
  int i;
  ptdp_options *o = ptdp_cmdline_find(c, key, &i);
  if (!o && c->abbrev) {
    char k[256];
    canon_key(key, k, sizeof k);
    ptdp_options *first = NULL;
    const char *second = NULL;
    const int n = k[0] ? prefixed(c, k, &first, &i, &second) : 0;
    PTDP_CHECK(n < 2, "ambiguous key '%s' (%s): it abbreviates %s, %s%s", k, where, first->table[i].name, second,
               n > 2 ? " and others" : "");
  }
  if (!o) return unknown_key(c, key, where);
  return ptdp_options_set(o, o->table[i].name, value, src, where); /* the full name: key may abbreviate it */
}

ptdp_cmdline_ask ptdp_cmdline_asks(int argc, char **argv)
{
  for (int i = 0; i < argc; i++) {
    if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) return PTDP_ASK_HELP;
    if (!strcmp(argv[i], "--version")) return PTDP_ASK_VERSION;
  }
  return PTDP_ASK_NOTHING;
}

void ptdp_cmdline_print_version(const char *program, FILE *out) { fprintf(out, "%s %s\n", program, PACKAGE_VERSION); }

void ptdp_cmdline_print_help(const ptdp_cmdline *c, FILE *out)
{
  if (c->synopsis) fputs(c->synopsis, out);
  for (int g = 0; g < c->ngroups; g++) {
    if (c->heading[g]) fprintf(out, "%s%s\n", g || c->synopsis ? "\n" : "", c->heading[g]);
    ptdp_options_print_help(c->group[g], out);
  }
}

int ptdp_cmdline_answer(const ptdp_cmdline *c, int argc, char **argv, FILE *out)
{
  const ptdp_cmdline_ask ask = ptdp_cmdline_asks(argc, argv);
  if (ask == PTDP_ASK_HELP && out) ptdp_cmdline_print_help(c, out);
  if (ask == PTDP_ASK_VERSION && out) ptdp_cmdline_print_version(c->program, out);
  return ask != PTDP_ASK_NOTHING;
}

void ptdp_cmdline_warn_unused(const ptdp_cmdline *c, int world, FILE *out)
{
  for (int g = 0; g < c->ngroups; g++) ptdp_options_warn_unused(c->group[g], world, out);
}

static const char *type_name(ptdp_opt_type t)
{
  static const char *names[] = {"int", "real", "bool", "string", "choice", "list"};
  return names[t];
}

void ptdp_options_value_text(const ptdp_options *o, int i, char *buf, size_t n)
{
  const void *f = field(o, i);
  switch (o->table[i].type) {
  case PTDP_OPT_INT: snprintf(buf, n, "%lld", *(const long long *)f); break;
  case PTDP_OPT_REAL: snprintf(buf, n, "%g", *(const double *)f); break;
  case PTDP_OPT_BOOL: snprintf(buf, n, "%s", *(const int *)f ? "true" : "false"); break;
  case PTDP_OPT_ENUM: ptdp_options_choice_text(o->table[i].choices, *(const int *)f, buf, n); break;
  default: snprintf(buf, n, "%s", (const char *)f); break;
  }
}

void ptdp_options_print_help(const ptdp_options *o, FILE *out)
{
  fprintf(out, "%-40s %-6s %-14s %-26s %s\n", "key", "type", "default", "range", "meaning");
  for (int i = 0; i < o->count; i++) {
    const ptdp_option *op = &o->table[i];
    char range[PTDP_OPT_STRLEN];
    range_text(op, range, sizeof range);
    fprintf(out, "%-40s %-6s %-14s %-26s %s\n", op->name, type_name(op->type), op->deflt[0] ? op->deflt : "\"\"",
            range, op->help);
  }
}

void ptdp_options_warn_unused(const ptdp_options *o, int world, FILE *out)
{
  for (int i = 0; i < o->count; i++) {
    const ptdp_opt_effect *e = o->table[i].effect;
    if (e && (o->source[i] == PTDP_SRC_DECK || o->source[i] == PTDP_SRC_CMDLINE) && !e->applies(o->target, world))
      ptdp_options_warn(o->table[i].name, e->why, out);
  }
}

void ptdp_options_warn(const char *key, const char *why, FILE *out)
{
  fprintf(out, "ptdp: warning: %s is given but has no effect: %s\n", key, why);
}
