# src/optim: AdamW and clipping, the learning-rate schedule
libptdp_a_SOURCES += src/optim/optimizer.c src/optim/lr_schedule.c
