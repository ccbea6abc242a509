/* Private to src/io: the pieces of the checkpoint module (see ptdp/checkpoint.h).
 *   checkpoint_fs.c  directories, the tracker file, renames and syncs, retention (rank 0's work)
 *   checkpoint_h5.c  HDF5 helpers: datasets, the parallel file access, checksums (h5util.h: the
 *                    attribute helpers it shares with the run file)
 *   checkpoint_stream.c  the page cache: write-back while saving, read-ahead while loading
 *   checkpoint.c     which rank reads and writes which part of which tensor; save and load */
#ifndef PTDP_IO_CHECKPOINT_IMPL_H
#define PTDP_IO_CHECKPOINT_IMPL_H

#include "h5util.h"
#include "ptdp/checkpoint.h"

#include <hdf5.h>
#include <stdint.h>

/* ---- checkpoint_fs.c: run on rank 0 only; each returns 0 or an error with its message */
/* Make save_dir (and parents), remove directories left by interrupted saves (iter_*.tmp), and
 * make the empty temporary directory of iteration `iter`; its path into tmp. */
int ckpt_fs_prepare(const char *save_dir, long long iter, char *tmp, size_t n);
/* Sync tmp's files and tmp, rename it to save_dir/iter_NNNNNNN (replacing an older directory of
 * that name), sync save_dir, then point the tracker at iter (temporary file, sync, rename). */
int ckpt_fs_commit(const char *save_dir, long long iter, const char *tmp);
/* Delete all but the newest keep complete checkpoints (keep <= 0: none). */
int ckpt_fs_retain(const char *save_dir, int keep, long long newest);
/* Rank 0's part of ptdp_checkpoint_locate: status 0 found, 1 nothing to load, -1 error (msg). */
int ckpt_fs_locate(const char *load_dir, ptdp_checkpoint_ref *ref, char *msg, size_t n);
/* Fault injection for the crash-safety tests: when the environment's PTDP_CHECKPOINT_FAULT names
 * this point and PTDP_CHECKPOINT_FAULT_RANK (default 0) this world rank, the process kills itself
 * with SIGKILL.  Points: "datasets" (half the model written), "closed" (file complete, not yet
 * renamed), "renamed" (directory in place, tracker not yet updated), "moved-aside" (a save
 * replacing an existing iteration without renameat2's exchange: the old directory renamed aside,
 * the new one not yet in place). */
void ckpt_fault(const char *point, int rank);
/* Whether the environment names this point and world rank (ckpt_fault's test, without the kill):
 * "read-error" makes that rank's load fail as an I/O error would, halfway through its reading;
 * "write-error" its save, halfway through its writing. */
int ckpt_fault_here(const char *point, int rank);
/* save_dir/iter_NNNNNNN into out. */
void ckpt_fs_iter_dir(const char *save_dir, long long iter, char *out, size_t n);

/* ---- checkpoint_h5.c */
/* Checksum of one element: a mix of its flat index in the global tensor and its bits; a
 * tensor's checksum is the sum over its elements (mod 2^64), so pieces sum independently. */
