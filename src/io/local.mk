# src/io: checkpoints (parallel HDF5): directories and tracker, HDF5 helpers, save, load
libptdp_a_SOURCES += src/io/checkpoint.c src/io/checkpoint_load.c src/io/checkpoint_fs.c src/io/checkpoint_h5.c src/io/checkpoint_stream.c src/io/checkpoint_direct.c src/io/checkpoint_swap.c \
	src/io/checkpoint_impl.h src/io/h5util.c src/io/h5util.h src/io/runfile.c src/io/runfile_write.c src/io/runfile_impl.h
