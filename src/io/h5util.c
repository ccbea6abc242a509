/* What the checkpoint and the run file share (src/io/h5util.h): HDF5 attributes and groups, the
 * key table written as attributes, mkdir -p.  Attribute creation is collective in parallel HDF5:
 * every rank calls it in the same order with the same values. */
#include "h5util.h"

#include "ptdp/error.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

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

int ckpt_attr_write_i64(hid_t obj, const char *name, long long v)
{
  return attr_write(obj, name, H5T_NATIVE_LLONG, &v);
}
int ckpt_attr_write_u64(hid_t obj, const char *name, uint64_t v)
{
  return attr_write(obj, name, H5T_NATIVE_UINT64, &v);
}
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
  if (has < 0) { /* HDF5 refuses the object's header or attribute storage (its checksums, in 1.10 files) */
    char where[800];
    H5Eclear2(H5E_DEFAULT);
    where_of(obj, where, sizeof where);
    PTDP_CHECK(0, "%s: HDF5 cannot read the attributes there (looking for '%s'): the file is damaged", where, name);
  }
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
    static const char *what[] = {[H5T_INTEGER] = "an integer", [H5T_FLOAT] = "a real number",
                                 [H5T_STRING] = "a string"};
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

int ckpt_attr_write_keys(hid_t obj, const ptdp_options *o)
{
  for (int i = 0; i < o->count; i++) {
    char v[PTDP_OPT_STRLEN];
    if (o->table[i].type == PTDP_OPT_REAL) /* 17 digits: the value reads back exactly */
      snprintf(v, sizeof v, "%.17g", *(const double *)((const char *)o->target + o->table[i].offset));
    else ptdp_options_value_text(o, i, v, sizeof v);
    PTDP_CALL(ckpt_attr_write_str(obj, o->table[i].name, v));
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

int ckpt_fs_make_dirs(const char *path)
{
  char buf[PTDP_OPT_STRLEN];
  PTDP_CHECK(strlen(path) < sizeof buf, "save directory path too long: '%s'", path);
  strcpy(buf, path);
  for (char *p = buf + 1; *p; p++) {
    if (*p != '/') continue;
    *p = 0;
    if (mkdir(buf, 0777) && errno != EEXIST) PTDP_CHECK_IO(0, "cannot create directory '%s': %s", buf, strerror(errno));
    *p = '/';
  }
  if (mkdir(buf, 0777) && errno != EEXIST) PTDP_CHECK_IO(0, "cannot create directory '%s': %s", buf, strerror(errno));
  struct stat st;
  PTDP_CHECK_IO(stat(buf, &st) == 0 && S_ISDIR(st.st_mode), "'%s' exists and is not a directory", buf);
  return 0;
}
