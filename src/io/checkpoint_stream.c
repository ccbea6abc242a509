/* The page cache while a checkpoint is saved and loaded (see checkpoint_impl.h).
 *
 * Saving: a plain write() only copies into the page cache; the disk is reached at the final sync,
 * so writing and syncing run one after the other, and a multi-gigabyte checkpoint fills the
 * node's memory with dirty pages (evicting what the training reads, such as the mapped corpus).
 * Here every rank, after each transfer, starts the write-back of the byte range it wrote
 * (sync_file_range(SYNC_FILE_RANGE_WRITE), asynchronous) and, once more than `window` bytes are
 * in flight, waits for the oldest range and drops its pages from the cache.  The disk then works
 * while the rank writes the next tensors, the cache holds at most about `window` bytes of the
 * checkpoint per rank, and the pages it frees are the ones the next writes take.  Durability is
 * unchanged: sync_file_range makes no promise about metadata or device caches, so the save still
 * ends with MPI_File_sync (fsync) before the directory is renamed.
 *
 * Loading: each rank first lists the file ranges it will read, in order; as it reads one, the
 * ranges up to `window` bytes beyond it are handed to the kernel's read-ahead (posix_fadvise
 * WILLNEED), so the device keeps reading while the rank checks and copies what it has, and from
 * one dataset into the next (each dataset is a separate request, too short for the kernel's own
 * read-ahead to get going).
 *
 * All of it is advice: where the calls do not exist or a file system refuses them (EINVAL,
 * ENOSYS, EOPNOTSUPP, ESPIPE), streaming turns itself off and the save and load go on as plain
 * writes and reads; any other failure is an error. */
#define _GNU_SOURCE
#include "checkpoint_impl.h"

#include "ptdp/error.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A refusal that means "not here", after which the stream is simply off. */
static int unsupported(int e) { return e == EINVAL || e == ENOSYS || e == EOPNOTSUPP || e == ESPIPE || e == EBADF; }

int ckpt_stream_open(ckpt_stream *s, const char *path, long long window)
{
  memset(s, 0, sizeof *s);
  s->fd = -1;
  s->window = window;
  if (window <= 0) return 0;
  s->fd = open(path, O_RDONLY);
  PTDP_CHECK_IO(s->fd >= 0, "cannot open checkpoint file '%s': %s", path, strerror(errno));
  return 0;
}

static int stream_off(ckpt_stream *s)
{
  if (s->fd >= 0) close(s->fd);
  s->fd = -1;
  free(s->plan);
  s->plan = NULL;
  s->nplan = s->cap = 0;
  return 0;
}

/* Wait until the oldest range is on the device and drop its pages. */
static int retire_oldest(ckpt_stream *s)
{
  const ckpt_range r = s->range[s->head];
  s->head = (s->head + 1) % CKPT_STREAM_RANGES;
  s->n--;
  s->inflight -= r.len;
#ifdef SYNC_FILE_RANGE_WRITE
  if (sync_file_range(s->fd, r.off, r.len, SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE | SYNC_FILE_RANGE_WAIT_AFTER)) {
    PTDP_CHECK_IO(unsupported(errno), "cannot write back checkpoint bytes %lld..%lld: %s", r.off, r.off + r.len,
                  strerror(errno));
    return stream_off(s);
  }
#endif
  int e = posix_fadvise(s->fd, r.off, r.len, POSIX_FADV_DONTNEED);
  PTDP_CHECK_IO(e == 0 || unsupported(e), "cannot drop checkpoint pages from the cache: %s", strerror(e));
  return e ? stream_off(s) : 0;
}

int ckpt_stream_wrote(ckpt_stream *s, long long off, long long len)
{
  if (s->fd < 0 || len <= 0) return 0;
#ifdef SYNC_FILE_RANGE_WRITE
  if (sync_file_range(s->fd, off, len, SYNC_FILE_RANGE_WRITE)) {
    PTDP_CHECK_IO(unsupported(errno), "cannot start writing back checkpoint bytes %lld..%lld: %s", off, off + len,
                  strerror(errno));
    return stream_off(s);
  }
#else
  return stream_off(s);
#endif
  if (s->n == CKPT_STREAM_RANGES) PTDP_CALL(retire_oldest(s));
  if (s->fd < 0) return 0;
  s->range[(s->head + s->n) % CKPT_STREAM_RANGES] = (ckpt_range){off, len};
  s->n++;
  s->inflight += len;
  while (s->fd >= 0 && s->n > 1 && s->inflight > s->window) PTDP_CALL(retire_oldest(s));
  return 0;
}

int ckpt_ranges_push(ckpt_range **a, int *n, int *cap, long long off, long long len)
{
  if (*n == *cap) {
    int c = *cap ? 2 * *cap : 256;
    ckpt_range *r = realloc(*a, sizeof *r * (size_t)c);
    PTDP_CHECK_LOCAL(r, "out of memory for the checkpoint's read plan (%d ranges)", c);
    *a = r;
    *cap = c;
  }
  (*a)[(*n)++] = (ckpt_range){off, len};
  return 0;
}

int ckpt_stream_plan(ckpt_stream *s, long long off, long long len)
{
  if (s->fd < 0 || len <= 0) return 0;
  return ckpt_ranges_push(&s->plan, &s->nplan, &s->cap, off, len);
}

int ckpt_stream_reading(ckpt_stream *s)
{
  if (s->fd < 0 || s->next >= s->nplan) return 0;
  long long ahead = 0;
  int k = s->next++;
  if (s->advised < k) s->advised = k;
  for (int j = k; j < s->advised; j++) ahead += s->plan[j].len;
  while (s->advised < s->nplan && (s->advised == k || ahead < s->window)) {
    const ckpt_range r = s->plan[s->advised++];
    int e = posix_fadvise(s->fd, r.off, r.len, POSIX_FADV_WILLNEED);
    PTDP_CHECK_IO(e == 0 || unsupported(e), "cannot advise read-ahead of the checkpoint: %s", strerror(e));
    if (e) return stream_off(s);
    ahead += r.len;
  }
  return 0;
}

int ckpt_stream_close(ckpt_stream *s)
{
  int rc = 0;
  while (!rc && s->fd >= 0 && s->n > 0) rc = retire_oldest(s);
  stream_off(s);
  return rc;
}
