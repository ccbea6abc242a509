/* Unit tests of src/data that need no fetched files: BPE on a small synthetic vocabulary,
 * decode(encode(x)) == x on random bytes, the MMIDIDX writer/reader round trip and corrupt
 * indexes, and the GPTDataset index builders (split bounds, epochs, sample index, shuffles,
 * blending).  Runs on one rank; exit 0 iff every check passes. */
#include "../../../src/data/gpt_index.h"
#include "ptdp/error.h"
#include "ptdp/indexed_dataset.h"
#include "ptdp/tokenizer.h"

#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../expect.h"

static char tmpdir[256];

/* ---------------------------------------------------------------- tokenizer */

/* Write token bytes in GPT-2's byte alphabet: as a JSON string body (\u escapes) for the
 * vocabulary, or as raw UTF-8 for the merges file. */
static void put_token_as(FILE *f, const char *bytes, size_t n, int json)
{
  for (size_t i = 0; i < n; i++) {
    int b = (unsigned char)bytes[i];
    int printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174);
    int cp = b;
    if (!printable) { /* the k-th non-printable byte maps to 256+k */
      int k = 0;
      for (int c = 0; c < b; c++) k += !((c >= 33 && c <= 126) || (c >= 161 && c <= 172) || (c >= 174));
      cp = 256 + k;
    }
    if (json && (cp == '"' || cp == '\\')) fprintf(f, "\\%c", cp);
    else if (cp < 128) fputc(cp, f);
    else if (json) fprintf(f, "\\u%04x", cp);
    else fputc(0xC0 | (cp >> 6), f), fputc(0x80 | (cp & 63), f); /* cp < 0x800 here */
  }
}
static void put_token(FILE *f, const char *b, size_t n) { put_token_as(f, b, n, 1); }

