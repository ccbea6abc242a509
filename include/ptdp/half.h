/* Host conversions between fp32 and the 16-bit types of mixed precision (bfloat16, IEEE
 * binary16), bit for bit as every backend's convert operation (ptdp/backend.h) must give them.
 * Used by mixed precision (issue 20 section 3), not yet by the model.
 *
 * Narrowing rounds to nearest, ties to even, on the exact float value:
 *   bf16  keeps a float's sign and exponent and 7 mantissa bits; float subnormals round like any
 *         other value; past the largest finite bf16 (0x7f7f) the rounding carries into infinity;
 *   fp16  5 exponent bits, 10 mantissa bits: values from 65520 (65504, the largest half, plus
 *         half an ulp) up become infinity; below 2^-14 the result is a subnormal half (units of
 *         2^-24), below 2^-25 a signed zero, and 2^-25 itself (a tie) rounds to zero;
 *   a NaN becomes the canonical NaN 0x7fff (what CUDA's __float2half_rn and
 *   __float2bfloat16_rn give), its sign and payload dropped.
 * Widening is exact (every bf16 and fp16 value is a float); a NaN keeps its sign and payload.
 * Between bf16 and fp16 the value goes through fp32 (exact), so it is rounded once. */
#ifndef PTDP_HALF_H
#define PTDP_HALF_H

#include "ptdp/backend.h"

#include <stddef.h>
#include <stdint.h>

uint16_t ptdp_float_to_bf16(float f);
uint16_t ptdp_float_to_f16(float f);
float ptdp_bf16_to_float(uint16_t b);
float ptdp_f16_to_float(uint16_t h);

/* Element i of an array of type t, as a float (exact), and a float stored into one (rounded). */
float ptdp_half_load(const void *p, ptdp_dtype t, size_t i);
void ptdp_half_store(void *p, ptdp_dtype t, size_t i, float v);

#endif
