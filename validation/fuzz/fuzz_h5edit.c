/* Edit programs over a real HDF5 file (fuzz_h5.h): what a damaged or hostile checkpoint or run
 * file can hold that byte mutations cannot reach past HDF5's metadata checksums. */
#include "fuzz_h5.h"

#include "fuzz.h"

#include <hdf5.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_OBJS 512
#define MAX_NAMES 1024
#define NAME_LEN 80

static int close_all_but(hid_t keep);

static char objs[MAX_OBJS][NAME_LEN];
static int nobjs;
static char names[MAX_NAMES][NAME_LEN];
static int nnames;

/* ---------------------------------------------------------------- the base file's lists */

static herr_t on_attr(hid_t loc, const char *name, const H5A_info_t *info, void *op)
{
  (void)loc, (void)info, (void)op;
  for (int i = 0; i < nnames; i++)
    if (!strcmp(names[i], name)) return 0;
  if (nnames < MAX_NAMES && strlen(name) < NAME_LEN) snprintf(names[nnames++], NAME_LEN, "%s", name);
  return 0;
}

static herr_t on_object(hid_t root, const char *name, const H5O_info_t *info, void *op)
{
  (void)info, (void)op;
  if (nobjs >= MAX_OBJS || strlen(name) + 2 > NAME_LEN) return 0;
  if (strcmp(name, ".")) snprintf(objs[nobjs++], NAME_LEN, "/%s", name);
  hid_t o = H5Oopen(root, name, H5P_DEFAULT);
  if (o < 0) return 0;
  H5Aiterate2(o, H5_INDEX_NAME, H5_ITER_INC, NULL, on_attr, NULL);
  H5Oclose(o);
  return 0;
}

int fuzz_h5_base(const char *path)
{
  H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
  hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
  if (f < 0) return -1;
  snprintf(objs[nobjs++], NAME_LEN, "/");
  herr_t rc = H5Ovisit2(f, H5_INDEX_NAME, H5_ITER_INC, on_object, NULL, H5O_INFO_BASIC);
  H5Fclose(f);
  /* names ptdp reads that a base may lack */
  static const char *const extra[] = {"format", "format_version", "checksum", "iteration", "step", "loss_scaler"};
  for (size_t i = 0; i < sizeof extra / sizeof extra[0]; i++) on_attr(-1, extra[i], NULL, NULL);
  if (getenv("PTDP_FUZZ_LIST")) /* for writing seeds by hand: the indices an edit program names */
    for (int i = 0; i < nobjs || i < nnames; i++)
      fprintf(stderr, "%4d  %-60s %s\n", i, i < nobjs ? objs[i] : "", i < nnames ? names[i] : "");
  return rc < 0 ? -1 : 0;
}

/* ---------------------------------------------------------------- reading the program */

typedef struct {
  const uint8_t *p;
  size_t n, at;
} prog;

static unsigned byte(prog *g) { return g->at < g->n ? g->p[g->at++] : (g->at++, 0u); }
static unsigned word(prog *g) { return byte(g) | byte(g) << 8; }
/* An object or attribute name: an index into the base file's list, or with index 0xffff the
 * text that follows, up to a NUL (reproducers name what they edit, so they keep their meaning). */
static const char *named(prog *g, char list[][NAME_LEN], int n, char *buf)
{
  const unsigned w = word(g);
  if (w != 0xffff) return list[w % (unsigned)(n ? n : 1)];
  int k = 0;
  for (unsigned c; (c = byte(g)) && g->at <= g->n;)
    if (k < NAME_LEN - 1) buf[k++] = (char)c;
  buf[k] = 0;
  return buf;
}
static const char *obj_of(prog *g)
{
  static char buf[NAME_LEN];
  return named(g, objs, nobjs, buf);
}
static const char *name_of(prog *g)
{
  static char buf[NAME_LEN];
  return named(g, names, nnames, buf);
}

