nobase_include_HEADERS += include/ptdp/error.h include/ptdp/error_gpu.h
nobase_include_HEADERS += include/ptdp/options.h include/ptdp/args.h
nobase_include_HEADERS += include/ptdp/backend.h include/ptdp/rng.h
nobase_include_HEADERS += include/ptdp/gpt.h include/ptdp/memory.h
nobase_include_HEADERS += include/ptdp/optimizer.h
nobase_include_HEADERS += include/ptdp/memory_formula.h
