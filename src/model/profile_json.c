/* profile_json.c — link profiles as JSON (format: docs/model.md, "Profile JSON").
 * Numbers are written shortest-round-trip, so write -> read is exact. */
#include "core/fileio.h"
#include "core/json.h"
#include "core/strbuf.h"
#include "model/model_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PROFILE_FORMAT "xstage-link-profile"

xs_result xs_profile_to_json(char** out_json, const xs_link_profile* p) {
  XSI_ARG(out_json != NULL, "out_json is NULL");
  XSI_CHECK(xs_profile_validate(p));
  xsi_strbuf sb = XSI_STRBUF_INIT;
  xsi_sb_puts(&sb, "{\n  \"format\": \"" PROFILE_FORMAT "\",\n  \"version\": 1,\n");
  const struct { const char* k; const char* v; } strs[] = {
      {"device", p->device}, {"transport", p->transport}, {"flavour", p->flavour},
      {"date", p->date},     {"method", p->method}};
  for (size_t i = 0; i < sizeof strs / sizeof strs[0]; i++) {
    xsi_sb_printf(&sb, "  \"%s\": ", strs[i].k);
    xsi_sb_json_string(&sb, strs[i].v);
    xsi_sb_puts(&sb, ",\n");
  }
  xsi_sb_printf(&sb, "  \"calibrated\": %s,\n", p->calibrated ? "true" : "false");
  const struct { const char* k; double v; } nums[] = {{"t_fixed_ns", p->t_fixed_ns},
                                                       {"r_cta", p->r_cta},
                                                       {"r_cap", p->r_cap},
                                                       {"R", p->R},
                                                       {"unfair_mean", p->unfair_mean}};
  for (size_t i = 0; i < sizeof nums / sizeof nums[0]; i++) {
    xsi_sb_printf(&sb, "  \"%s\": ", nums[i].k);
    xsi_sb_json_number(&sb, nums[i].v);
    xsi_sb_puts(&sb, ",\n");
  }
  /* the refinement: written only when set, so a profile of the original model reads as before */
  if (p->t_min_ns != 0) {
    xsi_sb_puts(&sb, "  \"t_min_ns\": ");
    xsi_sb_json_number(&sb, p->t_min_ns);
    xsi_sb_puts(&sb, ",\n");
  }
  /* the arrays at q_k; the refinements' (burst room Qb(K), drain rate R(K), relaxing room
   * Qr(K) and X0(K)) only when set, so a profile without them is written as before */
  const struct { const char* k; const double* v; int on; } arrs[] = {
      {"q_k", p->q_k, 1},
      {"q_bytes", p->q_bytes, 1},
      {"q_burst_bytes", p->q_burst_bytes, p->has_q_burst},
      {"r_k", p->r_k, p->has_r_k},
      {"q_relax_bytes", p->q_relax_bytes, p->has_relax},
      {"relax_bytes", p->relax_bytes, p->has_relax}};
  int first = 1;
  for (size_t a = 0; a < sizeof arrs / sizeof arrs[0]; a++) {
    if (!arrs[a].on) continue;
    xsi_sb_printf(&sb, "%s  \"%s\": [", first ? "" : ",\n", arrs[a].k);
    first = 0;
    for (int i = 0; i < p->nq; i++) {
      if (i) xsi_sb_puts(&sb, ", ");
      xsi_sb_json_number(&sb, arrs[a].v[i]);
    }
    xsi_sb_puts(&sb, "]");
  }
  xsi_sb_puts(&sb, "\n");
  xsi_sb_puts(&sb, "}\n");
  xs_result r = xsi_sb_status(&sb);
  if (r != XS_OK) {
    xsi_sb_free(&sb);
    return xsi_set_error(r, "profile JSON: out of memory");
  }
  *out_json = sb.data;
  return XS_OK;
}

static xs_result get_str(char* dst, size_t cap, const xsi_json* root, const char* key,
                         const char* name) {
  const xsi_json* v = xsi_json_get(root, key);
  if (!v) return XS_OK; /* metadata is optional */
  if (v->type != XSI_JSON_STRING)
    return xsi_set_error(XS_ERR_PARSE, "%s:%d: '%s' must be a string", name, v->line, key);
  if (strlen(v->str) >= cap)
    return xsi_set_error(XS_ERR_PARSE, "%s:%d: '%s' is longer than %zu characters", name, v->line,
                         key, cap - 1);
  memcpy(dst, v->str, strlen(v->str) + 1);
  return XS_OK;
}