/* A type: integers and reals of both byte orders, strings of fixed or variable length. */
static hid_t type_of(prog *g, int *varstr)
{
  static const hid_t *const fixed[] = {&H5T_STD_I8LE_g,  &H5T_STD_I32LE_g,  &H5T_STD_I64LE_g, &H5T_STD_U64LE_g,
                                       &H5T_STD_I64BE_g, &H5T_IEEE_F32LE_g, &H5T_IEEE_F32BE_g, &H5T_IEEE_F64LE_g};
  const unsigned k = byte(g) % 10;
  *varstr = k == 9;
  if (k < 8) return H5Tcopy(*fixed[k]);
  hid_t t = H5Tcopy(H5T_C_S1);
  H5Tset_size(t, k == 9 ? H5T_VARIABLE : 1 + byte(g) % 80);
  return t;
}

/* A dataspace: scalar, null, or a small array of rank 1 or 2. */
static hid_t space_of(prog *g)
{
  const unsigned s = byte(g);
  hsize_t d[2] = {1 + s / 4 % 4, 1 + s / 16 % 3};
  switch (s % 4) {
  case 0: return H5Screate(H5S_SCALAR);
  case 1: return H5Screate(H5S_NULL);
  case 2: return H5Screate_simple(1, d, NULL);
  default: return H5Screate_simple(2, d, NULL);
  }
}

/* A buffer for n elements of type t from the program's next bytes (strings: up to 40 of them). */
static void *values_of(prog *g, hid_t t, int varstr, hssize_t n)
{
  if (n < 1) n = 1;
  if (varstr) {
    char **s = calloc((size_t)n, sizeof *s);
    for (hssize_t i = 0; s && i < n; i++) {
      size_t len = byte(g) % 40;
      if (!(s[i] = calloc(len + 1, 1))) continue;
      for (size_t k = 0; k < len; k++) s[i][k] = (char)byte(g);
    }
    return s;
  }
  const size_t bytes = H5Tget_size(t) * (size_t)n;
  uint8_t *v = calloc(bytes ? bytes : 1, 1);
  for (size_t k = 0; v && k < bytes; k++) v[k] = (uint8_t)byte(g);
  return v;
}

static void values_free(void *v, int varstr, hssize_t n)
{
  for (hssize_t i = 0; varstr && v && i < (n < 1 ? 1 : n); i++) free(((char **)v)[i]); /* as values_of made */
  free(v);
}

/* ---------------------------------------------------------------- the operations */

static void op_attr(hid_t f, prog *g)
{
  const char *o = obj_of(g), *name = name_of(g);
  int varstr;
  hid_t t = type_of(g, &varstr), sp = space_of(g);
  const hssize_t n = H5Sget_simple_extent_npoints(sp);
  void *v = values_of(g, t, varstr, n);
  hid_t ob = H5Oopen(f, o, H5P_DEFAULT);
  if (ob >= 0 && H5Aexists(ob, name) > 0) H5Adelete(ob, name);
  hid_t a = ob < 0 ? -1 : H5Acreate2(ob, name, t, sp, H5P_DEFAULT, H5P_DEFAULT);
  if (a >= 0 && n > 0 && v) H5Awrite(a, t, v);
  if (a >= 0) H5Aclose(a);
  if (ob >= 0) H5Oclose(ob);
  values_free(v, varstr, n);
  H5Sclose(sp);
  H5Tclose(t);
}

static void op_unattr(hid_t f, prog *g)
{
  const char *o = obj_of(g), *name = name_of(g);
  H5Adelete_by_name(f, o, name, H5P_DEFAULT);
}

/* Replace dataset o by one of another shape, type or layout: rank 0-5 (past the 4 dimensions the
 * run file's helpers hold), each extent the old one's (the first, past the old rank) -2 .. +2
 * (at least 0); contiguous, chunked and extendible, or compact; the values are the old ones
 * converted where the element count is kept, else the program's bytes. */