static void test_tokenizer(void)
{
  /* vocabulary: the 256 bytes (id = byte), then merges "h e", "l l", "he ll", "hell o", " w",
   * then <|endoftext|> */
  const char *merges[][2] = {{"h", "e"}, {"l", "l"}, {"he", "ll"}, {"hell", "o"}, {" ", "w"}};
  char vpath[300], mpath[300];
  snprintf(vpath, sizeof vpath, "%s/vocab.json", tmpdir);
  snprintf(mpath, sizeof mpath, "%s/merges.txt", tmpdir);
  FILE *v = fopen(vpath, "w"), *m = fopen(mpath, "w");
  fprintf(v, "{");
  for (int b = 0; b < 256; b++) {
    char c = (char)b;
    fprintf(v, "%s\"", b ? ", " : "");
    put_token(v, &c, 1);
    fprintf(v, "\": %d", b);
  }
  fprintf(m, "#version: 0.2\n");
  for (int i = 0; i < 5; i++) {
    char cat[16];
    snprintf(cat, sizeof cat, "%s%s", merges[i][0], merges[i][1]);
    fprintf(v, ", \"");
    put_token(v, cat, strlen(cat));
    fprintf(v, "\": %d", 256 + i);
    put_token_as(m, merges[i][0], strlen(merges[i][0]), 0);
    fputc(' ', m);
    put_token_as(m, merges[i][1], strlen(merges[i][1]), 0);
    fputc('\n', m);
  }
  fprintf(v, ", \"<|endoftext|>\": 261}\n");
  fclose(v);
  fclose(m);

  ptdp_tokenizer *tok = NULL, *bytes = NULL;
  EXPECT(ptdp_tokenizer_create_gpt2(&tok, vpath, mpath) == 0, "synthetic GPT-2 tokenizer loads");
  EXPECT(ptdp_tokenizer_create(&bytes, "ByteLevel", NULL, NULL, NULL) == 0, "byte tokenizer");
  if (!tok || !bytes) return;
  EXPECT(ptdp_tokenizer_vocab_size(tok) == 262 && ptdp_tokenizer_eod(tok) == 261, "vocab 262, eod 261");
  EXPECT(ptdp_tokenizer_vocab_size(bytes) == 257 && ptdp_tokenizer_eod(bytes) == 256, "bytes: vocab 257, eod 256");
  int32_t *ids;
  size_t n;
  /* "hello world": pieces "hello", " world"; hello -> he,l,l,o -> he,ll,o -> hell,o -> hello */
  ptdp_tokenizer_encode(tok, "hello world", 11, &ids, &n);
  int32_t want[] = {259, 260, 'o', 'r', 'l', 'd'};
  EXPECT(n == 6 && memcmp(ids, want, sizeof want) == 0, "hello world -> [hello, ' w', o, r, l, d], got n=%zu", n);
  free(ids);
  /* contractions and whitespace rules: "it's  ok\n" -> it | 's | ' ' | ' ok' | \n */
  ptdp_tokenizer_encode(tok, "it's  ok\n", 9, &ids, &n);
  /* pieces it | 's | ' ' | ' ok' | \n: no merge applies except none, so 2+2+1+3+1 tokens */
  EXPECT(n == 9 && ids[4] == ' ' && ids[5] == ' ' && ids[8] == '\n', "it's  ok: 9 byte-level tokens, got %zu", n);
  free(ids);
  /* random bytes, including invalid UTF-8, round trip through both tokenizers */
  unsigned s = 12345;
  char buf[4096];
  int ok = 1;
  for (int it = 0; it < 400 && ok; it++) {
    size_t len = (size_t)(rand_r(&s) % 300);
    for (size_t i = 0; i < len; i++) {
      int r = rand_r(&s) % 10; /* mostly text-like bytes, some high and control bytes */
      buf[i] = (char)(r < 5 ? "hello wor'ld\n  \t"[rand_r(&s) % 16] : r < 8 ? rand_r(&s) % 256 : 0xC3 + rand_r(&s) % 3);
    }
    for (int t = 0; t < 2 && ok; t++) {
      ptdp_tokenizer *k = t ? bytes : tok;
      char *back;
      size_t nb;
      ok = ptdp_tokenizer_encode(k, buf, len, &ids, &n) == 0 && ptdp_tokenizer_decode(k, ids, n, &back, &nb) == 0 &&
           nb == len && memcmp(back, buf, len) == 0;
      if (ok) free(back);
      free(ids);
    }
  }
  EXPECT(ok, "decode(encode(x)) == x on 400 random byte strings");
  int32_t bad = 9999;
  char *out;
  size_t no;
  ptdp_error_set_quiet(1);
  EXPECT(ptdp_tokenizer_decode(tok, &bad, 1, &out, &no) != 0, "decode rejects an id outside the vocabulary");
  ptdp_error_clear();
  ptdp_tokenizer *none = NULL;
  EXPECT(ptdp_tokenizer_create_gpt2(&none, "/nonexistent/vocab.json", mpath) != 0 && !none, "missing vocab file fails");
  EXPECT(strstr(ptdp_error_message(), "/nonexistent/vocab.json") != NULL, "error names the file: %s", ptdp_error_message());
  ptdp_error_clear();
  EXPECT(ptdp_tokenizer_create_gpt2(&none, mpath, mpath) != 0, "a merges file is not a vocabulary");
  ptdp_error_clear();
  EXPECT(ptdp_tokenizer_create(&none, "Nope", NULL, NULL, NULL) != 0, "unknown tokenizer type fails");
  ptdp_error_clear();
  ptdp_error_set_quiet(0);
  ptdp_tokenizer_destroy(&tok);
  ptdp_tokenizer_destroy(&bytes);
  EXPECT(tok == NULL, "destroy sets NULL");
}

/* ---------------------------------------------------------------- MMIDIDX */

static unsigned char *slurp(const char *path, size_t *n)
{
  FILE *f = fopen(path, "rb");
  fseek(f, 0, SEEK_END);
  *n = (size_t)ftell(f);
  rewind(f);
  unsigned char *d = malloc(*n + 1);
  if (fread(d, 1, *n, f) != *n) *n = 0;
  fclose(f);
  return d;
}

static void put64(unsigned char *p, int64_t v) { memcpy(p, &v, 8); }
static void put32(unsigned char *p, int32_t v) { memcpy(p, &v, 4); }