static xs_result get_array(double* dst, int* n, const xsi_json* root, const char* key,
                           const char* name) {
  const xsi_json* v = xsi_json_get(root, key);
  if (!v) return xsi_set_error(XS_ERR_PARSE, "%s:%d: missing key '%s'", name, root->line, key);
  if (v->type != XSI_JSON_ARRAY || v->len < 1 || v->len > XS_PROFILE_MAX_QPTS)
    return xsi_set_error(XS_ERR_PARSE, "%s:%d: '%s' must be an array of 1 to %d numbers", name,
                         v->line, key, XS_PROFILE_MAX_QPTS);
  for (size_t i = 0; i < v->len; i++) {
    if (v->items[i]->type != XSI_JSON_NUMBER || !xsi_finite(v->items[i]->num))
      return xsi_set_error(XS_ERR_PARSE, "%s:%d: '%s[%zu]' must be a finite number", name,
                           v->items[i]->line, key, i);
    dst[i] = v->items[i]->num;
  }
  *n = (int)v->len;
  return XS_OK;
}

/* The line of the key a validation message names ("profile: field 'R' ..."). */
static int line_of_field(const xsi_json* root, const char* detail) {
  const char* f = strstr(detail, "field '");
  if (!f) return root->line;
  f += 7;
  char key[32];
  size_t i = 0;
  while (f[i] && f[i] != '\'' && f[i] != '[' && i + 1 < sizeof key) key[i] = f[i], i++;
  key[i] = '\0';
  if (strcmp(key, "nq") == 0) strcpy(key, "q_k");
  const xsi_json* v = xsi_json_get(root, key);
  return v ? v->line : root->line;
}

