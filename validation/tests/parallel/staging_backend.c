/* The test-only staging backend: see staging_backend.h. */
#include "staging_backend.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

enum { MAX_ALLOCS = 64 };

typedef struct {
  staging_counts counts;
  int locked;
  int nalloc;
  struct {
    char *p;
    size_t len; /* whole pages */
  } allocs[MAX_ALLOCS];
} staging_ctx;

/* The allocation holding address q (NULL when q is host memory, e.g. a staging buffer). */
static int find(staging_ctx *x, const void *q)
{
  for (int i = 0; i < x->nalloc; i++)
    if ((uintptr_t)q >= (uintptr_t)x->allocs[i].p && (uintptr_t)q < (uintptr_t)x->allocs[i].p + x->allocs[i].len)
      return i;
  return -1;
}

static void protect(staging_ctx *x, int i, int open)
{
  if (i >= 0 && x->locked) mprotect(x->allocs[i].p, x->allocs[i].len, open ? PROT_READ | PROT_WRITE : PROT_NONE);
}

/* memmove with the pages of both sides opened for the copy (when locked). */
static void guarded_move(staging_ctx *x, void *dst, const void *src, size_t bytes)
{
  int a = find(x, dst), b = find(x, src);
  protect(x, a, 1);
  protect(x, b, 1);
  memmove(dst, src, bytes);
  protect(x, a, 0);
  protect(x, b, 0);
}

static int st_alloc(ptdp_backend *be, void **p, size_t bytes)
{
  staging_ctx *x = be->ctx;
  long page = sysconf(_SC_PAGESIZE);
  size_t len = (bytes + (size_t)page - 1) / (size_t)page * (size_t)page;
  if (x->nalloc == MAX_ALLOCS || len == 0) return 1;
  void *q = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (q == MAP_FAILED) return 1;
  x->allocs[x->nalloc].p = q;
  x->allocs[x->nalloc].len = len;
  x->nalloc++;
  protect(x, x->nalloc - 1, 0);
  *p = q;
  return 0;
}

static void st_free(ptdp_backend *be, void *p)
{
  staging_ctx *x = be->ctx;
  int i = find(x, p);
  if (i < 0) return;
  munmap(x->allocs[i].p, x->allocs[i].len);
  x->allocs[i] = x->allocs[--x->nalloc];
}

static int st_memset0(ptdp_backend *be, void *p, size_t bytes)
{
  staging_ctx *x = be->ctx;
  int i = find(x, p);
  protect(x, i, 1);
  memset(p, 0, bytes);
  protect(x, i, 0);
  return 0;
}

static int st_copy(ptdp_backend *be, void *dst, const void *src, size_t bytes)
{
  staging_ctx *x = be->ctx;
  x->counts.copy_calls++;
  x->counts.copy_bytes += (double)bytes;
  guarded_move(x, dst, src, bytes);
  return 0;
}

static int st_to_device(ptdp_backend *be, void *dst, const void *src_host, size_t bytes)
{
  staging_ctx *x = be->ctx;
  x->counts.to_device_calls++;
  x->counts.to_device_bytes += (double)bytes;
  guarded_move(x, dst, src_host, bytes);
  return 0;
}

static int st_to_host(ptdp_backend *be, void *dst_host, const void *src, size_t bytes)
{
  staging_ctx *x = be->ctx;
  x->counts.to_host_calls++;
  x->counts.to_host_bytes += (double)bytes;
  guarded_move(x, dst_host, src, bytes);
  return 0;
}

static int st_synchronize(ptdp_backend *be)
{
  staging_ctx *x = be->ctx;
  x->counts.sync_calls++;
  return 0;
}

static void st_destroy(ptdp_backend *be)
{
  staging_ctx *x = be->ctx;
  for (int i = 0; i < x->nalloc; i++) munmap(x->allocs[i].p, x->allocs[i].len);
  free(x);
  be->ctx = NULL;
}

int staging_backend_create(int host_accessible, ptdp_backend **out)
{
  ptdp_backend *be = calloc(1, sizeof *be);
  staging_ctx *x = calloc(1, sizeof *x);
  if (!be || !x) return free(be), free(x), 1;
  be->name = host_accessible ? "staging-test (host-accessible)" : "staging-test";
  be->ctx = x;
  be->host_accessible = host_accessible;
  be->alloc = st_alloc;
  be->free = st_free;
  be->memset0 = st_memset0;
  be->copy = st_copy;
  be->to_device = st_to_device;
  be->to_host = st_to_host;
  be->synchronize = st_synchronize;
  be->destroy = st_destroy;
  *out = be;
  return 0;
}

staging_counts *staging_backend_counts(ptdp_backend *be) { return &((staging_ctx *)be->ctx)->counts; }

void staging_backend_lock(ptdp_backend *be, int locked)
{
  staging_ctx *x = be->ctx;
  if (be->host_accessible || x->locked == locked) return;
  x->locked = 1; /* protect() acts only while locked */
  for (int i = 0; i < x->nalloc; i++) protect(x, i, !locked);
  x->locked = locked;
}
