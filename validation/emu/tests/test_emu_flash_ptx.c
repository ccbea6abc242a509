/* The emulated PTX instructions of the fused attention's mma kernels (src/backend/cuda_mma.h,
 * emulated in validation/emu/include/mma.h), each against the PTX ISA (8.5) stated here
 * independently of the emulation's code:
 *   - ldmatrix .x2/.x4, with and without .trans (9.7.14.5.15): every register of every lane
 *     holds the two elements the ISA names (matrix i = rows 8i..8i+7 given by lanes 8i..8i+7;
 *     lane l: row l/4, columns 2(l%4), 2(l%4)+1; transposed: rows 2(l%4), 2(l%4)+1, column l/4);
 *   - mma.m16n8k16 bf16/fp16 -> fp32 (9.7.14.5.8, 9.7.14.5.14) on fragments each lane builds by
 *     the ISA's element formulas, against a plain product D = A B + C summed in the stated order
 *     (exact products, k = 0..15 in fp32): equal bit for bit;
 *   - the composition the kernels use, D [16, 16] = A [16, K] B + C for K 16 and 48: cp.async into
 *     shared memory (one row zero-filled by src-size 0), A by ldmatrix.x4, B by each of .x4,
 *     .x4.trans, .x2, .x2.trans: equal bit for bit to the plain product;
 *   - cp.async's groups (9.7.9.25-27): a word is old before the wait of its group, new after;
 *     wait_group 1 leaves the newest group pending;
 *   - the misuses refused, each in a child process: an ldmatrix row address off 16 bytes, a lane
 *     absent from mma, rows copied by other lanes read with no __syncwarp after the wait.
 * A wrong layout consistent between ldmatrix and mma would pass the product tests alone; the
 * element-by-element tests pin each one to the ISA.  test_emu_flash_ptx_plant.sh runs this
 * program built on a copy of mma.h with mma's A registers 1 and 2 swapped: it must fail. */
#include <cuda_runtime.h>

#include "../../tests/expect.h"
#include "emu_test.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

cudaError_t emu_ptx_ldm(int num, int trans, const void *src, void *out);
cudaError_t emu_ptx_mma(int type, const void *A, const void *B, const float *C, float *D);
cudaError_t emu_ptx_gemm(int type, int kt, int bmode, int zrow, const void *A, const void *B, const float *C,
                         float *D);
cudaError_t emu_ptx_cp_groups(const void *src, void *out);
cudaError_t emu_ptx_misuse(int kind, const void *src, float *D);

/* 16-bit values exact in both types (small integers over powers of two), as bits of type 0
 * bf16 or 1 fp16 */
static uint16_t to16(float f, int type)
{
  uint32_t x;
  memcpy(&x, &f, 4);
  if (type == 0) return (uint16_t)(x >> 16);
  uint32_t sign = (x >> 16) & 0x8000u, exp = (x >> 23) & 0xffu, man = x & 0x7fffffu;
  if (!exp) return (uint16_t)sign;
  return (uint16_t)(sign | ((exp - 127 + 15) << 10) | (man >> 13));
}
static float from16(uint16_t h, int type)
{
  if (type == 0) {
    uint32_t x = (uint32_t)h << 16;
    float f;
    memcpy(&f, &x, 4);
    return f;
  }
  int e = (h >> 10) & 31, m = h & 1023;
  float v = e ? ldexpf(1.0f + m / 1024.0f, e - 15) : ldexpf(m / 1024.0f, -14);
  return h & 0x8000 ? -v : v;
}
static float rnd_value(void) { return ldexpf((float)(rand() % 255 - 127), -(rand() % 6) - 3); }

static void *dev_copy(const void *h, size_t bytes)
{
  void *d;
  CK(cudaMalloc(&d, bytes));
  if (h) CK(cudaMemcpy(d, h, bytes, cudaMemcpyHostToDevice));
  else CK(cudaMemset(d, 0xff, bytes));
  return d;
}