static void test_mmidx(void)
{
  char bin[320], idx[320], prefix[300];
  snprintf(prefix, sizeof prefix, "%s/rt", tmpdir);
  snprintf(bin, sizeof bin, "%s.bin", prefix);
  snprintf(idx, sizeof idx, "%s.idx", prefix);
  int dtypes[] = {PTDP_DTYPE_UINT16, PTDP_DTYPE_INT32, PTDP_DTYPE_UINT8, PTDP_DTYPE_INT64};
  for (int t = 0; t < 4; t++) {
    ptdp_mmidx_writer *w;
    int rc = ptdp_mmidx_writer_open(&w, bin, idx, dtypes[t]);
    int32_t seq[50];
    for (int i = 0; i < 50; i++) seq[i] = (i * 37 + t) % 250;
    rc |= ptdp_mmidx_writer_add_sequence(w, seq, 50) | ptdp_mmidx_writer_end_document(w);
    rc |= ptdp_mmidx_writer_end_document(w); /* an empty document */
    rc |= ptdp_mmidx_writer_add_sequence(w, seq + 3, 7) | ptdp_mmidx_writer_add_sequence(w, seq, 0);
    rc |= ptdp_mmidx_writer_end_document(w) | ptdp_mmidx_writer_finish(&w);
    EXPECT(rc == 0 && access(idx, F_OK) == 0 && access(bin, F_OK) == 0, "write dtype %d", dtypes[t]);
    ptdp_indexed_dataset *ds;
    rc = ptdp_indexed_dataset_open(&ds, prefix);
    EXPECT(rc == 0, "read back dtype %d", dtypes[t]);
    if (rc) continue;
    int32_t got[50];
    EXPECT(ptdp_indexed_dataset_num_sequences(ds) == 3 && ptdp_indexed_dataset_num_documents(ds) == 3, "counts");
    EXPECT(ptdp_indexed_dataset_get(ds, 0, 0, 50, got) == 0 && memcmp(got, seq, sizeof got) == 0, "sequence 0");
    EXPECT(ptdp_indexed_dataset_get(ds, 1, 2, 5, got) == 0 && memcmp(got, seq + 5, 5 * 4) == 0, "sequence 1, offset 2");
    const ptdp_mmidx *ix = ptdp_indexed_dataset_index(ds);
    EXPECT(ptdp_mmidx_doc_index(ix, 1) == 1 && ptdp_mmidx_doc_index(ix, 2) == 1 && ptdp_mmidx_doc_index(ix, 3) == 3,
           "document indices 0 1 1 3");
    ptdp_error_set_quiet(1);
    EXPECT(ptdp_indexed_dataset_get(ds, 1, 5, 5, got) != 0, "reading past a sequence fails");
    ptdp_error_clear();
    ptdp_error_set_quiet(0);
    ptdp_indexed_dataset_close(&ds);
  }
  /* range check when writing */
  ptdp_mmidx_writer *w;
  int32_t big = 70000;
  ptdp_error_set_quiet(1);
  ptdp_mmidx_writer_open(&w, bin, idx, PTDP_DTYPE_UINT16);
  EXPECT(ptdp_mmidx_writer_add_sequence(w, &big, 1) != 0, "70000 does not fit uint16");
  ptdp_mmidx_writer_abort(&w);
  ptdp_error_clear();

  /* corrupt copies of the last good index (int64 dtype, 3 sequences, 4 document indices) */
  size_t n;
  unsigned char *good = slurp(idx, &n);
  int64_t bin_size = (50 + 7) * 8;
  ptdp_mmidx ix;
  EXPECT(ptdp_mmidx_parse(&ix, good, n, (uint64_t)bin_size, "good") == 0, "the good index parses");
  struct {
    const char *what, *expect;
    size_t at, len; /* modify bytes [at, at+len) */
    int64_t value;
    int shrink;     /* or truncate to this many bytes */
    int64_t bin;    /* or a different .bin size */
  } cases[] = {
      {"bad magic", "magic", 0, 1, 'X', 0, 0},
      {"version 2", "version", 9, 8, 2, 0, 0},
      {"dtype 9", "dtype code 9", 17, 1, 9, 0, 0},
      {"dtype 0", "dtype code 0", 17, 1, 0, 0, 0},
      {"huge sequence count", "claims", 18, 8, (int64_t)1 << 60, 0, 0},
      {"sequence count off by one", "need", 18, 8, 2, 0, 0},
      {"huge document count", "claims", 26, 8, (int64_t)1 << 62, 0, 0},
      {"negative length", "negative length", 34, 4, -5, 0, 0},
      {"length too long", "starts at byte", 34, 4, 51, 0, 0},
      {"pointer moved", "starts at byte", 34 + 12 + 8, 8, 8, 0, 0},
      {"first doc index 1", "first document index", 34 + 36, 8, 1, 0, 0},
      {"doc indices decrease", "decrease", 34 + 36 + 16, 8, 0, 0, 0},
      {"last doc index", "last document index", 34 + 36 + 24, 8, 2, 0, 0},
      {"truncated header", "shorter than", 0, 0, 0, 20, 0},
      {"truncated arrays", "claims", 0, 0, 0, 60, 0},
      {"truncated .bin", "runs past the end", 0, 0, 0, 0, 100},
      {"longer .bin", "describes", 0, 0, 0, 0, 1000},
  };
  unsigned char *bad = malloc(n);
  ptdp_error_set_quiet(1);
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    memcpy(bad, good, n);
    size_t len = cases[c].shrink ? (size_t)cases[c].shrink : n;
    if (cases[c].len == 1) bad[cases[c].at] = (unsigned char)cases[c].value;
    if (cases[c].len == 4) put32(bad + cases[c].at, (int32_t)cases[c].value);
    if (cases[c].len == 8) put64(bad + cases[c].at, cases[c].value);
    ptdp_error_clear();
    int rc = ptdp_mmidx_parse(&ix, bad, len, (uint64_t)(cases[c].bin ? cases[c].bin : bin_size), "corrupt.idx");
    EXPECT(rc != 0 && strstr(ptdp_error_message(), cases[c].expect) && strstr(ptdp_error_message(), "corrupt.idx"),
           "%s: wanted an error mentioning '%s', got '%s'", cases[c].what, cases[c].expect, ptdp_error_message());
  }
  ptdp_error_clear();
  ptdp_error_set_quiet(0);
  free(bad);
  free(good);
}

