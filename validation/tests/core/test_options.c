/* Unit test of the option parser (ptdp/options.h) and ptdp-train's key table (ptdp/args.h), 1 rank:
 *   choices "a|b|c" map to their positions and back, at the ends of the list and past them;
 *   an ENUM option stores the position of its choice in an int-sized enum field (the default
 *   too), echoes the text, and refuses a value not in the list with a message naming the choices;
 *   every choice of every ENUM key of ptdp-train round-trips, and the named keys land on the
 *   module enums (schedule, grid order, recompute, lr decay, flat dtype, tokenizer, backend);
 *   the "given but has no effect" warnings come from the table: only for keys given, only when
 *   the effect does not apply, with the reason;
 *   integers are read as integers, never through a double: Python int()'s spellings (sign, '_' between
 *   digits) are taken, the ends of long long exactly, one past them refused, and an exponent or
 *   a fraction refused with a message naming the key (1e22 and 1e232 went through a double);
 *   a program's command line (ptdp_cmdline) sends each key to the table that has it, reads a
 *   deck of keys of both tables, suggests the nearest key of any table, names its program, and
 *   takes a list key's several arguments. */
#include "ptdp/args.h"
#include "ptdp/backend.h"
#include "ptdp/error.h"
#include "ptdp/options.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../expect.h"

typedef enum { COLOUR_RED, COLOUR_GREEN, COLOUR_BLUE } colour;
typedef struct {
  long long count, big;
  colour c;
  int flag;
  char name[PTDP_OPT_STRLEN];
} toy;

/* count has an effect only with flag set */
static int flag_set(const void *t, int world) { return ((const toy *)t)->flag; }
static const ptdp_opt_effect if_flag = {flag_set, "flag is false"};

static const ptdp_option toy_table[] = {
  {"count", PTDP_OPT_INT, offsetof(toy, count), "3", 0, 10, NULL, "a count", &if_flag},
  {"colour", PTDP_OPT_ENUM, offsetof(toy, c), "green", 0, 0, "red|green|blue", "a colour", NULL},
  {"flag", PTDP_OPT_BOOL, offsetof(toy, flag), "false", 0, 0, NULL, "a flag", NULL},
  {"name", PTDP_OPT_STRING, offsetof(toy, name), "", 0, 0, NULL, "a name", NULL},
  {"big", PTDP_OPT_INT, offsetof(toy, big), "0", -9223372036854775808.0, 9223372036854775807.0, NULL, "any", NULL},
};
#define NTOY ((int)(sizeof toy_table / sizeof toy_table[0]))

static void check_choices(void)
{
  const char *ch = "red|green|blue";
  EXPECT(ptdp_options_choice_index(ch, "red") == 0 && ptdp_options_choice_index(ch, "green") == 1 &&
             ptdp_options_choice_index(ch, "blue") == 2,
         "choice positions");
  EXPECT(ptdp_options_choice_index(ch, "gree") == -1 && ptdp_options_choice_index(ch, "") == -1 &&
             ptdp_options_choice_index(ch, "red|green") == -1 && ptdp_options_choice_index(ch, "Blue") == -1,
         "non-choices refused");
  EXPECT(ptdp_options_choice_index("one", "one") == 0, "a single choice");
  char buf[64];
  const char *want[] = {"red", "green", "blue"};
  for (int k = 0; k < 3; k++) {
    ptdp_options_choice_text(ch, k, buf, sizeof buf);
    EXPECT(strcmp(buf, want[k]) == 0, "choice %d is '%s', got '%s'", k, want[k], buf);
  }
  ptdp_options_choice_text(ch, 3, buf, sizeof buf);
  EXPECT(buf[0] == '\0', "past the last choice: empty, got '%s'", buf);
  ptdp_options_choice_text(ch, -1, buf, sizeof buf);
  EXPECT(buf[0] == '\0', "negative choice: empty, got '%s'", buf);
}

/* The warnings ptdp_options_warn_unused prints, as one string. */
static void warnings(const ptdp_options *o, int world, char *buf, size_t n)
{
  FILE *f = tmpfile();
  ptdp_options_warn_unused(o, world, f);
  rewind(f);
  size_t got = fread(buf, 1, n - 1, f);
  buf[got] = '\0';
  fclose(f);
}

