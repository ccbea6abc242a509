# src/generate: text generation: the KV-cached inference forward pass, sampling (temperature,
# top-k, top-p), and the ptdp-generate executable
libptdp_a_SOURCES += src/generate/generate.c src/generate/infer.c src/generate/sample.c
ptdpinclude_HEADERS += include/ptdp/generate.h
bin_PROGRAMS += ptdp-generate
ptdp_generate_SOURCES = src/generate/ptdp_generate.c