/* ---------------------------------------------------------------- GPT index */

static void test_split(void)
{
  int64_t b[4];
  char err[200];
  EXPECT(ptdp_split_bounds("969,30,1", 1000, b, err, 200) == 0 && b[1] == 969 && b[2] == 999 && b[3] == 1000,
         "969,30,1 over 1000");
  EXPECT(ptdp_split_bounds("1,1,1", 10, b, err, 200) == 0 && b[1] == 4 && b[2] == 7 && b[3] == 10,
         "1,1,1 over 10 -> 0,4,7,10 (Megatron's shift), got %lld %lld", (long long)b[1], (long long)b[2]);
  EXPECT(ptdp_split_bounds("100", 7, b, err, 200) == 0 && b[1] == 7 && b[2] == 7 && b[3] == 7, "100 -> all train");
  EXPECT(ptdp_split_bounds("98,2", 233, b, err, 200) == 0 && b[1] == 228 && b[2] == 233, "98,2 over 233");
  EXPECT(ptdp_split_bounds("1,x", 10, b, err, 200) != 0, "malformed split");
  EXPECT(ptdp_split_bounds("0,0,0", 10, b, err, 200) != 0, "all-zero split");
  /* Megatron's forms: ',' or '/' between weights, decimals, fewer than three weights */
  EXPECT(ptdp_split_bounds("98/2/0", 100, b, err, 200) == 0 && b[1] == 98 && b[2] == 100 && b[3] == 100, "98/2/0");
  EXPECT(ptdp_split_bounds("0.5, .25,0.25", 100, b, err, 200) == 0 && b[1] == 50 && b[2] == 75, "decimals");
  /* strtod's exponents, hex, inf and nan are not weights; 1e999 was 100/0/0 */
  const char *bad[] = {"1e999", "1e2,1", "0x10,1", "inf", "nan", "1.2.3", ".", "1,2,3,4", "-1,2", "1,+2"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    err[0] = 0;
    EXPECT(ptdp_split_bounds(bad[i], 10, b, err, 200) != 0 && strstr(err, "split '"), "'%s' refused, got '%s'", bad[i],
           err);
  }
  /* 400 nines: each weight finite-looking digits but beyond any double; 300 nines x 3: finite */
  char big[1300];
  memset(big, '9', 400);
  big[400] = 0;
  EXPECT(ptdp_split_bounds(big, 10, b, err, 200) != 0 && strstr(err, "too large"), "400 digits: %s", err);
  memset(big, '9', 902);
  big[300] = big[601] = ',';
  big[902] = 0;
  EXPECT(ptdp_split_bounds(big, 9, b, err, 200) == 0 && b[1] == 3 && b[2] == 6 && b[3] == 9,
         "three weights of 300 nines: a finite sum, thirds (%s; %lld %lld %lld)", err, (long long)b[1], (long long)b[2],
         (long long)b[3]);
}

