/* Split patterns of Hugging Face tokenizer.json files (see ptdp/regex.h): a parser to a small tree,
 * a compiler to a program for a backtracking machine, and the machine.
 *
 * Program (Pike's and Thompson's instruction set, run depth first as Perl's engines do, which
 * gives the leftmost-first priority of Oniguruma):
 *   CHAR c / CHARI c  one character equal to c (CHARI: after simple case folding)
 *   SET k / ANY       one character in set k / any character but '\n'
 *   SPLIT x y         try x; on failure come back and try y
 *   JMP x             go to x
 *   LOOK neg x        run the sub-program after this instruction (ending in MATCH) here; on
 *                     success (failure when neg) go on at x, consuming nothing
 *   MATCH             success at the current position
 *   GUARD k           fail unless the character here can start alternative k of the pattern's
 *                     top level (first-character sets: most alternatives of a split pattern
 *                     fail on their first character, and this skips them at once)
 * A repeat {m,n} is m copies of its body then n - m optional ones; an unbounded repeat is a
 * SPLIT loop, which is why a repeated body that can match nothing is refused: the loop would
 * not advance. */
#include "ptdp/regex.h"

#include "ptdp/checked.h"
#include "ptdp/unicode.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_PROGRAM 65536 /* instructions: {n,m} copies bodies, so bound what a file may ask */
#define MAX_DEPTH 200     /* nesting of groups, so a hostile pattern cannot exhaust the C stack */
#define INF (-1)

/* ---------------------------------------------------------------- character sets */

typedef enum { T_RANGE, T_GC, T_SPACE, T_WORD } term_kind;

typedef struct {
  term_kind kind;
  int negate;
  uint32_t lo, hi;  /* T_RANGE, inclusive */
  uint32_t gc_mask; /* T_GC: bit k for category k */
} set_term;

typedef struct {
  set_term *terms;
  size_t n, cap;
  int negate, fold;
  uint64_t ascii[2]; /* membership of U+0000..U+007F, precomputed */
} char_set;

static const uint32_t WORD_GC = (1u << PTDP_GC_LU) | (1u << PTDP_GC_LL) | (1u << PTDP_GC_LT) | (1u << PTDP_GC_LM) |
                                (1u << PTDP_GC_LO) | (1u << PTDP_GC_MN) | (1u << PTDP_GC_MC) | (1u << PTDP_GC_ME) |
                                (1u << PTDP_GC_ND) | (1u << PTDP_GC_PC);

/* Simple case folding, enough for the (?i:'s|'t|...) groups of split patterns. */
static uint32_t fold_lower(uint32_t cp)
{
  if (cp >= 'A' && cp <= 'Z') return cp + 32;
  if (cp == 0x17F) return 's'; /* LATIN SMALL LETTER LONG S */
  if (cp == 0x212A) return 'k'; /* KELVIN SIGN */
  return cp;
}

static uint32_t upper_ascii(uint32_t cp) { return cp >= 'a' && cp <= 'z' ? cp - 32 : cp; }

static int term_has(const set_term *t, uint32_t cp, ptdp_uc_gc gc)
{
  int m;
  switch (t->kind) {
  case T_RANGE: m = cp >= t->lo && cp <= t->hi; break;
  case T_GC: m = (t->gc_mask >> gc) & 1u; break;
  case T_SPACE: m = ptdp_uc_is_space(cp); break;
  default: m = (WORD_GC >> gc) & 1u; break;
  }
  return t->negate ? !m : m;
}

static int set_has_raw(const char_set *cs, uint32_t cp)
{
  ptdp_uc_gc gc = cp == PTDP_UC_INVALID ? PTDP_GC_CN : ptdp_uc_category(cp);
  int in = 0;
  for (size_t i = 0; i < cs->n && !in; i++) in = term_has(&cs->terms[i], cp, gc);
  return in != cs->negate;
}

