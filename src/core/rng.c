/* Counter-based RNG: see include/ptdp/rng.h. */
#include "ptdp/rng.h"

#include <math.h>

uint64_t ptdp_rng_mix(uint64_t z)
{
  z += 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

uint64_t ptdp_rng_row(uint64_t seed, uint32_t site, uint32_t layer, uint64_t sample, uint64_t row)
{
  uint64_t h = ptdp_rng_mix(seed ^ ((uint64_t)site << 56));
  h = ptdp_rng_mix(h ^ layer);
  h = ptdp_rng_mix(h ^ sample);
  return ptdp_rng_mix(h ^ row);
}

uint64_t ptdp_rng_at(uint64_t row_hash, uint64_t col) { return ptdp_rng_mix(row_hash ^ (col * 0xd1b54a32d192ed03ULL)); }

float ptdp_rng_uniform(uint64_t h) { return (float)(h >> 40) * (1.0f / 16777216.0f); }

double ptdp_rng_normal(uint64_t h)
{
  double u1 = ((double)(h >> 32) + 0.5) * (1.0 / 4294967296.0);
  double u2 = ((double)(h & 0xffffffffULL) + 0.5) * (1.0 / 4294967296.0);
  return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}
