/* Activation accounting: see include/ptdp/memory.h. */
#include "ptdp/memory.h"

#include "ptdp/error.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int ptdp_memory_alloc(ptdp_memory *mem, ptdp_backend *be, void **p, size_t bytes, const char *name, int chunk,
                      int slot, int layer, int held)
{
  *p = NULL;
  if (!bytes) return 0;
  if (mem->n == mem->cap) {
    int cap = mem->cap ? 2 * mem->cap : 256;
    ptdp_mem_record *r = realloc(mem->rec, (size_t)cap * sizeof *r);
    if (!r) return ptdp_error_push(PTDP_ERR_MEM, __FILE__, __LINE__, __func__, "out of memory (accounting records)");
    mem->rec = r;
    mem->cap = cap;
  }
  PTDP_CALL(be->alloc(be, p, bytes));
  ptdp_mem_record *r = &mem->rec[mem->n++];
  memset(r, 0, sizeof *r);
  snprintf(r->name, sizeof r->name, "%s", name);
  r->chunk = chunk;
  r->slot = slot;
  r->layer = layer;
  r->held = held;
  r->bytes = bytes;
  r->ptr = *p;
  if (held)
    mem->held_bytes += bytes;
  else
    mem->work_bytes += bytes;
  return 0;
}

void ptdp_memory_free_all(ptdp_memory *mem, ptdp_backend *be)
{
  for (int i = 0; i < mem->n; i++) be->free(be, mem->rec[i].ptr);
  free(mem->rec);
  memset(mem, 0, sizeof *mem);
}

size_t ptdp_memory_held(const ptdp_memory *mem, int chunk, int slot, int layer)
{
  size_t s = 0;
  for (int i = 0; i < mem->n; i++) {
    const ptdp_mem_record *r = &mem->rec[i];
    if (r->held && r->chunk == chunk && r->slot == slot && (layer == -2 || r->layer == layer)) s += r->bytes;
  }
  return s;
}

void ptdp_memory_slot_busy(ptdp_memory *mem, int chunk, int slot, int busy)
{
  size_t b = ptdp_memory_held(mem, chunk, slot, -2);
  if (busy) {
    mem->busy_bytes += b;
    if (mem->busy_bytes > mem->peak_busy_bytes) mem->peak_busy_bytes = mem->busy_bytes;
  } else {
    mem->busy_bytes -= b;
  }
}
