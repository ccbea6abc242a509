/* The accounting allocator: allocates a memory plan (ptdp/plan.h) through the backend and records
 * every buffer it hands out (kind, chunk, slot, layer, index, held, bytes, pointer), so measured
 * memory comes from the allocations themselves, and a test can check allocation equals plan.
 *
 * At run time slots are marked busy between a micro-batch's forward and backward, and the peak
 * of held bytes in busy slots is recorded: the measured activation memory of the rank, which the
 * plan predicts by walking the schedule. */
#ifndef PTDP_MEMORY_H
#define PTDP_MEMORY_H

#include "ptdp/backend.h"
#include "ptdp/plan.h"

#include <stddef.h>

typedef struct {
  ptdp_buffer buf; /* what was planned */
  void *ptr;
} ptdp_mem_record;

typedef struct {
  ptdp_mem_record *rec;
  int n, cap;
  size_t busy_bytes, peak_busy_bytes; /* held bytes of slots now in use, and their peak */
  size_t *slot_held;                  /* [chunks x slots] held bytes of each slot (from the records) */
  int chunks, slots;
} ptdp_memory;

/* Allocate every buffer of the plan (zeroed) and record it. */
int ptdp_memory_allocate_plan(ptdp_memory *mem, ptdp_backend *be, const ptdp_plan *plan);
void ptdp_memory_free_all(ptdp_memory *mem, ptdp_backend *be);
/* The buffer planned as (kind, chunk, slot, layer, index), or NULL. */
void *ptdp_memory_find(const ptdp_memory *mem, ptdp_buffer_kind kind, int chunk, int slot, int layer, int index);
/* Held bytes of one (chunk, slot), optionally of one layer only (layer = PTDP_PLAN_NONE selects
 * the non-layer buffers, PTDP_MEMORY_ALL_LAYERS everything of the slot). */
enum { PTDP_MEMORY_ALL_LAYERS = -2 };
size_t ptdp_memory_held(const ptdp_memory *mem, int chunk, int slot, int layer);
/* Bytes recorded per class (ptdp_mem_class). */
size_t ptdp_memory_class_bytes(const ptdp_memory *mem, ptdp_mem_class cls);
void ptdp_memory_slot_busy(ptdp_memory *mem, int chunk, int slot, int busy);

#endif
