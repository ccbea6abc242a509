# src/data: tokenizers, the Megatron indexed dataset (.bin/.idx), GPT dataset indexing and
# blending, and the ptdp-preprocess executable.  User documentation: ptdp-preprocess(1),
# ptdp-dataset(5).
libptdp_a_SOURCES += src/data/tokenizer.c src/data/tokenizer_encode.c src/data/tokenizer_hf.c \
                     src/data/tokenizer_hf_encode.c \
                     src/data/indexed_dataset.c src/data/mmidx_writer.c src/data/gpt_index.c src/data/gpt_cache.c \
                     src/data/gpt_dataset.c \
                     src/data/tokenizer_impl.h src/data/gpt_index.h src/data/gpt_cache.h

# ---- tests (validation/tests/data)
check_PROGRAMS += validation/tests/data/tokenize_tool
validation_tests_data_tokenize_tool_SOURCES = validation/tests/data/tokenize_tool.c

bin_PROGRAMS += ptdp-preprocess
ptdp_preprocess_SOURCES = src/data/ptdp_preprocess.c src/data/preprocess.c src/data/preprocess.h
check_PROGRAMS += validation/tests/data/test_data_units validation/tests/data/mmidx_dump
validation_tests_data_test_data_units_SOURCES = validation/tests/data/test_data_units.c
validation_tests_data_mmidx_dump_SOURCES = validation/tests/data/mmidx_dump.c
TESTS += validation/tests/data/test_data_units
check_PROGRAMS += validation/tests/data/gpt_data_tool
validation_tests_data_gpt_data_tool_SOURCES = validation/tests/data/gpt_data_tool.c
TESTS += validation/tests/data/test_tokenizer_gpt2.sh validation/tests/data/test_preprocess.sh \
         validation/tests/data/test_mmidx_files.sh validation/tests/data/test_gpt_dataset.sh
dist_noinst_SCRIPTS += validation/tests/data/test_tokenizer_gpt2.sh validation/tests/data/test_preprocess.sh \
                       validation/tests/data/test_mmidx_files.sh validation/tests/data/test_gpt_dataset.sh \
                       validation/tests/data/read_mmidx.py validation/tests/data/write_mmidx.py
EXTRA_DIST += validation/tests/data/js_encode.js
# the word cache's bound and constant cost per word
TESTS += validation/tests/data/test_tokenizer_cache.sh
dist_noinst_SCRIPTS += validation/tests/data/test_tokenizer_cache.sh
# list-valued JSON fields (Megatron's pre-split sentences)
TESTS += validation/tests/data/test_preprocess_lists.sh
dist_noinst_SCRIPTS += validation/tests/data/test_preprocess_lists.sh
# crafted tokenizer files with one defect each (duplicated id, gap, byte alphabet, merges)
TESTS += validation/tests/data/test_tokenizer_files.sh
dist_noinst_SCRIPTS += validation/tests/data/test_tokenizer_files.sh validation/tests/data/write_vocab.py
# Hugging Face tokenizer.json, id for id against JavaScript implementations, and crafted files
TESTS += validation/tests/data/test_tokenizer_hf.sh validation/tests/data/test_tokenizer_hf_files.sh
# files read whole refused unless regular and bounded: /dev/zero, a FIFO, a sparse 1 GiB + 1 file
TESTS += validation/tests/data/test_text_file_guards.sh
dist_noinst_SCRIPTS += validation/tests/data/test_text_file_guards.sh
dist_noinst_SCRIPTS += validation/tests/data/test_tokenizer_hf.sh validation/tests/data/test_tokenizer_hf_files.sh \
                       validation/tests/data/fetch_tokenizers.sh
EXTRA_DIST += validation/tests/data/make_tokenizer_json.js validation/tests/data/hf_encode.js \
              validation/tests/data/gen_multilingual.js
# hostile split strings and sample counts reach the GPT dataset as clear errors
TESTS += validation/tests/data/test_data_hostile.sh
dist_noinst_SCRIPTS += validation/tests/data/test_data_hostile.sh
