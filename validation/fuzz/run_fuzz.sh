#!/bin/sh
# run_fuzz.sh [SECONDS] [WORKDIR]: fuzz the .idx validator (ptdp_mmidx_parse) with libFuzzer
# under AddressSanitizer and UndefinedBehaviorSanitizer.  Needs clang and libclang-rt-14-dev
# (apt-get install clang libclang-rt-14-dev).  Seeds: valid indexes written by
# validation/tests/data/write_mmidx.py.  Prints executions and crashes; exit 1 on a crash.
set -eu
src=$(cd "$(dirname "$0")/../.." && pwd)
secs=${1:-60}
work=${2:-$(mktemp -d "${TMPDIR:-/tmp}/ptdp-fuzz.XXXXXX")}
mkdir -p "$work/corpus" "$work/artifacts"
cc=${CLANG:-clang}
mpicc_flags=$(mpicc --showme:compile 2>/dev/null || echo "-I/usr/lib/x86_64-linux-gnu/openmpi/include")
# error.c pulls in hdf5.h; the validator itself needs only the MPI header and error.c
hdf5_flags=$(pkg-config --cflags hdf5-openmpi 2>/dev/null || echo "-I/usr/include/hdf5/openmpi")
mpi_libs=$(mpicc --showme:link 2>/dev/null || echo "-lmpi")
hdf5_libs=$(pkg-config --libs hdf5-openmpi 2>/dev/null || echo "-lhdf5_openmpi")
# a config.h is not needed by these sources
$cc -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined -I"$src/include" $mpicc_flags $hdf5_flags \
  "$src/validation/fuzz/fuzz_mmidx.c" "$src/src/data/indexed_dataset.c" "$src/src/core/error.c" \
  $mpi_libs $hdf5_libs -o "$work/fuzz_mmidx"
# seeds: the bin size (8 bytes) then a valid .idx
py=${PYTHON3:-/usr/bin/python3}
for code in 8 4 1 5; do
  "$py" "$src/validation/tests/data/write_mmidx.py" "$work/seed$code" $code > /dev/null
  "$py" -c "import os,struct,sys; p=sys.argv[1]; sys.stdout.buffer.write(struct.pack('<Q', os.path.getsize(p+'.bin')) + open(p+'.idx','rb').read())" \
    "$work/seed$code" > "$work/corpus/seed$code"
done
"$work/fuzz_mmidx" -max_total_time="$secs" -max_len=4096 -artifact_prefix="$work/artifacts/" "$work/corpus" \
  > "$work/log" 2>&1 || true
execs=$(sed -n 's/^Done \([0-9]*\) runs.*/\1/p' "$work/log")
crashes=$(ls "$work/artifacts" | wc -l)
tail -3 "$work/log"
echo "fuzz_mmidx: ${execs:-?} executions in ${secs} s, $crashes crashes (artifacts in $work/artifacts)"
[ "$crashes" -eq 0 ]
