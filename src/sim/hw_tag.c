/* The provenance tags of a hardware file (ptdp-hardware(5), PROVENANCE) and --explain's
 * hardware part.  The values themselves are read by the deck reader (cost.c, ptdp_sim_hw_read);
 * this pass reads the same lines again for what follows each value's '#':
 *
 *   key = value  # MEASURED machine YYYY-MM-DD "command" figure
 *   key = value  # DERIVED "the values it comes from" rule
 *   key = value  # ASSUMED source
 *
 * Fields are words or "double-quoted text"; the last field is the rest of the line.  Only a
 * comment on a value's own line is a tag; comment lines are prose. */
#include "ptdp/error.h"
#include "ptdp/sim_cost.h"

#include "sim_hw.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

static const char *skip_space(const char *p)
{
  while (isspace((unsigned char)*p)) p++;
  return p;
}

static void trim_end(char *s)
{
  size_t n = strlen(s);
  while (n && isspace((unsigned char)s[n - 1])) s[--n] = '\0';
}

/* The next field of *p into out (n bytes): "quoted text" (*quoted = 1) or a word up to a space;
 * -1 for an unterminated quote or a field longer than out, 0 for none, 1 read. */
static int next_field(const char **p, char *out, size_t n, int *quoted)
{
  const char *s = skip_space(*p), *e;
  *quoted = *s == '"';
  if (!*s) return 0;
  if (*quoted) {
    s++;
    e = strchr(s, '"');
    if (!e) return -1;
  } else {
    for (e = s; *e && !isspace((unsigned char)*e); e++) continue;
  }
  const size_t len = (size_t)(e - s);
  if (len >= n) return -1;
  memcpy(out, s, len);
  out[len] = '\0';
  *p = *quoted ? e + 1 : e;
  return 1;
}

/* The rest of the line as the last field (trimmed); 0 when empty. */
static int rest_field(const char *p, char *out, size_t n, int *too_long)
{
  p = skip_space(p);
  *too_long = strlen(p) >= n;
  snprintf(out, n, "%s", p);
  trim_end(out);
  return out[0] != '\0';
}

/* YYYY-MM-DD, alone or followed by a time (2026-11-25T05:57:14Z). */
static int is_date(const char *s)
{
  for (int i = 0; i < 10; i++) {
    const int dash = i == 4 || i == 7;
    if (dash ? s[i] != '-' : !isdigit((unsigned char)s[i])) return 0;
  }
  return s[10] == '\0' || s[10] == 'T';
}

#define TAG_FORMS                                                                                        \
  "# MEASURED machine YYYY-MM-DD \"command\" figure, # DERIVED \"values it comes from\" rule, or # ASSUMED " \
  "source (ptdp-hardware(5), PROVENANCE)"

/* The tag in comment c (the text after '#') of the value of key on line of path into t:
 * 0 with t->kind set, or 0 with t->kind unchanged when c is prose (no tag word first). */
