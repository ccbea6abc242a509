# validation/bench: benchmarks, scripts that print figures (not timed tests); results and
# machine in validation/bench/README.md
EXTRA_DIST += validation/bench/bench_parallel.sh validation/bench/bench_pipeline.sh
dist_noinst_SCRIPTS += validation/bench/bench_tokenizer.sh validation/bench/bench_data_startup.sh
EXTRA_DIST += validation/bench/bench_train.sh validation/bench/bench.in validation/bench/sgemm_bench.c \
	validation/bench/gen_corpus.c validation/bench/README.md
EXTRA_DIST += validation/bench/bench_data.sh
EXTRA_DIST += validation/bench/bench_checkpoint.sh validation/bench/io_bench.c
# data at scale: ptdp-preprocess on generated corpora of several sizes (MB/s, peak RSS)
dist_noinst_SCRIPTS += validation/bench/bench_data_preprocess.sh
EXTRA_DIST += validation/bench/gen_jsonl.py
# GPU: the GEMM ceiling probe and the GPU training benchmark (bench_gpu.sh builds the probe)
EXTRA_DIST += validation/bench/bench_gpu.sh validation/bench/gemm_gpu_bench.c validation/bench/gpt_configs.sh
# ptdp-sim against ptdp-train on this CPU machine (time per iteration, peak activations)
dist_noinst_SCRIPTS += validation/bench/bench_sim_cpu.sh
# ptdp's CPU backend timed operator by operator, for ptdp-sim's CPU hardware file
# (jobs/measure_cpu_hw.sh builds it with make validation/bench/cpu_op_bench)
check_PROGRAMS += validation/bench/cpu_op_bench
validation_bench_cpu_op_bench_SOURCES = validation/bench/cpu_op_bench.c
# the emulation: a gpt-mock iteration on the emulated CUDA backend against the CPU backend
dist_noinst_SCRIPTS += validation/bench/bench_emu.sh
# the fused attention's two kernel sets timed on one GPU (bench_flash_gpu.sh builds
# flash_gpu_bench.c against the build); its test runs the paths that need no GPU
dist_noinst_SCRIPTS += validation/bench/bench_flash_gpu.sh validation/bench/test_bench_flash_gpu.sh
TESTS += validation/bench/test_bench_flash_gpu.sh
# the probe on the emulated GPU (validation/emu), for the test of the script's logic
check_PROGRAMS += validation/bench/flash_gpu_bench_emu
validation_bench_flash_gpu_bench_emu_SOURCES = validation/bench/flash_gpu_bench.c
validation_bench_flash_gpu_bench_emu_CPPFLAGS = $(EMU_RACE_CPP)
validation_bench_flash_gpu_bench_emu_LDFLAGS = -Wl,--whole-archive,validation/emu/libemu_core.a,validation/emu/libemu_flash.a,--no-whole-archive
validation_bench_flash_gpu_bench_emu_LDADD = $(EMU_LIBS)
EXTRA_validation_bench_flash_gpu_bench_emu_DEPENDENCIES = validation/emu/libemu_core.a validation/emu/libemu_flash.a libptdp.a
