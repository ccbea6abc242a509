/* Harness: decks, the option reader of every program (src/core/options.c, args.c), then
 * ptdp-train's checks and a ptdp-sim prediction of the layout the deck describes.
 *
 * Input: a deck (key = value lines, # comments), read as `ptdp-train DECK` reads it.  Reading
 * must accept or refuse without crashing or undefined behaviour ("device = 1e22"
 * converted a double to long long out of range).  When it accepts, ptdp_args_validate runs
 * for the world size t p (and t p 2), and, when the layout is small enough to replay quickly
 * (p <= 16, at most 256 micro-batches, 64 layers), ptdp-sim predicts it on a DGX A100 file
 * (t p overflowing an int was one of its findings in the simulator). */
#include "fuzz.h"

#include "ptdp/args.h"
#include "ptdp/error.h"
#include "ptdp/options.h"
#include "ptdp/sim.h"

#include <stdlib.h>
#include <string.h>

static const char hw_text[] =
  "name = DGX A100 80GB\npeak-tflops-16 = 312\npeak-tflops-32 = 19.5\ngemm-efficiency = 0.70\nsm-count = 108\n"
  "gemm-tile-m = 256\ngemm-tile-n = 128\ngemm-k0 = 64\nkernel-launch-us = 5\nmemory-bandwidth-gbs = 1600\n"
  "memory-gb = 80\ngpus-per-node = 8\nintra-node-bandwidth-gbs = 230\nintra-node-latency-us = 2\n"
  "collective-sms = 24\ninter-node-bandwidth-gbs = 23\ninter-node-latency-us = 5\nnics-per-node = 8\n";

static int read_hw(ptdp_sim_hw *hw)
{
  char path[FUZZ_PATH_MAX];
  if (fuzz_file("hw", (const uint8_t *)hw_text, sizeof hw_text - 1, path)) return -1;
  return ptdp_sim_hw_read(path, hw);
}

/* Small enough for the schedule replay to take well under a millisecond. */
static int small(const ptdp_args *a, long long world)
{
  long long t = a->tensor_model_parallel_size, p = a->pipeline_model_parallel_size, d = world / (t * p);
  long long gbs = a->global_batch_size ? a->global_batch_size : a->micro_batch_size * d;
  return p <= 16 && a->num_layers <= 64 && gbs / (a->micro_batch_size * d) <= 256;
}

static void simulate(const ptdp_args *a, const ptdp_sim_hw *hw, long long world)
{
  ptdp_options so_opt;
  ptdp_sim_options so;
  if (ptdp_sim_options_init(&so_opt, &so)) fuzz_fail("ptdp-sim's own defaults are refused");
  ptdp_options_free(&so_opt);
  so.world_size = world;
  ptdp_sim_result *r = calloc(1, sizeof *r);
  if (!r) return;
  ptdp_error_clear();
  (void)ptdp_sim_run(&a->model, hw, &so, r);
  free(r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  fuzz_begin();
  static ptdp_sim_hw hw;
  static int hw_rc = 1;
  if (hw_rc == 1) hw_rc = read_hw(&hw);
  if (hw_rc) fuzz_fail("the harness's own hardware file is refused");
  char path[FUZZ_PATH_MAX];
  if (fuzz_file("deck", data, size, path)) return 0;
  ptdp_args a;
  ptdp_options o;
  char *argv[] = {path, NULL};
  int rc = ptdp_args_parse(&a, &o, 1, argv);
  ptdp_options_free(&o);
  if (rc == 0) {
    long long tp = a.tensor_model_parallel_size * a.pipeline_model_parallel_size; /* each <= 2^16 */
    for (long long world = tp; world <= 2 * tp && world <= (1LL << 30); world += tp) {
      ptdp_error_clear();
      if (ptdp_args_validate(&a, (int)world) == 0 && small(&a, world)) simulate(&a, &hw, world);
    }
    /* ptdp-sim's default world t p: refused beyond an int, else replayed when small */
    if (tp > 0x7fffffff || small(&a, tp)) simulate(&a, &hw, 0);
  }
  ptdp_error_clear();
  return 0;
}
