nobase_include_HEADERS += include/ptdp/error.h include/ptdp/error_gpu.h
