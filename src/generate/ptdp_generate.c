/* ptdp-generate: continue a prompt with a model trained by ptdp-train.
 *
 *   mpirun -np N ptdp-generate --load DIR --prompt TEXT [--num-tokens-to-generate K --temperature T
 *                              --top-k K --top-p P --seed S] [--prompt-file F] [--num-threads N]
 *                              [--tensor-model-parallel-size N]
 *
 * The N ranks are the tensor-parallel size t (p = 1, d = 1): any t that divides the heads and the
 * MLP width, whatever layout saved the checkpoint.  Megatron's text generation server takes
 * --tensor-model-parallel-size and needs it to equal its ranks; so does this.  The model's shape
 * and tokenizer come from the checkpoint; its weights are read by ptdp_checkpoint_load (each rank
 * its own TP slice of the global tensors).  Set-up is collective, so bad input is one message
 * from rank 0 and a non-zero exit; rank 0 reads the prompt and holds the tokenizer, and
 * broadcasts the prompt's tokens.
 *
 * Output: the decoded continuation alone on stdout (so it can be piped); the set-up and timing
 * lines on stderr. */
#include "ptdp/args.h"
#include "ptdp/backend.h"
#include "ptdp/checkpoint.h"
#include "ptdp/config.h"
#include "ptdp/cpu_threads.h"
#include "ptdp/error.h"
#include "ptdp/program.h"
#include "ptdp/generate.h"
#include "ptdp/textfile.h"
#include "ptdp/tokenizer.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---------------------------------------------------------------- keys */

typedef struct {
  char load[PTDP_OPT_STRLEN], prompt[PTDP_OPT_STRLEN], prompt_file[PTDP_OPT_STRLEN];
  long long tokens, top_k, seed, num_threads, tensor_model_parallel_size;
  double temperature, top_p;
  int kv_cache;
  char vocab_file[PTDP_OPT_STRLEN], merge_file[PTDP_OPT_STRLEN], tokenizer_model[PTDP_OPT_STRLEN];
  ptdp_backend_kind backend;
} gen_args;

#define OFF(f) offsetof(gen_args, f)
#define PROMPT_FILE_MAX ((size_t)1 << 30) /* bytes of prompt-file: a text, read whole */

/* seed matters only when a draw is random: not greedy (temperature 0, or top-k 1) */
static int samples(const void *target, int world)
{
  const gen_args *g = target;
  return g->temperature > 0 && g->top_k != 1;
}
static const ptdp_opt_effect if_sampling = {samples, "decoding is greedy (temperature 0 or top-k 1)"};

/* name, type, offset, default, min, max, choices, help (Megatron's text-generation names) */
static const ptdp_option table[] = {
  {"load", PTDP_OPT_STRING, OFF(load), "", 0, 0, NULL,
   "checkpoint directory (ptdp-train's save): the checkpoint its tracker names is loaded", NULL},
  {"prompt", PTDP_OPT_STRING, OFF(prompt), "", 0, 0, NULL, "the text to continue (longer ones: prompt-file)", NULL},
  {"prompt-file", PTDP_OPT_STRING, OFF(prompt_file), "", 0, 0, NULL,
   "a file whose whole content is the prompt (instead of prompt)", NULL},
  {"num-tokens-to-generate", PTDP_OPT_INT, OFF(tokens), "64", 1, 1 << 24, NULL,
   "new tokens (fewer when the end-of-document token is drawn)", NULL},
  {"temperature", PTDP_OPT_REAL, OFF(temperature), "1.0", 0, 100, NULL,
   "divides the logits before sampling; 0 means greedy", NULL},
  {"top-k", PTDP_OPT_INT, OFF(top_k), "0", 0, 1 << 24, NULL,
   "sample among the k most probable tokens; 1 is greedy; 0 off", NULL},
  {"top-p", PTDP_OPT_REAL, OFF(top_p), "0", 0, 1, NULL,
   "sample among the most probable tokens holding probability p (nucleus); 0 off", NULL},
  {"seed", PTDP_OPT_INT, OFF(seed), "1234", 0, 4294967295.0, NULL,
   "seed of the draws: step i draws from (seed, i), on every rank alike", &if_sampling},
  {"kv-cache", PTDP_OPT_BOOL, OFF(kv_cache), "true", 0, 0, NULL,
   "cache keys and values; false runs the whole sequence at every step (for tests and timing)", NULL},
  {"vocab-file", PTDP_OPT_STRING, OFF(vocab_file), "", 0, 0, NULL,
   "GPT-2 encoder.json; empty: the checkpoint's vocab-file", NULL},
  {"merge-file", PTDP_OPT_STRING, OFF(merge_file), "", 0, 0, NULL,
   "GPT-2 merges (vocab.bpe); empty: the checkpoint's merge-file", NULL},
  {"tokenizer-model", PTDP_OPT_STRING, OFF(tokenizer_model), "", 0, 0, NULL,
   "Hugging Face tokenizer.json or its directory; empty: the checkpoint's tokenizer-model", NULL},
  {"backend", PTDP_OPT_ENUM, OFF(backend), "cpu", 0, 0, PTDP_BACKEND_CHOICES,
   "device backend: cpu; guard (tests only: memory the host cannot touch); not yet cuda", NULL},
  {"num-threads", PTDP_OPT_INT, OFF(num_threads), "0", 0, 1024, NULL,
   "OpenMP/BLAS threads per rank; 0 means OMP_NUM_THREADS or all cores / ranks", NULL},
  {"tensor-model-parallel-size", PTDP_OPT_INT, OFF(tensor_model_parallel_size), "0", 0, 1 << 16, NULL,
   "tensor-parallel ranks t: must equal the number of ranks (p = d = 1, as Megatron's text generation server); "
   "0: the number of ranks", NULL},
};
#define NOPT ((int)(sizeof table / sizeof table[0]))