static int set_has(const char_set *cs, uint32_t cp)
{
  if (cp < 128) return (int)((cs->ascii[cp >> 6] >> (cp & 63)) & 1u);
  if (set_has_raw(cs, cp)) return 1;
  if (!cs->fold) return 0;
  uint32_t f = fold_lower(cp);
  return f != cp && (set_has_raw(cs, f) || set_has_raw(cs, upper_ascii(f)));
}

static void set_finish(char_set *cs)
{
  for (uint32_t c = 0; c < 128; c++) {
    int in = set_has_raw(cs, c);
    if (!in && cs->fold) in = set_has_raw(cs, fold_lower(c)) || set_has_raw(cs, upper_ascii(c));
    if (in) cs->ascii[c >> 6] |= (uint64_t)1 << (c & 63);
  }
}

/* ---------------------------------------------------------------- tree */

typedef enum { N_CHAR, N_SET, N_ANY, N_CAT, N_ALT, N_REPEAT, N_LOOK } node_kind;

typedef struct {
  node_kind kind;
  uint32_t cp;    /* N_CHAR */
  int fold;       /* N_CHAR */
  size_t set;     /* N_SET */
  int min, max;   /* N_REPEAT (max INF for unbounded) */
  int greedy;     /* N_REPEAT */
  int neg;        /* N_LOOK */
  int first, last, next; /* children (N_CAT, N_ALT, N_REPEAT, N_LOOK) and the next sibling; -1 none */
} node;

typedef enum { I_CHAR, I_CHARI, I_SET, I_ANY, I_SPLIT, I_JMP, I_LOOK, I_MATCH, I_GUARD } op_kind;

/* The characters that can start a match: ASCII ones exactly, any other conservatively. */
typedef struct {
  uint64_t ascii[2];
  int other;
} first_set;

typedef struct {
  op_kind op;
  uint32_t arg; /* CHAR: code point; SET: set index; LOOK: negated */
  int x, y;
} instr;

struct ptdp_regex {
  instr *prog;
  size_t nprog, cap;
  first_set *guards;
  size_t nguards;
  char_set *sets;
  size_t nsets, sets_cap;
};

typedef struct {
  const unsigned char *pat;
  size_t len, pos;
  int fold, depth;
  node *nodes;
  size_t nnodes, nodes_cap;
  ptdp_regex *re;
  char *msg;
  size_t msg_size;
  int failed;
} parser;

static int fail(parser *p, const char *fmt, ...)
{
  if (p->failed) return -1;
  p->failed = 1;
  va_list ap;
  va_start(ap, fmt);
  int k = vsnprintf(p->msg, p->msg_size, fmt, ap);
  va_end(ap);
  if (k >= 0 && (size_t)k < p->msg_size)
    snprintf(p->msg + k, p->msg_size - (size_t)k, " (at byte %zu of the pattern)", p->pos);
  return -1;
}

static int grow(void **a, size_t *cap, size_t need, size_t elem)
{
  if (need <= *cap) return 0;
  size_t c = *cap ? *cap : 16;
  while (c < need) c *= 2;
  void *n = realloc(*a, c * elem);
  if (!n) return -1;
  *a = n;
  *cap = c;
  return 0;
}

static int new_node(parser *p, node_kind kind)
{
  if (grow((void **)&p->nodes, &p->nodes_cap, p->nnodes + 1, sizeof *p->nodes)) return fail(p, "out of memory");
  node *n = &p->nodes[p->nnodes];
  memset(n, 0, sizeof *n);
  n->kind = kind;
  n->first = n->last = n->next = -1;
  return (int)p->nnodes++;
}

static void add_child(parser *p, int parent, int child)
{
  node *n = &p->nodes[parent];
  if (n->last < 0) n->first = child;
  else p->nodes[n->last].next = child;
  n->last = child;
}

static int new_set(parser *p)
{
  ptdp_regex *re = p->re;
  if (grow((void **)&re->sets, &re->sets_cap, re->nsets + 1, sizeof *re->sets)) return fail(p, "out of memory");
  memset(&re->sets[re->nsets], 0, sizeof re->sets[0]);
  re->sets[re->nsets].fold = p->fold;
  return (int)re->nsets++;
}

