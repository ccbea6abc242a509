# src/distributed: the flat parameter/gradient buffers and their data-parallel buckets, their
# reduction overlapping the backward pass, and the distributed optimizer's shard map
libptdp_a_SOURCES += src/distributed/grad_buffer.c src/distributed/shard_map.c src/distributed/ddp.c