static const char synopsis[] =
  "usage: mpirun -np N ptdp-generate --load DIR --prompt TEXT [--key value ...]\n"
  "       ptdp-generate --help | --version\n\n"
  "N ranks split the model tensor-parallel (N must divide the heads).  The model's shape and\n"
  "tokenizer come from the checkpoint.  The continuation goes to stdout, the rest to stderr.\n\n";

static void usage(FILE *out) { ptdp_cmdline_print_single(synopsis, table, NOPT, out); }

static int check_args(const gen_args *a, int world)
{
  PTDP_CHECK(a->load[0], "no checkpoint to load: give --load DIR (a save directory of ptdp-train)");
  PTDP_CHECK(a->backend != PTDP_BACKEND_CUDA, "backend cuda: ptdp-generate does not run on GPUs yet; use cpu");
  PTDP_CHECK(!(a->prompt[0] && a->prompt_file[0]), "both prompt and prompt-file are given; give one");
  PTDP_CHECK(a->prompt[0] || a->prompt_file[0], "the prompt is empty: give --prompt TEXT or --prompt-file FILE");
  PTDP_CHECK(!a->tensor_model_parallel_size || a->tensor_model_parallel_size == world,
             "tensor-model-parallel-size %lld is not the number of ranks %d: ptdp-generate runs the model "
             "tensor-parallel over all its ranks (pipeline and data-parallel size 1, as Megatron's text generation "
             "server); run on %lld ranks, or leave the key out",
             a->tensor_model_parallel_size, world, a->tensor_model_parallel_size);
  const ptdp_sampling s = {a->temperature, a->top_k, a->top_p, (uint64_t)a->seed};
  return ptdp_sampling_check(&s, 0);
}

/* The keys from argv, checked; rank 0 warns about keys given without effect. */
static int parse(gen_args *a, int argc, char **argv, int rank, int world)
{
  ptdp_options o;
  ptdp_cmdline c;
  memset(a, 0, sizeof *a);
  PTDP_CALL(ptdp_options_init(&o, table, NOPT, a));
  ptdp_cmdline_single(&c, &o, "ptdp-generate", synopsis, 0);
  int err = ptdp_cmdline_parse(&c, argc, argv);
  if (!err) err = check_args(a, world);
  if (!err && rank == 0) ptdp_cmdline_warn_unused(&c, world, stderr);
  ptdp_options_free(&o);
  return err;
}

/* ---------------------------------------------------------------- the checkpoint's model */

/* The model's shape and tokenizer settings from the checkpoint ref (ptdp-train's keys, the
 * defaults filling what it lacks); vocab-file, merge-file and tokenizer-model given here replace
 * its own. */
