/* instance.c — dispatch instances from JSON (format in docs/tempo.md) and the CPU reference of
 * the token -> replica assignment. */
#include "balance/balance_internal.h"
#include "core/fileio.h"
#include "core/json.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void xs_balance_instance_release(xs_balance_instance* inst) {
  if (!inst) return;
  xs_placement_release(&inst->placement);
  free(inst->counts);
  memset(inst, 0, sizeof *inst);
}

static xs_result get_int(long long* out, const xsi_json* v, const char* what, const char* name,
                         long long lo, long long hi) {
  if (!v || v->type != XSI_JSON_NUMBER || v->num != floor(v->num))
    return xsi_set_error(XS_ERR_PARSE, "%s:%d: %s must be an integer", name, v ? v->line : 0, what);
  if (v->num < (double)lo || v->num > (double)hi)
    return xsi_set_error(XS_ERR_PARSE, "%s:%d: %s = %.17g is outside [%lld, %lld]%s", name, v->line,
                         what, v->num, lo, hi, v->num < 0 && lo == 0 ? " (negative)" : "");
  *out = (long long)v->num;
  return XS_OK;
}

static xs_result read_profile(xs_expert_profile* p, const xsi_json* root, const char* name) {
  const xsi_json* v = xsi_json_get(root, "profile");
  if (!v) return xs_expert_profile_default(p, "qwen3-235b");
  if (v->type == XSI_JSON_STRING) {
    xs_result res = xs_expert_profile_default(p, v->str);
    if (res != XS_OK) xsi_error_prefix("%s:%d: profile", name, v->line);
    return res == XS_OK ? XS_OK : XS_ERR_PARSE;
  }
  if (v->type != XSI_JSON_OBJECT)
    return xsi_set_error(XS_ERR_PARSE, "%s:%d: 'profile' must be a name or an object", name,
                         v->line);
  *p = (xs_expert_profile)XS_EXPERT_PROFILE_INITIALIZER;
  double tile = p->tile_rows;
  XSI_CHECK(xsi_json_get_number(&p->a_us, v, "a_us", 0, name));
  XSI_CHECK(xsi_json_get_number(&p->b_us, v, "b_us", 0, name));
  XSI_CHECK(xsi_json_get_number(&p->c_us, v, "c_us", 0, name));
  XSI_CHECK(xsi_json_get_number(&p->beta_us, v, "beta_us", 0, name));
  XSI_CHECK(xsi_json_get_number(&tile, v, "tile_rows", 1, name));
  const char* pname = "custom";
  XSI_CHECK(xsi_json_get_string(&pname, v, "name", 1, name));
  if (tile != floor(tile) || tile < 0 || tile > 4096)
    return xsi_set_error(XS_ERR_PARSE, "%s:%d: profile 'tile_rows' must be an integer in [0, 4096]",
                         name, v->line);
  p->tile_rows = (int)tile;
  snprintf(p->name, sizeof p->name, "%s", pname);
  snprintf(p->method, sizeof p->method, "given in %s", name);
  if (xs_expert_profile_validate(p) != XS_OK) {
    xsi_error_prefix("%s:%d", name, v->line);
    return XS_ERR_PARSE;
  }
  return XS_OK;
}

