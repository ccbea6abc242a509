/* Private to src/io: the run file's state and dataset helpers (runfile.c creates and opens the
 * file; runfile_write.c appends to it). */
#ifndef PTDP_IO_RUNFILE_IMPL_H
#define PTDP_IO_RUNFILE_IMPL_H

#include "ptdp/runfile.h"

#include <hdf5.h>

/* Communicators of /communication, in order. */
enum { RF_COMM_TP_LAYERS = 0, RF_COMM_TP_OTHER, RF_COMM_PP, RF_COMM_DP, RF_COMM_EMB, RF_NCOMMS };
/* Layer tensors of /memory: the plan's per-layer buffer kinds, in order. */
enum { RF_KIND0 = PTDP_BUF_LAYER_INPUT, RF_NKINDS = PTDP_BUF_LAYER_KINDS };

/* A row of /jobs. */
typedef struct {
  double start_time, end_time;
  long long ranks;
  char hosts[256], layout[64], slurm_job_id[32], slurm_array_job_id[32], slurm_array_task_id[32];
  long long first_iteration, last_iteration;
} rf_job;

/* An element of /pipeline/events. */
typedef struct {
  double start, end, wait;
  int kind, microbatch, chunk;
} rf_event;

struct ptdp_runfile {
  int rank0;               /* only world rank 0 has a file */
  char path[4096];
  char base[4000];         /* default names: path without ".h5", for numbering ("" for run-file) */
  hid_t file;
  long long n_intervals, n_evals, n_samples, job; /* rows written; this launch's /jobs row */
  double start_time;       /* Unix seconds, this launch */
  long long first_iteration, last_iteration;
  hid_t job_type, event_type, str_type; /* compound /jobs row, compound /pipeline/events, strings */
  rf_job job_rec;          /* this launch's /jobs row, rewritten at every flush */
  ptdp_runfile_run run;    /* what it records of the run */
};

/* Names of the float64 and int64 columns of /metrics and /eval, in ptdp_runfile_metrics order. */
extern const char *const rf_metric_i64[4];
extern const char *const rf_metric_f64[8];

int rf_types(struct ptdp_runfile *rf);
/* Create an extendible chunked dataset of rank dims (all dimensions unlimited), initially of
 * size dims, with fill value fill (NULL: the type's default). */
int rf_create(hid_t loc, const char *name, hid_t type, int rank, const hsize_t *dims, const void *fill);
/* Write the block [start, start + count) of dataset path, growing it as needed. */
int rf_write(hid_t file, const char *path, hid_t memtype, int rank, const hsize_t *start, const hsize_t *count,
             const void *buf);
/* Rewrite this launch's /jobs row (end time now, last iteration). */
int rf_write_job(struct ptdp_runfile *rf);
/* Current size of dimension 0 of dataset path. */
int rf_rows(hid_t file, const char *path, long long *n);

#endif
