# src/core: error handling, options and configuration, timers, RNG, logging
libptdp_a_SOURCES += src/core/error.c
