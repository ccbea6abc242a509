# src/optim: AdamW, gradient synchronisation and clipping, learning-rate schedule
libptdp_a_SOURCES += src/optim/optimizer.c
