/* A table-driven option parser for input decks and command lines (after PETSc's options).
 *
 * Every option is declared once: name (Megatron-LM's argument name without the dashes), type,
 * default, allowed range or choices, and one line of help.  Sources, later overriding earlier:
 * the defaults, a deck file of `key = value` lines (`#` starts a comment), then `--key value`
 * arguments.  Underscores in keys are read as dashes.  Booleans are true/false in a deck and may
 * be bare on the command line.  Unknown keys are errors that suggest the nearest valid key.
 *
 * A choice (ENUM) is stored as the position of the value in its "a|b|c" list, so a module enum
 * whose values follow that order is the field's type (an int-sized enum); text comes back only
 * for the echo and --help.  An option may declare when it has an effect (ptdp_opt_effect): a
 * key given in a deck or on the command line that has none in the parsed configuration is
 * reported with the reason (ptdp_options_warn_unused), as PETSc reports unused options.
 *
 * An INT is written in decimal digits, with an optional sign and '_' between digits (Python's
 * int(), which Megatron's argparse uses); an exponent or a fraction is refused, naming the key,
 * since an integer read through a double loses digits past 2^53 and overflows past 2^63.
 *
 * A program's command line (ptdp_cmdline) is its own table plus the tables it shares (ptdp-sim
 * reads ptdp-train's keys, ptdp-sweep ptdp-sim's and ptdp-train's): one parser, one --help that
 * prints every table under its heading, one --version, the program's name in every message. */
#ifndef PTDP_OPTIONS_H
#define PTDP_OPTIONS_H

#include <stddef.h>
#include <stdio.h>

/* LIST: text from one or more arguments (Megatron's nargs='+': `--json-keys text title`), joined
 * by single spaces; in a deck, the text after '='. */
typedef enum {
  PTDP_OPT_INT,
  PTDP_OPT_REAL,
  PTDP_OPT_BOOL,
  PTDP_OPT_STRING,
  PTDP_OPT_ENUM,
  PTDP_OPT_LIST
} ptdp_opt_type;

/* When an option has an effect: applies(target, world) is nonzero when the parsed values (the
 * target struct) and the number of ranks make the option matter; otherwise a given option is
 * reported as "KEY is given but has no effect: WHY". */
typedef struct {
  int (*applies)(const void *target, int world);
  const char *why;
} ptdp_opt_effect;

typedef struct {
  const char *name;
  ptdp_opt_type type;
  size_t offset;       /* into the target struct: long long (INT), double (REAL), int (BOOL),
                          int or an int-sized enum (ENUM: 0 for a, 1 for b, ...),
                          char[PTDP_OPT_STRLEN] (STRING, LIST) */
  const char *deflt;   /* default, as text */
  double min, max;     /* INT and REAL: inclusive range */
  const char *choices; /* ENUM: "a|b|c" */
  const char *help;
  const ptdp_opt_effect *effect; /* NULL: the option always has an effect */
} ptdp_option;

#define PTDP_OPT_STRLEN 1024

/* Where each option's value came from (for the echo of the inputs); CHECKPOINT: use-checkpoint-args. */
typedef enum { PTDP_SRC_DEFAULT = 0, PTDP_SRC_DECK, PTDP_SRC_CMDLINE, PTDP_SRC_CHECKPOINT } ptdp_opt_source;

typedef struct {
  const ptdp_option *table;
  int count;
  void *target;
  ptdp_opt_source *source; /* per option */
  char deck[PTDP_OPT_STRLEN];
  const char *program; /* named in the unknown-key message ("ptdp-train --help lists every key"); may be NULL */
} ptdp_options;

int ptdp_options_init(ptdp_options *o, const ptdp_option *table, int count, void *target);
void ptdp_options_free(ptdp_options *o);
/* Index of a key (dashes or underscores), or -1. */
int ptdp_options_find(const ptdp_options *o, const char *key);
/* Set one option from text; where names the source for messages ("deck.in:12", "command line"). */
int ptdp_options_set(ptdp_options *o, const char *key, const char *value, ptdp_opt_source src, const char *where);
int ptdp_options_read_deck(ptdp_options *o, const char *path);
/* argv after the program name: [DECK] [--key value | --flag]...; a first argument not starting
 * with "--" is the deck.  --help/--version are not handled here (ptdp_cmdline). */
