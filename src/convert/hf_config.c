/* Helpers of the architectures' config.json readers and writers (convert_impl.h). */
#include "convert_impl.h"

#include "ptdp/error.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

const char *hf_torch_dtype(ptdp_st_dtype t)
{
  return t == PTDP_ST_BF16 ? "bfloat16" : t == PTDP_ST_F16 ? "float16" : "float32";
}

/* The shortest text that reads back as v (1e-05, not 1.0000000000000001e-05). */
const char *hf_real_text(char *buf, size_t n, double v)
{
  for (int digits = 1; digits <= 17; digits++) {
    snprintf(buf, n, "%.*g", digits, v);
    if (strtod(buf, NULL) == v) break;
  }
  return buf;
}

/* Integer key of cfg in [lo, hi]; absent: deflt, or (deflt < 0) an error. */
int hf_cfg_int(const ptdp_json_value *cfg, const char *key, long long deflt, long long lo, long long hi,
               const char *path, long long *out)
{
  const ptdp_json_value *v = ptdp_json_get(cfg, key);
  if (!v || v->kind == PTDP_JSON_NULL) {
    PTDP_CHECK(deflt >= 0, "%s: no %s (config.json of this architecture names it)", path, key);
    *out = deflt;
    return 0;
  }
  PTDP_CHECK(v->kind == PTDP_JSON_NUMBER && v->integral && !v->neg && v->u >= (uint64_t)lo && v->u <= (uint64_t)hi,
             "%s: %s is not an integer in [%lld, %lld]", path, key, lo, hi);
  *out = (long long)v->u;
  return 0;
}

int hf_cfg_real(const ptdp_json_value *cfg, const char *key, double deflt, const char *path, double *out)
{
  const ptdp_json_value *v = ptdp_json_get(cfg, key);
  *out = deflt;
  if (!v || v->kind == PTDP_JSON_NULL) return 0;
  PTDP_CHECK(v->kind == PTDP_JSON_NUMBER && isfinite(v->num) && v->num >= 0, "%s: %s is not a number >= 0", path, key);
  *out = v->num;
  return 0;
}

/* A boolean key that must have the value ptdp computes with (absent: Hugging Face's default). */
int hf_cfg_bool_is(const ptdp_json_value *cfg, const char *key, int want, const char *path, const char *why)
{
  const ptdp_json_value *v = ptdp_json_get(cfg, key);
  if (!v || v->kind == PTDP_JSON_NULL) return 0;
  PTDP_CHECK(v->kind == PTDP_JSON_TRUE || v->kind == PTDP_JSON_FALSE, "%s: %s is not true or false", path, key);
  PTDP_CHECK((v->kind == PTDP_JSON_TRUE) == want, "%s: %s is %s: %s", path, key,
             v->kind == PTDP_JSON_TRUE ? "true" : "false", why);
  return 0;
}
