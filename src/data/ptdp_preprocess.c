/* ptdp-preprocess: text -> Megatron indexed dataset (PREFIX_{key}_document.bin/.idx), as
 * Megatron-LM's tools/preprocess_data.py does without --split-sentences (one sequence per
 * string field, one per item of a list-of-strings field).  See ptdp-preprocess(1) for the
 * options and the input formats, ptdp-dataset(5) for the files.
 *
 * Work is done in rounds: the main thread reads the next 16 MiB of input into a window and cuts
 * the whole documents in it, W threads each encode a contiguous slice of them with their own
 * tokenizer clone, and the main thread writes the results in input order.  The output is
 * therefore the same for any W, and memory holds one window, its tokens and the tokenizers'
 * bounded word caches, whatever the size of the input. */
#include "ptdp/error.h"
#include "ptdp/indexed_dataset.h"
#include "ptdp/options.h"
#include "ptdp/tokenizer.h"
#include "preprocess.h"

#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

/* The keys, Megatron's preprocess_data.py names (input-format, skip-bad-lines and window-bytes are
 * ptdp's); --help prints this table. */
typedef struct {
  char input[PTDP_OPT_STRLEN], output_prefix[PTDP_OPT_STRLEN], tokenizer_type[PTDP_OPT_STRLEN];
  char vocab_file[PTDP_OPT_STRLEN], merge_file[PTDP_OPT_STRLEN], json_keys[PTDP_OPT_STRLEN];
  char tokenizer_model[PTDP_OPT_STRLEN];
  int text_input, append_eod, skip_bad_lines;
  long long workers, log_interval, window_bytes;
} pp_keys;

#define OFF(f) offsetof(pp_keys, f)
#define WINDOW_DEFAULT "16777216"
_Static_assert(PP_ROUND_BYTES == 16777216, "WINDOW_DEFAULT is PP_ROUND_BYTES written out");
static const ptdp_option table[] = {
  {"input", PTDP_OPT_STRING, OFF(input), "", 0, 0, NULL, "input: JSON lines, or plain text (see input-format)", NULL},
  {"output-prefix", PTDP_OPT_STRING, OFF(output_prefix), "", 0, 0, NULL,
   "writes PREFIX_{key}_document.bin and .idx", NULL},
  {"tokenizer-type", PTDP_OPT_STRING, OFF(tokenizer_type), "GPT2BPETokenizer", 0, 0, NULL,
   "GPT2BPETokenizer, ByteLevel (no files needed) or HuggingFaceTokenizer (tokenizer-model)", NULL},
  {"vocab-file", PTDP_OPT_STRING, OFF(vocab_file), "", 0, 0, NULL, "GPT-2 encoder.json (GPT2BPETokenizer)", NULL},
  {"merge-file", PTDP_OPT_STRING, OFF(merge_file), "", 0, 0, NULL, "GPT-2 vocab.bpe merges (GPT2BPETokenizer)", NULL},
  {"tokenizer-model", PTDP_OPT_STRING, OFF(tokenizer_model), "", 0, 0, NULL,
   "Hugging Face tokenizer.json, or a directory holding it (HuggingFaceTokenizer)", NULL},
  {"json-keys", PTDP_OPT_LIST, OFF(json_keys), "text", 0, 0, NULL,
   "JSON fields (strings, or lists of strings) to tokenize, one output per key: one or more arguments, "
   "or one with commas", NULL},
  {"input-format", PTDP_OPT_ENUM, OFF(text_input), "jsonl", 0, 0, "jsonl|text",
   "jsonl: one JSON object per line; text: documents are blocks of lines separated by blank lines (key name 'text')",
   NULL},
  {"append-eod", PTDP_OPT_BOOL, OFF(append_eod), "false", 0, 0, NULL,
   "append the end-of-document token to every non-empty document", NULL},
  {"skip-bad-lines", PTDP_OPT_BOOL, OFF(skip_bad_lines), "false", 0, 0, NULL,
   "skip (and count) malformed JSON lines instead of stopping", NULL},
  {"workers", PTDP_OPT_INT, OFF(workers), "1", 1, 256, NULL, "encoding threads; the output does not depend on N", NULL},
  {"log-interval", PTDP_OPT_INT, OFF(log_interval), "2", 0, 1000000, NULL,
   "seconds between progress lines on stderr (0: none)", NULL},
  {"window-bytes", PTDP_OPT_INT, OFF(window_bytes), WINDOW_DEFAULT, 1, 1LL << 40, NULL,
   "input bytes read per round; grows only to hold one longer document", NULL},
};
#define NOPT ((int)(sizeof table / sizeof table[0]))

static const char synopsis[] =
  "usage: ptdp-preprocess --input FILE --output-prefix PREFIX [--key value ...]\n"
  "       ptdp-preprocess --help | --version\n\n"
  "Tokenize documents into a Megatron-LM indexed dataset (MMIDIDX .bin/.idx).  The keys are\n"
  "preprocess_data.py's, and as there a unique prefix of a key stands for it (--output);\n"
  "booleans may be given bare (--append-eod).\n\n";