int ptdp_options_parse_args(ptdp_options *o, int argc, char **argv);
/* Whether option key was set by a deck or the command line (not its default). */
int ptdp_options_given(const ptdp_options *o, const char *key);
/* The `--help` table: key, type, default, range, meaning. */
void ptdp_options_print_help(const ptdp_options *o, FILE *out);
/* Value of option i as text (for echo); buf of PTDP_OPT_STRLEN. */
void ptdp_options_value_text(const ptdp_options *o, int i, char *buf, size_t n);
/* Nearest key by edit distance (NULL if nothing is close). */
const char *ptdp_options_suggest(const ptdp_options *o, const char *key);
/* Position of value in choices "a|b|c" (0 for a), or -1. */
int ptdp_options_choice_index(const char *choices, const char *value);
/* The text of choice number index of choices (0: a) into buf of n bytes ("" if there is none). */
void ptdp_options_choice_text(const char *choices, int index, char *buf, size_t n);
/* Print one warning line to out for each option given in the deck or on the command line whose
 * effect does not apply to the parsed values with world ranks. */
void ptdp_options_warn_unused(const ptdp_options *o, int world, FILE *out);
/* The warning line for a key given without effect, why being the reason (for effects a program
 * knows beyond its tables: ptdp-sweep varies ptdp-train's layout keys). */
void ptdp_options_warn(const char *key, const char *why, FILE *out);

/* ---- a program's command line: its own table and the tables it shares ---- */

#define PTDP_CMDLINE_GROUPS 4

typedef struct {
  const char *program;  /* "ptdp-sim": in messages, --help and --version */
  const char *synopsis; /* the usage lines --help prints above the tables */
  int deck;             /* 1: a first argument not starting with "--" is a deck (of any table's keys) */
  int abbrev;           /* 1: a unique prefix of a key stands for it (argparse's allow_abbrev, which
                           Megatron's preprocess_data.py keeps and its training arguments turn off) */
  int ngroups;
  ptdp_options *group[PTDP_CMDLINE_GROUPS]; /* searched in order: a key belongs to the first that has it */
  const char *heading[PTDP_CMDLINE_GROUPS]; /* the line above each table in --help */
} ptdp_cmdline;

typedef enum { PTDP_ASK_NOTHING = 0, PTDP_ASK_HELP, PTDP_ASK_VERSION } ptdp_cmdline_ask;

/* A command line of program with no tables yet (deck: whether a deck may come first). */
void ptdp_cmdline_init(ptdp_cmdline *c, const char *program, const char *synopsis, int deck);
/* Add a table (initialised by ptdp_options_init); heading is printed above it by --help. */
void ptdp_cmdline_add(ptdp_cmdline *c, ptdp_options *o, const char *heading);
/* The command line of a program whose keys are the one table o: ptdp_cmdline_init, then o under no heading. */
void ptdp_cmdline_single(ptdp_cmdline *c, ptdp_options *o, const char *program, const char *synopsis, int deck);
/* --help of such a program (ptdp_main's usage): the synopsis, then the table (no values are read). */
void ptdp_cmdline_print_single(const char *synopsis, const ptdp_option *table, int count, FILE *out);
/* --help (or -h) or --version anywhere among argv (after the program name). */
ptdp_cmdline_ask ptdp_cmdline_asks(int argc, char **argv);
/* --help: the synopsis, then each table under its heading. */
void ptdp_cmdline_print_help(const ptdp_cmdline *c, FILE *out);
/* --version: "PROGRAM VERSION". */
void ptdp_cmdline_print_version(const char *program, FILE *out);
/* If argv asks for --help or --version, print the answer to out (NULL: print nothing, as on the
 * ranks other than 0) and return 1; else 0. */
int ptdp_cmdline_answer(const ptdp_cmdline *c, int argc, char **argv, FILE *out);
/* argv after the program name: [DECK] [--key value | --key=value | --flag]...  Each key goes to
 * the first table that has it; an unknown key names the program and the nearest key of any table. */
int ptdp_cmdline_parse(ptdp_cmdline *c, int argc, char **argv);
int ptdp_cmdline_read_deck(ptdp_cmdline *c, const char *path);
int ptdp_cmdline_set(ptdp_cmdline *c, const char *key, const char *value, ptdp_opt_source src, const char *where);
/* The table holding key and its index there (NULL, -1: none). */
ptdp_options *ptdp_cmdline_find(const ptdp_cmdline *c, const char *key, int *index);
/* ptdp_options_warn_unused over every table, each with its own target. */
void ptdp_cmdline_warn_unused(const ptdp_cmdline *c, int world, FILE *out);

#endif