static void test_plan(void)
{
  ptdp_gpt_plan p;
  EXPECT(ptdp_gpt_plan_make(&p, 100, 5, 10) == 0 && p.num_epochs == 1 && p.total_samples == 9, "one epoch");
  EXPECT(ptdp_gpt_plan_make(&p, 100, 25, 10) == 0 && p.num_epochs == 3 && p.separate_final_epoch &&
             p.num_samples_sans_final == 19 && p.total_samples == 29,
         "3 epochs, last one separate (6 samples < 80%% of 9)");
  EXPECT(ptdp_gpt_plan_make(&p, 100, 27, 10) == 0 && p.num_epochs == 3 && !p.separate_final_epoch,
         "3 epochs, last one supplies 8 >= 7: not separate");
  EXPECT(ptdp_gpt_plan_make(&p, 1, 1, 10) != 0, "one token cannot make a sample");
  /* num_samples s overflowing 64 bits is refused (it wrapped), and a count of
   * epochs far beyond the split is found by division at once (counting took need/T steps) */
  EXPECT(ptdp_gpt_plan_make(&p, 100, INT64_MAX / 2, 4) == -2, "num_samples x s overflows: -2");
  EXPECT(ptdp_gpt_plan_make(&p, 2, INT64_C(1) << 40, 1 << 20) == 0 && p.num_epochs == (INT64_C(1) << 59) + 1,
         "2^60 + 1 tokens from 2-token epochs: 2^59 + 1 epochs, got %lld", (long long)p.num_epochs);
  EXPECT(ptdp_gpt_plan_make(&p, INT64_MAX / 2 + 1, INT64_MAX / 2 + 1, 1) == -2, "E T = 2 (2^62) overflows: -2");
}

/* Every sample starts at stream token i*s (documents laid end to end in doc_index order). */
static void check_index(const int32_t *lengths, int64_t begin, int64_t end, int64_t want, int s, uint64_t seed)
{
  int64_t T = 0;
  for (int64_t i = begin; i < end; i++) T += lengths[i];
  ptdp_gpt_plan p;
  if (ptdp_gpt_plan_make(&p, T, want, s) != 0) {
    EXPECT(0, "plan T=%lld", (long long)T);
    return;
  }
  int64_t nd = p.num_epochs * (end - begin), ns = p.total_samples;
  int32_t *doc = malloc((size_t)nd * 4);
  int32_t *si = malloc((size_t)(2 * ns + 2) * 4);
  int64_t *sh = malloc((size_t)ns * 8 + 8);
  ptdp_rng r;
  ptdp_rng_seed(&r, seed);
  ptdp_gpt_doc_index(doc, begin, end, &p, &r);
  int64_t steps = ptdp_gpt_sample_index(si, doc, nd, lengths + begin, begin, &p, s);
  ptdp_gpt_shuffle_index(sh, &p, &r);
  EXPECT(ns >= want, "at least the samples asked for (%lld >= %lld)", (long long)ns, (long long)want);
  /* work, counted rather than timed: one Fisher-Yates draw per element shuffled (less one per
   * shuffle) and one walk over doc_index; a superlinear rewrite of either fails here */
  int64_t n1 = p.num_samples_sans_final, e1 = p.separate_final_epoch ? nd - (end - begin) : nd;
  int64_t draws = (e1 > 0 ? e1 - 1 : 0) + (nd - e1 > 0 ? nd - e1 - 1 : 0) + (n1 > 0 ? n1 - 1 : 0) +
                  (ns - n1 > 0 ? ns - n1 - 1 : 0);
  EXPECT((int64_t)r.draws == draws && steps <= nd + ns,
         "index work is linear: %llu draws (expected %lld), %lld steps <= %lld documents + %lld samples",
         (unsigned long long)r.draws, (long long)draws, (long long)steps, (long long)nd, (long long)ns);
  /* each document once per epoch; with a separate last epoch, also once within it */
  int64_t *cnt = calloc((size_t)(end + 1), 8);
  int ok = 1;
  for (int64_t i = 0; i < nd; i++) ok &= doc[i] >= begin && doc[i] < end, cnt[doc[i]]++;
  for (int64_t d = begin; d < end; d++) ok &= cnt[d] == p.num_epochs;
  if (p.separate_final_epoch) {
    memset(cnt, 0, (size_t)(end + 1) * 8);
    for (int64_t i = nd - (end - begin); i < nd; i++) cnt[doc[i]]++;
    for (int64_t d = begin; d < end; d++) ok &= cnt[d] == 1;
  }
  EXPECT(ok, "every document of the split appears once per epoch (E=%lld)", (long long)p.num_epochs);
  /* stream positions: prefix sums over doc_index */
  int64_t *start = malloc((size_t)(nd + 1) * 8);
  start[0] = 0;
  for (int64_t i = 0; i < nd; i++) start[i + 1] = start[i] + lengths[doc[i]];
  ok = 1;
  for (int64_t i = 0; i <= ns; i++) {
    int64_t pos = start[si[2 * i]] + si[2 * i + 1];
    ok &= pos == i * s && si[2 * i + 1] < (lengths[doc[si[2 * i]]] > 0 ? lengths[doc[si[2 * i]]] : 1);
  }
  EXPECT(ok, "sample i spans stream tokens [i*s, i*s+s]: s+1 tokens, one shared with the next");
  EXPECT(start[nd] >= ns * s + 1 && start[nd] - (ns * s + 1) < s + 0 + (start[nd] - ns * s > 0 ? s : 0) + 1,
         "all epochs' tokens used up to less than one sample");
  /* every token of the split is in E or E-1 samples' first s tokens (the overlap excluded) */
  int64_t covered = ns * s, full = 0;
  for (int64_t e = 0; e < p.num_epochs; e++) full += (covered >= (e + 1) * T);
  EXPECT(full >= p.num_epochs - 1, "tokens appear in at least E-1 = %lld full epochs", (long long)(p.num_epochs - 1));
  memset(cnt, 0, (size_t)(end + 1) * 8);
  ok = 1;
  char *seen = calloc((size_t)ns, 1);
  for (int64_t i = 0; i < ns; i++) ok &= sh[i] >= 0 && sh[i] < ns && !seen[sh[i]], seen[sh[i] < 0 || sh[i] >= ns ? 0 : sh[i]] = 1;
  if (p.separate_final_epoch)
    for (int64_t i = 0; i < p.num_samples_sans_final; i++) ok &= sh[i] < p.num_samples_sans_final;
  EXPECT(ok, "shuffle is a permutation (the final epoch's samples kept last)");
  free(seen), free(start), free(cnt), free(doc), free(si), free(sh);
}

