ptdpinclude_HEADERS += include/ptdp/error.h include/ptdp/error_gpu.h
ptdpinclude_HEADERS += include/ptdp/options.h include/ptdp/args.h
ptdpinclude_HEADERS += include/ptdp/backend.h include/ptdp/rng.h
ptdpinclude_HEADERS += include/ptdp/gpt.h include/ptdp/memory.h
ptdpinclude_HEADERS += include/ptdp/optimizer.h
ptdpinclude_HEADERS += include/ptdp/memory_formula.h
ptdpinclude_HEADERS += include/ptdp/events.h