static int parse_tag(const char *c, const char *path, int line, const char *key, ptdp_sim_hw_tag *t)
{
  char word[32];
  int quoted, too_long = 0;
  const char *p = c;
  if (next_field(&p, word, sizeof word, &quoted) != 1 || quoted) return 0;
  const size_t w = strlen(word);
  static const char *kinds[] = {"MEASURED", "DERIVED", "ASSUMED"};
  for (int k = 0; k < 3; k++) {
    const size_t l = strlen(kinds[k]);
    PTDP_CHECK(!(w == l + 1 && !strncmp(word, kinds[k], l) && ispunct((unsigned char)word[l])),
               "%s:%d: the tag of %s is '%s': write %s with a space after it, no '%c'", path, line, key, word, kinds[k],
               word[l]);
  }
  if (!strcmp(word, "MEASURED")) {
    t->kind = PTDP_SIM_PROV_MEASURED;
    int rc = next_field(&p, t->machine, sizeof t->machine, &quoted);
    PTDP_CHECK(rc == 1 && !quoted && !is_date(t->machine),
               "%s:%d: the MEASURED tag of %s names no machine (# MEASURED machine YYYY-MM-DD \"command\" figure: "
               "a word such as h200 first)",
               path, line, key);
    rc = next_field(&p, t->date, sizeof t->date, &quoted);
    PTDP_CHECK(rc == 1 && !quoted && is_date(t->date),
               "%s:%d: the MEASURED tag of %s names no date (YYYY-MM-DD after the machine %s)", path, line, key,
               t->machine);
    rc = next_field(&p, t->basis, sizeof t->basis, &quoted);
    PTDP_CHECK(rc != -1, "%s:%d: the MEASURED tag of %s: the command's quote is not closed, or it is longer than %zu "
                         "characters",
               path, line, key, sizeof t->basis - 1);
    PTDP_CHECK(rc == 1 && quoted && t->basis[0],
               "%s:%d: the MEASURED tag of %s names no command (in double quotes after the date: which command "
               "measured it, on %s %s)",
               path, line, key, t->machine, t->date);
    PTDP_CHECK(rest_field(p, t->detail, sizeof t->detail, &too_long),
               "%s:%d: the MEASURED tag of %s gives no figure (what the command printed, after the command)", path, line,
               key);
  } else if (!strcmp(word, "DERIVED")) {
    t->kind = PTDP_SIM_PROV_DERIVED;
    const int rc = next_field(&p, t->basis, sizeof t->basis, &quoted);
    PTDP_CHECK(rc == 1 && quoted && t->basis[0],
               "%s:%d: the DERIVED tag of %s names no values it comes from (in double quotes: the measured values, "
               "then the rule)",
               path, line, key);
    PTDP_CHECK(rest_field(p, t->detail, sizeof t->detail, &too_long),
               "%s:%d: the DERIVED tag of %s states no rule (after the values it comes from)", path, line, key);
  } else if (!strcmp(word, "ASSUMED")) {
    t->kind = PTDP_SIM_PROV_ASSUMED;
    PTDP_CHECK(rest_field(p, t->detail, sizeof t->detail, &too_long),
               "%s:%d: the ASSUMED tag of %s gives no source (a datasheet, a paper, or \"source not recorded\")", path,
               line, key);
  }
  PTDP_CHECK(!too_long, "%s:%d: the tag of %s is longer than %zu characters", path, line, key, sizeof t->detail - 1);
  return 0;
}

/* One line of the file: a value's tag into hw->tag[] (its key's index in o). */
static int tag_line(char *s, const char *path, int line, const ptdp_options *o, ptdp_sim_hw *hw)
{
  char *hash = strchr(s, '#'), *comment = hash ? hash + 1 : NULL;
  if (hash) *hash = '\0';
  char *eq = strchr(s, '=');
  if (!eq) return 0; /* blank or a comment line (the deck reader refused anything else) */
  *eq = '\0';
  char key[256], value[sizeof hw->tag[0].value];
  snprintf(key, sizeof key, "%.255s", skip_space(s));
  trim_end(key);
  snprintf(value, sizeof value, "%s", skip_space(eq + 1));
  trim_end(value);
  const int i = ptdp_options_find(o, key);
  PTDP_CHECK_INTERNAL(i >= 0 && i < PTDP_SIM_HW_KEYS, "%s:%d: key '%s' read by the deck reader but not found", path,
                      line, key);
  ptdp_sim_hw_tag *t = &hw->tag[i];
  memset(t, 0, sizeof *t);
  t->line = line;
  snprintf(t->value, sizeof t->value, "%s", value);
  t->kind = PTDP_SIM_PROV_UNTAGGED;
  if (comment) PTDP_CALL(parse_tag(comment, path, line, o->table[i].name, t));
  return 0;
}

