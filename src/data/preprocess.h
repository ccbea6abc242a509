/* Private to ptdp-preprocess: cutting input into documents, encoding slices of them in
 * threads, writing them in order.  ptdp_preprocess.c holds main, the options and the
 * bounded input window.
 *
 * A document holds, per key, zero or more sequences: a JSON string field is one sequence, a
 * list of strings one sequence per item that has tokens (Megatron's pre-split sentences). */
#ifndef PTDP_DATA_PREPROCESS_H
#define PTDP_DATA_PREPROCESS_H

#include "ptdp/indexed_dataset.h"
#include "ptdp/tokenizer.h"

#include <stddef.h>
#include <stdint.h>

#define PP_MAX_KEYS 8
#define PP_ROUND_BYTES ((size_t)16 << 20) /* document bytes per round, at most */
#define PP_ROUND_DOCS 65536               /* documents per round, at most */

typedef struct {
  const char *input, *output_prefix, *tokenizer_type, *vocab_file, *merge_file, *model_file;
  char keys[PP_MAX_KEYS][64];
  int nkeys, text_input, append_eod, skip_bad_lines, workers, log_interval;
  long window_bytes; /* input read per round (the window grows only to hold one document) */
} pp_args;

typedef struct pp_state pp_state;

/* A growable list of sequence lengths (tokens). */
typedef struct {
  int64_t *v;
  size_t n, cap;
} pp_lens;

/* The work of one thread in one round: documents [d0, d1) of the round. */
typedef struct {
  pp_state *st;
  ptdp_tokenizer *tok;
  size_t d0, d1;
  ptdp_token_buf tokens[PP_MAX_KEYS]; /* tokens of the slice's good documents, in order */
  pp_lens seqs[PP_MAX_KEYS];          /* their sequence lengths, in order */
  int rc;                             /* a failure other than a bad document (out of memory) */
} pp_slice;

typedef struct {
  const unsigned char *text;
  size_t len;
  int64_t line; /* 1-based line number where the document starts */
} pp_doc;

struct pp_state {
  const pp_args *a;
  int dtype;
  int32_t eod;
  ptdp_mmidx_writer *writers[PP_MAX_KEYS];
  pp_slice *slices;
  /* this round */
  pp_doc *docs;
  size_t ndocs;
  int64_t *nseq;  /* nseq[doc * nkeys + k]: sequences of key k in doc */
  char **bad;     /* bad[doc]: why the document is rejected, or NULL */
  /* totals */
  int64_t line;   /* lines consumed so far */
  long long docs_done, tokens_done, bad_lines;
};

int pp_state_create(pp_state *st, const pp_args *a, ptdp_tokenizer *tok);
/* Cut whole documents from in[pos..n) for one round into st->docs; returns the new position.
 * Unless eof (n is the end of the input), a document is cut only once the bytes after it
 * show where it ends; the rest waits for the next window. */
size_t pp_cut_round(pp_state *st, const unsigned char *in, size_t n, size_t pos, int eof, size_t *ndocs);
/* Encode documents [s->d0, s->d1) (thread-safe across distinct slices). */
int pp_encode_slice(pp_slice *s);
/* Write the round's documents in order (or stop at the first bad one). */
int pp_write_round(pp_state *st, int nslices);
int pp_state_finish(pp_state *st);
void pp_state_destroy(pp_state *st);

#endif
