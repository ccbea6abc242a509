# validation/tests: end-to-end tests of ptdp-train (bad input, equivalence of parallel layouts).
# compare_dumps.py is a helper of the equivalence tests, not a test itself.
TESTS += validation/tests/test_bad_input.sh \
  validation/tests/test_equivalence_tp_dp.sh \
  validation/tests/test_equivalence_pp.sh \
  validation/tests/test_mixed_precision.sh validation/tests/test_bf16_corpus.sh \
  validation/tests/test_flash_attention.sh validation/tests/test_equivalence_llama.sh \
  validation/tests/test_equivalence_moe.sh
dist_noinst_SCRIPTS += validation/tests/test_bad_input.sh \
  validation/tests/test_equivalence_tp_dp.sh \
  validation/tests/test_equivalence_pp.sh \
  validation/tests/test_mixed_precision.sh validation/tests/test_bf16_corpus.sh \
  validation/tests/test_flash_attention.sh validation/tests/test_equivalence_llama.sh validation/tests/compare_dumps.py validation/tests/equivalence_lib.sh \
  validation/tests/test_equivalence_moe.sh

# Words that stay true: no file cites one of ptdp's issues by its number (test_issue_numbers.sh), and
# ptdp-tests(7) has one entry for each test registered in TESTS and no other (test_tests_page.sh);
# each proves itself on a planted mistake.
TESTS += validation/tests/docs/test_issue_numbers.sh validation/tests/docs/test_tests_page.sh
dist_noinst_SCRIPTS += validation/tests/docs/test_issue_numbers.sh validation/tests/docs/test_tests_page.sh