xs_result xs_balance_instance_from_json(xs_balance_instance* out, const char* text, size_t len,
                                        const char* name) {
  XSI_ARG(out && text, "out and text must not be NULL");
  memset(out, 0, sizeof *out);
  if (!name) name = "<instance>";
  xs_result res = XS_OK;
  xsi_json* root = NULL;
  long long ng = 0, v;
  XSI_CHECK_GOTO(xsi_json_parse(&root, text, len, name), res, fail);
  if (root->type != XSI_JSON_OBJECT)
    XSI_FAIL(res, XS_ERR_PARSE, fail, "%s:%d: an instance is a JSON object", name, root->line);
  XSI_CHECK_GOTO(read_profile(&out->profile, root, name), res, fail);
  const xsi_json* jg = xsi_json_get(root, "n_gpus");
  if (!jg) XSI_FAIL(res, XS_ERR_PARSE, fail, "%s: missing key 'n_gpus'", name);
  XSI_CHECK_GOTO(get_int(&ng, jg, "'n_gpus'", name, 1, 1 << 20), res, fail);
  const xsi_json* jp = xsi_json_get(root, "placement");
  const xsi_json* jc = xsi_json_get(root, "counts");
  if (!jp || jp->type != XSI_JSON_ARRAY || jp->len == 0)
    XSI_FAIL(res, XS_ERR_PARSE, fail,
             "%s:%d: 'placement' must be a non-empty array (one array of "
             "GPU ids per expert)",
             name, jp ? jp->line : root->line);
  if (!jc || jc->type != XSI_JSON_ARRAY)
    XSI_FAIL(res, XS_ERR_PARSE, fail, "%s:%d: 'counts' must be an array (tokens per expert)", name,
             jc ? jc->line : root->line);
  if (jc->len != jp->len)
    XSI_FAIL(res, XS_ERR_PARSE, fail,
             "%s:%d: inconsistent sizes: 'counts' has %zu entries but 'placement' has %zu experts",
             name, jc->line, jc->len, jp->len);
  int E = (int)jp->len, R = 0;
  for (int e = 0; e < E; e++) {
    const xsi_json* a = jp->items[e];
    if (a->type != XSI_JSON_ARRAY)
      XSI_FAIL(res, XS_ERR_PARSE, fail, "%s:%d: placement[%d] must be an array of GPU ids", name,
               a->line, e);
    if (a->len == 0)
      XSI_FAIL(res, XS_ERR_PARSE, fail, "%s:%d: placement[%d] is empty: expert %d has no replica",
               name, a->line, e, e);
    R += (int)a->len;
  }
  XSI_CHECK_GOTO(xs_placement_init(&out->placement, E, (int)ng, R), res, fail);
  out->counts = malloc((size_t)E * sizeof(int64_t));
  if (!out->counts) XSI_FAIL(res, XS_ERR_NO_MEMORY, fail, "%s: out of memory", name);
  for (int e = 0, r = 0; e < E; e++) {
    const xsi_json* a = jp->items[e];
    char what[64];
    for (size_t j = 0; j < a->len; j++, r++) {
      snprintf(what, sizeof what, "placement[%d][%zu] (a GPU id)", e, j);
      XSI_CHECK_GOTO(get_int(&v, a->items[j], what, name, 0, ng - 1), res, fail);
      out->placement.rep_gpu[r] = (int)v;
    }
    out->placement.rep_off[e + 1] = r;
    snprintf(what, sizeof what, "counts[%d]", e);
    XSI_CHECK_GOTO(get_int(&v, jc->items[e], what, name, 0, (long long)1 << 40), res, fail);
    out->counts[e] = v;
  }
  xsi_json_free(root);
  xsi_clear_error();
  return XS_OK;
fail:
  xsi_json_free(root);
  xs_balance_instance_release(out);
  return res;
}

xs_result xs_balance_instance_read(xs_balance_instance* out, const char* path) {
  XSI_ARG(out && path, "out and path must not be NULL");
  memset(out, 0, sizeof *out);
  char* text = NULL;
  size_t len = 0;
  XSI_CHECK(xsi_read_file(&text, &len, path, 0));
  xs_result res = xs_balance_instance_from_json(out, text, len, path);
  free(text);
  return res;
}

/* ---- token -> replica assignment (CPU reference of the GPU dispatch kernel) --------------- */

xs_result xs_balance_assign(int32_t* out_replica, int32_t* out_gpu, int32_t* counts_out,
                            const int32_t* topk, int n_tokens, int top_k, const xs_placement* pl,
                            const int64_t* quotas, const int64_t* ordinal_base,
                            const int64_t* counts_total) {
  XSI_ARG(out_replica && topk && quotas, "out_replica, topk and quotas must not be NULL");
  XSI_ARG(n_tokens >= 0 && top_k >= 1, "need n_tokens >= 0 and top_k >= 1");
  XSI_CHECK(xs_placement_validate(pl));
  int E = pl->n_experts;
  int64_t n_slots = (int64_t)n_tokens * top_k;
  int64_t* seen = calloc((size_t)E * 2, sizeof(int64_t));
  if (!seen) return xsi_set_error(XS_ERR_NO_MEMORY, "assign: out of memory");
  int64_t* tot = seen + E;
  for (int64_t i = 0; i < n_slots; i++) {
    int e = topk[i];
    if (e < 0 || e >= E) {
      free(seen);
      return xsi_set_error(XS_ERR_INVALID_ARG,
                           "assign: slot %lld (token %lld, k %lld) has expert "
                           "id %d outside [0, %d)",
                           (long long)i, (long long)(i / top_k), (long long)(i % top_k), e, E);
    }
    tot[e]++;
  }
  if (counts_out)
    for (int e = 0; e < E; e++)
      counts_out[e] = (int32_t)tot[e];
  for (int e = 0; e < E; e++)
    tot[e] = counts_total ? counts_total[e] : tot[e] + (ordinal_base ? ordinal_base[e] : 0);
  for (int64_t i = 0; i < n_slots; i++) {
    int e = topk[i], r0 = pl->rep_off[e], nr = pl->rep_off[e + 1] - r0;
    int64_t o = (ordinal_base ? ordinal_base[e] : 0) + seen[e]++, Q = 0;
    for (int r = r0; r < r0 + nr; r++)
      Q += quotas[r];
    int rep = r0 + (int)(o % nr);
    if (Q > 0) {
      int64_t p = (Q == tot[e] || tot[e] <= 0) ? o : o * Q / tot[e], acc = 0;
      if (p >= Q) p = Q - 1;
      for (int r = r0; r < r0 + nr; r++) {
        acc += quotas[r];
        if (p < acc) {
          rep = r;
          break;
        }
      }
    }
    out_replica[i] = rep;
    if (out_gpu) out_gpu[i] = pl->rep_gpu[rep];
  }
  free(seen);
  return XS_OK;
}