static void check_toy(void)
{
  toy t;
  ptdp_options o;
  memset(&t, 0, sizeof t);
  EXPECT(ptdp_options_init(&o, toy_table, NTOY, &t) == 0, "init");
  EXPECT(t.c == COLOUR_GREEN && t.count == 3, "defaults: colour %d, count %lld", (int)t.c, t.count);
  char w[1024], v[PTDP_OPT_STRLEN];
  warnings(&o, 1, w, sizeof w);
  EXPECT(w[0] == '\0', "defaults give no warning, got '%s'", w);
  EXPECT(ptdp_options_set(&o, "colour", "blue", PTDP_SRC_CMDLINE, "command line") == 0 && t.c == COLOUR_BLUE,
         "colour = blue stores %d", (int)t.c);
  ptdp_options_value_text(&o, ptdp_options_find(&o, "colour"), v, sizeof v);
  EXPECT(strcmp(v, "blue") == 0, "echo of colour: '%s'", v);
  ptdp_error_set_quiet(1);
  ptdp_error_clear();
  int rc = ptdp_options_set(&o, "colour", "purple", PTDP_SRC_CMDLINE, "command line");
  EXPECT(rc == PTDP_ERR_INPUT && t.c == COLOUR_BLUE, "colour = purple refused (rc %d), value kept", rc);
  EXPECT(strstr(ptdp_error_message(), "invalid value 'purple' for colour (command line): expected one of red|green|blue"),
         "message lists the choices: '%s'", ptdp_error_message());
  ptdp_error_clear();
  ptdp_error_set_quiet(0);

  /* count given while flag is false: a warning with the table's reason; then flag makes it count */
  EXPECT(ptdp_options_set(&o, "count", "5", PTDP_SRC_DECK, "deck") == 0, "count = 5");
  warnings(&o, 1, w, sizeof w);
  EXPECT(strcmp(w, "ptdp: warning: count is given but has no effect: flag is false\n") == 0, "warning: '%s'", w);
  EXPECT(ptdp_options_set(&o, "flag", "true", PTDP_SRC_CMDLINE, "command line") == 0, "flag = true");
  warnings(&o, 1, w, sizeof w);
  EXPECT(w[0] == '\0', "count with flag: no warning, got '%s'", w);
  ptdp_options_free(&o);
}

/* set key = value in o; rc and the message (empty on success) */
static int try_set(ptdp_options *o, const char *key, const char *value, char *msg, size_t n)
{
  ptdp_error_set_quiet(1);
  ptdp_error_clear();
  const int rc = ptdp_options_set(o, key, value, PTDP_SRC_DECK, "d.in line 1");
  snprintf(msg, n, "%s", rc ? ptdp_error_message() : "");
  ptdp_error_clear();
  ptdp_error_set_quiet(0);
  return rc;
}

