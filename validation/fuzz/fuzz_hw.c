/* Harness: ptdp-sim's hardware files (ptdp_sim_hw_read, src/sim/cost.c, over the option
 * reader of src/core/options.c, and the provenance tags' reader, src/sim/hw_tag.c), then one
 * prediction with what was read.
 *
 * Input: a hardware file (key = value lines, each value's line ending with its provenance tag,
 * # MEASURED machine date "command" figure, # DERIVED "values" rule or # ASSUMED source; other
 * # comments).  The reader must accept or refuse it without crashing (a tag's fields, quotes
 * and lengths included); when it accepts, every value it gives has a tag (or none has: a file
 * from before the tags), and ptdp-sim predicts a small fixed layout (t 2, p 2, d 2,
 * 4 micro-batches) on it with each fusion model, which must not crash or trip UBSan whatever
 * the numbers (zeros, huge values) are.  A prediction may refuse (memory too small, ...). */
#include "fuzz.h"

#include "ptdp/args.h"
#include "ptdp/error.h"
#include "ptdp/options.h"
#include "ptdp/sim.h"

#include <stdlib.h>
#include <string.h>

static const char *deck_keys[][2] = {
  {"num-layers", "4"}, {"hidden-size", "64"}, {"num-attention-heads", "4"}, {"seq-length", "32"},
  {"micro-batch-size", "1"}, {"global-batch-size", "8"}, {"tensor-model-parallel-size", "2"},
  {"pipeline-model-parallel-size", "2"}, {"vocab-size", "300"}, {"mock-data", "true"},
};

static int small_layout(ptdp_args *a)
{
  ptdp_options o;
  if (ptdp_args_init(a, &o)) return -1;
  int rc = 0;
  for (size_t i = 0; i < sizeof deck_keys / sizeof deck_keys[0] && !rc; i++)
    rc = ptdp_options_set(&o, deck_keys[i][0], deck_keys[i][1], PTDP_SRC_DECK, "fuzz_hw");
  ptdp_options_free(&o);
  return rc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  fuzz_begin();
  static ptdp_args a;
  static int layout_rc = 1;
  if (layout_rc == 1) layout_rc = small_layout(&a);
  if (layout_rc) fuzz_fail("the harness's own layout is refused");
  char path[FUZZ_PATH_MAX];
  if (fuzz_file("hw", data, size, path)) return 0;
  ptdp_sim_hw hw;
  if (ptdp_sim_hw_read(path, &hw) == 0) {
    int tagged = 0, untagged = 0;
    for (int i = 0; i < PTDP_SIM_HW_KEYS; i++) {
      if (hw.tag[i].kind >= PTDP_SIM_PROV_MEASURED) tagged++;
      if (hw.tag[i].kind == PTDP_SIM_PROV_UNTAGGED && strcmp(ptdp_sim_hw_key(i), "name") != 0) untagged++;
    }
    if (tagged && untagged) fuzz_fail("a file with tags was accepted with an untagged value");
    if (untagged != hw.untagged) fuzz_fail("hw.untagged does not count the untagged values");
    for (int fusion = PTDP_SIM_FUSION_NONE; fusion <= PTDP_SIM_FUSION_CPU; fusion++) {
      ptdp_options so_opt;
      ptdp_sim_options so;
      if (ptdp_sim_options_init(&so_opt, &so)) fuzz_fail("ptdp-sim's own defaults are refused");
      ptdp_options_free(&so_opt);
      so.world_size = 8;
      so.fusion = (ptdp_sim_fusion)fusion;
      ptdp_sim_result *r = calloc(1, sizeof *r);
      if (!r) return 0;
      ptdp_error_clear();
      (void)ptdp_sim_run(&a.model, &hw, &so, r);
      free(r);
    }
  }
  ptdp_error_clear();
  return 0;
}
