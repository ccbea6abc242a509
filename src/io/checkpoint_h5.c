/* HDF5 helpers of the checkpoint module.  Attribute and dataset creation are collective in
 * parallel HDF5: every rank calls them in the same order with the same values. */
#include "checkpoint_impl.h"

#include "ptdp/error.h"

#include <stdio.h>
#include <string.h>

static int attr_write(hid_t obj, const char *name, hid_t type, const void *v)
{
  hid_t sp = H5Screate(H5S_SCALAR);
  PTDP_CALL_HDF5(sp);
  hid_t a = H5Acreate2(obj, name, type, sp, H5P_DEFAULT, H5P_DEFAULT);
  PTDP_CALL_HDF5(a);
  PTDP_CALL_HDF5(H5Awrite(a, type, v));
  PTDP_CALL_HDF5(H5Aclose(a));
  PTDP_CALL_HDF5(H5Sclose(sp));
  return 0;
}

int ckpt_attr_write_i64(hid_t obj, const char *name, long long v) { return attr_write(obj, name, H5T_NATIVE_LLONG, &v); }
int ckpt_attr_write_u64(hid_t obj, const char *name, uint64_t v) { return attr_write(obj, name, H5T_NATIVE_UINT64, &v); }
int ckpt_attr_write_f64(hid_t obj, const char *name, double v) { return attr_write(obj, name, H5T_NATIVE_DOUBLE, &v); }

/* A fixed-length, NUL-padded string (h5py reads it as bytes; .decode() gives the text). */
int ckpt_attr_write_str(hid_t obj, const char *name, const char *s)
{
  hid_t t = H5Tcopy(H5T_C_S1);
  PTDP_CALL_HDF5(t);
  PTDP_CALL_HDF5(H5Tset_size(t, strlen(s) ? strlen(s) : 1));
  PTDP_CALL_HDF5(H5Tset_strpad(t, H5T_STR_NULLPAD));
  int rc = attr_write(obj, name, t, strlen(s) ? s : "");
  PTDP_CALL_HDF5(H5Tclose(t));
  return rc;
}

/* "FILE:/object": where an attribute lives, for messages. */
static void where_of(hid_t obj, char *buf, size_t n)
{
  char file[512] = "?", path[256] = "?";
  if (H5Fget_name(obj, file, sizeof file) < 0) snprintf(file, sizeof file, "?");
  if (H5Iget_name(obj, path, sizeof path) <= 0) snprintf(path, sizeof path, "/");
  snprintf(buf, n, "%s:%s", file, path);
}

/* Open attribute name of obj and check it is one element of class want (a string: shorter than
 * max bytes, fixed length).  *a < 0 when absent. */
static int attr_open(hid_t obj, const char *name, H5T_class_t want, size_t max, hid_t *a)
{
  *a = -1;
  htri_t has = H5Aexists(obj, name);
  PTDP_CALL_HDF5(has);
  if (!has) return 0;
  hid_t at = H5Aopen(obj, name, H5P_DEFAULT);
  PTDP_CALL_HDF5(at);
  hid_t sp = H5Aget_space(at), ft = H5Aget_type(at);
  const hssize_t npts = sp < 0 ? -1 : H5Sget_simple_extent_npoints(sp);
  const H5T_class_t cls = ft < 0 ? H5T_NO_CLASS : H5Tget_class(ft);
  const size_t len = ft < 0 ? 0 : H5Tget_size(ft);
  const int varlen = ft >= 0 && cls == H5T_STRING && H5Tis_variable_str(ft) > 0;
  if (sp >= 0) H5Sclose(sp);
  if (ft >= 0) H5Tclose(ft);
  const int ok = npts == 1 && cls == want && (want != H5T_STRING || (!varlen && len < max));
  if (!ok) {
    H5Aclose(at);
    char where[800];
    where_of(obj, where, sizeof where);
    static const char *what[] = {[H5T_INTEGER] = "an integer", [H5T_FLOAT] = "a real number", [H5T_STRING] = "a string"};
    PTDP_CHECK(0, "%s: attribute '%s' is not %s%s (it holds %lld element%s%s)", where, name, what[want],
               want == H5T_STRING ? " of fixed length" : "", (long long)npts, npts == 1 ? "" : "s",
               want == H5T_STRING && cls == H5T_STRING && !varlen ? ", or is too long" : "");
  }
  *a = at;
  return 0;
}

static int attr_get(hid_t obj, const char *name, H5T_class_t want, hid_t mem, void *v, int *present)
{
  hid_t a;
  PTDP_CALL(attr_open(obj, name, want, 0, &a));
  *present = a >= 0;
  if (a < 0) return 0;
  herr_t rc = H5Aread(a, mem, v);
  PTDP_CALL_HDF5(H5Aclose(a));
  PTDP_CALL_HDF5(rc);
  return 0;
}

int ckpt_attr_get_i64(hid_t obj, const char *name, long long *v, int *present)
{
  return attr_get(obj, name, H5T_INTEGER, H5T_NATIVE_LLONG, v, present);
}
int ckpt_attr_get_u64(hid_t obj, const char *name, uint64_t *v, int *present)
{
  return attr_get(obj, name, H5T_INTEGER, H5T_NATIVE_UINT64, v, present);
}
int ckpt_attr_get_f64(hid_t obj, const char *name, double *v, int *present)
{
  return attr_get(obj, name, H5T_FLOAT, H5T_NATIVE_DOUBLE, v, present);
}

