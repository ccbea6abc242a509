# src/generate: text generation: the KV-cached inference forward pass, sampling (temperature,
# top-k, top-p), and the ptdp-generate executable
libptdp_a_SOURCES += src/generate/generate.c src/generate/infer.c src/generate/sample.c
bin_PROGRAMS += ptdp-generate
ptdp_generate_SOURCES = src/generate/ptdp_generate.c

# Tests (validation/tests/generate)
check_PROGRAMS += validation/tests/generate/test_generate
validation_tests_generate_test_generate_SOURCES = validation/tests/generate/test_generate.c
TESTS += validation/tests/generate/test_generate.sh validation/tests/generate/test_generate_cli.sh
dist_noinst_SCRIPTS += validation/tests/generate/test_generate.sh validation/tests/generate/test_generate_cli.sh
