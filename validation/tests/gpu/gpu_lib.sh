# Shared by the GPU tests; source it after common.sh.  Skips the test (exit 77, automake's SKIP)
# with the reason when this build has no CUDA backend or this node no GPU:
#   ptdp-train --backend cuda fails at once with "no usable GPU" / "built without CUDA" then.
gpu_or_skip() {
  launch 1 "$TRAIN" "$top_srcdir/inputs/gpt-mock.in" --backend cuda --train-iters 1 \
    --lr-warmup-iters 0 --run-file none > "$TMPD/probe.log" 2>&1 && return 0
  if grep -q "built without CUDA\|no usable GPU" "$TMPD/probe.log"; then
    skip "$(grep -o 'backend = cuda: .*' "$TMPD/probe.log" | head -n 1)"
  fi
  echo "FAIL: a one-iteration run on the CUDA backend failed:"; tail -n 20 "$TMPD/probe.log"
  exit 1
}
# GPUs on this node (0 if nvidia-smi is absent)
gpu_count() { nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true; }
