/* Where each parameter lives in the flat parameter and gradient buffers, and the data-parallel
 * buckets over them (Megatron's param_and_grad_buffer).  Pure: from the parameter table, the
 * bucket size and d; no MPI, no device.
 *
 * A bucket is a contiguous range [lo, hi) of the flat buffers holding whole parameters, reduced as
 * one message.  Buckets are formed walking the parameters in reverse (the order in which the
 * backward pass finishes their gradients), closing a bucket once it holds bucket_elems elements;
 * the word embedding and its tied copy get a bucket of their own ("late": reduced after the
 * pipeline, once the two copies have been summed).  In memory the late bucket comes first, then
 * the others from the earliest parameters on.  Every parameter starts 16-element aligned, and
 * every bucket is padded to a multiple of 16 d elements so that it splits evenly over the d
 * data-parallel ranks (the distributed optimizer's shards, ptdp/shard_map.h).
 *
 * These offsets are the model's and the distributed module's business only: they change with the
 * bucket size and d, so nothing that must be layout independent (files) ever sees them. */
#ifndef PTDP_GRAD_BUFFER_H
#define PTDP_GRAD_BUFFER_H

#include "ptdp/params.h"

typedef struct {
  long long lo, hi; /* elements of the flat buffers, hi - lo a multiple of 16 d */
  int nparams;
  int late;         /* the embedding bucket */
} ptdp_bucket_range;

typedef struct {
  int nparams;
  long long *offset;           /* [nparams] first element of each parameter's local buffer */
  int *bucket;                 /* [nparams] its bucket */
  int nbuckets;
  ptdp_bucket_range *buckets;  /* [nbuckets] */
  long long total;             /* elements of each flat buffer */
  int d;
} ptdp_grad_layout;

/* bucket_elems <= 0: one bucket for everything but the embedding. */
int ptdp_grad_layout_build(const ptdp_param_info *params, int nparams, long long bucket_elems, int d,
                           ptdp_grad_layout *layout);
void ptdp_grad_layout_free(ptdp_grad_layout *layout);

#endif
