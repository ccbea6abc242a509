# src/backend: the device interface and its CPU implementation
libptdp_a_SOURCES += src/backend/cpu.c src/backend/cpu_attention.c src/backend/cpu_math.h
