#!/bin/sh
# libver_damage.sh BUILDDIR [N]: what HDF5's 1.10 file format (H5Pset_libver_bounds, ckpt_fapl)
# buys a damaged checkpoint.  The checkpoint fuzz_ckpt saves (its tiny model, written in the 1.10
# format as ptdp writes every checkpoint) and the same file rewritten by h5repack in HDF5's
# earliest format (superblock 0: no checksums on object headers, B-trees and heaps) each get N
# copies with one byte flipped (xor 0x10) at the positions test_checkpoint_hostile.sh draws (random
# seed 7, N of them over the whole file).  Each copy is loaded by fuzz_ckpt (the default build's
# replay: the load with the optimizer, every key of /args) and counted: refused, loaded (an unused
# byte; fuzz_ckpt checks the values are the file's), or ended by a signal (a crash: inside HDF5
# when libhdf5 is in the backtrace Open MPI prints) or by the 20 s timeout.  Needs h5repack and
# python3.  Prints one line per format.
set -u
[ $# -ge 1 ] || { echo "usage: $0 BUILDDIR [N]" >&2; exit 2; }
build=$1
n=${2:-300}
fz="$build/validation/fuzz/fuzz_ckpt"
[ -x "$fz" ] || { echo "$0: $fz not built" >&2; exit 2; }
# a libFuzzer build (--enable-fuzzing) runs an input a second time when its allocations and frees
# do not balance, to look for leaks: once is what is counted here
once=""
grep -q LLVMFuzzerRunDriver "$fz" && once=-detect_leaks=0
work=$(mktemp -d "${TMPDIR:-/tmp}/ptdp-libver.XXXXXX")
trap 'rm -rf "$work"' EXIT
: > "$work/empty"
PTDP_FUZZ_SAVE="$work/v110.h5" "$fz" "$work/empty" > /dev/null 2>&1
h5repack "$work/v110.h5" "$work/earliest.h5" || exit 1
for fmt in v110 earliest; do
  mkdir -p "$work/$fmt"
  python3 - "$work/$fmt.h5" "$work/$fmt" "$n" <<'PY'
import random, sys
data = open(sys.argv[1], "rb").read()
random.seed(7)
for pos in sorted(random.sample(range(len(data)), min(int(sys.argv[3]), len(data)))):
    b = bytearray(data)
    b[pos] ^= 0x10
    open("%s/%08d" % (sys.argv[2], pos), "wb").write(bytes(b))
PY
  # one process for many copies (MPI_Init and the harness's own save take a second); after a
  # crash or a hang, the copy it stopped at is counted and the rest go on in a new process
  refused=0 loaded=0 crashed=0 in_hdf5=0 hung=0
  set -- "$work/$fmt"/*
  while [ $# -gt 0 ]; do
    # shellcheck disable=SC2086
    ASAN_OPTIONS=detect_leaks=0 PTDP_FUZZ_VERBOSE=1 timeout $((20 + $#)) "$fz" $once "$@" > "$work/out" 2>&1
    rc=$?
    done_n=$(grep -c '^keys: ' "$work/out")
    refused=$((refused + $(grep -c '^load: refused' "$work/out")))
    loaded=$((loaded + $(grep -c '^load: accepted' "$work/out")))
    [ $rc -eq 0 ] || [ "$done_n" -ge $# ] && break
    # the copy it stopped at: counted once, as a hang or a crash (not as its load's verdict)
    if grep -q '^load: ' "$work/out" && [ "$(grep -c '^load: ' "$work/out")" -gt "$done_n" ]; then
      case $(grep '^load: ' "$work/out" | tail -n 1) in
      "load: refused"*) refused=$((refused - 1)) ;;
      *) loaded=$((loaded - 1)) ;;
      esac
    fi
    if [ $rc -eq 124 ]; then hung=$((hung + 1))
    else
      crashed=$((crashed + 1))
      grep -q 'libhdf5' "$work/out" && in_hdf5=$((in_hdf5 + 1))
    fi
    shift $((done_n + 1))
  done
  echo "$fmt: $n flipped bytes: $refused refused, $loaded loaded, $crashed crashed ($in_hdf5 inside HDF5), $hung hung"
done
