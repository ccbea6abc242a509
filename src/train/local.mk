# src/train: the training driver and the ptdp-train executable
libptdp_a_SOURCES += src/train/args.c src/train/trainer.c src/train/batch.c src/train/dump.c src/train/dump.h \
	src/train/checkpointing.c
bin_PROGRAMS += ptdp-train
ptdp_train_SOURCES = src/train/ptdp_train.c