static inline uint64_t ckpt_mix(uint64_t index, uint32_t bits)
{
  uint64_t z = index * 0x9E3779B97F4A7C15ull + bits + 1;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
/* Create a contiguous float32 dataset of the global shape, allocated at creation and never
 * filled (every element is written). */
int ckpt_dataset_create(hid_t file, const char *path, int ndim, long long rows, long long cols, hid_t *ds);
/* File access list for parallel I/O on comm with collective metadata. */
int ckpt_fapl(MPI_Comm comm, hid_t *fapl);

/* ---- checkpoint_stream.c (see there): advice to the kernel about the checkpoint file's pages;
 * where the system does not take it the stream turns itself off (fd -1) and nothing else changes. */
#define CKPT_STREAM_RANGES 64
#define CKPT_STREAM_WINDOW (256ll << 20)
/* Elements moved between a tensor and the file at a time, through one host buffer. */
#define CKPT_CHUNK_ELEMS (4ll << 20)
typedef struct {
  long long off, len;
} ckpt_range;
typedef struct {
  int fd;               /* the file, read-only; -1: off */
  long long window;     /* bytes of this rank in flight (written, not yet on the device) */
  long long inflight;
  int head, n;          /* FIFO of ranges in flight */
  ckpt_range range[CKPT_STREAM_RANGES];
  ckpt_range *plan;     /* loading: the ranges to read, in order */
  int nplan, cap, next, advised;
} ckpt_stream;
/* Append [off, off+len) to the growing array *a of *n ranges (room for *cap). */
int ckpt_ranges_push(ckpt_range **a, int *n, int *cap, long long off, long long len);
/* Open path for advice; window <= 0: off. */
int ckpt_stream_open(ckpt_stream *s, const char *path, long long window);
/* This rank wrote [off, off+len): start its write-back; past the window, wait for and drop the oldest. */
int ckpt_stream_wrote(ckpt_stream *s, long long off, long long len);
/* Wait for everything in flight, drop it, close. */
int ckpt_stream_close(ckpt_stream *s);
/* Loading: plan (in the order they will be read) the ranges this rank reads, then announce each
 * read; the ranges up to `window` bytes beyond it are handed to the kernel's read-ahead. */
int ckpt_stream_plan(ckpt_stream *s, long long off, long long len);
int ckpt_stream_reading(ckpt_stream *s);

/* ---- checkpoint_direct.c (see there): loading the runs that are contiguous in the file with
 * O_DIRECT, by a thread that reads one run ahead into two aligned buffers.  Open (NULL where the
 * file system refuses direct I/O: the caller reads everything through HDF5), plan every run in the
 * order it will be taken, start, take each run in turn (*data: its payload, the caller's to read
 * and overwrite until the next call), close (also after an error). */
typedef struct ckpt_reader ckpt_reader;
int ckpt_reader_open(ckpt_reader **r, const char *path);
int ckpt_reader_plan(ckpt_reader *r, long long off, long long len);
int ckpt_reader_start(ckpt_reader *r);
int ckpt_reader_next(ckpt_reader *r, long long off, long long len, const float **data);
void ckpt_reader_close(ckpt_reader *r);

/* ---- checkpoint.c: the parts of tensors each rank moves */
enum { KIND_MODEL = 0, KIND_EXP_AVG, KIND_EXP_AVG_SQ, NKINDS };

/* A local range [lo, hi) of a parameter's local buffer and its rectangles of the global tensor. */
typedef struct {
  long long lo, hi;
  int nrects;
  ptdp_shard_rect rect[PTDP_SHARD_RECTS];
} ckpt_part;

typedef struct {
  hid_t file;
  ptdp_gpt *m;
  ptdp_master *master;   /* the fp32 weights (ptdp/master.h); NULL: the model's own (params.fp32) */
  const ptdp_ddp *ddp;   /* NULL: no optimizer state */
  float *st_m, *st_v;    /* Adam moments (device) */
  int nglobal;
  ptdp_param_info *global;
  int *gidx;             /* [m->params.n] global index */
  ckpt_part *wpart;           /* [m->params.n] what this rank writes / verifies */
  ckpt_part *spart;           /* [m->params.n] the optimizer shard it holds (whole buffer unless distributed) */
  ckpt_part *dpart;           /* [m->params.n] its data-parallel shard's pieces (d > 1 only): what it
                               * reads of what every replica holds, the rest coming by all-gather */
  uint64_t *sum;         /* [NKINDS nglobal] checksum partial sums */
  long long chunk;       /* elements moved at a time: CKPT_CHUNK_ELEMS */
  float *stage;          /* host buffer of stage_elems floats: chunk (fewer for a small model) */
  long long stage_elems;
  float *wide;           /* saving at t > 1: the full rows of a swapped run (chunk + a row's floats) */
  ckpt_stream stream;
  ckpt_reader *reader;   /* loading: direct reads of contiguous runs (NULL: off) */
  long long bytes;       /* bytes this rank moved */
  long long direct_bytes; /* of them, read by the direct reader */
  long long nf_g, nf_at;  /* loading: the first weight this rank verified that is not finite, as
                             global tensor and flat element of it (LLONG_MAX: none) */
} ckpt_io;

/* HDF5 path of tensor g of kind (dots of the Megatron-core name become groups). */
void ckpt_dataset_path(const ckpt_io *io, int kind, int g, char *out, size_t n);
/* The whole slice of parameter p. */
ckpt_part ckpt_whole_slice(const ptdp_param_info *p);

/* st_m, st_v: the Adam moments, or NULL with ddp NULL (no optimizer state). */
int ckpt_io_setup(ckpt_io *io, ptdp_gpt *m, ptdp_master *master, const ptdp_ddp *ddp, const float *st_m,
                  const float *st_v);
void ckpt_io_free(ckpt_io *io);
/* Checksum of local elements [lo, hi) of p; x[k - lo] holds element k. */
uint64_t ckpt_checksum(const ptdp_param_info *p, const float *x, long long lo, long long hi);
/* One independent transfer of nrects rectangles of dataset ds (row-major, one after the other)
 * to or from the contiguous floats at x. */
int ckpt_transfer_rects(hid_t ds, const ptdp_shard_rect *rect, int nrects, float *x, int write);
/* One independent transfer of local elements [c0, c1) of p (x[k - c0] = element k) to or from
 * their rectangles of dataset ds. */
int ckpt_transfer_chunk(hid_t ds, const ptdp_param_info *p, long long c0, long long c1, float *x, int write);
/* The file bytes [off, off+len) that local elements [c0, c1) of p span in dataset ds, first to
 * last (0, 0 when none). */
void ckpt_chunk_span(hid_t ds, const ptdp_param_info *p, long long c0, long long c1, long long *off, long long *len);
/* Device address of local element k of local parameter i, for kind. */
float *ckpt_element(const ckpt_io *io, int kind, int i, long long k);

/* ---- checkpoint_swap.c (see there): column slices of row-parallel weights moved as full rows by
 * the TP group together.  Is [c0, c1) of p whole rows, at least t of them, of this rank's column
 * slice of a row-parallel weight?  The rows [*r0, *r1) locally; this rank's t-th of them, at full
 * width, [*m0, *m1). */
int ckpt_swap_rows(const ckpt_io *io, const ptdp_param_info *p, long long c0, long long c1, long long *r0,
                   long long *r1, long long *m0, long long *m1);
/* The end of the run of p's part [.., hi) that starts at c0: at most io->chunk elements, and for a
 * column slice starting inside a row, that row's end, so that the runs after it are whole rows
 * (the TP group's runs end alike: their parts' bounds are the same). */
long long ckpt_run_end(const ckpt_io *io, const ptdp_param_info *p, long long c0, long long hi);
/* One all-to-all over the TP group (collective: every TP rank calls it for the same run).
 * to_rows (saving): src the run's elements (this rank's columns of rows [r0, r1)), dst this
 * rank's rows [m0, m1) at full width; else (loading) the other way round. */
int ckpt_exchange_slices(const ckpt_io *io, const ptdp_param_info *p, long long c0, long long c1, const float *src,
                         float *dst, int to_rows);

#endif
