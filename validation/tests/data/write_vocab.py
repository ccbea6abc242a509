#!/usr/bin/env python3
"""write_vocab.py KIND VOCAB MERGES: a small GPT-2 style vocabulary and merge file, well formed
(KIND good) or with one planted defect, for test_tokenizer_files.sh.

The vocabulary is GPT-2's layout in miniature: the 256 one-byte tokens first, in GPT-2's order
(the printable bytes, then the others, each written in GPT-2's byte-to-unicode alphabet, so
'a' is 64, 'b' 65, 'c' 66 and ' ' 220 as in GPT-2), then the merged tokens "ab", "ba", " c",
then <|endoftext|>.  Kinds (one defect each):
  good        ids 0..260, every merge's parts and result are tokens
  dup_id      'b' also has id 64, and nothing has 65: largest id + 1 == count still holds
              (a duplicated id once had "abba cab" encoded as [64 64 64 64 220 66 64 64])
  gap         <|endoftext|> is 300: ids 0..259 then 300
  huge_id     <|endoftext|> is 2^30 - 1 (a table sized by it would be 12 GB)
  no_byte     byte 0x00's token is missing (its id given to a new token "zz")
  merge_part  a merge names "q@" (not a token)
  merge_join  a merge "c a" whose result "ca" is not a token
"""
import json
import sys


def byte_alphabet():
    printable = list(range(ord('!'), ord('~') + 1)) + list(range(0xA1, 0xAD)) + list(range(0xAE, 0x100))
    cp = {}
    n = 0
    for b in range(256):
        if b in printable:
            cp[b] = b
        else:
            cp[b] = 256 + n
            n += 1
    return {b: chr(c) for b, c in cp.items()}, printable


def main():
    kind, vocab_path, merges_path = sys.argv[1:4]
    enc, printable = byte_alphabet()
    order = printable + [b for b in range(256) if b not in printable]
    vocab = {enc[b]: i for i, b in enumerate(order)}
    sp = enc[ord(' ')]
    merges = ["a b", "b a", sp + " c"]
    for m in merges:
        vocab[m.replace(' ', '')] = len(vocab)
    vocab["<|endoftext|>"] = len(vocab)
    if kind == "dup_id":
        vocab['b'] = vocab['a']
    elif kind == "gap":
        vocab["<|endoftext|>"] = 300
    elif kind == "huge_id":
        vocab["<|endoftext|>"] = (1 << 30) - 1
    elif kind == "no_byte":
        zid = vocab.pop(enc[0])
        vocab["zz"] = zid
    elif kind == "merge_part":
        merges.append("q@ a")
    elif kind == "merge_join":
        merges.append("c a")
    elif kind != "good":
        sys.exit("unknown kind " + kind)
    with open(vocab_path, "w", encoding="utf-8") as f:
        json.dump(vocab, f, ensure_ascii=False)
    with open(merges_path, "w", encoding="utf-8") as f:
        f.write("#version: 0.2\n" + "\n".join(merges) + "\n")
    # the check this kind defeats, if any: the old rule was only largest id + 1 == count
    ids = list(vocab.values())
    print("old_rule_passes" if max(ids) + 1 == len(ids) else "old_rule_fails")


main()
