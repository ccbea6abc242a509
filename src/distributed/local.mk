# src/distributed: data parallelism over the model's gradients: the reduction of the buckets (laid
# out by src/layout/grad_buffer.c) overlapping the backward pass, and ZeRO-1's shards
libptdp_a_SOURCES += src/distributed/ddp.c
