# src/distributed: data parallelism over the model's flat buffers (laid out by
# src/layout/grad_buffer.c, sharded by src/layout/shard_map.c):
#  - ddp.c: the reduction of the gradient buckets overlapping the backward pass (all-reduce, or
#    reduce-scatter into this rank's shards with the distributed optimizer)
#  - master.c: the fp32 weights the optimizer updates, sharded over DP by the distributed
#    optimizer in bf16/fp16 (ZeRO-1), their initialisation and where each element sits
#  - master_gather.c: the distributed optimizer's all-gathers over DP: the updated weights after
#    a step, the 16-bit weights from sharded masters, the fp32 weights whole
libptdp_a_SOURCES += src/distributed/ddp.c src/distributed/master.c src/distributed/master_gather.c
