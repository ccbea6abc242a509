# gpt_config NAME: the model flags of the GPU benchmarks' configurations, written once for
# bench_gpu.sh, validation/sim/check_gpu_prediction.sh and validation/tests/sim/test_sim_h200_ptdp.sh
# (sourced, POSIX sh): GPT 125M and 1.3B of the GPU benchmarks (Narayanan's vocabulary 50304), and
# tiny for the scripts' own tests.  Returns 1 for another name.
gpt_config() {
  case $1 in
  125M) echo "--num-layers 12 --hidden-size 768 --num-attention-heads 12 --max-position-embeddings 1024" \
    "--seq-length 1024 --vocab-size 50304" ;;
  1.3B) echo "--num-layers 24 --hidden-size 2048 --num-attention-heads 16 --max-position-embeddings 2048" \
    "--seq-length 2048 --vocab-size 50304" ;;
  tiny) echo "--num-layers 2 --hidden-size 64 --num-attention-heads 4 --max-position-embeddings 128" \
    "--seq-length 128 --vocab-size 1024" ;;
  *) return 1 ;;
  esac
}
