/* What every transport shares: element sizes and the destroy of the table (see transport.h). */
#include "transport.h"

#include <stdlib.h>

size_t ptdp_tr_data_size(ptdp_tr_data d)
{
  switch (d) {
  case PTDP_TR_DEV_F32: return sizeof(float);
  case PTDP_TR_HOST_F64: return sizeof(double);
  case PTDP_TR_HOST_BYTE: return 1;
  }
  return 0;
}

void ptdp_transport_destroy(ptdp_transport **tr)
{
  if (!*tr) return;
  if ((*tr)->destroy) (*tr)->destroy(*tr);
  free(*tr);
  *tr = NULL;
}