static int model_args(const gen_args *g, const ptdp_checkpoint_ref *ref, ptdp_args *a)
{
  ptdp_options o;
  int err = ptdp_args_init(a, &o);
  if (!err)
    err = ptdp_checkpoint_read_model_keys(ref, &o, MPI_COMM_WORLD);
  if (!err && g->vocab_file[0]) err = ptdp_options_set(&o, "vocab-file", g->vocab_file, PTDP_SRC_CMDLINE, "command line");
  if (!err && g->merge_file[0]) err = ptdp_options_set(&o, "merge-file", g->merge_file, PTDP_SRC_CMDLINE, "command line");
  if (!err && g->tokenizer_model[0])
    err = ptdp_options_set(&o, "tokenizer-model", g->tokenizer_model, PTDP_SRC_CMDLINE, "command line");
  ptdp_options_free(&o);
  PTDP_CALL(err);
  PTDP_CHECK(a->vocab_size > 0, "checkpoint '%s' records no vocab-size: it is not a complete ptdp checkpoint", ref->file);
  return 0;
}

static int check_layout(const ptdp_args *a, int t)
{
  PTDP_CHECK(a->num_attention_heads % t == 0,
             "%d ranks cannot split the model's %lld attention heads: run on a number of ranks that divides them", t,
             a->num_attention_heads);
  PTDP_CHECK(ptdp_model_keys_ffn(&a->model) % t == 0, "%d ranks cannot split the model's ffn-hidden-size %lld: run on a divisor", t,
             ptdp_model_keys_ffn(&a->model));
  return 0;
}

/* ================================================================ THE CHECKPOINT LOAD
 * The one place the weights come from: this rank's TP slice of every global tensor. */
static int load_weights(const ptdp_checkpoint_ref *ref, ptdp_gpt *m)
{
  ptdp_checkpoint_stats st;
  PTDP_CALL(ptdp_checkpoint_load(ref, m, NULL, NULL, NULL, &st));
  if (m->grid->world_rank == 0)
    fprintf(stderr, "[checkpoint] loaded iteration %lld from %s: %.3f GB in %.3f s (%.3f GB/s), %.0f%% by direct I/O\n",
            ref->iteration, ref->dir, st.bytes / 1e9, st.seconds, st.seconds > 0 ? st.bytes / 1e9 / st.seconds : 0.0,
            st.bytes > 0 ? 100 * st.direct_bytes / st.bytes : 0.0);
  return 0;
}
/* ================================================================ */

/* ---------------------------------------------------------------- prompt and tokenizer (rank 0) */


static int make_tokenizer(const ptdp_args *a, ptdp_tokenizer **tok)
{
  if (a->tokenizer_type == PTDP_TOKENIZER_BYTE_LEVEL) return ptdp_tokenizer_create_bytes(tok);
  if (a->tokenizer_type == PTDP_TOKENIZER_HUGGING_FACE) {
    PTDP_CHECK(a->tokenizer_model[0], "the checkpoint's tokenizer is HuggingFaceTokenizer but it names no "
               "tokenizer-model: give --tokenizer-model (the tokenizer.json the model was trained with)");
    return ptdp_tokenizer_create_hf(tok, a->tokenizer_model);
  }
  PTDP_CHECK(a->vocab_file[0] && a->merge_file[0],
             "the checkpoint's tokenizer is GPT2BPETokenizer but it names no vocab-file or merge-file (a model "
             "trained on mock data?): give --vocab-file and --merge-file");
  PTDP_CHECK(access(a->vocab_file, R_OK) == 0 && access(a->merge_file, R_OK) == 0,
             "cannot read the tokenizer files '%s' and '%s' (the checkpoint's, or given): give --vocab-file and "
             "--merge-file", a->vocab_file, a->merge_file);
  return ptdp_tokenizer_create_gpt2(tok, a->vocab_file, a->merge_file);
}

typedef struct {
  int rc;        /* rank 0's verdict */
  int n;         /* prompt tokens */
  int32_t eod;   /* the tokenizer's end of document */
} prompt_header;

