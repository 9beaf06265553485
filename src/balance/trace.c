/* trace.c — routing traces: a synthetic generator (Zipf/Dirichlet popularity with drift, top-k
 * without replacement) and a reader for recorded per-step expert counts (JSON or CSV). */
#include "balance/balance_internal.h"
#include "core/csv.h"
#include "core/fileio.h"
#include "core/json.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void xs_routing_release(xs_routing_trace* t) {
  if (!t) return;
  free(t->counts);
  memset(t, 0, sizeof *t);
}

static uint64_t rng_next(uint64_t* s) {
  uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
static double rng_unif(uint64_t* s) {
  return (double)(rng_next(s) >> 11) * 0x1.0p-53;
}
static double rng_normal(uint64_t* s) {
  double u = rng_unif(s), v = rng_unif(s);
  return sqrt(-2.0 * log(u + 1e-300)) * cos(6.283185307179586 * v);
}
/* Gamma(k, 1) by Marsaglia-Tsang (k < 1 boosted). */
static double rng_gamma(uint64_t* s, double k) {
  if (k < 1) return rng_gamma(s, k + 1) * pow(rng_unif(s) + 1e-300, 1.0 / k);
  double d = k - 1.0 / 3, c = 1.0 / sqrt(9 * d);
  for (;;) {
    double x = rng_normal(s), v = 1 + c * x;
    if (v <= 0) continue;
    v = v * v * v;
    double u = rng_unif(s);
    if (log(u + 1e-300) < 0.5 * x * x + d - d * v + d * log(v)) return d * v;
  }
}

xs_result xs_routing_generate(xs_routing_trace* out, const xs_routing_config* cfg) {
  XSI_ARG(out && cfg, "out and cfg must not be NULL");
  memset(out, 0, sizeof *out);
  XSI_ARG(cfg->size == sizeof(xs_routing_config), "trace config: size field not set");
  XSI_ARG(cfg->top_k >= 1 && cfg->n_experts >= cfg->top_k && cfg->n_experts <= 1 << 16,
          "trace config: need 1 <= top_k <= n_experts <= 65536 (got top_k %d, n_experts %d)",
          cfg->top_k, cfg->n_experts);
  XSI_ARG(cfg->n_steps >= 1 && cfg->n_tokens >= 1,
          "trace config: n_steps and n_tokens must be >= 1");
  XSI_ARG(xsi_finite(cfg->skew) && cfg->skew >= 0 && cfg->skew <= 8,
          "trace config: skew must be in [0, 8]");
  XSI_ARG(xsi_finite(cfg->drift) && cfg->drift >= 0, "trace config: drift must be >= 0");
  XSI_ARG(cfg->popularity == XS_POP_ZIPF || cfg->popularity == XS_POP_DIRICHLET,
          "trace config: unknown popularity kind %d", (int)cfg->popularity);
  int E = cfg->n_experts, K = cfg->top_k;
  xs_result res = XS_OK;
  double* logw = malloc((size_t)E * sizeof(double));
  double* cum = malloc((size_t)E * sizeof(double));
  int* pick = malloc((size_t)K * sizeof(int));
  int* perm = malloc((size_t)E * sizeof(int));
  out->counts = calloc((size_t)cfg->n_steps * E, sizeof(int64_t));
  if (!logw || !cum || !pick || !perm || !out->counts)
    XSI_FAIL(res, XS_ERR_NO_MEMORY, fail, "trace: out of memory");
  out->n_steps = cfg->n_steps;
  out->n_experts = E;
  uint64_t rng = cfg->seed * 0x2545F4914F6CDD1Dull + 1;
  for (int e = 0; e < E; e++)
    perm[e] = e;
  for (int e = E - 1; e > 0; e--) { /* which expert gets which popularity rank */
    int j = (int)(rng_next(&rng) % (uint64_t)(e + 1)), t = perm[e];
    perm[e] = perm[j], perm[j] = t;
  }
  for (int i = 0; i < E; i++) {
    double w;
    if (cfg->popularity == XS_POP_ZIPF)
      w = pow((double)i + 1, -cfg->skew);
    else
      w = cfg->skew > 0 ? rng_gamma(&rng, 1.0 / cfg->skew) + 1e-300 : 1.0;
    logw[perm[i]] = log(w);
  }
  for (int st = 0; st < cfg->n_steps; st++) {
    double acc = 0, mx = -INFINITY;
    if (st > 0)
      for (int e = 0; e < E; e++)
        logw[e] += cfg->drift * rng_normal(&rng);
    for (int e = 0; e < E; e++)
      mx = logw[e] > mx ? logw[e] : mx;
    for (int e = 0; e < E; e++)
      cum[e] = (acc += exp(logw[e] - mx));
    int64_t* c = out->counts + (size_t)st * E;
    for (int t = 0; t < cfg->n_tokens; t++) {
      for (int k = 0; k < K; k++) { /* without replacement: redraw duplicates */
        int e = -1;
        for (int tries = 0; tries < 64 && e < 0; tries++) {
          double u = rng_unif(&rng) * acc;
          int lo = 0, hi = E - 1;
          while (lo < hi) {
            int mid = (lo + hi) / 2;
            if (cum[mid] > u)
              hi = mid;
            else
              lo = mid + 1;
          }
          e = lo;
          for (int j = 0; j < k; j++)
            if (pick[j] == e) e = -1;
        }
        if (e < 0) /* very skewed: take the most popular expert not yet picked */
          for (int x = 0; x < E; x++) {
            int dup = 0;
            for (int j = 0; j < k; j++)
              dup |= pick[j] == x;
            double wx = cum[x] - (x ? cum[x - 1] : 0),
                   we = e >= 0 ? cum[e] - (e ? cum[e - 1] : 0) : -1;
            if (!dup && wx > we) e = x;
          }
        pick[k] = e;
        c[e]++;
      }
    }
  }
fail:
  if (res != XS_OK) xs_routing_release(out);
  free(logw);
  free(cum);
  free(pick);
  free(perm);
  return res;
}

/* ---- recorded traces ---------------------------------------------------------------------- */

static xs_result read_json(xs_routing_trace* out, const char* text, size_t len, const char* path) {
  xsi_json* root = NULL;
  xs_result res = XS_OK;
  XSI_CHECK(xsi_json_parse(&root, text, len, path));
  size_t S = 0, L = 0, E = 0;
  if (root->type != XSI_JSON_ARRAY || root->len == 0)
    XSI_FAIL(res, XS_ERR_PARSE, fail, "%s: a trace is a non-empty array [steps][layers][experts]",
             path);
  S = root->len;
  for (size_t s = 0; s < S; s++) {
    const xsi_json* st = root->items[s];
    if (st->type != XSI_JSON_ARRAY || st->len == 0 || (L && st->len != L))
      XSI_FAIL(res, XS_ERR_PARSE, fail,
               "%s:%d: step %zu must be a non-empty array of layers (all "
               "steps with the same layer count)",
               path, st->line, s);
    L = st->len;
    for (size_t l = 0; l < L; l++) {
      const xsi_json* ly = st->items[l];
      if (ly->type != XSI_JSON_ARRAY || ly->len == 0 || (E && ly->len != E))
        XSI_FAIL(res, XS_ERR_PARSE, fail,
                 "%s:%d: step %zu layer %zu must be an array of expert "
                 "counts (all of the same length)",
                 path, ly->line, s, l);
      E = ly->len;
    }
  }
  out->counts = malloc(S * L * E * sizeof(int64_t));
  if (!out->counts) XSI_FAIL(res, XS_ERR_NO_MEMORY, fail, "%s: out of memory", path);
  out->n_steps = (int)(S * L);
  out->n_experts = (int)E;
  for (size_t s = 0; s < S; s++)
    for (size_t l = 0; l < L; l++)
      for (size_t e = 0; e < E; e++) {
        const xsi_json* v = root->items[s]->items[l]->items[e];
        if (v->type != XSI_JSON_NUMBER || v->num < 0 || v->num != floor(v->num) || v->num > 1e12)
          XSI_FAIL(res, XS_ERR_PARSE, fail,
                   "%s:%d: step %zu layer %zu expert %zu: count must be an "
                   "integer >= 0",
                   path, v->line, s, l, e);
        out->counts[(s * L + l) * E + e] = (int64_t)v->num;
      }
fail:
  xsi_json_free(root);
  return res;
}

static xs_result read_csv(xs_routing_trace* out, const char* text, size_t len, const char* path) {
  xsi_csv* csv = NULL;
  xs_result res = XS_OK;
  long cs, cl, ce, cc;
  long long S = 0, L = 0, E = 0, v[4];
  XSI_CHECK(xsi_csv_parse(&csv, text, len, path, 0));
  XSI_CHECK_GOTO(xsi_csv_require(&cs, csv, "step"), res, fail);
  XSI_CHECK_GOTO(xsi_csv_require(&cl, csv, "layer"), res, fail);
  XSI_CHECK_GOTO(xsi_csv_require(&ce, csv, "expert"), res, fail);
  XSI_CHECK_GOTO(xsi_csv_require(&cc, csv, "count"), res, fail);
  if (csv->nrows == 0) XSI_FAIL(res, XS_ERR_PARSE, fail, "%s: no rows", path);
  for (size_t r = 0; r < csv->nrows; r++) {
    XSI_CHECK_GOTO(xsi_csv_int(&v[0], csv, r, cs, 0, 1 << 20), res, fail);
    XSI_CHECK_GOTO(xsi_csv_int(&v[1], csv, r, cl, 0, 1 << 12), res, fail);
    XSI_CHECK_GOTO(xsi_csv_int(&v[2], csv, r, ce, 0, 1 << 16), res, fail);
    S = v[0] + 1 > S ? v[0] + 1 : S;
    L = v[1] + 1 > L ? v[1] + 1 : L;
    E = v[2] + 1 > E ? v[2] + 1 : E;
  }
  out->counts = calloc((size_t)(S * L * E), sizeof(int64_t));
  if (!out->counts) XSI_FAIL(res, XS_ERR_NO_MEMORY, fail, "%s: out of memory", path);
  out->n_steps = (int)(S * L);
  out->n_experts = (int)E;
  for (size_t r = 0; r < csv->nrows; r++) {
    XSI_CHECK_GOTO(xsi_csv_int(&v[0], csv, r, cs, 0, 1 << 20), res, fail);
    XSI_CHECK_GOTO(xsi_csv_int(&v[1], csv, r, cl, 0, 1 << 12), res, fail);
    XSI_CHECK_GOTO(xsi_csv_int(&v[2], csv, r, ce, 0, 1 << 16), res, fail);
    XSI_CHECK_GOTO(xsi_csv_int(&v[3], csv, r, cc, 0, (long long)1 << 40), res, fail);
    out->counts[(v[0] * L + v[1]) * E + v[2]] += v[3];
  }
fail:
  xsi_csv_free(csv);
  return res;
}

xs_result xs_routing_read(xs_routing_trace* out, const char* path) {
  XSI_ARG(out && path, "out and path must not be NULL");
  memset(out, 0, sizeof *out);
  char* text = NULL;
  size_t len = 0;
  XSI_CHECK(xsi_read_file(&text, &len, path, 0));
  size_t i = 0;
  while (i < len && (text[i] == ' ' || text[i] == '\n' || text[i] == '\r' || text[i] == '\t'))
    i++;
  xs_result res = (i < len && text[i] == '[') ? read_json(out, text, len, path)
                                              : read_csv(out, text, len, path);
  free(text);
  if (res != XS_OK) xs_routing_release(out);
  return res;
}