static void check_integers(void)
{
  toy t;
  ptdp_options o;
  char m[1024];
  memset(&t, 0, sizeof t);
  EXPECT(ptdp_options_init(&o, toy_table, NTOY, &t) == 0, "init");
  const struct {
    const char *text;
    long long want;
  } good[] = {{"0", 0}, {"-0", 0}, {"+7", 7}, {"40_000_000", 40000000}, {"-12", -12},
              {"9223372036854775807", 9223372036854775807LL}, {"-9223372036854775808", -9223372036854775807LL - 1},
              {"007", 7}};
  for (size_t k = 0; k < sizeof good / sizeof good[0]; k++)
    EXPECT(try_set(&o, "big", good[k].text, m, sizeof m) == 0 && t.big == good[k].want, "big = %s reads %lld (%s)",
           good[k].text, t.big, m);
  /* not integers as int() reads them: refused, value kept */
  const char *bad[] = {"1e3", "2.0", "1_", "_1", "1__0", "0x10", "", "-", "1 2", "12a", "inf", "nan", "--1"};
  for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
    t.big = 99;
    EXPECT(try_set(&o, "big", bad[k], m, sizeof m) == PTDP_ERR_INPUT && t.big == 99 &&
               strstr(m, "for big (d.in line 1): expected an integer in"),
           "big = '%s' refused naming the key: '%s'", bad[k], m);
  }
  EXPECT(try_set(&o, "big", "9223372036854775808", m, sizeof m) == PTDP_ERR_INPUT && strstr(m, "beyond 64 bits"),
         "2^63 refused as beyond 64 bits: '%s'", m);
  EXPECT(try_set(&o, "big", "-9223372036854775809", m, sizeof m) == PTDP_ERR_INPUT && strstr(m, "beyond 64 bits"),
         "-2^63 - 1 refused as beyond 64 bits: '%s'", m);
  /* 2^64 + 1 wraps to 1 in 64-bit arithmetic: the digits must be checked as they accumulate */
  EXPECT(try_set(&o, "big", "18446744073709551617", m, sizeof m) == PTDP_ERR_INPUT && strstr(m, "beyond 64 bits"),
         "2^64 + 1 refused as beyond 64 bits, not wrapped to 1: '%s'", m);
  /* inputs once read through a double: a double's range, then the hint for a whole number written with an exponent */
  EXPECT(try_set(&o, "count", "1e22", m, sizeof m) == PTDP_ERR_INPUT &&
             strstr(m, "invalid value '1e22' for count (d.in line 1): expected an integer in [0, 10] (an integer key "
                       "takes digits, not an exponent or a fraction)"),
         "count = 1e22: '%s'", m);
  EXPECT(try_set(&o, "count", "1e232", m, sizeof m) == PTDP_ERR_INPUT && strstr(m, "not an exponent"),
         "count = 1e232: '%s'", m);
  EXPECT(try_set(&o, "count", "1e1", m, sizeof m) == PTDP_ERR_INPUT && strstr(m, "fraction: write 10)"),
         "count = 1e1 suggests 10: '%s'", m);
  EXPECT(try_set(&o, "count", "2.5", m, sizeof m) == PTDP_ERR_INPUT && !strstr(m, "write"),
         "count = 2.5 suggests nothing: '%s'", m);
  EXPECT(try_set(&o, "count", "11", m, sizeof m) == PTDP_ERR_INPUT && strstr(m, "value 11 for count (d.in line 1) is out of range [0, 10]"),
         "count = 11 out of range: '%s'", m);
  ptdp_options_free(&o);
}

/* A second program's own table, shared with the toy's: a list key and a bool. */
typedef struct {
  char keys[PTDP_OPT_STRLEN];
  int verbose;
} prog;
static const ptdp_option prog_table[] = {
  {"json-keys", PTDP_OPT_LIST, offsetof(prog, keys), "text", 0, 0, NULL, "keys", NULL},
  {"verbose", PTDP_OPT_BOOL, offsetof(prog, verbose), "false", 0, 0, NULL, "talk", NULL},
};

/* parse argv with the toy and prog tables under program "ptdp-toy"; rc and message */
static int parse_both(toy *t, prog *p, int argc, const char **argv, char *msg, size_t n)
{
  ptdp_options ot, op;
  ptdp_cmdline c;
  memset(t, 0, sizeof *t);
  memset(p, 0, sizeof *p);
  EXPECT(ptdp_options_init(&op, prog_table, 2, p) == 0 && ptdp_options_init(&ot, toy_table, NTOY, t) == 0, "init");
  ptdp_cmdline_init(&c, "ptdp-toy", "usage: ptdp-toy\n", 1);
  ptdp_cmdline_add(&c, &op, "ptdp-toy's keys:");
  ptdp_cmdline_add(&c, &ot, "the toy's keys:");
  ptdp_error_set_quiet(1);
  ptdp_error_clear();
  const int rc = ptdp_cmdline_parse(&c, argc, (char **)argv);
  snprintf(msg, n, "%s", rc ? ptdp_error_message() : "");
  ptdp_error_clear();
  ptdp_error_set_quiet(0);
  ptdp_options_free(&ot);
  ptdp_options_free(&op);
  return rc;
}

