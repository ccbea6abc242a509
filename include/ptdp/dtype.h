/* Element types of mixed precision, below every layer that stores or converts them: the host
 * conversions (ptdp/half.h, core) and the backends' operations (ptdp/backend.h). */
#ifndef PTDP_DTYPE_H
#define PTDP_DTYPE_H

/* Element types of the mixed-precision operations (convert, unscale_check; ptdp/half.h has the
 * host conversions that define them): IEEE binary32, bfloat16 (a binary32's top 16 bits) and
 * IEEE binary16. */
typedef enum { PTDP_F32 = 0, PTDP_BF16 = 1, PTDP_F16 = 2 } ptdp_dtype;
#define PTDP_DTYPE_COUNT 3

#endif
