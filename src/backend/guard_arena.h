/* The guard backend's memory (private to src/backend): one address range reserved PROT_NONE,
 * handed out by a first-fit allocator whose bookkeeping lives on the host, and opened for the
 * host (PROT_READ | PROT_WRITE) only between guard_arena_open and guard_arena_close.
 *
 * Opening covers [base, base + top) rounded up to 2 MiB (huge pages: see guard_arena.c), where
 * top is the end of the highest block handed out, so an operation costs two mprotect calls
 * whatever it touches.  Blocks are 64-byte aligned (as the CPU backend's), so vector loads see
 * the same alignment.
 *
 * One host thread at a time (a device stream's discipline): the operations' OpenMP regions run
 * between open and close, never around them. */
#ifndef PTDP_GUARD_ARENA_H
#define PTDP_GUARD_ARENA_H

#include <stddef.h>

typedef struct {
  size_t off, len;
} guard_extent;

typedef struct {
  void *map;              /* the mapping, and its length */
  size_t map_len;
  char *base;             /* the reservation: 2 MiB aligned, inside the mapping */
  size_t reserve;         /* its size, bytes */
  size_t top;             /* [0, top) has blocks or free extents; above it, never-used or given back */
  size_t opened;          /* bytes now readable and writable from base (0: closed) */
  int depth;              /* open calls not yet closed */
  guard_extent *live;     /* blocks handed out, by offset */
  guard_extent *hole;     /* free extents below top, by offset, never adjacent */
  size_t n_live, n_hole, cap_live, cap_hole;
  size_t in_use;          /* bytes in live blocks */
} guard_arena;

/* Reserve `reserve` bytes of address space (no memory is committed until used). */
int guard_arena_init(guard_arena *a, size_t reserve);
void guard_arena_fini(guard_arena *a);
/* A zeroed block of `bytes` (NULL for 0); running out of the reservation is PTDP_ERR_MEM. */
int guard_arena_alloc(guard_arena *a, void **p, size_t bytes);
/* Give back a block from guard_arena_alloc (NULL: nothing). */
void guard_arena_free(guard_arena *a, void *p);
/* Make the used range readable and writable / inaccessible again; calls nest. */
int guard_arena_open(guard_arena *a);
int guard_arena_close(guard_arena *a);

#endif
