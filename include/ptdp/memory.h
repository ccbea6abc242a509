/* Activation memory counted from the allocations themselves (not from a formula).
 *
 * Every activation buffer of the model is allocated through ptdp_memory_alloc with a name, the
 * chunk, activation slot and layer it belongs to, and whether it is held for the backward pass
 * (held) or is per-rank work space reused by every micro-batch.  At run time slots are marked
 * busy between a micro-batch's forward and backward, and the peak of held bytes in busy slots
 * is recorded: that is the measured activation memory of the rank. */
#ifndef PTDP_MEMORY_H
#define PTDP_MEMORY_H

#include "ptdp/backend.h"

#include <stddef.h>

enum { PTDP_MEM_LAYER_NONE = -1 };

typedef struct {
  char name[32];
  int chunk, slot, layer; /* layer: global index, or PTDP_MEM_LAYER_NONE (embedding/head) */
  int held;
  size_t bytes;
  void *ptr;
} ptdp_mem_record;

typedef struct {
  ptdp_mem_record *rec;
  int n, cap;
  size_t held_bytes, work_bytes;
  size_t busy_bytes, peak_busy_bytes; /* held bytes of slots now in use, and their peak */
} ptdp_memory;

int ptdp_memory_alloc(ptdp_memory *mem, ptdp_backend *be, void **p, size_t bytes, const char *name, int chunk,
                      int slot, int layer, int held);
void ptdp_memory_free_all(ptdp_memory *mem, ptdp_backend *be);
/* Held bytes of one (chunk, slot), optionally of one layer only (layer = PTDP_MEM_LAYER_NONE
 * selects the non-layer buffers, -2 everything of the slot). */
size_t ptdp_memory_held(const ptdp_memory *mem, int chunk, int slot, int layer);
void ptdp_memory_slot_busy(ptdp_memory *mem, int chunk, int slot, int busy);

#endif
