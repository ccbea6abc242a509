/* Private to src/io: what the checkpoint and the run file share (h5util.c): HDF5 attributes
 * (written, and read validated: a file may be damaged or hostile), groups, every key of a key
 * table as a string attribute, and mkdir -p.  Named ckpt_ after the checkpoint, their first user. */
#ifndef PTDP_IO_H5UTIL_H
#define PTDP_IO_H5UTIL_H

#include "ptdp/options.h"

#include <hdf5.h>
#include <stdint.h>

/* Scalar attributes; a string is fixed-length, NUL-padded (h5py reads bytes; .decode() gives it). */
int ckpt_attr_write_i64(hid_t obj, const char *name, long long v);
int ckpt_attr_write_f64(hid_t obj, const char *name, double v);
int ckpt_attr_write_str(hid_t obj, const char *name, const char *s);
int ckpt_attr_write_u64(hid_t obj, const char *name, uint64_t v);
/* Validated reads of attributes (a file may be damaged or hostile): *present = 0 when absent;
 * present, it must be exactly one element of the expected class (an integer for i64 and u64, a
 * real for f64, a fixed-length string shorter than n bytes for str), else an input error naming
 * the file, the object and the attribute.  Return 0 or an error code. */
int ckpt_attr_get_i64(hid_t obj, const char *name, long long *v, int *present);
int ckpt_attr_get_u64(hid_t obj, const char *name, uint64_t *v, int *present);
int ckpt_attr_get_f64(hid_t obj, const char *name, double *v, int *present);
int ckpt_attr_get_str(hid_t obj, const char *name, char *buf, size_t n, int *present);
/* The same where the attribute must be there (its absence is an error naming it). */
int ckpt_attr_need_i64(hid_t obj, const char *name, long long *v);
/* One string attribute per key of o (a key table over its values, e.g. ptdp_args_view), named as
 * the key, holding its value as text (reals with 17 significant digits, so they read back exactly). */
int ckpt_attr_write_keys(hid_t obj, const ptdp_options *o);
/* Create group path (and its parents). */
int ckpt_group_create(hid_t file, const char *path);
/* mkdir -p (rank 0's work); an error naming the directory that cannot be made. */
int ckpt_fs_make_dirs(const char *path);

#endif