static void check_cmdline(void)
{
  toy t;
  prog p;
  char m[1024];
  const char *path = "test_options_deck.in";
  FILE *f = fopen(path, "w");
  fprintf(f, "count = 4  # the toy's\njson_keys = a b\n");
  fclose(f);
  const char *mixed[] = {path, "--colour", "red", "--verbose", "--json-keys", "text", "title", "--flag", "false"};
  EXPECT(parse_both(&t, &p, 9, mixed, m, sizeof m) == 0 && t.count == 4 && t.c == COLOUR_RED && p.verbose &&
             !strcmp(p.keys, "text title") && !t.flag,
         "a deck and flags of both tables: count %lld colour %d verbose %d keys '%s' flag %d (%s)", t.count, (int)t.c,
         p.verbose, p.keys, t.flag, m);
  const char *deck_only[] = {path};
  EXPECT(parse_both(&t, &p, 1, deck_only, m, sizeof m) == 0 && !strcmp(p.keys, "a b"), "a deck's list: '%s'", p.keys);
  const char *typo[] = {"--json-key", "x"};
  EXPECT(parse_both(&t, &p, 2, typo, m, sizeof m) == PTDP_ERR_INPUT &&
             strstr(m, "unknown key 'json-key' (command line); did you mean 'json-keys'? (ptdp-toy --help lists every key)"),
         "a typo of the first table's key: '%s'", m);
  const char *typo2[] = {"--colur", "red"};
  EXPECT(parse_both(&t, &p, 2, typo2, m, sizeof m) == PTDP_ERR_INPUT && strstr(m, "did you mean 'colour'? (ptdp-toy"),
         "a typo of the second table's key: '%s'", m);
  const char *far[] = {"--frobnicate", "1"};
  EXPECT(parse_both(&t, &p, 2, far, m, sizeof m) == PTDP_ERR_INPUT &&
             strstr(m, "unknown key 'frobnicate' (command line); ptdp-toy --help lists every key"),
         "no close key: '%s'", m);
  const char *empty_list[] = {"--json-keys", "--verbose"};
  EXPECT(parse_both(&t, &p, 2, empty_list, m, sizeof m) == PTDP_ERR_INPUT && strstr(m, "key 'json-keys' (command line) needs a value"),
         "a list key without values: '%s'", m);
  const char *stray[] = {"--count", "1", "2"};
  EXPECT(parse_both(&t, &p, 3, stray, m, sizeof m) == PTDP_ERR_INPUT && strstr(m, "unexpected argument '2'"),
         "a stray argument: '%s'", m);
  const char *helpv[] = {"--count", "1", "-h"}, *ver[] = {"--version"}, *neither[] = {"--count", "1"};
  EXPECT(ptdp_cmdline_asks(3, (char **)helpv) == PTDP_ASK_HELP && ptdp_cmdline_asks(1, (char **)ver) == PTDP_ASK_VERSION &&
             ptdp_cmdline_asks(2, (char **)neither) == PTDP_ASK_NOTHING,
         "--help, -h and --version found anywhere");
  remove(path);
}

/* Parse ptdp-train's keys from a command line (a deck-less argv). */
static int parse(ptdp_args *a, ptdp_options *o, int argc, const char **argv)
{
  return ptdp_args_parse(a, o, argc, (char **)argv);
}