xs_result xs_profile_from_json(xs_link_profile* out, const char* text, size_t len,
                               const char* name) {
  XSI_ARG(out != NULL && text != NULL, "out or text is NULL");
  if (!name) name = "<profile>";
  xsi_json* root = NULL;
  xs_result res = XS_OK;
  XSI_CHECK_GOTO(xsi_json_parse(&root, text, len, name), res, fail);
  if (root->type != XSI_JSON_OBJECT)
    XSI_FAIL(res, XS_ERR_PARSE, fail, "%s:%d: a profile must be a JSON object", name, root->line);
  const char* fmt = NULL;
  XSI_CHECK_GOTO(xsi_json_get_string(&fmt, root, "format", 0, name), res, fail);
  if (strcmp(fmt, PROFILE_FORMAT) != 0)
    XSI_FAIL(res, XS_ERR_PARSE, fail, "%s:%d: 'format' must be \"%s\" (got \"%.60s\")", name,
             xsi_json_get(root, "format")->line, PROFILE_FORMAT, fmt);
  double version = 0;
  XSI_CHECK_GOTO(xsi_json_get_number(&version, root, "version", 0, name), res, fail);
  if (version != 1)
    XSI_FAIL(res, XS_ERR_PARSE, fail, "%s:%d: 'version' %g is not supported (1 is)", name,
             xsi_json_get(root, "version")->line, version);
  xs_link_profile p = XS_LINK_PROFILE_INITIALIZER;
  XSI_CHECK_GOTO(xsi_json_get_number(&p.t_fixed_ns, root, "t_fixed_ns", 0, name), res, fail);
  XSI_CHECK_GOTO(xsi_json_get_number(&p.r_cta, root, "r_cta", 0, name), res, fail);
  XSI_CHECK_GOTO(xsi_json_get_number(&p.r_cap, root, "r_cap", 0, name), res, fail);
  XSI_CHECK_GOTO(xsi_json_get_number(&p.R, root, "R", 0, name), res, fail);
  XSI_CHECK_GOTO(xsi_json_get_number(&p.unfair_mean, root, "unfair_mean", 1, name), res, fail);
  XSI_CHECK_GOTO(xsi_json_get_number(&p.t_min_ns, root, "t_min_ns", 1, name), res, fail);
  int nk = 0, nb = 0;
  XSI_CHECK_GOTO(get_array(p.q_k, &nk, root, "q_k", name), res, fail);
  XSI_CHECK_GOTO(get_array(p.q_bytes, &nb, root, "q_bytes", name), res, fail);
  if (nk != nb)
    XSI_FAIL(res, XS_ERR_PARSE, fail, "%s:%d: 'q_k' has %d entries but 'q_bytes' has %d", name,
             xsi_json_get(root, "q_bytes")->line, nk, nb);
  p.nq = nk;
  if (xsi_json_get(root, "q_burst_bytes")) { /* optional: absent = no burst room (Qb = inf) */
    int nqb = 0;
    XSI_CHECK_GOTO(get_array(p.q_burst_bytes, &nqb, root, "q_burst_bytes", name), res, fail);
    if (nqb != nk)
      XSI_FAIL(res, XS_ERR_PARSE, fail, "%s:%d: 'q_k' has %d entries but 'q_burst_bytes' has %d",
               name, xsi_json_get(root, "q_burst_bytes")->line, nk, nqb);
    p.has_q_burst = 1;
  }
  /* optional arrays at q_k: the drain rate R(K), the relaxing room Qr(K) and X0(K) */
  const struct { const char* k; double* v; int* on; } opt[] = {
      {"r_k", p.r_k, &p.has_r_k},
      {"q_relax_bytes", p.q_relax_bytes, &p.has_relax},
      {"relax_bytes", p.relax_bytes, &p.has_relax}};
  for (size_t a = 0; a < sizeof opt / sizeof opt[0]; a++) {
    if (!xsi_json_get(root, opt[a].k)) continue;
    int m = 0;
    XSI_CHECK_GOTO(get_array(opt[a].v, &m, root, opt[a].k, name), res, fail);
    if (m != nk)
      XSI_FAIL(res, XS_ERR_PARSE, fail, "%s:%d: 'q_k' has %d entries but '%s' has %d", name,
               xsi_json_get(root, opt[a].k)->line, nk, opt[a].k, m);
    *opt[a].on = 1;
  }
  if (p.has_relax && !(xsi_json_get(root, "q_relax_bytes") && xsi_json_get(root, "relax_bytes")))
    XSI_FAIL(res, XS_ERR_PARSE, fail, "%s:%d: 'q_relax_bytes' and 'relax_bytes' go together",
             name, root->line);
  XSI_CHECK_GOTO(get_str(p.device, sizeof p.device, root, "device", name), res, fail);
  XSI_CHECK_GOTO(get_str(p.transport, sizeof p.transport, root, "transport", name), res, fail);
  XSI_CHECK_GOTO(get_str(p.flavour, sizeof p.flavour, root, "flavour", name), res, fail);
  XSI_CHECK_GOTO(get_str(p.date, sizeof p.date, root, "date", name), res, fail);
  XSI_CHECK_GOTO(get_str(p.method, sizeof p.method, root, "method", name), res, fail);
  const xsi_json* cal = xsi_json_get(root, "calibrated");
  if (cal) {
    if (cal->type != XSI_JSON_BOOL)
      XSI_FAIL(res, XS_ERR_PARSE, fail, "%s:%d: 'calibrated' must be true or false", name,
               cal->line);
    p.calibrated = cal->num != 0;
  }
  if (xs_profile_validate(&p) != XS_OK) {
    char detail[512];
    snprintf(detail, sizeof detail, "%s", xs_last_error());
    int line = line_of_field(root, detail);
    XSI_FAIL(res, XS_ERR_PARSE, fail, "%s:%d: %s", name, line, detail);
  }
  xsi_json_free(root);
  *out = p;
  return XS_OK;
fail:
  xsi_json_free(root);
  return res;
}

xs_result xs_profile_read(xs_link_profile* out, const char* path) {
  XSI_ARG(out != NULL && path != NULL, "out or path is NULL");
  char* text = NULL;
  size_t len = 0;
  XSI_CHECK(xsi_read_file(&text, &len, path, 16u << 20));
  xs_result r = xs_profile_from_json(out, text, len, path);
  free(text);
  return r;
}

xs_result xs_profile_write(const xs_link_profile* p, const char* path) {
  XSI_ARG(path != NULL, "path is NULL");
  char* json = NULL;
  XSI_CHECK(xs_profile_to_json(&json, p));
  xs_result r = xsi_write_file_atomic(path, json, strlen(json));
  free(json);
  return r;
}