static void test_gpt_index(void)
{
  int32_t lengths[40];
  unsigned s = 7;
  for (int i = 0; i < 40; i++) lengths[i] = (int32_t)(rand_r(&s) % 50); /* zeros included */
  check_index(lengths, 0, 40, 10, 16, 1);     /* one epoch */
  check_index(lengths, 5, 30, 200, 16, 2);    /* many epochs */
  check_index(lengths, 0, 40, 120, 16, 3);    /* maybe a separate last epoch */
  check_index(lengths, 10, 12, 50, 3, 4);
  for (int want = 60; want < 140; want += 7) check_index(lengths, 0, 40, want, 16, 5);
  /* blending tracks the weights: |count_k - w_k * i| stays under 2 at every step */
  double w[3] = {0.2, 0.3, 0.5};
  int32_t src[10000];
  int64_t smp[10000], count[3], c[3] = {0, 0, 0};
  ptdp_blend_index(src, smp, 10000, w, 3, count);
  double worst = 0;
  int ok = 1;
  for (int i = 0; i < 10000; i++) {
    ok &= smp[i] == c[src[i]];
    c[src[i]]++;
    for (int k = 0; k < 3; k++) worst = fmax(worst, fabs((double)c[k] - w[k] * (i + 1)));
  }
  EXPECT(ok && worst < 2, "blend: samples numbered per source, deviation %.2f < 2", worst);
  EXPECT(c[0] == 2000 && c[1] == 3000 && c[2] == 5000, "blend: 2000/3000/5000 of 10000");
  /* the generator: fixed values for a fixed seed (determinism across runs and builds) */
  ptdp_rng r, r2;
  ptdp_rng_seed(&r, 1234);
  ptdp_rng_seed(&r2, 1234);
  ok = 1;
  for (int i = 0; i < 100; i++) ok &= ptdp_rng_next(&r) == ptdp_rng_next(&r2);
  for (int i = 0; i < 100; i++) ok &= ptdp_rng_below(&r, 7) < 7;
  EXPECT(ok, "rng is deterministic and bounded");
}

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  snprintf(tmpdir, sizeof tmpdir, "%s/ptdp-data-units.XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
  if (!mkdtemp(tmpdir)) return 1;
  test_tokenizer();
  test_mmidx();
  test_split();
  test_plan();
  test_gpt_index();
  char cmd[400];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
  if (system(cmd) != 0) printf("warning: could not remove %s\n", tmpdir);
  int status = expect_summary("test_data_units");
  MPI_Finalize();
  return status;
}
