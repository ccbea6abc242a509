/* Helpers of the architectures' config.json readers and writers (convert_impl.h).
 *
 * Every key read from config.json is used or refused, never replaced by a default: an absent
 * key takes Hugging Face's default (the config class's) or is refused where ptdp needs it; null
 * is read as absent only where transformers reads None so (n_inner, num_key_value_heads,
 * head_dim, rope_scaling); a value of another JSON type is refused; a number outside the range
 * of the ptdp-train key it sets is refused.  The ranges are those of ptdp-train's key table
 * (ptdp_args_option: src/train/args.c), not restated here, with sizes at least 1: a 0 there
 * means "derive it", which would put a default in place of the value the file gives. */
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

/* v as a message shows it: a number or string as written, else what it is. */
static const char *value_text(const ptdp_json_value *v, char *buf, size_t n)
{
  char num[40];
  switch (v->kind) {
  case PTDP_JSON_NULL: return "null";
  case PTDP_JSON_TRUE: return "true";
  case PTDP_JSON_FALSE: return "false";
  case PTDP_JSON_ARRAY: return "an array";
  case PTDP_JSON_OBJECT: return "an object";
  case PTDP_JSON_STRING: snprintf(buf, n, "the string \"%.40s%s\"", v->str, v->len > 40 ? "..." : ""); return buf;
  default:
    if (v->integral) snprintf(buf, n, "%s%llu", v->neg ? "-" : "", (unsigned long long)v->u);
    else { /* 4.0 shown as written, not as the integer 4 */
      hf_real_text(num, sizeof num, v->num);
      snprintf(buf, n, "%s%s", num, strpbrk(num, ".eEn") ? "" : ".0");
    }
    return buf;
  }
}

/* The ptdp-train key train, which config.json's key sets (an internal error if the table has none
 * or of another type). */
static int train_key(const char *train, ptdp_opt_type type, const ptdp_option **op)
{
  *op = ptdp_args_option(train);
  PTDP_CHECK_INTERNAL(*op && (*op)->type == type, "ptdp-train has no %s key '%s'",
                      type == PTDP_OPT_INT ? "integer" : "real", train);
  return 0;
}

/* The key's value, or NULL where it is absent (or null and null_default): then *out = deflt, and
 * deflt < 0 (HF_REQUIRED) refuses. */
static int present(const ptdp_json_value *cfg, const char *key, int null_default, int required, const char *path,
                   const ptdp_json_value **v)
{
  *v = ptdp_json_get(cfg, key);
  if (*v && (*v)->kind == PTDP_JSON_NULL && null_default) *v = NULL;
  PTDP_CHECK(*v || !required, "%s: no %s (config.json of this architecture names it)", path, key);
  return 0;
}

int hf_cfg_size(const ptdp_json_value *cfg, const char *key, const char *train, long long deflt, int null_default,
                const char *path, long long *out)
{
  const ptdp_option *op;
  const ptdp_json_value *v;
  PTDP_CALL(train_key(train, PTDP_OPT_INT, &op));
  PTDP_CALL(present(cfg, key, null_default, deflt < 0, path, &v));
  *out = deflt;
  if (!v) return 0;
  const long long lo = op->min > 1 ? (long long)op->min : 1, hi = (long long)op->max;
  char buf[80];
  PTDP_CHECK(v->kind == PTDP_JSON_NUMBER && v->integral && !v->neg && v->u >= (uint64_t)lo && v->u <= (uint64_t)hi,
             "%s: %s is %s: ptdp needs an integer in [%lld, %lld] there (the range of ptdp-train's %s, which it sets)",
             path, key, value_text(v, buf, sizeof buf), lo, hi, train);
  *out = (long long)v->u;
  return 0;
}

int hf_cfg_real(const ptdp_json_value *cfg, const char *key, const char *train, double deflt, const char *path,
                double *out)
{
  const ptdp_option *op;
  const ptdp_json_value *v;
  PTDP_CALL(train_key(train, PTDP_OPT_REAL, &op));
  PTDP_CALL(present(cfg, key, 0, 0, path, &v));
  *out = deflt;
  if (!v) return 0;
  char buf[80];
  PTDP_CHECK(v->kind == PTDP_JSON_NUMBER && isfinite(v->num) && v->num >= op->min && v->num <= op->max,
             "%s: %s is %s: ptdp needs a number in [%g, %g] there (the range of ptdp-train's %s, which it sets)", path,
             key, value_text(v, buf, sizeof buf), op->min, op->max, train);
  *out = v->num;
  return 0;
}

int hf_cfg_bool(const ptdp_json_value *cfg, const char *key, int deflt, const char *path, int *out)
{
  const ptdp_json_value *v = ptdp_json_get(cfg, key);
  char buf[80];
  *out = deflt;
  if (!v) return 0;
  PTDP_CHECK(v->kind == PTDP_JSON_TRUE || v->kind == PTDP_JSON_FALSE, "%s: %s is %s, not true or false", path, key,
             value_text(v, buf, sizeof buf));
  *out = v->kind == PTDP_JSON_TRUE;
  return 0;
}

/* A boolean key that must have the value ptdp computes with (absent: Hugging Face's default). */
int hf_cfg_bool_is(const ptdp_json_value *cfg, const char *key, int want, const char *path, const char *why)
{
  int b;
  PTDP_CALL(hf_cfg_bool(cfg, key, want, path, &b));
  PTDP_CHECK(b == want, "%s: %s is %s: %s", path, key, b ? "true" : "false", why);
  return 0;
}

int hf_cfg_string(const ptdp_json_value *cfg, const char *key, const char *path, const char **out)
{
  const ptdp_json_value *v = ptdp_json_get(cfg, key);
  char buf[80];
  *out = NULL;
  if (!v) return 0;
  PTDP_CHECK(v->kind == PTDP_JSON_STRING, "%s: %s is %s, not a string", path, key, value_text(v, buf, sizeof buf));
  *out = v->str;
  return 0;
}
