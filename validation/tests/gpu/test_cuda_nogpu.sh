#!/bin/sh
# Without a GPU (or without CUDA in the build), backend = cuda stops at once with a message that
# names the problem, exits non-zero, and leaves no rank hanging; with a GPU this test skips (the
# other GPU tests cover it).  Also: bf16 on backend = cuda gets the same message (the precision
# is no reason to refuse), and comm-backend = nccl is refused on the CPU backend.
. "$top_srcdir/validation/tests/common.sh"
run() { launch 2 "$TRAIN" "$top_srcdir/inputs/gpt-mock.in" --train-iters 1 --lr-warmup-iters 0 --run-file none "$@" \
          > "$TMPD/out.log" 2>&1; }
run --backend cuda
rc=$?
if [ $rc -eq 0 ]; then echo "SKIP: a GPU is present; the GPU tests cover backend = cuda"; exit 77; fi
[ $rc -ne 124 ]; ok $? "backend = cuda without a GPU ends (exit $rc), no rank left waiting"
grep -q "backend = cuda: \(no usable GPU on this node (cudaGetDeviceCount\|this ptdp was built without CUDA\)" "$TMPD/out.log"
ok $? "the message names the problem: $(grep -o 'backend = cuda: .*' "$TMPD/out.log" | head -n 1)"
run --backend cuda --bf16 true
[ $? -ne 0 ] && grep -q "backend = cuda: \(no usable GPU on this node\|this ptdp was built without CUDA\)" "$TMPD/out.log"
ok $? "bf16 on backend = cuda: the same message about the GPU"
run --comm-backend nccl
[ $? -ne 0 ] && grep -q "comm-backend = nccl needs backend = cuda" "$TMPD/out.log"
ok $? "comm-backend = nccl refused on the CPU backend"
finish