/* Split json-keys on commas and spaces. */
static int parse_keys(pp_args *a, const char *s)
{
  a->nkeys = 0;
  while (*s) {
    while (*s == ',' || *s == ' ') s++;
    size_t n = strcspn(s, ", ");
    if (!n) break;
    PTDP_CHECK(a->nkeys < PP_MAX_KEYS, "--json-keys: at most %d keys", PP_MAX_KEYS);
    PTDP_CHECK(n < sizeof a->keys[0], "--json-keys: key '%.*s' is too long", (int)n, s);
    memcpy(a->keys[a->nkeys], s, n);
    a->keys[a->nkeys++][n] = '\0';
    s += n;
  }
  PTDP_CHECK(a->nkeys > 0, "--json-keys needs at least one key");
  return 0;
}

/* pp_args from the parsed keys k (which it points into). */
static int to_args(const pp_keys *k, pp_args *a)
{
  PTDP_CHECK(k->input[0], "--input FILE is required (see --help)");
  PTDP_CHECK(k->output_prefix[0], "--output-prefix PREFIX is required (see --help)");
  memset(a, 0, sizeof *a);
  a->input = k->input;
  a->output_prefix = k->output_prefix;
  a->tokenizer_type = k->tokenizer_type;
  a->vocab_file = k->vocab_file[0] ? k->vocab_file : NULL;
  a->merge_file = k->merge_file[0] ? k->merge_file : NULL;
  a->model_file = k->tokenizer_model[0] ? k->tokenizer_model : NULL;
  a->text_input = k->text_input;
  a->append_eod = k->append_eod;
  a->skip_bad_lines = k->skip_bad_lines;
  a->workers = (int)k->workers;
  a->log_interval = (int)k->log_interval;
  a->window_bytes = (long)k->window_bytes;
  PTDP_CALL(parse_keys(a, k->text_input ? "text" : k->json_keys)); /* text input: one key named text */
  return 0;
}

/* argv into k and a; *done when --help or --version answered. */
static int parse_args(int argc, char **argv, pp_keys *k, pp_args *a, int *done)
{
  ptdp_options o;
  ptdp_cmdline c;
  memset(k, 0, sizeof *k);
  PTDP_CALL(ptdp_options_init(&o, table, NOPT, k));
  ptdp_cmdline_single(&c, &o, "ptdp-preprocess", synopsis, 0);
  c.abbrev = 1; /* preprocess_data.py's argparse takes --output for --output-prefix */
  *done = ptdp_cmdline_answer(&c, argc - 1, argv + 1, stdout);
  int err = *done ? 0 : ptdp_cmdline_parse(&c, argc - 1, argv + 1);
  ptdp_options_free(&o);
  PTDP_CALL(err);
  return *done ? 0 : to_args(k, a);
}