int ckpt_attr_get_str(hid_t obj, const char *name, char *buf, size_t n, int *present)
{
  hid_t a;
  PTDP_CALL(attr_open(obj, name, H5T_STRING, n, &a));
  *present = a >= 0;
  if (a < 0) return 0;
  hid_t ft = H5Aget_type(a);
  size_t len = ft < 0 ? 0 : H5Tget_size(ft);
  if (ft >= 0) H5Tclose(ft);
  hid_t t = H5Tcopy(H5T_C_S1);
  herr_t rc = t < 0 ? -1 : H5Tset_size(t, len ? len : 1);
  if (rc >= 0) rc = H5Tset_strpad(t, H5T_STR_NULLPAD);
  memset(buf, 0, n);
  if (rc >= 0) rc = H5Aread(a, t, buf); /* len < n: the NUL stays */
  if (t >= 0) H5Tclose(t);
  PTDP_CALL_HDF5(H5Aclose(a));
  PTDP_CALL_HDF5(rc);
  return 0;
}

int ckpt_attr_need_i64(hid_t obj, const char *name, long long *v)
{
  int present;
  PTDP_CALL(ckpt_attr_get_i64(obj, name, v, &present));
  if (!present) {
    char where[800];
    where_of(obj, where, sizeof where);
    PTDP_CHECK(0, "%s: attribute '%s' is missing", where, name);
  }
  return 0;
}

int ckpt_attr_write_args(hid_t obj, const ptdp_args *a)
{
  ptdp_options o;
  ptdp_args_view((ptdp_args *)a, &o);
  for (int i = 0; i < o.count; i++) {
    char v[PTDP_OPT_STRLEN];
    if (o.table[i].type == PTDP_OPT_REAL) /* 17 digits: the value reads back exactly */
      snprintf(v, sizeof v, "%.17g", *(const double *)((const char *)a + o.table[i].offset));
    else ptdp_options_value_text(&o, i, v, sizeof v);
    PTDP_CALL(ckpt_attr_write_str(obj, o.table[i].name, v));
  }
  return 0;
}

int ckpt_group_create(hid_t file, const char *path)
{
  hid_t lcpl = H5Pcreate(H5P_LINK_CREATE);
  PTDP_CALL_HDF5(lcpl);
  PTDP_CALL_HDF5(H5Pset_create_intermediate_group(lcpl, 1));
  hid_t g = H5Gcreate2(file, path, lcpl, H5P_DEFAULT, H5P_DEFAULT);
  PTDP_CALL_HDF5(g);
  PTDP_CALL_HDF5(H5Gclose(g));
  PTDP_CALL_HDF5(H5Pclose(lcpl));
  return 0;
}

int ckpt_dataset_create(hid_t file, const char *path, int ndim, long long rows, long long cols, hid_t *ds)
{
  hid_t lcpl = H5Pcreate(H5P_LINK_CREATE), dcpl = H5Pcreate(H5P_DATASET_CREATE);
  PTDP_CALL_HDF5(lcpl);
  PTDP_CALL_HDF5(dcpl);
  PTDP_CALL_HDF5(H5Pset_create_intermediate_group(lcpl, 1));
  /* every element is written: filling with zeros first would double the bytes written */
  PTDP_CALL_HDF5(H5Pset_fill_time(dcpl, H5D_FILL_TIME_NEVER));
  PTDP_CALL_HDF5(H5Pset_alloc_time(dcpl, H5D_ALLOC_TIME_EARLY));
  hsize_t dims[2] = {(hsize_t)rows, (hsize_t)cols};
  hid_t sp = H5Screate_simple(ndim, dims, NULL);
  PTDP_CALL_HDF5(sp);
  *ds = H5Dcreate2(file, path, H5T_IEEE_F32LE, sp, lcpl, dcpl, H5P_DEFAULT);
  PTDP_CALL_HDF5(*ds);
  PTDP_CALL_HDF5(H5Sclose(sp));
  PTDP_CALL_HDF5(H5Pclose(dcpl));
  PTDP_CALL_HDF5(H5Pclose(lcpl));
  return 0;
}

int ckpt_fapl(MPI_Comm comm, hid_t *fapl)
{
  *fapl = H5Pcreate(H5P_FILE_ACCESS);
  PTDP_CALL_HDF5(*fapl);
  PTDP_CALL_HDF5(H5Pset_fapl_mpio(*fapl, comm, MPI_INFO_NULL));
  /* metadata reads by one rank and broadcast; metadata written collectively */
  PTDP_CALL_HDF5(H5Pset_all_coll_metadata_ops(*fapl, 1));
  PTDP_CALL_HDF5(H5Pset_coll_metadata_write(*fapl, 1));
  /* objects of 4 KiB and more start on a 4 KiB boundary: a load's direct reads (checkpoint_direct.c)
   * then begin and end on whole blocks, and a tensor split in whole blocks never shares one */
  PTDP_CALL_HDF5(H5Pset_alignment(*fapl, 4096, 4096));
  /* the 1.10 file format at least: object headers, B-trees and heaps carry checksums, so a
   * damaged metadata byte is an HDF5 error ("incorrect metadata checksum") when the file is read
   * instead of a structure HDF5 would parse (issue 22, item 7); tensors carry our own checksums */
  PTDP_CALL_HDF5(H5Pset_libver_bounds(*fapl, H5F_LIBVER_V110, H5F_LIBVER_LATEST));
  return 0;
}
