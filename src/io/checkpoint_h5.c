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

static int attr_read(hid_t obj, const char *name, hid_t type, void *v)
{
  htri_t has = H5Aexists(obj, name);
  PTDP_CALL_HDF5(has);
  if (!has) return 0;
  hid_t a = H5Aopen(obj, name, H5P_DEFAULT);
  PTDP_CALL_HDF5(a);
  hid_t sp = H5Aget_space(a); /* one element, or H5Aread would write past v */
  hssize_t npts = sp < 0 ? -1 : H5Sget_simple_extent_npoints(sp);
  if (sp >= 0) H5Sclose(sp);
  if (npts != 1) {
    H5Aclose(a);
    PTDP_CHECK(0, "attribute '%s' holds %lld elements where one number belongs", name, (long long)npts);
  }
  herr_t rc = H5Aread(a, type, v);
  PTDP_CALL_HDF5(H5Aclose(a));
  PTDP_CALL_HDF5(rc);
  return 1;
}

int ckpt_attr_read_i64(hid_t obj, const char *name, long long *v) { return attr_read(obj, name, H5T_NATIVE_LLONG, v); }
int ckpt_attr_read_u64(hid_t obj, const char *name, uint64_t *v) { return attr_read(obj, name, H5T_NATIVE_UINT64, v); }
int ckpt_attr_read_f64(hid_t obj, const char *name, double *v) { return attr_read(obj, name, H5T_NATIVE_DOUBLE, v); }

int ckpt_attr_read_str(hid_t obj, const char *name, char *buf, size_t n)
{
  htri_t has = H5Aexists(obj, name);
  PTDP_CALL_HDF5(has);
  if (!has) return 0;
  hid_t a = H5Aopen(obj, name, H5P_DEFAULT);
  PTDP_CALL_HDF5(a);
  hid_t ft = H5Aget_type(a);
  PTDP_CALL_HDF5(ft);
  size_t len = H5Tget_size(ft);
  int ok = H5Tget_class(ft) == H5T_STRING && !H5Tis_variable_str(ft) && len < n;
  PTDP_CALL_HDF5(H5Tclose(ft));
  if (!ok) {
    PTDP_CALL_HDF5(H5Aclose(a));
    PTDP_CHECK(0, "attribute '%s' is not a string of fewer than %zu bytes", name, n);
  }
  hid_t t = H5Tcopy(H5T_C_S1);
  PTDP_CALL_HDF5(t);
  PTDP_CALL_HDF5(H5Tset_size(t, len));
  PTDP_CALL_HDF5(H5Tset_strpad(t, H5T_STR_NULLPAD));
  memset(buf, 0, n);
  herr_t rc = H5Aread(a, t, buf);
  PTDP_CALL_HDF5(H5Tclose(t));
  PTDP_CALL_HDF5(H5Aclose(a));
  PTDP_CALL_HDF5(rc);
  return 1;
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
  return 0;
}
