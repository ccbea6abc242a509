/* What every transport shares: element sizes and kinds, and the destroy of the table (see
 * transport.h). */
#include "transport.h"

#include <stdlib.h>

size_t ptdp_tr_data_size(ptdp_tr_data d)
{
  switch (d) {
  case PTDP_TR_DEV_F32: return sizeof(float);
  case PTDP_TR_HOST_F64: return sizeof(double);
  case PTDP_TR_HOST_BYTE: return 1;
  case PTDP_TR_DEV_BF16: return 2;
  case PTDP_TR_DEV_F16: return 2;
  }
  return 0;
}

int ptdp_tr_data_device(ptdp_tr_data d)
{
  return d == PTDP_TR_DEV_F32 || d == PTDP_TR_DEV_BF16 || d == PTDP_TR_DEV_F16;
}

ptdp_tr_data ptdp_tr_data_of(ptdp_dtype t)
{
  return t == PTDP_BF16 ? PTDP_TR_DEV_BF16 : t == PTDP_F16 ? PTDP_TR_DEV_F16 : PTDP_TR_DEV_F32;
}

const char *ptdp_tr_data_name(ptdp_tr_data d)
{
  switch (d) {
  case PTDP_TR_DEV_F32: return "floats";
  case PTDP_TR_HOST_F64: return "doubles";
  case PTDP_TR_HOST_BYTE: return "bytes";
  case PTDP_TR_DEV_BF16: return "bf16 values";
  case PTDP_TR_DEV_F16: return "fp16 values";
  }
  return "elements of an unknown kind";
}

void ptdp_transport_destroy(ptdp_transport **tr)
{
  if (!*tr) return;
  if ((*tr)->destroy) (*tr)->destroy(*tr);
  free(*tr);
  *tr = NULL;
}