int ptdp_sim_hw_tags_read(const char *path, const ptdp_options *o, ptdp_sim_hw *hw)
{
  FILE *f = fopen(path, "r");
  PTDP_CHECK(f != NULL, "cannot open hardware file '%s': %s", path, strerror(errno));
  char buf[4 * PTDP_OPT_STRLEN];
  int line = 0, err = 0;
  while (!err && fgets(buf, sizeof buf, f)) err = tag_line(buf, path, ++line, o, hw);
  fclose(f);
  PTDP_CALL(err);
  /* name is a label, not a value: it may go untagged */
  int tagged = 0, untagged = 0, first = -1;
  for (int i = 0; i < PTDP_SIM_HW_KEYS; i++) {
    const ptdp_sim_hw_tag *t = &hw->tag[i];
    if (t->kind >= PTDP_SIM_PROV_MEASURED) tagged++;
    if (t->kind == PTDP_SIM_PROV_UNTAGGED && strcmp(o->table[i].name, "name") != 0) {
      untagged++;
      if (first < 0 || t->line < hw->tag[first].line) first = i;
    }
  }
  PTDP_CHECK(!tagged || !untagged, "%s:%d: %s = %s has no provenance tag: end its line with %s", path,
             hw->tag[first].line, o->table[first].name, hw->tag[first].value, TAG_FORMS);
  hw->untagged = untagged;
  return 0;
}

const char *ptdp_sim_prov_name(ptdp_sim_prov kind)
{
  static const char *n[] = {"default", "UNTAGGED", "MEASURED", "DERIVED", "ASSUMED"};
  return kind >= PTDP_SIM_PROV_DEFAULT && kind <= PTDP_SIM_PROV_ASSUMED ? n[kind] : "?";
}

const ptdp_sim_hw_tag *ptdp_sim_hw_tag_of(const ptdp_sim_hw *hw, const char *key)
{
  for (int i = 0; i < PTDP_SIM_HW_KEYS; i++)
    if (!strcmp(ptdp_sim_hw_key(i), key)) return &hw->tag[i];
  return NULL;
}

void ptdp_sim_hw_explain(const ptdp_sim_hw *hw, FILE *out)
{
  fprintf(out, "hardware values and where each comes from (ptdp-hardware(5), PROVENANCE):\n");
  int order[PTDP_SIM_HW_KEYS], given = 0; /* the file's values in the order of its lines */
  for (int i = 0; i < PTDP_SIM_HW_KEYS; i++) {
    if (hw->tag[i].kind == PTDP_SIM_PROV_DEFAULT || !strcmp(ptdp_sim_hw_key(i), "name")) continue;
    int j = given++;
    for (; j > 0 && hw->tag[order[j - 1]].line > hw->tag[i].line; j--) order[j] = order[j - 1];
    order[j] = i;
  }
  for (int k = 0; k < given; k++) {
    const ptdp_sim_hw_tag *t = &hw->tag[order[k]];
    const char *key = ptdp_sim_hw_key(order[k]);
    fprintf(out, "+- %s = %s  %s", key, t->value, ptdp_sim_prov_name(t->kind));
    if (t->kind == PTDP_SIM_PROV_MEASURED)
      fprintf(out, " on %s %s by \"%s\": %s", t->machine, t->date, t->basis, t->detail);
    else if (t->kind == PTDP_SIM_PROV_DERIVED) fprintf(out, " from \"%s\": %s", t->basis, t->detail);
    else if (t->kind == PTDP_SIM_PROV_ASSUMED) fprintf(out, ": %s", t->detail);
    else fprintf(out, ": the file gives no provenance");
    fprintf(out, " (line %d)\n", t->line);
  }
  int n = 0;
  for (int i = 0; i < PTDP_SIM_HW_KEYS; i++) {
    if (hw->tag[i].kind != PTDP_SIM_PROV_DEFAULT || !strcmp(ptdp_sim_hw_key(i), "name")) continue;
    fprintf(out, "%s%s %s", n++ ? ", " : "+- not in the file, the key's default: ", ptdp_sim_hw_key(i),
            ptdp_sim_hw_default(i));
  }
  if (n) fputc('\n', out);
}