static void check_args_enums(void)
{
  ptdp_args a;
  ptdp_options o;
  const char *none[] = {"--train-iters", "1"};
  EXPECT(parse(&a, &o, 2, none) == 0, "parse defaults");
  EXPECT(a.lr_decay_style == PTDP_LR_COSINE && a.pipeline_schedule == PTDP_SCHED_1F1B &&
             a.parallel_order == PTDP_ORDER_TP_DP_PP && a.recompute_granularity == PTDP_RECOMPUTE_NONE &&
             a.recompute_method == PTDP_RECOMPUTE_UNIFORM && a.flat_data_dtype == PTDP_FLAT_UINT16 &&
             a.tokenizer_type == PTDP_TOKENIZER_GPT2BPE && a.backend == PTDP_BACKEND_CPU,
         "default choices land on the module enums");
  /* every choice of every ENUM key: stored as its position, echoed as its text */
  int nenum = 0;
  for (int i = 0; i < o.count; i++) {
    const ptdp_option *op = &o.table[i];
    if (op->type != PTDP_OPT_ENUM) continue;
    nenum++;
    char c[PTDP_OPT_STRLEN], v[PTDP_OPT_STRLEN];
    for (int k = 0;; k++) {
      ptdp_options_choice_text(op->choices, k, c, sizeof c);
      if (!c[0]) break;
      EXPECT(ptdp_options_set(&o, op->name, c, PTDP_SRC_CMDLINE, "command line") == 0, "%s = %s", op->name, c);
      EXPECT(*(const int *)((const char *)&a + op->offset) == k, "%s = %s stores %d", op->name, c, k);
      ptdp_options_value_text(&o, i, v, sizeof v);
      EXPECT(strcmp(v, c) == 0, "%s echoes '%s' for '%s'", op->name, v, c);
    }
  }
  /* attention-backend, normalization and position-embedding-type joined the first ten; the
   * mixture of experts' moe-router-score-function, moe-router-load-balancing-type and
   * moe-router-dtype made sixteen */
  EXPECT(nenum == 16, "16 choice keys, found %d", nenum);
  ptdp_options_free(&o);

  const char *named[] = {"--lr-decay-style", "linear", "--pipeline-schedule", "gpipe", "--parallel-order",
                         "tp-pp-dp", "--recompute-granularity", "selective", "--recompute-method", "block",
                         "--flat-data-dtype", "int32", "--tokenizer-type", "ByteLevel", "--backend", "guard",
                         "--exit-signal", "SIGUSR1"};
  EXPECT(parse(&a, &o, 18, named) == 0, "parse named choices");
  EXPECT(a.exit_signal == PTDP_EXIT_SIGUSR1, "exit-signal = SIGUSR1 lands on the enum");
  EXPECT(a.lr_decay_style == PTDP_LR_LINEAR && a.pipeline_schedule == PTDP_SCHED_GPIPE &&
             a.parallel_order == PTDP_ORDER_TP_PP_DP && a.recompute_granularity == PTDP_RECOMPUTE_SELECTIVE &&
             a.recompute_method == PTDP_RECOMPUTE_BLOCK && a.flat_data_dtype == PTDP_FLAT_INT32 &&
             a.tokenizer_type == PTDP_TOKENIZER_BYTE_LEVEL && a.backend == PTDP_BACKEND_GUARD,
         "named choices land on the module enums");
  ptdp_options_free(&o);

  ptdp_error_set_quiet(1);
  ptdp_error_clear();
  const char *bad[] = {"--backend", "tpu"};
  EXPECT(parse(&a, &o, 2, bad) == PTDP_ERR_INPUT, "backend = tpu refused");
  EXPECT(strstr(ptdp_error_message(), "invalid value 'tpu' for backend (command line): expected one of cpu|guard|cuda"),
         "message lists the backends: '%s'", ptdp_error_message());
  ptdp_options_free(&o);
  ptdp_error_clear();
  /* the backend layer refuses the same name with the same list (the names are written once) */
  ptdp_backend *be = NULL;
  EXPECT(ptdp_backend_create("tpu", NULL, &be) == PTDP_ERR_INPUT && !be &&
             strstr(ptdp_error_message(), "unknown backend 'tpu': the backends are cpu|guard|cuda"),
         "ptdp_backend_create lists the backends: '%s'", ptdp_error_message());
  ptdp_error_clear();
  ptdp_error_set_quiet(0);
}

static void check_args_warnings(void)
{
  ptdp_args a;
  ptdp_options o;
  char w[4096];
  FILE *f;
  const char *sp[] = {"--sequence-parallel", "--recompute-method", "block", "--lr-decay-style", "constant",
                      "--min-lr", "0"};
  /* world 1 (t = p = d = 1): sequence-parallel, recompute-method and min-lr have no effect;
   * lr-decay-style is given too, but always has one */
  EXPECT(parse(&a, &o, 7, sp) == 0, "parse warning case");
  f = tmpfile();
  ptdp_args_warn_unused(&o, &a, 1, f);
  rewind(f);
  w[fread(w, 1, sizeof w - 1, f)] = '\0';
  fclose(f);
  EXPECT(strstr(w, "ptdp: warning: sequence-parallel is given but has no effect: tensor-model-parallel-size is 1\n") &&
             strstr(w, "ptdp: warning: recompute-method is given but has no effect: recompute-granularity is not full\n") &&
             strstr(w, "ptdp: warning: min-lr is given but has no effect: lr-decay-style is constant\n") &&
             !strstr(w, "lr-decay-style is given") && !strstr(w, "lr-decay-iters"),
         "warnings for world 1: '%s'", w);
  ptdp_options_free(&o);

  /* t = 2 on 2 ranks: sequence-parallel has an effect; nothing else is given */
  const char *tp[] = {"--sequence-parallel", "--tensor-model-parallel-size", "2"};
  EXPECT(parse(&a, &o, 3, tp) == 0, "parse t = 2");
  f = tmpfile();
  ptdp_args_warn_unused(&o, &a, 2, f);
  EXPECT(ftell(f) == 0, "no warning with t = 2");
  fclose(f);
  ptdp_options_free(&o);
}

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  check_choices();
  check_toy();
  check_integers();
  check_cmdline();
  check_args_enums();
  check_args_warnings();
  int status = expect_summary("test_options");
  MPI_Finalize();
  return status;
}