enum { DSET_RANK = 5 };
static void op_dset(hid_t f, prog *g)
{
  const char *o = obj_of(g);
  int varstr;
  hid_t t = type_of(g, &varstr);
  const unsigned rank = byte(g) % (DSET_RANK + 1);
  hsize_t d[DSET_RANK], maxd[DSET_RANK], od[H5S_MAX_RANK] = {1};
  for (int k = 0; k < DSET_RANK; k++) d[k] = byte(g) % 5, maxd[k] = H5S_UNLIMITED;
  const unsigned layout = byte(g) % 3, keep = byte(g) & 1;
  hid_t ds = varstr ? -1 : H5Dopen2(f, o, H5P_DEFAULT);
  if (ds < 0) {
    H5Tclose(t);
    return;
  }
  hid_t osp = H5Dget_space(ds);
  const int ork = H5Sget_simple_extent_ndims(osp);
  if (ork > 0) H5Sget_simple_extent_dims(osp, od, NULL);
  const hssize_t on = H5Sget_simple_extent_npoints(osp);
  H5Sclose(osp);
  for (int k = 0; k < DSET_RANK; k++) {
    const hsize_t was = k < ork ? od[k] : od[0];
    d[k] = was + d[k] >= 2 ? was + d[k] - 2 : 0;
  }
  hid_t sp = rank ? H5Screate_simple((int)rank, d, layout == 1 ? maxd : NULL) : H5Screate(H5S_SCALAR);
  const hssize_t n = H5Sget_simple_extent_npoints(sp);
  float *old = on > 0 && on < (1 << 22) ? malloc(sizeof(float) * (size_t)on) : NULL;
  const int have_old = old && H5Dread(ds, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, old) >= 0;
  unsigned long long sum = 0;
  hid_t a = keep && H5Aexists(ds, "checksum") > 0 ? H5Aopen(ds, "checksum", H5P_DEFAULT) : -1;
  const int have_sum = a >= 0 && H5Aread(a, H5T_NATIVE_ULLONG, &sum) >= 0;
  if (a >= 0) H5Aclose(a);
  H5Dclose(ds);
  hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
  hsize_t chunk[DSET_RANK];
  for (int k = 0; k < DSET_RANK; k++) chunk[k] = d[k] ? d[k] : 1;
  if (layout == 1 && rank) H5Pset_chunk(dcpl, (int)rank, chunk);
  if (layout == 2) H5Pset_layout(dcpl, H5D_COMPACT);
  if (H5Ldelete(f, o, H5P_DEFAULT) >= 0 && (ds = H5Dcreate2(f, o, t, sp, H5P_DEFAULT, dcpl, H5P_DEFAULT)) >= 0) {
    void *v = values_of(g, t, 0, n);
    if (have_old && n == on) H5Dwrite(ds, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, old);
    else if (v && n > 0) H5Dwrite(ds, t, H5S_ALL, H5S_ALL, H5P_DEFAULT, v);
    values_free(v, 0, n);
    if (have_sum) {
      hid_t s1 = H5Screate(H5S_SCALAR);
      a = H5Acreate2(ds, "checksum", H5T_NATIVE_ULLONG, s1, H5P_DEFAULT, H5P_DEFAULT);
      if (a >= 0) H5Awrite(a, H5T_NATIVE_ULLONG, &sum), H5Aclose(a);
      H5Sclose(s1);
    }
    H5Dclose(ds);
  }
  free(old);
  H5Pclose(dcpl);
  H5Sclose(sp);
  H5Tclose(t);
}

/* A raw edit, made after HDF5 has closed the file. */
typedef struct {
  int kind; /* 4 FLIP, 5 DFLIP (at an absolute offset), 6 CUT, 7 GROW */
  unsigned long long at;
  unsigned x;
} raw_edit;

static void op_dflip(hid_t f, prog *g, raw_edit *r)
{
  const char *o = obj_of(g);
  const unsigned e = word(g);
  r->x = byte(g);
  r->kind = -1;
  hid_t ds = H5Dopen2(f, o, H5P_DEFAULT);
  if (ds < 0) return;
  const haddr_t base = H5Dget_offset(ds);
  const hsize_t bytes = H5Dget_storage_size(ds);
  H5Dclose(ds);
  if (base == HADDR_UNDEF || bytes == 0) return;
  r->kind = 5;
  r->at = base + e % bytes;
}

static void apply_raw(const char *path, const raw_edit *r, int n)
{
  FILE *fp = fopen(path, "r+b");
  if (!fp) return;
  for (int i = 0; i < n; i++) {
    struct stat st;
    if (fflush(fp) || fstat(fileno(fp), &st) || st.st_size <= 0) break;
    const unsigned long long size = (unsigned long long)st.st_size;
    if (r[i].kind == 6) {
      if (ftruncate(fileno(fp), (off_t)(size * r[i].at / 65536))) break;
    } else if (r[i].kind == 7) {
      fseek(fp, 0, SEEK_END);
      for (unsigned k = 0; k < 16 * r[i].x; k++) fputc(0xff, fp);
    } else if (r[i].kind == 4 || r[i].kind == 5) {
      const unsigned long long at = r[i].kind == 4 ? r[i].at % size : r[i].at;
      if (at >= size || fseek(fp, (long)at, SEEK_SET)) continue;
      const int c = fgetc(fp);
      if (c == EOF || fseek(fp, (long)at, SEEK_SET)) continue;
      fputc(c ^ (int)(r[i].x ? r[i].x : 0x10), fp);
    }
  }
  fclose(fp);
}

