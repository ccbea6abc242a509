/* Loading a checkpoint with direct I/O (see checkpoint_impl.h).
 *
 * A buffered read puts every byte of a checkpoint into the page cache first and copies it from
 * there: the kernel must find a free page for each 4 KiB, and a training process that has just
 * allocated its model, gradients and optimizer state leaves it only pages it has never used.
 * Where memory reaches a guest on first touch (this project's VMs: about 0.3 GB/s) that, not the
 * device, sets the pace: 0.5-0.6 GB/s against 4.5 GB/s for the same file read with O_DIRECT
 * (validation/bench/README.md).  Here every run of a tensor that is one contiguous range of the
 * file is read with O_DIRECT into one of two aligned buffers, by a reader thread that runs one
 * run ahead, while the caller checks and copies the other: the device reads into memory that is
 * used over and over and never waits for the checksums and copies.  (Which runs, and how a
 * column slice is read: checkpoint_load.c; here a run is a range of file bytes.)
 *
 * Direct I/O needs an offset, a length and an address aligned to the device's block: each run is
 * read as the aligned range around it (at most 8 KiB more) and handed out from inside the
 * buffer.  The thread only calls pread() on its own descriptor; HDF5 (not thread-safe) stays on
 * the caller's thread, which reads the other runs through HDF5.  A file system that refuses
 * O_DIRECT (open or a first aligned read fails with EINVAL) leaves the reader off and every run
 * to HDF5. */
#define _GNU_SOURCE
#include "checkpoint_impl.h"

#include "ptdp/error.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define ALIGN 4096ll
#define NSLOTS 2

struct ckpt_reader {
  int fd;
  ckpt_range *plan; /* payload ranges, in the order they are taken */
  int nplan, cap;
  long long slot_bytes;
  char *slot[NSLOTS];
  long long skip[NSLOTS]; /* payload offset inside the slot */
  pthread_t thread;
  int started;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int filled;   /* runs the thread has read */
  int taken;    /* runs the caller has asked for (the last one may still be in use) */
  int stop;
  int err;      /* errno of a failed read, or -1 for a short one */
  int err_run;  /* which */
};

static long long align_down(long long x) { return x / ALIGN * ALIGN; }
static long long align_up(long long x) { return (x + ALIGN - 1) / ALIGN * ALIGN; }

int ckpt_reader_open(ckpt_reader **out, const char *path)
{
  *out = NULL;
  int fd = open(path, O_RDONLY | O_DIRECT);
  if (fd < 0) {
    PTDP_CHECK_IO(errno == EINVAL || errno == EOPNOTSUPP, "cannot open checkpoint file '%s': %s", path,
                  strerror(errno));
    return 0; /* no direct I/O on this file system */
  }
  /* a first aligned read tells whether this file system takes direct I/O */
  void *probe = NULL;
  if (posix_memalign(&probe, ALIGN, ALIGN)) {
    close(fd);
    PTDP_CHECK_LOCAL(0, "out of memory for the checkpoint reader");
  }
  const int e = pread(fd, probe, ALIGN, 0) < 0 ? errno : 0;
  free(probe);
  if (e) {
    close(fd);
    PTDP_CHECK_IO(e == EINVAL, "cannot read checkpoint file '%s': %s", path, strerror(e));
    return 0;
  }
  ckpt_reader *r = calloc(1, sizeof *r);
  if (!r) {
    close(fd);
    PTDP_CHECK_LOCAL(0, "out of memory for the checkpoint reader");
  }
  r->fd = fd;
  pthread_mutex_init(&r->mu, NULL);
  pthread_cond_init(&r->cv, NULL);
  *out = r;
  return 0;
}

int ckpt_reader_plan(ckpt_reader *r, long long off, long long len)
{
  PTDP_CHECK_INTERNAL(!r->started, "checkpoint reader planned after its start");
  const long long span = align_up(off + len) - align_down(off);
  if (span > r->slot_bytes) r->slot_bytes = span;
  return ckpt_ranges_push(&r->plan, &r->nplan, &r->cap, off, len);
}