static int add_term(parser *p, char_set *cs, set_term t)
{
  if (grow((void **)&cs->terms, &cs->cap, cs->n + 1, sizeof *cs->terms)) return fail(p, "out of memory");
  cs->terms[cs->n++] = t;
  return 0;
}

/* ---------------------------------------------------------------- parser */

static int peek(const parser *p) { return p->pos < p->len ? p->pat[p->pos] : -1; }

static uint32_t next_cp(parser *p)
{
  uint32_t cp;
  p->pos += (size_t)ptdp_utf8_decode(p->pat + p->pos, p->len - p->pos, &cp);
  return cp;
}

/* \p{X}, \P{X}, \pX after the 'p' or 'P': the general category mask, 0 on error. */
static uint32_t category_mask(parser *p)
{
  static const char *names[PTDP_GC_COUNT] = {"Lu", "Ll", "Lt", "Lm", "Lo", "Mn", "Mc", "Me", "Nd", "Nl",
                                             "No", "Pc", "Pd", "Ps", "Pe", "Pi", "Pf", "Po", "Sm", "Sc",
                                             "Sk", "So", "Zs", "Zl", "Zp", "Cc", "Cf", "Cs", "Co", "Cn"};
  char name[32];
  size_t k = 0;
  if (peek(p) == '{') {
    p->pos++;
    while (p->pos < p->len && p->pat[p->pos] != '}' && k + 1 < sizeof name) name[k++] = (char)p->pat[p->pos++];
    if (peek(p) != '}') return (uint32_t)fail(p, "unterminated or too long \\p{...} name"), 0;
    p->pos++;
  } else if (p->pos < p->len) {
    name[k++] = (char)p->pat[p->pos++];
  }
  name[k] = '\0';
  if (k == 2 && strcmp(name, "L&") == 0) return (1u << PTDP_GC_LU) | (1u << PTDP_GC_LL) | (1u << PTDP_GC_LT);
  uint32_t mask = 0;
  for (int g = 0; g < PTDP_GC_COUNT; g++)
    if ((k == 1 && names[g][0] == name[0]) || (k == 2 && strcmp(names[g], name) == 0)) mask |= 1u << g;
  if (!mask)
    return (uint32_t)fail(p, "\\p{%s}: only general categories (L, Lu, N, Nd, P, S, Z, ...) are known, not scripts "
                             "or properties", name), 0;
  return mask;
}

/* A hex number of at most max digits (braced if brace). */
static int hex_value(parser *p, int brace, int max, uint32_t *v)
{
  *v = 0;
  int k = 0;
  if (brace) p->pos++;
  while (k < max && p->pos < p->len) {
    int c = p->pat[p->pos];
    int d = c >= '0' && c <= '9' ? c - '0' : (c | 32) >= 'a' && (c | 32) <= 'f' ? (c | 32) - 'a' + 10 : -1;
    if (d < 0) break;
    *v = *v * 16 + (uint32_t)d;
    p->pos++, k++;
  }
  if (brace && peek(p) != '}') return fail(p, "unterminated \\x{...} or \\u{...}");
  if (brace) p->pos++;
  if (k == 0 || *v > 0x10FFFF) return fail(p, "bad hexadecimal escape");
  return 0;
}

