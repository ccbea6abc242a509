/* Regular expressions (src/text) for the split patterns of Hugging Face tokenizer.json files.
 *
 * A small backtracking matcher over UTF-8 with Perl's (and Oniguruma's, which Hugging Face's
 * library uses) leftmost-first semantics: alternatives are tried in order, quantifiers are
 * greedy unless followed by '?'.  It knows what the split patterns of GPT-2, Llama 3 (cl100k),
 * o200k, Qwen and their relatives use:
 *   literals, '.', escapes \r \n \t \f \v \xNN \x{N} \u{N} \uNNNN and escaped punctuation,
 *   \s \S (White_Space), \d \D (\p{Nd}), \w \W (letters, marks, \p{Nd}, \p{Pc}),
 *   \p{X} \P{X} \pX for the general categories (L, Lu, Ll, ..., Z, Zs, ...),
 *   classes [...] and [^...] holding any of the above and ranges a-z,
 *   groups (...) (?:...), case-insensitive groups (?i:...) and (?i) (simple folding: ASCII
 *   letters, U+017F folds to s and U+212A to k), look-ahead (?=...) (?!...),
 *   quantifiers ? * + {n} {n,} {n,m}, each optionally lazy (a trailing '?').
 * Anything else (anchors, back-references, look-behind, possessive quantifiers, scripts such
 * as \p{Han}, a repeated sub-pattern that can match nothing, a pattern that can match nothing)
 * is refused at compile time with a message naming the construct and its offset. */
#ifndef PTDP_REGEX_H
#define PTDP_REGEX_H

#include <stddef.h>

typedef struct ptdp_regex ptdp_regex;

/* Backtracking stack of one thread: a matcher shared by threads needs one each. */
typedef struct {
  size_t *stack; /* pairs (pc, position) */
  size_t n, cap;
  size_t steps, budget; /* instructions run from one starting position, and their bound */
} ptdp_regex_work;

/* Compile pat[0..len).  Returns 0, or -1 with a message in msg (msg_size bytes). */
int ptdp_regex_compile(const char *pat, size_t len, ptdp_regex **re, char *msg, size_t msg_size);
void ptdp_regex_free(ptdp_regex **re);

/* The leftmost match in s[from..n): returns 1 with [*start, *end), 0 if none, -1 out of
 * memory, -2 if matching from one position ran more than 64 instructions per remaining byte
 * plus 2^20 (a pattern that backtracks exponentially, such as (a|a)*b, is stopped instead of
 * running for years; the split patterns of real files run a few per byte).  Positions are
 * byte offsets; an ill-formed UTF-8 byte is one character of category Cn (matched by negated
 * classes such as [^\s\p{L}\p{N}]). */
int ptdp_regex_search(const ptdp_regex *re, ptdp_regex_work *w, const unsigned char *s, size_t n, size_t from,
                      size_t *start, size_t *end);
void ptdp_regex_work_free(ptdp_regex_work *w);

#endif
