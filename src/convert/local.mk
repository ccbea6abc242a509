# src/convert: ptdp-convert, ptdp checkpoints to and from Hugging Face model directories (config.json,
# safetensors written and read by our own code), ptdp-convert(1).  Above train/ (it reads
# ptdp-train's keys from a checkpoint, ptdp/args.h) and io/ (checkpoints).
libptdp_a_SOURCES += src/convert/safetensors.c \
                     src/convert/hf_map.c src/convert/hf_config.c src/convert/hf_gpt2.c src/convert/hf_llama.c \
                     src/convert/hf_model.c src/convert/hf_export.c src/convert/hf_import.c src/convert/convert_impl.h
noinst_HEADERS += include/ptdp/safetensors.h
bin_PROGRAMS += ptdp-convert
ptdp_convert_SOURCES = src/convert/ptdp_convert.c

# Tests (validation/tests/convert): the tables' layouts (test_hf_map), conversions both ways and
# refusals; the check with Hugging Face's packages that a GPU machine's
# image has (validation/gpu/check_hf_export.py, on test_convert.sh's kept export)
check_PROGRAMS += validation/tests/convert/test_hf_map
validation_tests_convert_test_hf_map_SOURCES = validation/tests/convert/test_hf_map.c
TESTS += validation/tests/convert/test_hf_map validation/tests/convert/test_convert.sh \
         validation/tests/convert/test_convert_bad.sh validation/tests/convert/test_convert_llama.sh
dist_noinst_SCRIPTS += validation/tests/convert/test_convert.sh validation/tests/convert/test_convert_bad.sh \
                       validation/tests/convert/test_convert_llama.sh validation/tests/convert/hf_llama_logits.py \
                       validation/tests/convert/st_read.py validation/tests/convert/hf_gpt2_logits.py \
                       validation/tests/convert/convert_checks.py validation/gpu/check_hf_export.py
