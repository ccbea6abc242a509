# include/ptdp: one header per module.  `make install` installs the public interface only: what
# a program linking libptdp.a needs to build and run a model (the backend, the parallel grid and
# ptdp_main, the model with its plan and parameter table, the optimizer), to generate text, to run
# the simulator on ptdp-train's key table, to tokenize, and to read and write checkpoints; with
# every header these include, so each installed header compiles on its own against the installed
# tree (validation/tests/core/test_headers.sh).  The rest are the executables' and the modules'
# internals (the trainer, its batches and run file, the pipeline driver, the named events, the
# datasets, the sweep, the CUDA and thread helpers), distributed but not installed.
ptdpinclude_HEADERS += include/ptdp/error.h include/ptdp/options.h include/ptdp/dtype.h include/ptdp/half.h
ptdpinclude_HEADERS += include/ptdp/backend.h
ptdpinclude_HEADERS += include/ptdp/comm.h include/ptdp/grid.h include/ptdp/parallel_kinds.h include/ptdp/program.h
ptdpinclude_HEADERS += include/ptdp/params.h include/ptdp/schedule.h include/ptdp/grad_buffer.h include/ptdp/shard_map.h
ptdpinclude_HEADERS += include/ptdp/gpt.h include/ptdp/gpt_params.h include/ptdp/loss.h include/ptdp/gpt_hooks.h \
                       include/ptdp/shape.h include/ptdp/plan.h include/ptdp/memory.h include/ptdp/recompute.h \
                       include/ptdp/flops.h include/ptdp/memory_formula.h include/ptdp/model_config.h \
                       include/ptdp/layer_desc.h
ptdpinclude_HEADERS += include/ptdp/ddp.h include/ptdp/master.h
ptdpinclude_HEADERS += include/ptdp/optimizer.h include/ptdp/lr_schedule.h include/ptdp/grad_scaler.h
ptdpinclude_HEADERS += include/ptdp/checkpoint.h
ptdpinclude_HEADERS += include/ptdp/args.h include/ptdp/generate.h include/ptdp/sim.h include/ptdp/sim_cost.h include/ptdp/tokenizer.h
noinst_HEADERS = include/ptdp/config_emu.h include/ptdp/error_gpu.h include/ptdp/checked.h include/ptdp/rng.h include/ptdp/cpu_threads.h \
                 include/ptdp/cuda.h include/ptdp/events.h include/ptdp/pipeline.h include/ptdp/runfile.h \
                 include/ptdp/trainer.h include/ptdp/batch.h include/ptdp/indexed_dataset.h include/ptdp/gpt_dataset.h \
                 include/ptdp/sweep.h include/ptdp/calibrate.h
