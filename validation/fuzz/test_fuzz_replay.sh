#!/bin/sh
# Every fuzz harness over its seed corpus and the reproducers of past findings (validation/fuzz):
# each input must run to completion (no crash, no hang, no broken promise; with
# --enable-sanitizers or --enable-fuzzing, no AddressSanitizer or UBSan report).  Files are
# named one by one, which a libFuzzer build also takes as "run these and stop".
. "$top_srcdir/validation/tests/common.sh"
F="$top_srcdir/validation/fuzz"
for r in json gpt2 mmidx hw deck ckpt runfile safetensors hf; do
  set -- "$F/corpus/$r"/* "$F/regress/$r"/*
  n=0
  for f in "$@"; do [ -f "$f" ] && n=$((n + 1)); done
  [ "$n" -ge 3 ]; ok $? "$r: $n committed inputs (a few seeds at least)"
  start=$(date +%s)
  ls "$F/corpus/$r"/* "$F/regress/$r"/* 2>/dev/null | timeout 120 xargs "$top_builddir/validation/fuzz/fuzz_$r" \
    > "$TMPD/$r.log" 2>&1
  rc=$?
  [ "$rc" -eq 0 ]; ok $? "$r: every input replayed cleanly in $(($(date +%s) - start)) s (exit $rc)"
  [ "$rc" -eq 0 ] || tail -20 "$TMPD/$r.log"
done
finish
