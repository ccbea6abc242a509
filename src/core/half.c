/* The element types by name and size, and typed loads and stores; the conversions themselves are
 * inline in include/ptdp/half.h (so that the CPU backend's convert loops vectorise). */
#include "ptdp/half.h"

#include <string.h>

/* Each element type's bytes and name, one row per type in the enum's order. */
static const struct {
  size_t size;
  const char *name;
} types[PTDP_DTYPE_COUNT] = {[PTDP_F32] = {4, "fp32"}, [PTDP_BF16] = {2, "bf16"}, [PTDP_F16] = {2, "fp16"}};

static int known(ptdp_dtype t) { return (unsigned)t < PTDP_DTYPE_COUNT; }

size_t ptdp_dtype_size(ptdp_dtype t) { return known(t) ? types[t].size : 0; }

const char *ptdp_dtype_name(ptdp_dtype t) { return known(t) ? types[t].name : "(unknown type)"; }


float ptdp_half_load(const void *p, ptdp_dtype t, size_t i)
{
  switch (t) {
  case PTDP_BF16: return ptdp_bf16_to_float(((const uint16_t *)p)[i]);
  case PTDP_F16: return ptdp_f16_to_float(((const uint16_t *)p)[i]);
  default: return ((const float *)p)[i];
  }
}

void ptdp_half_store(void *p, ptdp_dtype t, size_t i, float v)
{
  switch (t) {
  case PTDP_BF16: ((uint16_t *)p)[i] = ptdp_float_to_bf16(v); break;
  case PTDP_F16: ((uint16_t *)p)[i] = ptdp_float_to_f16(v); break;
  default: ((float *)p)[i] = v; break;
  }
}