/* Rank 0: the tokenizer and the prompt's ids. */
static int encode_prompt(const gen_args *g, const ptdp_args *a, ptdp_tokenizer **tok, int32_t **ids, prompt_header *h)
{
  PTDP_CALL(make_tokenizer(a, tok));
  const int tv = ptdp_tokenizer_vocab_size(*tok);
  PTDP_CHECK(tv == a->vocab_size,
             "the tokenizer (%s, %d tokens) does not fit the model's vocabulary of %lld tokens: generation needs the "
             "tokenizer the model was trained with", ptdp_tokenizer_type_name(*tok), tv, a->vocab_size);
  char *text = (char *)g->prompt;
  size_t n = strlen(g->prompt);
  if (g->prompt_file[0]) PTDP_CALL(ptdp_text_file_read(g->prompt_file, "prompt-file", PROMPT_FILE_MAX, &text, &n));
  size_t nids = 0;
  int err = n ? ptdp_tokenizer_encode(*tok, text, n, ids, &nids) : 0;
  if (text != g->prompt) free(text);
  PTDP_CALL(err);
  PTDP_CHECK(nids > 0, "the prompt is empty%s%s%s", g->prompt_file[0] ? " (prompt-file '" : "", g->prompt_file,
             g->prompt_file[0] ? "')" : "");
  h->n = (int)nids;
  h->eod = ptdp_tokenizer_eod(*tok);
  return 0;
}

/* Every rank gets the prompt's ids (rank 0 encodes them); the tokenizer stays on rank 0. */
static int prompt_tokens(const gen_args *g, const ptdp_args *a, int rank, ptdp_tokenizer **tok, int32_t **ids,
                         prompt_header *h)
{
  memset(h, 0, sizeof *h);
  *ids = NULL;
  if (rank == 0) h->rc = encode_prompt(g, a, tok, ids, h);
  PTDP_CALL_MPI(MPI_Bcast(h, (int)sizeof *h, MPI_BYTE, 0, MPI_COMM_WORLD));
  ptdp_error_set_collective(1); /* every rank knows rank 0's verdict: a clean collective exit */
  if (h->rc) return h->rc;      /* rank 0 printed the message */
  if (rank != 0) PTDP_ALLOC(*ids, sizeof(int32_t) * (size_t)h->n);
  PTDP_CALL_MPI(MPI_Bcast(*ids, h->n, MPI_INT32_T, 0, MPI_COMM_WORLD));
  return 0;
}

/* ---------------------------------------------------------------- run */

typedef struct {
  ptdp_backend *be;
  ptdp_grid grid;
  int have_grid;
  ptdp_gpt model;
  ptdp_generator gen;
  ptdp_tokenizer *tok;
  int32_t *prompt, *out;
} session;

static void session_free(session *s)
{
  ptdp_generator_destroy(&s->gen);
  ptdp_gpt_destroy(&s->model);
  if (s->have_grid) ptdp_grid_destroy(&s->grid);
  if (s->be) ptdp_backend_destroy(&s->be);
  ptdp_tokenizer_destroy(&s->tok);
  free(s->prompt);
  free(s->out);
}

static int backend_options(const gen_args *g, int rank, ptdp_backend_options *bopt)
{
  char blas[1024];
  PTDP_CALL(ptdp_node_setup((int)g->num_threads, -1, bopt, blas, sizeof blas));
  if (rank == 0) {
    int world;
    PTDP_CALL_MPI(MPI_Comm_size(MPI_COMM_WORLD, &world));
    fprintf(stderr, "ptdp-generate %s: %d rank(s) (tensor-parallel); %s\n", PACKAGE_VERSION, world, blas);
  }
  return 0;
}

/* Model on t = world ranks, weights from the checkpoint, a generator of np + K positions. */
static int build(session *s, const gen_args *g, const ptdp_args *a, const ptdp_checkpoint_ref *ref, int rank, int world,
                 int positions)
{
  ptdp_backend_options bopt;
  PTDP_CALL(backend_options(g, rank, &bopt));
  PTDP_CALL(ptdp_backend_create_kind(g->backend, &bopt, &s->be));
  PTDP_CALL(ptdp_grid_create(MPI_COMM_WORLD, world, 1, PTDP_ORDER_TP_DP_PP, &s->grid));
  s->have_grid = 1;
  PTDP_CALL(ptdp_grid_attach_backend(&s->grid, s->be));
  ptdp_model_config mc; /* the parameters only, tensor-parallel over every rank */
  ptdp_model_config_of(&a->model, &(ptdp_model_env){.use = PTDP_MODEL_WEIGHTS, .world = world}, &mc);
  PTDP_CALL(ptdp_gpt_create(&s->model, &mc.gpt, s->be, &s->grid));
  PTDP_CALL(load_weights(ref, &s->model));
  return ptdp_generator_create(&s->gen, &s->model, positions);
}