static void check_ldmatrix(int num, int trans)
{
  uint16_t src[256]; /* element (row, col) of the [32, 8] source holds 256 + 8 row + col: unique */
  uint32_t out[128];
  for (int i = 0; i < 256; i++) src[i] = (uint16_t)(256 + i);
  void *ds = dev_copy(src, sizeof src), *dout = dev_copy(NULL, sizeof out);
  CK(emu_ptx_ldm(num, trans, ds, dout));
  CK(cudaMemcpy(out, dout, sizeof out, cudaMemcpyDeviceToHost));
  int bad = 0;
  for (int l = 0; l < 32; l++)
    for (int i = 0; i < num; i++) {
      /* the ISA: matrix i's element (r, c) is source row 8i + r, column c */
      int r0 = l / 4, c0 = 2 * (l % 4), r1 = r0, c1 = c0 + 1;
      if (trans) r0 = 2 * (l % 4), c0 = l / 4, r1 = r0 + 1, c1 = c0;
      const uint32_t want = (uint32_t)src[(8 * i + r0) * 8 + c0] | (uint32_t)src[(8 * i + r1) * 8 + c1] << 16;
      bad += out[l * 4 + i] != want;
    }
  EXPECT(bad == 0, "ldmatrix.x%d%s: %d of %d registers hold other elements than the ISA's", num, trans ? ".trans" : "",
         bad, 32 * num);
  CK(cudaFree(ds));
  CK(cudaFree(dout));
}

/* D = A B + C in the stated order; A [16, K] row-major, B [K, N] row-major */
static void reference(int type, int K, int N, const uint16_t *A, const uint16_t *B, const float *C, float *D)
{
  for (int m = 0; m < 16; m++)
    for (int n = 0; n < N; n++) {
      volatile float acc = C[m * N + n];
      for (int k = 0; k < K; k++) {
        volatile float prod = from16(A[m * K + k], type) * from16(B[k * N + n], type);
        acc = acc + prod;
      }
      D[m * N + n] = acc;
    }
}

static int differ(const float *a, const float *b, int n)
{
  int bad = 0;
  for (int i = 0; i < n; i++) bad += memcmp(&a[i], &b[i], 4) != 0;
  return bad;
}

static void check_mma(int type)
{
  uint16_t A[256], B[128];
  float C[128], D[128], R[128];
  for (int i = 0; i < 256; i++) A[i] = to16(rnd_value(), type);
  for (int i = 0; i < 128; i++) B[i] = to16(rnd_value(), type), C[i] = rnd_value() * 3.0f;
  void *dA = dev_copy(A, sizeof A), *dB = dev_copy(B, sizeof B), *dC = dev_copy(C, sizeof C), *dD = dev_copy(NULL, sizeof D);
  CK(emu_ptx_mma(type, dA, dB, dC, dD));
  CK(cudaMemcpy(D, dD, sizeof D, cudaMemcpyDeviceToHost));
  reference(type, 16, 8, A, B, C, R);
  const int bad = differ(D, R, 128);
  EXPECT(bad == 0, "mma.m16n8k16 %s on the ISA's fragments: %d of 128 elements differ from A B + C", type ? "f16" : "bf16",
         bad);
  CK(cudaFree(dA));
  CK(cudaFree(dB));
  CK(cudaFree(dC));
  CK(cudaFree(dD));
}

