/* The emulated wmma (validation/emu/include/mma.h) that the flash attention kernels use:
 *   - mma_sync, load_matrix_sync and store_matrix_sync against a plain reference computed in
 *     the order mma.h states (c, then the 16 exact products of each k step added in order k =
 *     0..15 in fp32, k steps in order): equal bit for bit, for bf16 and fp16, every pair of
 *     operand layouts, K = 16 and 48, D stored row- and column-major;
 *   - and the misuses it must refuse, each in a child process (a fault is sticky): a lane that
 *     returns before mma_sync, a lane at another wmma call, a pointer off 256-bit alignment, an
 *     ldm not a multiple of 8, and (the race detector, through mma.h's lane mapping) an operand
 *     loaded from shared memory that other lanes wrote with no __syncwarp in between. */
#include <cuda_runtime.h>

#include "../../tests/expect.h"
#include "emu_test.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

cudaError_t emu_wmma_gemm(int type, int la, int lb, int kt, const void *A, const void *B, const float *C, float *D,
                          int dcol);
cudaError_t emu_wmma_misuse(int kind, const void *A, float *D);
unsigned long ptdp_emu_hook_calls(void);

/* 16-bit values: bf16 (top half of a float) or fp16, from small random integers over 2^k so
 * that both types hold them exactly and the products do not all round alike. */
static uint16_t to16(float f, int type)
{
  uint32_t x;
  memcpy(&x, &f, 4);
  if (type == 0) return (uint16_t)(x >> 16); /* the values below are exact in bf16 */
  /* fp16 of a normal float with at most 8 significant bits and a small exponent: exact */
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
static float rnd_value(void)
{
  int n = rand() % 255 - 127; /* 8 significant bits at most */
  return ldexpf((float)n, -(rand() % 6) - 3);
}

/* The stated order: d = c; for each k step, for k = 0..15, d = d + a b (fp32 sum, exact product). */
static void reference(int type, int la, int lb, int kt, const uint16_t *A, const uint16_t *B, const float *C, float *D)
{
  const int K = 16 * kt;
  for (int m = 0; m < 16; m++)
    for (int n = 0; n < 16; n++) {
      volatile float acc = C[m * 16 + n];
      for (int k = 0; k < K; k++) {
        float a = from16(la ? A[k * 16 + m] : A[m * K + k], type), b = from16(lb ? B[n * K + k] : B[k * 16 + n], type);
        volatile float prod = a * b;
        acc = acc + prod;
      }
      D[m * 16 + n] = acc;
    }
}

static void check_gemm(int type, int la, int lb, int kt, int dcol)
{
  enum { KMAX = 48 };
  static uint16_t A[16 * KMAX], B[KMAX * 16];
  static float C[256], D[256], R[256];
  const int K = 16 * kt;
  for (int i = 0; i < 16 * K; i++) A[i] = to16(rnd_value(), type), B[i] = to16(rnd_value(), type);
  for (int i = 0; i < 256; i++) C[i] = rnd_value() * 3.0f;
  void *dA, *dB;
  float *dC, *dD;
  CK(cudaMalloc(&dA, sizeof A));
  CK(cudaMalloc(&dB, sizeof B));
  CK(cudaMalloc((void **)&dC, sizeof C));
  CK(cudaMalloc((void **)&dD, sizeof D));
  CK(cudaMemcpy(dA, A, sizeof A, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(dB, B, sizeof B, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(dC, C, sizeof C, cudaMemcpyHostToDevice));
  CK(emu_wmma_gemm(type, la, lb, kt, dA, dB, dC, dD, dcol));
  CK(cudaMemcpy(D, dD, sizeof D, cudaMemcpyDeviceToHost));
  reference(type, la, lb, kt, A, B, C, R);
  int bad = 0;
  for (int m = 0; m < 16; m++)
    for (int n = 0; n < 16; n++) {
      float got = dcol ? D[n * 16 + m] : D[m * 16 + n];
      bad += memcmp(&got, &R[m * 16 + n], 4) != 0;
    }
  EXPECT(bad == 0, "%s A %s B %s K %d D %s: %d of 256 elements differ from the stated order", type ? "fp16" : "bf16",
         la ? "col" : "row", lb ? "col" : "row", K, dcol ? "col" : "row", bad);
  CK(cudaFree(dA));
  CK(cudaFree(dB));
  CK(cudaFree(dC));
  CK(cudaFree(dD));
}

static int misuse_kind;
static void run_misuse(void)
{
  static uint16_t A[512];
  for (int i = 0; i < 512; i++) A[i] = to16(rnd_value(), 0);
  void *dA;
  float *dD;
  CK(cudaMalloc(&dA, sizeof A));
  CK(cudaMalloc((void **)&dD, 256 * sizeof(float)));
  CK(cudaMemcpy(dA, A, sizeof A, cudaMemcpyHostToDevice));
  cudaError_t e = emu_wmma_misuse(misuse_kind, dA, dD);
  if (e == cudaSuccess) e = cudaDeviceSynchronize();
  exit(e == cudaSuccess ? 0 : 3);
}

int main(void)
{
  srand(23);
  for (int type = 0; type < 2; type++)
    for (int la = 0; la < 2; la++)
      for (int lb = 0; lb < 2; lb++) {
        check_gemm(type, la, lb, 1, 0);
        check_gemm(type, la, lb, 3, la ^ lb);
      }
  /* each misuse: the launch fails (exit 3) with the message that names it */
  static const struct {
    const char *what, *want;
  } cases[] = {
      {"a lane returns before mma_sync", "returned"},
      {"a lane at another wmma call", "is not at this call"},
      {"a pointer 16 bytes off 256-bit alignment", "not aligned to 256 bits"},
      {"ldm 20", "not a multiple of 8"},
      {"an operand read from shared memory without __syncwarp", "read-after-write hazard on shared memory"},
  };
  for (int k = 0; k < 5; k++) {
#if defined(__SANITIZE_ADDRESS__)
    if (k == 4) continue; /* the race detector needs the hooks, absent from sanitizer builds */
#endif
    int saw = 0;
    misuse_kind = k;
    int st = emu_child(run_misuse, cases[k].want, &saw);
    EXPECT(st == 3 && saw, "%s: child exit %d (want 3), message '%s' %s", cases[k].what, st, cases[k].want,
           saw ? "seen" : "missing");
    if (st == 3 && saw) printf("caught: %s ('%s')\n", cases[k].what, cases[k].want);
  }
  return expect_summary("test_emu_flash_wmma");
}