static int print_result(session *s, const gen_args *g, const prompt_header *h, const ptdp_generate_stats *st, int world)
{
  char *text = NULL;
  size_t n = 0;
  PTDP_CALL(ptdp_tokenizer_decode(s->tok, s->out, (size_t)st->generated, &text, &n));
  fwrite(text, 1, n, stdout);
  fputc('\n', stdout);
  fflush(stdout);
  free(text);
  const double total = st->prefill_seconds + st->decode_seconds;
  fprintf(stderr,
          "[generate] %d tokens in %.3f s: %.1f tokens/s (prompt of %d tokens and the first token %.3f s; then %.1f "
          "tokens/s); t = %d, kv-cache %s%s\n",
          st->generated, total, total > 0 ? st->generated / total : 0.0, h->n, st->prefill_seconds,
          st->decode_seconds > 0 ? (st->generated - 1) / st->decode_seconds : 0.0, world, g->kv_cache ? "on" : "off",
          st->stopped ? "; stopped at the end-of-document token" : "");
  return 0;
}

static int generate(const gen_args *g, const ptdp_args *a, const ptdp_checkpoint_ref *ref, int rank, int world)
{
  session s;
  memset(&s, 0, sizeof s);
  prompt_header h;
  int err = prompt_tokens(g, a, rank, &s.tok, &s.prompt, &h);
  const long long maxpos = a->max_position_embeddings ? a->max_position_embeddings : a->seq_length;
  if (!err && h.n + g->tokens > maxpos)
    err = PTDP_FAIL(PTDP_ERR_INPUT,
                          "the prompt (%d tokens) and num-tokens-to-generate %lld make %lld positions, more than the "
                          "model's max-position-embeddings %lld", h.n, g->tokens, h.n + g->tokens, maxpos);
  if (!err) err = build(&s, g, a, ref, rank, world, (int)(h.n + g->tokens));
  if (!err) {
    ptdp_error_set_collective(0); /* from here a failure may be one rank's own */
    const ptdp_sampling sp = {g->temperature, g->top_k, g->top_p, (uint64_t)g->seed};
    ptdp_generate_stats st;
    s.out = malloc(sizeof(int32_t) * (size_t)g->tokens);
    err = s.out ? 0 : PTDP_FAIL(PTDP_ERR_MEM, "out of memory for the tokens");
    if (!err) err = ptdp_generate(&s.gen, &sp, s.prompt, h.n, (int)g->tokens, h.eod, g->kv_cache, s.out, &st);
    if (!err && rank == 0) err = print_result(&s, g, &h, &st, world);
  }
  session_free(&s);
  return err;
}

static int run(int argc, char **argv)
{
  int rank, world;
  PTDP_CALL_MPI(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
  PTDP_CALL_MPI(MPI_Comm_size(MPI_COMM_WORLD, &world));
  gen_args g;
  PTDP_CALL(parse(&g, argc - 1, argv + 1, rank, world));
  ptdp_checkpoint_ref ref;
  int found = 0;
  PTDP_CALL(ptdp_checkpoint_locate(g.load, MPI_COMM_WORLD, &ref, &found));
  PTDP_CHECK(found, "no checkpoint in '%s' (no %s there): give the save directory of a ptdp-train run", g.load,
             PTDP_CHECKPOINT_TRACKER);
  ptdp_args a;
  PTDP_CALL(model_args(&g, &ref, &a));
  PTDP_CALL(check_layout(&a, world));
  const ptdp_sampling s = {g.temperature, g.top_k, g.top_p, (uint64_t)g.seed};
  PTDP_CALL(ptdp_sampling_check(&s, a.vocab_size));
  return generate(&g, &a, &ref, rank, world);
}

int main(int argc, char **argv) { return ptdp_main(argc, argv, "ptdp-generate", usage, run); }
