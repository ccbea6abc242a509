#!/usr/bin/env python3
"""Generate src/data/unicode_tables.c: sorted code point ranges for the classes the GPT-2
pre-tokeniser needs.

  L  letters: general categories Lu Ll Lt Lm Lo            (regex \\p{L})
  N  numbers: general categories Nd Nl No                  (regex \\p{N})
  S  White_Space property (PropList.txt), the set regex \\s matches in the `regex` module
     that GPT-2 used.
  NFC canonical combining classes, canonical decompositions and the primary composites, for
     Unicode normalization form C (the NFC normalizer of Qwen's tokenizer.json files)
  GC every code point's general category (Lu Ll ... Co; unassigned code points, Cn, are left
     out), for the \\p{..} classes of the split patterns in Hugging Face tokenizer.json files.  Python's unicodedata does not expose the property, so it is derived
     from str.isspace() minus U+001C..U+001F (isspace() counts the information separators,
     White_Space does not); the result is checked against the fixed PropList list.

Usage: /usr/bin/python3 src/data/gen_unicode_tables.py > src/data/unicode_tables.c
"""
import sys
import unicodedata

MAX = 0x110000


def ranges(pred):
    out, start = [], None
    for cp in range(MAX):
        if pred(cp):
            if start is None:
                start = cp
        elif start is not None:
            out.append((start, cp - 1))
            start = None
    if start is not None:
        out.append((start, MAX - 1))
    return out


def is_letter(cp):
    return unicodedata.category(chr(cp)) in ("Lu", "Ll", "Lt", "Lm", "Lo")


def is_number(cp):
    return unicodedata.category(chr(cp)) in ("Nd", "Nl", "No")


def is_space(cp):
    return chr(cp).isspace() and not 0x1C <= cp <= 0x1F


PROPLIST_WHITE_SPACE = [(0x09, 0x0D), (0x20, 0x20), (0x85, 0x85), (0xA0, 0xA0), (0x1680, 0x1680),
                        (0x2000, 0x200A), (0x2028, 0x2029), (0x202F, 0x202F), (0x205F, 0x205F),
                        (0x3000, 0x3000)]


# the order of ptdp_uc_gc in unicode.h
CATEGORIES = ["Lu", "Ll", "Lt", "Lm", "Lo", "Mn", "Mc", "Me", "Nd", "Nl", "No", "Pc", "Pd", "Ps", "Pe", "Pi",
              "Pf", "Po", "Sm", "Sc", "Sk", "So", "Zs", "Zl", "Zp", "Cc", "Cf", "Cs", "Co", "Cn"]


def category_ranges():
    out = []
    for cp in range(MAX):
        cat = unicodedata.category(chr(cp))
        if cat == "Cn":
            continue
        if out and out[-1][1] == cp - 1 and out[-1][2] == cat:
            out[-1][1] = cp
        else:
            out.append([cp, cp, cat])
    return out


def emit_categories(rs):
    print("const ptdp_uc_gc_range ptdp_uc_gc_table[] = {")
    line = " "
    for lo, hi, cat in rs:
        item = " {0x%X, 0x%X, PTDP_GC_%s}," % (lo, hi, cat.upper())
        if len(line) + len(item) > 110:
            print(line)
            line = " "
        line += item
    print(line)
    print("};")
    print("const size_t ptdp_uc_gc_count = %d;" % len(rs))
    print()


def nfc_tables():
    ccc, dec, comp = [], [], []
    for cp in range(MAX):
        c = chr(cp)
        k = unicodedata.combining(c)
        if k:
            if ccc and ccc[-1][1] == cp - 1 and ccc[-1][2] == k:
                ccc[-1][1] = cp
            else:
                ccc.append([cp, cp, k])
        d = unicodedata.decomposition(c)
        if d and not d.startswith("<"):
            parts = [int(x, 16) for x in d.split()]
            a, b = parts[0], parts[1] if len(parts) > 1 else 0
            dec.append((cp, a, b))
            # a primary composite: NFC puts it back together (composition exclusions, singletons
            # and non-starter decompositions do not)
            if b and unicodedata.normalize("NFC", chr(a) + chr(b)) == c:
                comp.append((a, b, cp))
    comp.sort()
    return ccc, dec, comp


def emit_nfc(ccc, dec, comp):
    for name, typ, rows, fmt in (("ptdp_uc_ccc", "ptdp_uc_ccc_range", ccc, " {0x%X, 0x%X, %d},"),
                                 ("ptdp_uc_decomp", "ptdp_uc_triple", dec, " {0x%X, 0x%X, 0x%X},"),
                                 ("ptdp_uc_compose", "ptdp_uc_triple", comp, " {0x%X, 0x%X, 0x%X},")):
        print("const %s %s[] = {" % (typ, name))
        line = " "
        for r in rows:
            item = fmt % tuple(r)
            if len(line) + len(item) > 110:
                print(line)
                line = " "
            line += item
        print(line)
        print("};")
        print("const size_t %s_count = %d;" % (name, len(rows)))
        print()


def emit(name, rs):
    print("const ptdp_uc_range %s[] = {" % name)
    line = " "
    for lo, hi in rs:
        item = " {0x%X, 0x%X}," % (lo, hi)
        if len(line) + len(item) > 96:
            print(line)
            line = " "
        line += item
    print(line)
    print("};")
    print("const size_t %s_count = %d;" % (name, len(rs)))
    print()


def main():
    space = ranges(is_space)
    if space != PROPLIST_WHITE_SPACE:
        sys.exit("White_Space derived from isspace() differs from PropList: %r" % space)
    print("/* Generated by src/data/gen_unicode_tables.py from Python's unicodedata (Unicode %s)."
          % unicodedata.unidata_version)
    print(" * Do not edit.  Sorted, disjoint, inclusive code point ranges {lo, hi}. */")
    print('#include "unicode.h"')
    print()
    emit("ptdp_uc_letter", ranges(is_letter))
    emit("ptdp_uc_number", ranges(is_number))
    emit("ptdp_uc_space", space)
    emit_categories(category_ranges())
    emit_nfc(*nfc_tables())


if __name__ == "__main__":
    main()
