# src/model: the GPT model (parameters, layers, embedding and head, activation accounting)
libptdp_a_SOURCES += src/model/gpt.c src/model/layer.c src/model/head.c src/model/chunk.c src/model/memory.c \
                     src/model/model_internal.h