/* An escape after '\\': either one code point (*cp, returns 0) or a class term (*t, returns 1). */
static int parse_escape(parser *p, uint32_t *cp, set_term *t)
{
  if (p->pos >= p->len) return fail(p, "pattern ends with a backslash");
  int c = p->pat[p->pos];
  memset(t, 0, sizeof *t);
  switch (c) {
  case 'n': p->pos++, *cp = '\n'; return 0;
  case 'r': p->pos++, *cp = '\r'; return 0;
  case 't': p->pos++, *cp = '\t'; return 0;
  case 'f': p->pos++, *cp = '\f'; return 0;
  case 'v': p->pos++, *cp = '\v'; return 0;
  case 's': case 'S': p->pos++, t->kind = T_SPACE, t->negate = c == 'S'; return 1;
  case 'd': case 'D': p->pos++, t->kind = T_GC, t->gc_mask = 1u << PTDP_GC_ND, t->negate = c == 'D'; return 1;
  case 'w': case 'W': p->pos++, t->kind = T_WORD, t->negate = c == 'W'; return 1;
  case 'p': case 'P':
    p->pos++;
    t->kind = T_GC, t->negate = c == 'P', t->gc_mask = category_mask(p);
    return p->failed ? -1 : 1;
  case 'x': p->pos++; return hex_value(p, peek(p) == '{', peek(p) == '{' ? 8 : 2, cp);
  case 'u': p->pos++; return hex_value(p, peek(p) == '{', peek(p) == '{' ? 8 : 4, cp);
  default:
    if (c < 0x80 && ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')))
      return fail(p, "the escape \\%c is not supported (anchors, back-references and other escapes are refused)", c);
    *cp = next_cp(p); /* escaped punctuation or any other character stands for itself */
    return 0;
  }
}

/* The pattern's next character, escaped or not (*cp, returns 0), or a class escape such as \d or
 * \p{L} (*t, returns 1); -1 on a bad escape. */
static int parse_char(parser *p, uint32_t *cp, set_term *t)
{
  if (peek(p) != '\\') {
    *cp = next_cp(p);
    return 0;
  }
  p->pos++;
  return parse_escape(p, cp, t);
}

static int parse_class(parser *p)
{
  int k = new_set(p);
  if (k < 0) return -1;
  char_set *cs = &p->re->sets[k];
  p->pos++; /* '[' */
  if (peek(p) == '^') cs->negate = 1, p->pos++;
  int first = 1;
  while (1) {
    int c = peek(p);
    if (c < 0) return fail(p, "unterminated character class");
    if (c == ']' && !first) break;
    first = 0;
    if (c == '[') return fail(p, "nested character classes are not supported");
    if (c == '&' && p->pos + 1 < p->len && p->pat[p->pos + 1] == '&')
      return fail(p, "class intersection (&&) is not supported");
    uint32_t lo, hi;
    set_term t;
    int r = parse_char(p, &lo, &t);
    if (r < 0) return -1;
    if (r == 1) {
      if (add_term(p, cs, t)) return -1;
      cs = &p->re->sets[k];
      continue;
    }
    hi = lo;
    if (peek(p) == '-' && p->pos + 1 < p->len && p->pat[p->pos + 1] != ']') {
      p->pos++;
      r = parse_char(p, &hi, &t);
      if (r < 0) return -1;
      if (r == 1) return fail(p, "a class escape cannot end a range");
      if (hi < lo) return fail(p, "a range whose end comes before its start");
    }
    if (add_term(p, cs, (set_term){.kind = T_RANGE, .lo = lo, .hi = hi})) return -1;
  }
  p->pos++; /* ']' */
  set_finish(&p->re->sets[k]);
  int n = new_node(p, N_SET);
  if (n >= 0) p->nodes[n].set = (size_t)k;
  return n;
}

static int parse_alt(parser *p);

/* '(' ... ')' with its flags; returns the group's node. */
static int parse_group(parser *p)
{
  p->pos++; /* '(' */
  int saved = p->fold, look = 0, neg = 0;
  if (peek(p) == '?') {
    p->pos++;
    int c = peek(p);
    if (c == ':') {
      p->pos++;
    } else if (c == '=' || c == '!') {
      p->pos++, look = 1, neg = c == '!';
    } else if (c == 'i' && p->pos + 1 < p->len && (p->pat[p->pos + 1] == ':' || p->pat[p->pos + 1] == ')')) {
      p->pos++;
      p->fold = 1;
      if (peek(p) == ')') { /* (?i): the rest of the enclosing group folds case */
        p->pos++;
        return -2;
      }
      p->pos++;
    } else {
      return fail(p, "the group '(?%c' is not supported (look-behind, atomic groups and flags other than i are "
                     "refused)", c > 0 ? c : ' ');
    }
  }
  if (++p->depth > MAX_DEPTH) return fail(p, "groups nested more than %d deep", MAX_DEPTH);
  int inner = parse_alt(p);
  p->depth--;
  p->fold = saved;
  if (inner < 0) return -1;
  if (peek(p) != ')') return fail(p, "unbalanced parenthesis");
  p->pos++;
  if (!look) return inner;
  int n = new_node(p, N_LOOK);
  if (n < 0) return -1;
  p->nodes[n].neg = neg;
  add_child(p, n, inner);
  return n;
}

/* One atom; -2 for a flag group that matches nothing; -3 at the end of a sequence. */
static int parse_atom(parser *p)
{
  int c = peek(p);
  if (c < 0 || c == '|' || c == ')') return -3;
  if (c == '(') return parse_group(p);
  if (c == '[') return parse_class(p);
  if (c == '*' || c == '+' || c == '?') return fail(p, "a quantifier with nothing to repeat");
  if (c == '^' || c == '$') return fail(p, "anchors (^ and $) are not supported");
  if (c == '.') {
    p->pos++;
    return new_node(p, N_ANY);
  }
  uint32_t cp;
  set_term t;
  const int r = parse_char(p, &cp, &t);
  if (r < 0) return -1;
  if (r == 1) {
    int k = new_set(p);
    if (k < 0 || add_term(p, &p->re->sets[k], t)) return -1;
    set_finish(&p->re->sets[k]);
    int n = new_node(p, N_SET);
    if (n >= 0) p->nodes[n].set = (size_t)k;
    return n;
  }
  int n = new_node(p, N_CHAR);
  if (n < 0) return -1;
  p->nodes[n].fold = p->fold;
  p->nodes[n].cp = p->fold ? fold_lower(cp) : cp;
  return n;
}

/* {n}, {n,}, {n,m} at p->pos; returns 1 if one was read, 0 if the brace is a literal. */
static int parse_braces(parser *p, int *min, int *max)
{
  size_t i = p->pos + 1;
  long a = 0, b;
  int da = 0, db = 0;
  while (i < p->len && p->pat[i] >= '0' && p->pat[i] <= '9' && a < 100000) a = a * 10 + (p->pat[i++] - '0'), da++;
  if (!da) return 0;
  b = a;
  if (i < p->len && p->pat[i] == ',') {
    i++;
    b = 0;
    while (i < p->len && p->pat[i] >= '0' && p->pat[i] <= '9' && b < 100000) b = b * 10 + (p->pat[i++] - '0'), db++;
    if (!db) b = INF;
  }
  if (i >= p->len || p->pat[i] != '}') return 0;
  p->pos = i + 1;
  if ((b != INF && b < a) || a > 1000 || b > 1000) return fail(p, "bad or too large repeat count {%ld,%ld}", a, b);
  *min = (int)a;
  *max = (int)b;
  return 1;
}

static int parse_repeat(parser *p)
{
  int atom = parse_atom(p);
  if (atom < 0) return atom;
  for (int stacked = 0;; stacked++) {
    int c = peek(p), min = 0, max = 0;
    if (stacked == 4 && (c == '*' || c == '+' || c == '?' || c == '{'))
      return fail(p, "more than 4 quantifiers in a row");
    if (c == '*') min = 0, max = INF, p->pos++;
    else if (c == '+') min = 1, max = INF, p->pos++;
    else if (c == '?') min = 0, max = 1, p->pos++;
    else if (c == '{') {
      int r = parse_braces(p, &min, &max);
      if (r < 0) return -1;
      if (!r) return atom;
    } else return atom;
    int greedy = 1;
    if (peek(p) == '?') greedy = 0, p->pos++;
    else if (peek(p) == '+') return fail(p, "possessive quantifiers are not supported");
    int n = new_node(p, N_REPEAT);
    if (n < 0) return -1;
    p->nodes[n].min = min, p->nodes[n].max = max, p->nodes[n].greedy = greedy;
    add_child(p, n, atom);
    atom = n;
  }
}

static int parse_cat(parser *p)
{
  int cat = new_node(p, N_CAT);
  if (cat < 0) return -1;
  while (1) {
    int r = parse_repeat(p);
    if (r == -3) return cat;
    if (r == -2) continue;
    if (r < 0) return -1;
    add_child(p, cat, r);
  }
}

static int parse_alt(parser *p)
{
  int alt = new_node(p, N_ALT);
  if (alt < 0) return -1;
  while (1) {
    int c = parse_cat(p);
    if (c < 0) return -1;
    add_child(p, alt, c);
    if (peek(p) != '|') return alt;
    p->pos++;
  }
}

/* ---------------------------------------------------------------- compiler */

static int nullable(const parser *p, int n)
{
  const node *d = &p->nodes[n];
  switch (d->kind) {
  case N_CHAR: case N_SET: case N_ANY: return 0;
  case N_LOOK: return 1;
  case N_REPEAT: return d->min == 0 || nullable(p, d->first);
  case N_CAT:
    for (int k = d->first; k >= 0; k = p->nodes[k].next)
      if (!nullable(p, k)) return 0;
    return 1;
  default:
    for (int k = d->first; k >= 0; k = p->nodes[k].next)
      if (nullable(p, k)) return 1;
    return 0;
  }
}

static int emit(parser *p, op_kind op, uint32_t arg, int x, int y)
{
  ptdp_regex *re = p->re;
  if (re->nprog >= MAX_PROGRAM) return fail(p, "the pattern compiles to more than %d instructions", MAX_PROGRAM);
  if (grow((void **)&re->prog, &re->cap, re->nprog + 1, sizeof *re->prog)) return fail(p, "out of memory");
  re->prog[re->nprog] = (instr){op, arg, x, y};
  return (int)re->nprog++;
}

static int compile(parser *p, int n);

static void first_of(const parser *p, int n, first_set *f)
{
  const node *d = &p->nodes[n];
  switch (d->kind) {
  case N_CHAR:
    if (d->cp < 128) f->ascii[d->cp >> 6] |= (uint64_t)1 << (d->cp & 63);
    else f->other = 1;
    if (d->fold && d->cp < 128) {
      uint32_t u = upper_ascii(d->cp);
      f->ascii[u >> 6] |= (uint64_t)1 << (u & 63);
      f->other = 1; /* U+017F and U+212A fold to s and k */
    }
    return;
  case N_SET: {
    const char_set *cs = &p->re->sets[d->set];
    f->ascii[0] |= cs->ascii[0], f->ascii[1] |= cs->ascii[1], f->other = 1;
    return;
  }
  case N_ANY: f->ascii[0] |= ~((uint64_t)1 << '\n'), f->ascii[1] = ~(uint64_t)0, f->other = 1; return;
  case N_LOOK: return; /* zero width: what follows decides */
  case N_REPEAT: first_of(p, d->first, f); return;
  case N_CAT:
    for (int k = d->first; k >= 0; k = p->nodes[k].next) {
      first_of(p, k, f);
      if (!nullable(p, k)) return;
    }
    return;
  default:
    for (int k = d->first; k >= 0; k = p->nodes[k].next) first_of(p, k, f);
    return;
  }
}

/* The alternatives of d in order: a SPLIT before each but the last (try it, else go on), a JMP
 * after each but the last to the end; guarded (the root), each behind a GUARD of its first
 * characters (p->re->guards holds a slot for each). */
static int compile_alternatives(parser *p, const node *d, int guarded)
{
  int jumps[1024], nj = 0;
  for (int k = d->first; k >= 0; k = p->nodes[k].next) {
    int last = p->nodes[k].next < 0, split = -1;
    if (!last && (split = emit(p, I_SPLIT, 0, 0, 0)) < 0) return -1;
    if (!last) p->re->prog[split].x = split + 1;
    if (guarded) {
      first_of(p, k, &p->re->guards[p->re->nguards]);
      if (emit(p, I_GUARD, (uint32_t)p->re->nguards++, 0, 0) < 0) return -1;
    }
    if (compile(p, k)) return -1;
    if (!last) {
      if (nj == 1024) return fail(p, "more than 1024 alternatives in one group");
      if ((jumps[nj++] = emit(p, I_JMP, 0, 0, 0)) < 0) return -1;
      p->re->prog[split].y = (int)p->re->nprog;
    }
  }
  for (int i = 0; i < nj; i++) p->re->prog[jumps[i]].x = (int)p->re->nprog;
  return 0;
}

/* The root alternation, each alternative behind a GUARD of its first characters (every
 * alternative matches at least one character: a pattern that can match nothing is refused). */
static int compile_root(parser *p, int root)
{
  const node *d = &p->nodes[root];
  size_t n = 0;
  for (int k = d->first; k >= 0; k = p->nodes[k].next) n++;
  p->re->guards = calloc(n, sizeof *p->re->guards);
  if (!p->re->guards) return fail(p, "out of memory");
  return compile_alternatives(p, d, 1);
}

static int compile_repeat(parser *p, const node *d)
{
  if (d->max == INF && nullable(p, d->first))
    return fail(p, "a repeated sub-pattern that can match the empty string is not supported");
  for (int i = 0; i < d->min; i++)
    if (compile(p, d->first)) return -1;
  if (d->max == INF) {
    int split = emit(p, I_SPLIT, 0, 0, 0);
    if (split < 0 || compile(p, d->first) || emit(p, I_JMP, 0, split, 0) < 0) return -1;
    int out = (int)p->re->nprog;
    p->re->prog[split].x = d->greedy ? split + 1 : out;
    p->re->prog[split].y = d->greedy ? out : split + 1;
    return 0;
  }
  int first = (int)p->re->nprog, count = d->max - d->min;
  int *splits = malloc(sizeof(int) * (size_t)(count ? count : 1));
  if (!splits) return fail(p, "out of memory");
  for (int i = 0; i < count; i++) {
    splits[i] = emit(p, I_SPLIT, 0, 0, 0);
    if (splits[i] < 0 || compile(p, d->first)) return free(splits), -1;
  }
  int out = (int)p->re->nprog;
  for (int i = 0; i < count; i++) {
    instr *s = &p->re->prog[splits[i]];
    s->x = d->greedy ? splits[i] + 1 : out;
    s->y = d->greedy ? out : splits[i] + 1;
  }
  (void)first;
  free(splits);
  return 0;
}

static int compile_alt(parser *p, const node *d)
{
  if (d->first == d->last) return compile(p, d->first);
  return compile_alternatives(p, d, 0);
}

static int compile(parser *p, int n)
{
  node d = p->nodes[n];
  switch (d.kind) {
  case N_CHAR: return emit(p, d.fold ? I_CHARI : I_CHAR, d.cp, 0, 0) < 0 ? -1 : 0;
  case N_SET: return emit(p, I_SET, (uint32_t)d.set, 0, 0) < 0 ? -1 : 0;
  case N_ANY: return emit(p, I_ANY, 0, 0, 0) < 0 ? -1 : 0;
  case N_CAT:
    for (int k = d.first; k >= 0; k = p->nodes[k].next)
      if (compile(p, k)) return -1;
    return 0;
  case N_ALT: return compile_alt(p, &d);
  case N_REPEAT: return compile_repeat(p, &d);
  case N_LOOK: {
    int look = emit(p, I_LOOK, (uint32_t)d.neg, 0, 0);
    if (look < 0 || compile(p, d.first) || emit(p, I_MATCH, 0, 0, 0) < 0) return -1;
    p->re->prog[look].x = (int)p->re->nprog;
    return 0;
  }
  }
  return fail(p, "internal error: unknown node");
}

void ptdp_regex_free(ptdp_regex **re)
{
  if (!re || !*re) return;
  for (size_t i = 0; i < (*re)->nsets; i++) free((*re)->sets[i].terms);
  free((*re)->sets);
  free((*re)->prog);
  free((*re)->guards);
  free(*re);
  *re = NULL;
}

int ptdp_regex_compile(const char *pat, size_t len, ptdp_regex **re, char *msg, size_t msg_size)
{
  *re = NULL;
  parser p = {.pat = (const unsigned char *)pat, .len = len, .msg = msg, .msg_size = msg_size};
  p.re = calloc(1, sizeof *p.re);
  if (!p.re) return snprintf(msg, msg_size, "out of memory"), -1;
  int root = parse_alt(&p);
  if (root >= 0 && p.pos < p.len) fail(&p, "unbalanced parenthesis");
  if (root >= 0 && !p.failed && nullable(&p, root)) fail(&p, "the pattern can match the empty string");
  if (root >= 0 && !p.failed) {
    p.pos = 0;
    if (!compile_root(&p, root)) emit(&p, I_MATCH, 0, 0, 0);
  }
  free(p.nodes);
  if (p.failed || root < 0) {
    if (!p.failed) snprintf(msg, msg_size, "cannot parse the pattern");
    ptdp_regex_free(&p.re);
    return -1;
  }
  *re = p.re;
  return 0;
}

/* ---------------------------------------------------------------- machine */

static int push(ptdp_regex_work *w, size_t pc, size_t pos)
{
  size_t *s = ptdp_grow(w->stack, &w->cap, w->n + 2, sizeof *s, 256);
  if (!s) return -1;
  w->stack = s;
  w->stack[w->n++] = pc;
  w->stack[w->n++] = pos;
  return 0;
}

static uint32_t char_at(const unsigned char *s, size_t n, size_t pos, size_t *len)
{
  if (s[pos] < 0x80) {
    *len = 1;
    return s[pos];
  }
  uint32_t cp;
  *len = (size_t)ptdp_utf8_decode(s + pos, n - pos, &cp);
  return cp;
}

/* Run from pc at pos: 1 with *end on a match, 0 on none, -1 out of memory. */
static int run(const ptdp_regex *re, ptdp_regex_work *w, const unsigned char *s, size_t n, size_t pc, size_t pos,
               size_t *end)
{
  const size_t base = w->n;
  while (1) {
    if (++w->steps > w->budget) return -2;
    const instr *in = &re->prog[pc];
    size_t len;
    uint32_t cp;
    int ok = 1;
    switch (in->op) {
    case I_CHAR:
    case I_CHARI:
    case I_SET:
    case I_ANY:
      if (pos >= n) {
        ok = 0;
        break;
      }
      cp = char_at(s, n, pos, &len);
      ok = in->op == I_CHAR    ? cp == in->arg
           : in->op == I_CHARI ? fold_lower(cp) == in->arg
           : in->op == I_SET   ? set_has(&re->sets[in->arg], cp)
                               : cp != '\n';
      pos += len, pc++;
      break;
    case I_SPLIT:
      if (push(w, (size_t)in->y, pos)) return -1;
      pc = (size_t)in->x;
      break;
    case I_JMP: pc = (size_t)in->x; break;
    case I_GUARD: {
      const first_set *f = &re->guards[in->arg];
      ok = pos < n && (s[pos] < 128 ? (int)((f->ascii[s[pos] >> 6] >> (s[pos] & 63)) & 1u) : f->other);
      pc++;
      break;
    }
    case I_LOOK: {
      size_t e;
      int r = run(re, w, s, n, pc + 1, pos, &e);
      if (r < 0) return r;
      ok = r != (int)in->arg;
      pc = (size_t)in->x;
      break;
    }
    case I_MATCH:
      w->n = base;
      *end = pos;
      return 1;
    }
    if (ok) continue;
    if (w->n == base) return 0;
    w->n -= 2;
    pc = w->stack[w->n];
    pos = w->stack[w->n + 1];
  }
}

int ptdp_regex_search(const ptdp_regex *re, ptdp_regex_work *w, const unsigned char *s, size_t n, size_t from,
                      size_t *start, size_t *end)
{
  for (size_t i = from; i < n;) {
    w->n = 0;
    w->steps = 0;
    w->budget = 64 * (n - i) + ((size_t)1 << 20);
    int r = run(re, w, s, n, 0, i, end);
    if (r) {
      *start = i;
      return r;
    }
    size_t len;
    char_at(s, n, i, &len);
    i += len;
  }
  return 0;
}

void ptdp_regex_work_free(ptdp_regex_work *w)
{
  free(w->stack);
  w->stack = NULL;
  w->n = w->cap = 0;
}
