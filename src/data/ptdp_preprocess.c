/* ptdp-preprocess: text -> Megatron indexed dataset (PREFIX_{key}_document.bin/.idx), as
 * Megatron-LM's tools/preprocess_data.py does without --split-sentences (one sequence per
 * string field, one per item of a list-of-strings field).  See README, "ptdp-preprocess", for
 * the options and the input formats.
 *
 * Work is done in rounds: the main thread reads the next 16 MiB of input into a window and cuts
 * the whole documents in it, W threads each encode a contiguous slice of them with their own
 * tokenizer clone, and the main thread writes the results in input order.  The output is
 * therefore the same for any W, and memory holds one window, its tokens and the tokenizers'
 * bounded word caches, whatever the size of the input. */
#include "ptdp/error.h"
#include "ptdp/indexed_dataset.h"
#include "ptdp/tokenizer.h"
#include "preprocess.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

/* One option: name, argument, default, help.  --help prints this table. */
typedef struct {
  const char *name, *arg, *def, *help;
} opt_doc;

static const opt_doc opt_docs[] = {
    {"input", "FILE", NULL, "input: JSON lines, or plain text (see --input-format)"},
    {"output-prefix", "PREFIX", NULL, "writes PREFIX_{key}_document.bin and .idx"},
    {"tokenizer-type", "NAME", "GPT2BPETokenizer", "GPT2BPETokenizer or ByteLevel (no files needed)"},
    {"vocab-file", "FILE", NULL, "GPT-2 encoder.json (GPT2BPETokenizer)"},
    {"merge-file", "FILE", NULL, "GPT-2 vocab.bpe merges (GPT2BPETokenizer)"},
    {"json-keys", "K[,K...]", "text", "JSON fields (strings, or lists of strings) to tokenize, one output per key"},
    {"input-format", "jsonl|text", "jsonl", "jsonl: one JSON object per line; text: documents are blocks "
                                            "of lines separated by blank lines (key name 'text')"},
    {"append-eod", NULL, "off", "append the end-of-document token to every non-empty document"},
    {"skip-bad-lines", NULL, "off", "skip (and count) malformed JSON lines instead of stopping"},
    {"workers", "N", "1", "encoding threads; the output does not depend on N"},
    {"log-interval", "SECONDS", "2", "seconds between progress lines on stderr (0: none)"},
    {"window-bytes", "N", "16777216", "input bytes read per round; grows only to hold one longer document"},
    {"help", NULL, NULL, "print this help and exit"},
};

static void usage(FILE *f)
{
  fprintf(f, "usage: ptdp-preprocess --input FILE --output-prefix PREFIX [options]\n"
             "Tokenize documents into a Megatron-LM indexed dataset (MMIDIDX .bin/.idx).\n\noptions:\n");
  for (size_t i = 0; i < sizeof opt_docs / sizeof opt_docs[0]; i++) {
    char left[64];
    snprintf(left, sizeof left, "--%s%s%s", opt_docs[i].name, opt_docs[i].arg ? " " : "",
             opt_docs[i].arg ? opt_docs[i].arg : "");
    fprintf(f, "  %-32s %s", left, opt_docs[i].help);
    if (opt_docs[i].def) fprintf(f, " [default: %s]", opt_docs[i].def);
    fprintf(f, "\n");
  }
}

static int parse_int(const char *s, const char *opt, long lo, long hi, long *v)
{
  char *end;
  errno = 0;
  *v = strtol(s, &end, 10);
  PTDP_CHECK(!errno && end != s && !*end && *v >= lo && *v <= hi, "--%s wants an integer in [%ld, %ld], got '%s'", opt,
             lo, hi, s);
  return 0;
}

/* Split --json-keys on commas and spaces. */
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

static int parse_args(int argc, char **argv, pp_args *a, int *help)
{
  static const struct option longopts[] = {
      {"input", required_argument, 0, 'i'},       {"output-prefix", required_argument, 0, 'o'},
      {"tokenizer-type", required_argument, 0, 't'}, {"vocab-file", required_argument, 0, 'v'},
      {"merge-file", required_argument, 0, 'm'},  {"json-keys", required_argument, 0, 'k'},
      {"input-format", required_argument, 0, 'f'}, {"append-eod", no_argument, 0, 'e'},
      {"skip-bad-lines", no_argument, 0, 's'},    {"workers", required_argument, 0, 'w'},
      {"log-interval", required_argument, 0, 'l'}, {"window-bytes", required_argument, 0, 'b'},
      {"help", no_argument, 0, 'h'},
      {0, 0, 0, 0}};
  memset(a, 0, sizeof *a);
  a->tokenizer_type = "GPT2BPETokenizer";
  a->workers = 1;
  a->log_interval = 2;
  a->window_bytes = (long)PP_ROUND_BYTES;
  strcpy(a->keys[0], "text");
  a->nkeys = 1;
  *help = 0;
  opterr = 0;
  int c;
  long v;
  while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
    switch (c) {
    case 'i': a->input = optarg; break;
    case 'o': a->output_prefix = optarg; break;
    case 't': a->tokenizer_type = optarg; break;
    case 'v': a->vocab_file = optarg; break;
    case 'm': a->merge_file = optarg; break;
    case 'k': PTDP_CALL(parse_keys(a, optarg)); break;
    case 'f':
      PTDP_CHECK(!strcmp(optarg, "jsonl") || !strcmp(optarg, "text"), "--input-format is jsonl or text, not '%s'", optarg);
      a->text_input = !strcmp(optarg, "text");
      break;
    case 'e': a->append_eod = 1; break;
    case 's': a->skip_bad_lines = 1; break;
    case 'w': PTDP_CALL(parse_int(optarg, "workers", 1, 256, &v)); a->workers = (int)v; break;
    case 'l': PTDP_CALL(parse_int(optarg, "log-interval", 0, 1000000, &v)); a->log_interval = (int)v; break;
    case 'b': PTDP_CALL(parse_int(optarg, "window-bytes", 1, 1L << 40, &a->window_bytes)); break;
    case 'h': *help = 1; return 0;
    default:
      PTDP_CHECK(0, "unknown or incomplete option '%s' (see --help)", argv[optind - 1]);
    }
  }
  PTDP_CHECK(optind == argc, "unexpected argument '%s' (see --help)", argv[optind]);
  PTDP_CHECK(a->input, "--input FILE is required (see --help)");
  PTDP_CHECK(a->output_prefix, "--output-prefix PREFIX is required (see --help)");
  if (a->text_input) {
    a->nkeys = 1;
    strcpy(a->keys[0], "text");
  }
  return 0;
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
      return ptdp_error_push(PTDP_ERR_LIB, __FILE__, __LINE__, __func__, "cannot start worker thread %d", t);
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
  PTDP_CALL(ptdp_tokenizer_create(&tok, a->tokenizer_type, a->vocab_file, a->merge_file));
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
  pp_args a;
  int help;
  if (parse_args(argc, argv, &a, &help)) return 2;
  if (help) {
    usage(stdout);
    return 0;
  }
  return run(&a) ? 1 : 0;
}
