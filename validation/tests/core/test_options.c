/* Unit test of the option parser (ptdp/options.h) and ptdp-train's key table (ptdp/args.h), 1 rank:
 *   choices "a|b|c" map to their positions and back, at the ends of the list and past them;
 *   an ENUM option stores the position of its choice in an int-sized enum field (the default
 *   too), echoes the text, and refuses a value not in the list with a message naming the choices;
 *   every choice of every ENUM key of ptdp-train round-trips, and the named keys land on the
 *   module enums (schedule, grid order, recompute, lr decay, flat dtype, tokenizer, backend);
 *   the "given but has no effect" warnings come from the table: only for keys given, only when
 *   the effect does not apply, with the reason. */
#include "ptdp/args.h"
#include "ptdp/error.h"
#include "ptdp/options.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../expect.h"

typedef enum { COLOUR_RED, COLOUR_GREEN, COLOUR_BLUE } colour;
typedef struct {
  long long count;
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
};

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
  EXPECT(ptdp_options_init(&o, toy_table, 4, &t) == 0, "init");
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
  EXPECT(nenum == 10, "10 choice keys, found %d", nenum);
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
  check_args_enums();
  check_args_warnings();
  printf("test_options: %d checks passed, %d failed\n", n_pass, n_fail);
  MPI_Finalize();
  return n_fail ? 1 : 0;
}