static void check_gemm(int type, int kt, int bmode)
{
  static const char *const bname[] = {"ldmatrix.x4 of B^T", "ldmatrix.x4.trans of B", "ldmatrix.x2 of B^T",
                                      "ldmatrix.x2.trans of B"};
  enum { KMAX = 48 };
  static uint16_t A[16 * KMAX], B[KMAX * 16], Bt[16 * KMAX];
  static float C[256], D[256], R[256];
  const int K = 16 * kt, zrow = 5;
  for (int i = 0; i < 16 * K; i++) A[i] = to16(rnd_value(), type), B[i] = to16(rnd_value(), type);
  for (int k = 0; k < K; k++)
    for (int n = 0; n < 16; n++) Bt[n * K + k] = B[k * 16 + n];
  for (int i = 0; i < 256; i++) C[i] = rnd_value() * 3.0f;
  const int bt = bmode == 0 || bmode == 2;
  void *dA = dev_copy(A, 2 * 16 * K), *dB = dev_copy(bt ? Bt : B, 2 * 16 * K), *dC = dev_copy(C, sizeof C);
  void *dD = dev_copy(NULL, sizeof D);
  CK(emu_ptx_gemm(type, kt, bmode, zrow, dA, dB, dC, dD));
  CK(cudaMemcpy(D, dD, sizeof D, cudaMemcpyDeviceToHost));
  for (int k = 0; k < K; k++) A[zrow * K + k] = 0; /* the row cp.async zero-fills */
  reference(type, K, 16, A, B, C, R);
  const int bad = differ(D, R, 256);
  EXPECT(bad == 0, "%s K %d, B by %s: %d of 256 elements differ from A B + C", type ? "f16" : "bf16", K, bname[bmode],
         bad);
  CK(cudaFree(dA));
  CK(cudaFree(dB));
  CK(cudaFree(dC));
  CK(cudaFree(dD));
}

static void check_cp_groups(void)
{
  uint32_t src[8], out[4];
  for (int i = 0; i < 8; i++) src[i] = 0x1000u + (uint32_t)i;
  void *ds = dev_copy(src, sizeof src), *dout = dev_copy(NULL, sizeof out);
  CK(emu_ptx_cp_groups(ds, dout));
  CK(cudaMemcpy(out, dout, sizeof out, cudaMemcpyDeviceToHost));
  EXPECT(out[0] == 0xdeadbeefu, "cp.async: read before the wait saw %#x, want the old 0xdeadbeef", out[0]);
  EXPECT(out[1] == 0x1000u, "cp.async: the first group after wait_group 1: %#x, want 0x1000", out[1]);
  EXPECT(out[2] == 0xdeadbeefu, "cp.async: the newest group after wait_group 1: %#x, want still 0xdeadbeef", out[2]);
  EXPECT(out[3] == 0x1004u, "cp.async: the newest group after wait_group 0: %#x, want 0x1004", out[3]);
  CK(cudaFree(ds));
  CK(cudaFree(dout));
}

static int misuse_kind;
static void run_misuse(void)
{
  static uint16_t src[256];
  for (int i = 0; i < 256; i++) src[i] = to16(rnd_value(), 0);
  void *ds = dev_copy(src, sizeof src);
  float *dD = dev_copy(NULL, 32 * sizeof(float));
  cudaError_t e = emu_ptx_misuse(misuse_kind, ds, dD);
  if (e == cudaSuccess) e = cudaDeviceSynchronize();
  exit(e == cudaSuccess ? 0 : 3);
}

int main(void)
{
  srand(29);
  for (int num = 2; num <= 4; num += 2)
    for (int trans = 0; trans < 2; trans++) check_ldmatrix(num, trans);
  for (int type = 0; type < 2; type++) {
    check_mma(type);
    for (int bmode = 0; bmode < 4; bmode++) check_gemm(type, 1, bmode), check_gemm(type, 3, bmode);
  }
  check_cp_groups();
  static const struct {
    const char *what, *want;
  } cases[] = {
      {"an ldmatrix row address 2 bytes off 16", "not 16-byte aligned"},
      {"a lane returns before mma", "returned"},
      {"cp.async rows of other lanes read without __syncwarp", "read-after-write hazard on shared memory"},
  };
  for (int k = 0; k < 3; k++) {
#if defined(__SANITIZE_ADDRESS__)
    if (k == 2) continue; /* the race detector needs the hooks, absent from sanitizer builds */
#endif
    int saw = 0;
    misuse_kind = k;
    const int st = emu_child(run_misuse, cases[k].want, &saw);
    EXPECT(st == 3 && saw, "%s: child exit %d (want 3), message '%s' %s", cases[k].what, st, cases[k].want,
           saw ? "seen" : "missing");
    if (st == 3 && saw) printf("caught: %s ('%s')\n", cases[k].what, cases[k].want);
  }
  return expect_summary("test_emu_flash_ptx");
}
