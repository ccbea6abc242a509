/* The hardware file's reader, shared by cost.c (the keys) and hw_tag.c (the provenance tags);
 * private to src/sim. */
#ifndef PTDP_SIM_HW_H
#define PTDP_SIM_HW_H

#include "ptdp/sim_cost.h"

/* The hardware file's provenance tags (hw_tag.c): path's lines again, each value's tag into
 * hw->tag[] by its key's index in o (the file's key table, read already); the rules of
 * ptdp_sim_hw_read. */
int ptdp_sim_hw_tags_read(const char *path, const ptdp_options *o, ptdp_sim_hw *hw);
/* The default of key i of the hardware file, as text (cost.c). */
const char *ptdp_sim_hw_default(int i);
/* The value of a hardware-file key that prices time continuously (a rate, a bandwidth, a
 * latency, an efficiency, a time per element: what calibration fits and the uncertainty band
 * moves), in hw's SI units; NULL for the others (counts, sizes, switches, the name). */
double *ptdp_sim_hw_field(ptdp_sim_hw *hw, const char *key);

#endif
