# src/train: the training driver and the ptdp-train executable
bin_PROGRAMS += ptdp-train
ptdp_train_SOURCES = src/train/ptdp_train.c
