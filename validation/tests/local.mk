# validation/tests: end-to-end tests of ptdp-train (bad input, equivalence of parallel layouts).
# compare_dumps.py is a helper of the equivalence tests, not a test itself.
TESTS += validation/tests/test_bad_input.sh \
  validation/tests/test_equivalence_tp_dp.sh \
  validation/tests/test_equivalence_pp.sh \
  validation/tests/test_mixed_precision.sh validation/tests/test_bf16_corpus.sh \
  validation/tests/test_flash_attention.sh validation/tests/test_equivalence_llama.sh
dist_noinst_SCRIPTS += validation/tests/test_bad_input.sh \
  validation/tests/test_equivalence_tp_dp.sh \
  validation/tests/test_equivalence_pp.sh \
  validation/tests/test_mixed_precision.sh validation/tests/test_bf16_corpus.sh \
  validation/tests/test_flash_attention.sh validation/tests/test_equivalence_llama.sh validation/tests/compare_dumps.py validation/tests/equivalence_lib.sh