static void run_program(const char *path, const uint8_t *data, size_t size)
{
  prog g = {data, size, 0};
  raw_edit raw[64];
  int nraw = 0;
  hid_t f = H5Fopen(path, H5F_ACC_RDWR, H5P_DEFAULT);
  for (int ops = 0; f >= 0 && g.at < g.n && ops < 64; ops++) {
    switch (byte(&g) % 8) {
    case 0: op_attr(f, &g); break;
    case 1: op_unattr(f, &g); break;
    case 2: {
      const char *o = obj_of(&g);
      if (strcmp(o, "/")) H5Ldelete(f, o, H5P_DEFAULT);
      break;
    }
    case 3: op_dset(f, &g); break;
    case 4:
      raw[nraw].kind = 4;
      raw[nraw].at = word(&g) | (unsigned long long)word(&g) << 16;
      raw[nraw++].x = byte(&g);
      break;
    case 5:
      op_dflip(f, &g, &raw[nraw]);
      nraw += raw[nraw].kind > 0;
      break;
    case 6: raw[nraw].kind = 6, raw[nraw++].at = word(&g); break;
    default: raw[nraw].kind = 7, raw[nraw++].x = byte(&g); break;
    }
  }
  if (f >= 0) {
    close_all_but(f);
    H5Fclose(f);
  }
  apply_raw(path, raw, nraw);
}

int fuzz_h5_input(const char *tag, const uint8_t *base, size_t len, const uint8_t *data, size_t size,
                  char *path, size_t npath)
{
  static const uint8_t sig[8] = {0x89, 'H', 'D', 'F', '\r', '\n', 0x1a, '\n'};
  char p[FUZZ_PATH_MAX];
  const int whole = size >= 8 && !memcmp(data, sig, 8);
  if (fuzz_file(tag, whole ? data : base, whole ? size : len, p)) return -1;
  snprintf(path, npath, "%s", p);
  if (!whole) run_program(p, data, size);
  const char *keep = getenv("PTDP_FUZZ_SAVE"); /* the file an edit program made, e.g. to commit a reproducer */
  size_t n = 0;
  uint8_t *made = keep ? fuzz_slurp(p, &n) : NULL;
  FILE *f = made ? fopen(keep, "wb") : NULL;
  if (f) fwrite(made, 1, n, f), fclose(f);
  free(made);
  return 0;
}

/* Close every identifier of kind `types` but keep. */
static int close_kind(unsigned types, hid_t keep)
{
  ssize_t n = H5Fget_obj_count(H5F_OBJ_ALL, types);
  if (n <= 0) return 0;
  hid_t *ids = malloc(sizeof *ids * (size_t)n);
  if (!ids) return 0;
  n = H5Fget_obj_ids(H5F_OBJ_ALL, types, (size_t)n, ids);
  int closed = 0;
  for (ssize_t i = 0; i < n; i++) {
    if (ids[i] == keep) continue;
    closed++;
    switch (H5Iget_type(ids[i])) {
    case H5I_FILE: H5Fclose(ids[i]); break;
    case H5I_GROUP: H5Gclose(ids[i]); break;
    case H5I_DATASET: H5Dclose(ids[i]); break;
    case H5I_ATTR: H5Aclose(ids[i]); break;
    case H5I_DATATYPE: H5Tclose(ids[i]); break;
    default: break;
    }
  }
  free(ids);
  return closed;
}

static int close_all_but(hid_t keep)
{
  /* objects first: a file with open objects stays open after H5Fclose */
  int n = close_kind(H5F_OBJ_DATASET | H5F_OBJ_GROUP | H5F_OBJ_DATATYPE | H5F_OBJ_ATTR, keep);
  return n + close_kind(H5F_OBJ_FILE, keep);
}

int fuzz_h5_close_all(void) { return close_all_but(-1); }
