#!/usr/bin/env python3
"""gen_jsonl.py OUT MB [VOCAB_WORDS] [SEED]: about MB megabytes of JSON lines {"text": "..."}
of generated prose, for preprocessing benchmarks (needs numpy).

The text has the statistics that matter to a BPE tokenizer and its word cache, not meaning:
- a vocabulary of VOCAB_WORDS (default 100,000) words: the 100 commonest English words at the
  top ranks, then invented words, letters drawn with English letter frequencies, lengths 1..14
  (mean about 5), shorter ones ranked higher; 3% Greek, Cyrillic or CJK words and 1% numbers,
  ranked below the first 500;
- word frequencies by Zipf's law, p(rank r) ~ 1/r^1.07 (English running text);
- separators: a space, a comma, a full stop (the next word capitalised), a paragraph break
  (a JSON \\n\\n escape); each document ends with a full stop;
- documents of log-normal length, median 400 words (about 2.5 kB), a long tail to 50,000.
About 40 MB/s: numpy does the sampling and the gathering of bytes."""
import sys

import numpy as np

COMMON = ("the of and to a in is that for it as was with be by on not he i this are or his from at which but "
          "have an they you were her she there one all we their has been would more if will when so who no "
          "can said what out up other do its into them some time could only two then may these first new "
          "like my me any now over such our man also most than very after years well made before where "
          "through just").split()
LETTERS = "etaoinshrdlcumwfgypbvkjxqz"
LETTER_P = np.array([12.7, 9.1, 8.2, 7.5, 7.0, 6.7, 6.3, 6.1, 6.0, 4.3, 4.0, 2.8, 2.8, 2.4, 2.4, 2.2, 2.0, 2.0,
                     1.9, 1.5, 1.0, 0.8, 0.2, 0.2, 0.1, 0.1])
SCRIPTS = ["αβγδεζηθικλμνξοπρστυφχψω", "абвгдежзийклмнопрстуфхцчшщыэюя", "的一是不了人我在有他这中大来上国个到说们为子和你地出道也时年"]
SEPS = [b" ", b", ", b". ", b".\\n\\n", b"."]  # JSON-escaped; after a full stop the next word is capitalised
SEP_P = [0.86, 0.07, 0.06, 0.01, 0.0]         # the last, a bare full stop, ends each document


def invented(n, rng, seen):
    """n distinct invented words (English letter frequencies), shorter ones first."""
    p = LETTER_P / LETTER_P.sum()
    words = []
    while len(words) < n:
        m = n - len(words) + 1000
        lengths = np.minimum(14, np.maximum(1, rng.gamma(2.6, 2.0, m).astype(np.int64))).tolist()
        letters = rng.choice(len(LETTERS), sum(lengths), p=p).tolist()
        at = 0
        for length in lengths:
            w = "".join(LETTERS[i] for i in letters[at:at + length])
            at += length
            if w not in seen and len(words) < n:
                seen.add(w)
                words.append(w)
    noise = rng.gamma(2.0, 1.0, n)  # rank by length plus noise
    return [words[i] for i in np.argsort(np.array([len(w) for w in words]) + noise, kind="stable").tolist()]


def vocabulary(n, rng):
    """n distinct words, by rank."""
    seen = set(COMMON)
    nother = n // 25
    latin = COMMON + invented(n - len(COMMON) - nother, rng, seen)
    other = []
    while len(other) < nother:
        u = rng.random()
        if u < 0.75:
            alphabet = SCRIPTS[rng.integers(len(SCRIPTS))]
            w = "".join(alphabet[i] for i in rng.integers(0, len(alphabet), int(rng.integers(2, 9))))
        else:
            w = str(int(rng.integers(0, 10 ** int(rng.integers(1, 7)))))
        if w not in seen:
            seen.add(w)
            other.append(w)
    ranks = np.sort(rng.choice(np.arange(500, n), nother, replace=False))  # where the others go
    words, j = [], 0
    for w in other:
        while len(words) < ranks[j]:
            words.append(latin[len(words) - j])
        words.append(w)
        j += 1
    words += latin[len(words) - j:]
    return words


def main(out, mb, nvocab=100000, seed=1):
    rng = np.random.default_rng(seed)
    words = vocabulary(nvocab, rng)
    nsep = len(SEPS)
    # pieces[(word * nsep + sep) * 2 + capitalised]: a word and the separator after it; then
    # the start and the end of a line; all in one byte array
    pieces = []
    for w in words:
        for s in SEPS:
            pieces.append(w.encode() + s)
            pieces.append(w[:1].upper().encode() + w[1:].encode() + s)
    start, end = len(pieces), len(pieces) + 1
    pieces += [b'{"text": "', b'"}\n']
    flat = np.frombuffer(b"".join(pieces), np.uint8)
    plen = np.array([len(x) for x in pieces], np.int64)
    poff = np.cumsum(plen) - plen
    # Zipf ranks by a table of the inverse CDF on 2^24 equal steps of u (each step's mass,
    # 6e-8, is below the rarest word's, 5e-7, so every rank keeps its frequency)
    cdf = np.cumsum(1.0 / np.arange(1, nvocab + 1) ** 1.07)
    cdf /= cdf[-1]
    inverse = np.searchsorted(cdf, (np.arange(1 << 24) + 0.5) / (1 << 24)).astype(np.int32)
    target, written = mb * 1_000_000, 0
    with open(out, "wb") as f:
        while written < target:
            lens = np.minimum(50000, np.maximum(1, rng.lognormal(np.log(400), 1.0, 256).astype(np.int64)))
            total = int(lens.sum())
            last = np.cumsum(lens) - 1  # each document's last word
            ids = inverse[rng.integers(0, 1 << 24, total)].astype(np.int64)
            sep = rng.choice(nsep, total, p=SEP_P)
            sep[last] = nsep - 1
            cap = np.zeros(total, np.int64)
            cap[1:] = sep[:-1] >= 2  # after a full stop, also the first word of each document
            cap[0] = 1
            key = (ids * nsep + sep) * 2 + cap
            key = np.insert(key, np.concatenate([[0], last[:-1] + 1]), start)  # line starts
            key = np.insert(key, last + 1 + np.arange(1, len(lens) + 1), end)  # line ends
            n = plen[key]  # gather the pieces' bytes: position j of piece i is poff[i] + j
            at = np.cumsum(n) - n
            chunk = flat[np.repeat(poff[key] - at, n) + np.arange(int(n.sum()))].tobytes()
            f.write(chunk)
            written += len(chunk)


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), *(int(a) for a in sys.argv[3:5]))
