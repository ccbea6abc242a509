/* Table-driven options: defaults, decks and command lines.  See include/ptdp/options.h. */
#include "ptdp/options.h"

#include "ptdp/error.h"

#include <ctype.h>
#include <errno.h>
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

const char *ptdp_options_suggest(const ptdp_options *o, const char *key)
{
  char k[256];
  canon_key(key, k, sizeof k);
  int best = -1, bestd = 1 << 30;
  for (int i = 0; i < o->count; i++) {
    int dd = edit_distance(k, o->table[i].name);
    /* a key that contains the typed text, or is contained in it, is also a good guess */
    if (dd > 1 && strlen(k) >= 4 && (strstr(o->table[i].name, k) || strstr(k, o->table[i].name))) dd = 2;
    if (dd < bestd) bestd = dd, best = i;
  }
  size_t len = strlen(k);
  int limit = len < 6 ? 2 : (int)(len / 3) + 1;
  return best >= 0 && bestd <= limit ? o->table[best].name : NULL;
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
  default: snprintf(buf, n, "text"); break;
  }
}

int ptdp_options_set(ptdp_options *o, const char *key, const char *value, ptdp_opt_source src, const char *where)
{
  int i = ptdp_options_find(o, key);
  if (i < 0) {
    const char *s = ptdp_options_suggest(o, key);
    char k[256];
    canon_key(key, k, sizeof k);
    if (s) PTDP_CHECK(0, "unknown key '%s' (%s); did you mean '%s'? (ptdp-train --help lists every key)", k, where, s);
    PTDP_CHECK(0, "unknown key '%s' (%s); ptdp-train --help lists every key", k, where);
  }
  const ptdp_option *op = &o->table[i];
  char range[PTDP_OPT_STRLEN];
  range_text(op, range, sizeof range);
  PTDP_CHECK(value != NULL, "key '%s' (%s) needs a value: %s", op->name, where, range);
  char *end = NULL;
  switch (op->type) {
  case PTDP_OPT_INT: {
    errno = 0;
    long long v = strtoll(value, &end, 10);
    if (end != value && *end == 'e') { /* allow 1e6 style for integers */
      double dv = strtod(value, &end);
      v = (long long)dv;
      PTDP_CHECK(*end == '\0' && dv == (double)v, "invalid value '%s' for %s (%s): expected an integer in %s",
                 value, op->name, where, range);
    }
    PTDP_CHECK(end != value && *end == '\0' && errno == 0,
               "invalid value '%s' for %s (%s): expected an integer in %s", value, op->name, where, range);
    PTDP_CHECK(v >= op->min && v <= op->max, "value %lld for %s (%s) is out of range %s", v, op->name, where,
               range);
    *(long long *)field(o, i) = v;
    break;
  }
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
  for (int i = 0; i < count; i++) PTDP_CALL(ptdp_options_set(o, table[i].name, table[i].deflt, PTDP_SRC_DEFAULT, "default"));
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

int ptdp_options_read_deck(ptdp_options *o, const char *path)
{
  struct stat st;
  PTDP_CHECK(stat(path, &st) == 0, "cannot open input deck '%s': %s", path, strerror(errno));
  PTDP_CHECK(!S_ISDIR(st.st_mode), "input deck '%s' is a directory, not a file of 'key = value' lines", path);
  FILE *f = fopen(path, "r");
  PTDP_CHECK(f != NULL, "cannot open input deck '%s': %s", path, strerror(errno));
  snprintf(o->deck, sizeof o->deck, "%s", path);
  int *seen_line = calloc((size_t)o->count, sizeof(int));
  if (!seen_line) {
    fclose(f);
    PTDP_CHECK(0, "out of memory reading deck '%s'", path);
  }
  char line[4 * PTDP_OPT_STRLEN], where[PTDP_OPT_STRLEN + 32];
  int lineno = 0, err = 0;
  while (!err && fgets(line, sizeof line, f)) {
    lineno++;
    snprintf(where, sizeof where, "%s line %d", path, lineno);
    if (!strchr(line, '\n') && !feof(f)) {
      err = ptdp_error_push(PTDP_ERR_INPUT, __FILE__, __LINE__, __func__, "%s: line too long", where);
      break;
    }
    char *hash = strchr(line, '#');
    if (hash) *hash = '\0';
    char *s = trim(line);
    if (!*s) continue;
    char *eq = strchr(s, '=');
    if (!eq) {
      err = ptdp_error_push(PTDP_ERR_INPUT, __FILE__, __LINE__, __func__,
                            "%s: expected 'key = value', found '%s'", where, s);
      break;
    }
    *eq = '\0';
    char *key = trim(s), *val = trim(eq + 1);
    if (!*key || !*val) {
      err = ptdp_error_push(PTDP_ERR_INPUT, __FILE__, __LINE__, __func__, "%s: %s", where,
                            *key ? "missing value after '='" : "missing key before '='");
      break;
    }
    int i = ptdp_options_find(o, key);
    if (i >= 0 && seen_line[i]) {
      err = ptdp_error_push(PTDP_ERR_INPUT, __FILE__, __LINE__, __func__, "%s: key '%s' already set on line %d",
                            where, o->table[i].name, seen_line[i]);
      break;
    }
    err = ptdp_options_set(o, key, val, PTDP_SRC_DECK, where);
    if (!err && i >= 0) seen_line[i] = lineno;
  }
  if (!err && ferror(f)) err = ptdp_error_push(PTDP_ERR_IO, __FILE__, __LINE__, __func__, "error reading deck '%s'", path);
  free(seen_line);
  fclose(f);
  return err;
}

int ptdp_options_parse_args(ptdp_options *o, int argc, char **argv)
{
  int a = 0;
  if (a < argc && strncmp(argv[a], "--", 2) != 0) {
    PTDP_CALL(ptdp_options_read_deck(o, argv[a]));
    a++;
  }
  for (; a < argc; a++) {
    const char *arg = argv[a];
    PTDP_CHECK(strncmp(arg, "--", 2) == 0 && arg[2],
               "unexpected argument '%s' on the command line: expected --key value (the deck, if any, comes first)",
               arg);
    char key[256];
    const char *eq = strchr(arg, '=');
    const char *val;
    if (eq) { /* --key=value */
      snprintf(key, sizeof key, "%.*s", (int)(eq - arg), arg);
      val = eq + 1;
    } else {
      snprintf(key, sizeof key, "%s", arg);
      int i = ptdp_options_find(o, key);
      int next_is_value = a + 1 < argc && strncmp(argv[a + 1], "--", 2) != 0;
      if (i >= 0 && o->table[i].type == PTDP_OPT_BOOL) {
        int b;
        val = next_is_value && parse_bool(argv[a + 1], &b) == 0 ? argv[++a] : "true";
      } else {
        val = next_is_value ? argv[++a] : NULL;
        /* a negative number is a value, not a key */
        if (!val && a + 1 < argc && argv[a + 1][0] == '-' && isdigit((unsigned char)argv[a + 1][1])) val = argv[++a];
      }
    }
    PTDP_CALL(ptdp_options_set(o, key, val, PTDP_SRC_CMDLINE, "command line"));
  }
  return 0;
}

static const char *type_name(ptdp_opt_type t)
{
  static const char *names[] = {"int", "real", "bool", "string", "choice"};
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
      fprintf(out, "ptdp: warning: %s is given but has no effect: %s\n", o->table[i].name, e->why);
  }
}