static double now(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* The input, read through a window of --window-bytes (16 MiB) that grows only to hold one
 * document longer than that: memory does not depend on the input's size, and pipes work too. */
typedef struct {
  const char *path;
  int fd, eof;
  unsigned char *buf;
  size_t cap, len, pos; /* buf[pos..len) is read but not yet cut into documents */
  long long total;      /* bytes read */
} pp_input;

static int input_open(pp_input *in, const char *path, size_t window)
{
  memset(in, 0, sizeof *in);
  in->path = path;
  in->fd = open(path, O_RDONLY);
  PTDP_CHECK_IO(in->fd >= 0, "cannot open input '%s': %s", path, strerror(errno));
  in->cap = window;
  in->buf = malloc(in->cap);
  PTDP_CHECK(in->buf, "out of memory for the input window");
  return 0;
}

static void input_close(pp_input *in)
{
  if (in->path && in->fd >= 0) close(in->fd);
  free(in->buf);
  memset(in, 0, sizeof *in);
}

/* Keep the uncut bytes (move them to the front, growing the window when they fill it) and
 * read until the window is full or the input ends. */
static int input_refill(pp_input *in)
{
  if (in->pos == 0 && in->len == in->cap) { /* one document fills the window */
    unsigned char *b = realloc(in->buf, 2 * in->cap);
    PTDP_CHECK(b, "out of memory: a document of over %zu bytes", in->cap);
    in->buf = b;
    in->cap *= 2;
  }
  memmove(in->buf, in->buf + in->pos, in->len - in->pos);
  in->len -= in->pos;
  in->pos = 0;
  while (in->len < in->cap && !in->eof) {
    ssize_t r = read(in->fd, in->buf + in->len, in->cap - in->len);
    if (r < 0 && errno == EINTR) continue;
    PTDP_CHECK_IO(r >= 0, "cannot read input '%s': %s", in->path, strerror(errno));
    if (r == 0) in->eof = 1;
    in->len += (size_t)r;
    in->total += r;
  }
  return 0;
}

/* Peak resident memory of this process so far, in MB (Linux reports ru_maxrss in kB). */
static double peak_rss_mb(void)
{
  struct rusage ru;
  return getrusage(RUSAGE_SELF, &ru) == 0 ? (double)ru.ru_maxrss / 1024.0 : 0.0;
}

static void *worker_main(void *p)
{
  pp_slice *s = p;
  s->rc = pp_encode_slice(s);
  return NULL;
}

/* Encode the round's documents in threads, slice t being documents [ndocs*t/W, ndocs*(t+1)/W),
 * and write them in input order. */
static int encode_round(pp_state *st, int workers, size_t ndocs)
{
  pthread_t th[256];
  int nth = workers < (int)ndocs ? workers : (int)ndocs;
  for (int t = 0; t < nth; t++) {
    st->slices[t].d0 = ndocs * (size_t)t / (size_t)nth;
    st->slices[t].d1 = ndocs * (size_t)(t + 1) / (size_t)nth;
  }
  for (int t = 1; t < nth; t++)
    if (pthread_create(&th[t], NULL, worker_main, &st->slices[t]) != 0) {
      for (int u = 1; u < t; u++) pthread_join(th[u], NULL);
      return PTDP_FAIL(PTDP_ERR_LIB, "cannot start worker thread %d", t);
    }
  worker_main(&st->slices[0]);
  for (int t = 1; t < nth; t++) pthread_join(th[t], NULL);
  PTDP_CALL(pp_write_round(st, nth));
  return 0;
}

/* Rounds: refill the window, cut the whole documents in it, encode and write them. */
static int process(pp_state *st, pp_input *in, double t0)
{
  const pp_args *a = st->a;
  double last_log = t0;
  int stalled = 1; /* nothing cut since the last refill */
  while (1) {
    if (!in->eof || stalled) PTDP_CALL(input_refill(in));
    if (in->pos == in->len && in->eof) break;
    size_t ndocs = 0, pos = pp_cut_round(st, in->buf, in->len, in->pos, in->eof, &ndocs);
    stalled = pos == in->pos;
    in->pos = pos;
    if (ndocs) PTDP_CALL(encode_round(st, a->workers, ndocs));
    double tn = now();
    if (a->log_interval > 0 && tn - last_log >= a->log_interval) {
      double mb = (double)(in->total - (long long)(in->len - in->pos)) / 1e6;
      fprintf(stderr, "ptdp-preprocess: %lld documents, %.1f MB read, %.2f MB/s, peak RSS %.0f MB\n",
              (long long)st->docs_done, mb, mb / (tn - t0), peak_rss_mb());
      last_log = tn;
    }
  }
  PTDP_CHECK(in->total > 0, "input '%s' is empty", a->input);
  PTDP_CHECK(st->docs_done > 0, "input '%s' holds no documents%s", a->input,
             st->bad_lines ? " (every line was bad)" : "");
  return 0;
}

static int run(const pp_args *a)
{
  double t0 = now();
  ptdp_tokenizer *tok;
  PTDP_CALL(ptdp_tokenizer_create(&tok, a->tokenizer_type, a->vocab_file, a->merge_file, a->model_file));
  pp_input in;
  int rc = input_open(&in, a->input, (size_t)a->window_bytes);
  pp_state st;
  memset(&st, 0, sizeof st);
  if (!rc) rc = pp_state_create(&st, a, tok);
  if (!rc) rc = process(&st, &in, t0);
  if (!rc) rc = pp_state_finish(&st);
  double dt = now() - t0;
  if (!rc)
    fprintf(stderr,
            "ptdp-preprocess: wrote %lld documents, %lld tokens (%s, vocab %d, dtype %s) to %s_%s_document.{bin,idx}%s "
            "in %.2f s: %.2f MB/s, %.0f tokens/s, peak RSS %.0f MB%s\n",
            (long long)st.docs_done, (long long)st.tokens_done, ptdp_tokenizer_type_name(tok),
            ptdp_tokenizer_vocab_size(tok), ptdp_mmidx_dtype_name(st.dtype), a->output_prefix, a->keys[0],
            a->nkeys > 1 ? " (and other keys)" : "", dt, (double)in.total / 1e6 / dt, (double)st.tokens_done / dt,
            peak_rss_mb(), st.bad_lines ? "; skipped bad lines" : "");
  if (!rc && st.bad_lines) fprintf(stderr, "ptdp-preprocess: skipped %lld bad lines\n", (long long)st.bad_lines);
  if (st.a) pp_state_destroy(&st); /* aborts (removes temporaries) if not finished */
  input_close(&in);
  ptdp_tokenizer_destroy(&tok);
  return rc;
}

int main(int argc, char **argv)
{
  static pp_keys k; /* a's strings point into it; static: some 6 KiB of text */
  pp_args a;
  int done;
  if (parse_args(argc, argv, &k, &a, &done)) return 2; /* a usage error, as argparse's exit status */
  return done ? 0 : run(&a) ? 1 : 0;
}
