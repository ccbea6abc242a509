# validation/fuzz: one libFuzzer harness per reader of files ptdp did not write (README there).
# Default build: each harness gets replay_main.c, and test_fuzz_replay.sh runs it over its seed
# corpus (corpus/READER) and the reproducers of past findings (regress/READER) in make check.
# --enable-fuzzing (autotools/ptdp_fuzz.m4): libFuzzer's main instead, for campaign.sh.
FUZZ_COMMON = validation/fuzz/fuzz.h validation/fuzz/fuzz_util.c
# The checkpoint and run-file harnesses share a trainer and HDF5 edit programs (fuzz_h5.h).
FUZZ_H5 = validation/fuzz/fuzz_h5.h validation/fuzz/fuzz_h5edit.c validation/fuzz/fuzz_trainer.c
check_PROGRAMS += validation/fuzz/fuzz_json validation/fuzz/fuzz_gpt2 validation/fuzz/fuzz_mmidx \
                  validation/fuzz/fuzz_hw validation/fuzz/fuzz_deck validation/fuzz/fuzz_ckpt validation/fuzz/fuzz_runfile
check_PROGRAMS += validation/fuzz/fuzz_safetensors
# Hugging Face tokenizer.json
check_PROGRAMS += validation/fuzz/fuzz_hf
validation_fuzz_fuzz_hf_SOURCES = validation/fuzz/fuzz_hf.c $(FUZZ_COMMON)
validation_fuzz_fuzz_hf_LDFLAGS = $(AM_LDFLAGS) $(PTDP_FUZZ_LDFLAGS)
validation_fuzz_fuzz_safetensors_SOURCES = validation/fuzz/fuzz_safetensors.c $(FUZZ_COMMON)
validation_fuzz_fuzz_safetensors_LDFLAGS = $(AM_LDFLAGS) $(PTDP_FUZZ_LDFLAGS)
validation_fuzz_fuzz_json_SOURCES = validation/fuzz/fuzz_json.c src/data/preprocess.c src/data/preprocess.h $(FUZZ_COMMON)
validation_fuzz_fuzz_gpt2_SOURCES = validation/fuzz/fuzz_gpt2.c $(FUZZ_COMMON)
validation_fuzz_fuzz_mmidx_SOURCES = validation/fuzz/fuzz_mmidx.c $(FUZZ_COMMON)
validation_fuzz_fuzz_hw_SOURCES = validation/fuzz/fuzz_hw.c $(FUZZ_COMMON)
validation_fuzz_fuzz_deck_SOURCES = validation/fuzz/fuzz_deck.c $(FUZZ_COMMON)
validation_fuzz_fuzz_ckpt_SOURCES = validation/fuzz/fuzz_ckpt.c $(FUZZ_COMMON) $(FUZZ_H5)
validation_fuzz_fuzz_runfile_SOURCES = validation/fuzz/fuzz_runfile.c $(FUZZ_COMMON) $(FUZZ_H5)
if !PTDP_FUZZING
validation_fuzz_fuzz_json_SOURCES += validation/fuzz/replay_main.c
validation_fuzz_fuzz_gpt2_SOURCES += validation/fuzz/replay_main.c
validation_fuzz_fuzz_mmidx_SOURCES += validation/fuzz/replay_main.c
validation_fuzz_fuzz_hw_SOURCES += validation/fuzz/replay_main.c
validation_fuzz_fuzz_deck_SOURCES += validation/fuzz/replay_main.c
validation_fuzz_fuzz_ckpt_SOURCES += validation/fuzz/replay_main.c
validation_fuzz_fuzz_runfile_SOURCES += validation/fuzz/replay_main.c
validation_fuzz_fuzz_safetensors_SOURCES += validation/fuzz/replay_main.c
validation_fuzz_fuzz_hf_SOURCES += validation/fuzz/replay_main.c
endif
validation_fuzz_fuzz_json_LDFLAGS = $(AM_LDFLAGS) $(PTDP_FUZZ_LDFLAGS)
validation_fuzz_fuzz_gpt2_LDFLAGS = $(AM_LDFLAGS) $(PTDP_FUZZ_LDFLAGS)
validation_fuzz_fuzz_mmidx_LDFLAGS = $(AM_LDFLAGS) $(PTDP_FUZZ_LDFLAGS)
validation_fuzz_fuzz_hw_LDFLAGS = $(AM_LDFLAGS) $(PTDP_FUZZ_LDFLAGS)
validation_fuzz_fuzz_deck_LDFLAGS = $(AM_LDFLAGS) $(PTDP_FUZZ_LDFLAGS)
validation_fuzz_fuzz_ckpt_LDFLAGS = $(AM_LDFLAGS) $(PTDP_FUZZ_LDFLAGS)
validation_fuzz_fuzz_runfile_LDFLAGS = $(AM_LDFLAGS) $(PTDP_FUZZ_LDFLAGS)
TESTS += validation/fuzz/test_fuzz_replay.sh
dist_noinst_SCRIPTS += validation/fuzz/test_fuzz_replay.sh validation/fuzz/campaign.sh validation/fuzz/libver_damage.sh
EXTRA_DIST += validation/fuzz/README validation/fuzz/corpus validation/fuzz/regress validation/fuzz/dict