static void *reader_main(void *arg)
{
  ckpt_reader *r = arg;
  for (int k = 0; k < r->nplan; k++) {
    pthread_mutex_lock(&r->mu);
    /* the caller holds run taken - 1; the slot of run k is free once run k - NSLOTS is released */
    while (!r->stop && k >= (r->taken > 0 ? r->taken - 1 : 0) + NSLOTS) pthread_cond_wait(&r->cv, &r->mu);
    int stop = r->stop;
    pthread_mutex_unlock(&r->mu);
    if (stop) break;
    const ckpt_range g = r->plan[k];
    const long long a = align_down(g.off), n = align_up(g.off + g.len) - a, need = g.off + g.len - a;
    char *buf = r->slot[k % NSLOTS];
    long long got = 0;
    int err = 0;
    while (got < need) { /* the aligned range may pass the end of the file: its last bytes are not needed */
      ssize_t x = pread(r->fd, buf + got, (size_t)(n - got), a + got);
      if (x < 0 && errno == EINTR) continue;
      if (x <= 0) {
        err = x < 0 ? errno : -1;
        break;
      }
      got += x;
    }
    pthread_mutex_lock(&r->mu);
    r->skip[k % NSLOTS] = g.off - a;
    if (err) {
      r->err = err;
      r->err_run = k;
    } else r->filled = k + 1;
    pthread_cond_broadcast(&r->cv);
    pthread_mutex_unlock(&r->mu);
    if (err) break;
  }
  return NULL;
}

int ckpt_reader_start(ckpt_reader *r)
{
  if (!r->nplan) return 0;
  for (int s = 0; s < NSLOTS; s++) {
    void *p = NULL;
    if (posix_memalign(&p, ALIGN, (size_t)r->slot_bytes))
      return PTDP_FAIL(PTDP_ERR_MEM,
                             "out of memory allocating %lld bytes for the checkpoint reader", r->slot_bytes);
    memset(p, 0, (size_t)r->slot_bytes); /* touched once here, not page by page under the device's reads */
    r->slot[s] = p;
  }
  r->taken = 0;
  int e = pthread_create(&r->thread, NULL, reader_main, r);
  PTDP_CHECK_LOCAL(e == 0, "cannot start the checkpoint reader thread: %s", strerror(e));
  r->started = 1;
  return 0;
}

int ckpt_reader_next(ckpt_reader *r, long long off, long long len, const float **data)
{
  const int k = r->taken; /* only this thread moves taken */
  PTDP_CHECK_INTERNAL(k < r->nplan && r->plan[k].off == off && r->plan[k].len == len,
                   "checkpoint run %d taken out of the planned order", k);
  pthread_mutex_lock(&r->mu);
  r->taken = k + 1; /* run k - 1's slot is free from now on */
  pthread_cond_broadcast(&r->cv);
  while (r->filled <= k && !(r->err && r->err_run <= k)) pthread_cond_wait(&r->cv, &r->mu);
  const int err = r->filled <= k ? r->err : 0;
  const long long skip = r->skip[k % NSLOTS];
  pthread_mutex_unlock(&r->mu);
  PTDP_CHECK_IO(!err, "cannot read checkpoint bytes %lld..%lld: %s", off, off + len,
                err > 0 ? strerror(err) : "the file ends before them (truncated?)");
  *data = (const float *)(r->slot[k % NSLOTS] + skip);
  return 0;
}

void ckpt_reader_close(ckpt_reader *r)
{
  if (!r) return;
  if (r->started) {
    pthread_mutex_lock(&r->mu);
    r->stop = 1;
    pthread_cond_broadcast(&r->cv);
    pthread_mutex_unlock(&r->mu);
    pthread_join(r->thread, NULL);
  }
  pthread_cond_destroy(&r->cv);
  pthread_mutex_destroy(&r->mu);
  for (int s = 0; s < NSLOTS; s++) free(r->slot[s]);
  free(r->plan);
  if (r->fd >= 0) close(r->fd);
  free(r);
}
