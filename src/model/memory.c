/* The accounting allocator: see include/ptdp/memory.h. */
#include "ptdp/memory.h"

#include "ptdp/error.h"

#include <stdlib.h>
#include <string.h>

int ptdp_memory_allocate_plan(ptdp_memory *mem, ptdp_backend *be, const ptdp_plan *plan)
{
  memset(mem, 0, sizeof *mem);
  PTDP_CALLOC(mem->rec, plan->n > 0 ? plan->n : 1, sizeof *mem->rec);
  mem->cap = plan->n;
  for (int i = 0; i < plan->n; i++) {
    ptdp_mem_record *r = &mem->rec[i];
    r->buf = plan->buf[i];
    PTDP_CALL(be->alloc(be, &r->ptr, r->buf.bytes));
    mem->n++;
  }
  /* held bytes per slot, looked up at every forward and backward */
  mem->chunks = plan->cfg.pos.v;
  mem->slots = plan->slots;
  PTDP_CALLOC(mem->slot_held, (size_t)(mem->chunks * mem->slots > 0 ? mem->chunks * mem->slots : 1), sizeof(size_t));
  for (int i = 0; i < mem->n; i++) {
    const ptdp_buffer *b = &mem->rec[i].buf;
    if (b->held && b->chunk >= 0 && b->slot >= 0) mem->slot_held[b->chunk * mem->slots + b->slot] += b->bytes;
  }
  return 0;
}

void ptdp_memory_free_all(ptdp_memory *mem, ptdp_backend *be)
{
  for (int i = 0; i < mem->n; i++) be->free(be, mem->rec[i].ptr);
  free(mem->rec);
  free(mem->slot_held);
  memset(mem, 0, sizeof *mem);
}

void *ptdp_memory_find(const ptdp_memory *mem, ptdp_buffer_kind kind, int chunk, int slot, int layer, int index)
{
  for (int i = 0; i < mem->n; i++) {
    const ptdp_buffer *b = &mem->rec[i].buf;
    if (b->kind == kind && b->chunk == chunk && b->slot == slot && b->layer == layer && b->index == index)
      return mem->rec[i].ptr;
  }
  return NULL;
}

size_t ptdp_memory_held(const ptdp_memory *mem, int chunk, int slot, int layer)
{
  size_t s = 0;
  for (int i = 0; i < mem->n; i++) {
    const ptdp_buffer *b = &mem->rec[i].buf;
    if (b->held && b->chunk == chunk && b->slot == slot && (layer == PTDP_MEMORY_ALL_LAYERS || b->layer == layer))
      s += b->bytes;
  }
  return s;
}

size_t ptdp_memory_class_bytes(const ptdp_memory *mem, ptdp_mem_class cls)
{
  size_t s = 0;
  for (int i = 0; i < mem->n; i++)
    if (ptdp_buffer_class(&mem->rec[i].buf) == cls) s += mem->rec[i].buf.bytes;
  return s;
}

void ptdp_memory_slot_busy(ptdp_memory *mem, int chunk, int slot, int busy)
{
  size_t b = mem->slot_held[chunk * mem->slots + slot];
  if (busy) {
    mem->busy_bytes += b;
    if (mem->busy_bytes > mem->peak_busy_bytes) mem->peak_busy_bytes = mem->busy_bytes;
  } else {
    mem->busy_bytes -= b;
  }
}
