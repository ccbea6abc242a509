# src/core: error handling, options and configuration, timers, RNG, logging
libptdp_a_SOURCES += src/core/error.c
libptdp_a_SOURCES += src/core/options.c src/core/args.c
libptdp_a_SOURCES += src/core/rng.c
