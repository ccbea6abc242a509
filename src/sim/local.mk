# src/sim: ptdp-sim, the performance and memory simulator (a cost model over the shared schedule,
# replay and memory plan)
libptdp_a_SOURCES += src/sim/cost.c src/sim/layer.c src/sim/sim.c src/sim/sim_mem.c src/sim/report.c \
                     src/sim/sim_out.c src/sim/sim_internal.h
ptdpinclude_HEADERS += include/ptdp/sim.h
bin_PROGRAMS += ptdp-sim
ptdp_sim_SOURCES = src/sim/ptdp_sim.c
