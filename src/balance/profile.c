/* profile.c — the max-affine expert-time profile: evaluation, embedded estimates, fitting. */
#include "balance/balance_internal.h"
#include "core/csv.h"
#include "core/fileio.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

xs_result xs_expert_profile_validate(const xs_expert_profile* p) {
  XSI_ARG(p != NULL, "profile is NULL");
  XSI_ARG(xsi_finite(p->a_us) && p->a_us >= 0,
          "profile field 'a_us' must be finite and >= 0 (got %g)", p->a_us);
  XSI_ARG(xsi_finite(p->b_us) && p->b_us > 0,
          "profile field 'b_us' must be finite and > 0 (got %g)", p->b_us);
  XSI_ARG(xsi_finite(p->c_us) && p->c_us >= 0,
          "profile field 'c_us' must be finite and >= 0 (got %g)", p->c_us);
  XSI_ARG(xsi_finite(p->beta_us) && p->beta_us > 0,
          "profile field 'beta_us' must be finite and > 0 (got %g)", p->beta_us);
  XSI_ARG(p->tile_rows >= 0 && p->tile_rows <= 4096,
          "profile field 'tile_rows' must be in [0, 4096] (got %d)", p->tile_rows);
  return XS_OK;
}

/* Measured on the H200 (2026-11-29, scripts/gpu/tempo.sh: bench_tempo_profile with cuBLAS
 * batched bf16 GEMMs over G in {1..32} x n in {1..2048} rows per expert, 10 reps; samples in
 * data/tempo_profile_h200.csv; results in docs/results/tempo-h200.md), fitted with the robust
 * `xstage balance fit` (least squares on relative error with 3-MAD trimming). b is the
 * per-replica weight-streaming cost (~88 MB of DeepSeek-V3 expert weights at ~4.1 TB/s =
 * 21.3 us), beta the per-row grouped-GEMM cost. DeepSeek-V3: 3 of 72 samples trimmed (G = 1,
 * n = 1, 8, 32: attributed to cuBLAS's algorithm choice for tiny shapes; 48-179 us against 31 us at
 * n = 64), relative rms 6.1% over the kept 69 (15.5% over all 72); Qwen3-235B: none trimmed,
 * rms 6.0%. tests/unit/test_tempo_fit.c re-fits the CSV and checks these numbers. */
static void measured(xs_expert_profile* p, const char* name, double a, double b, double c,
                     double beta, double rms) {
  *p = (xs_expert_profile)XS_EXPERT_PROFILE_INITIALIZER;
  p->a_us = a;
  p->b_us = b;
  p->c_us = c;
  p->beta_us = beta;
  p->tile_rows = 128;
  snprintf(p->name, sizeof p->name, "%s", name);
  snprintf(p->method, sizeof p->method,
           "robust fit on NVIDIA H200 2026-11-29, cuBLAS batched bf16 GEMMs (rms %.1f%%)",
           100 * rms);
  p->calibrated = 1;
}

xs_result xs_expert_profile_default(xs_expert_profile* out, const char* name) {
  XSI_ARG(out != NULL && name != NULL, "out and name must not be NULL");
  if (!strcmp(name, "deepseek-v3")) {
    measured(out, name, 10.0426, 21.3167, 15.6547, 0.100174, 0.0610);
  } else if (!strcmp(name, "qwen3-235b")) {
    measured(out, name, 12.3017, 9.16069, 12.3811, 0.0445047, 0.0600);
  } else {
    return xsi_set_error(XS_ERR_INVALID_ARG,
                         "unknown expert profile '%s' (known: deepseek-v3, qwen3-235b)", name);
  }
  xsi_clear_error();
  return XS_OK;
}

double xs_expert_time_us(const xs_expert_profile* p, int64_t G, int64_t N) {
  if (G <= 0) return 0.0;
  double m = p->a_us + p->b_us * (double)G;
  double k = p->c_us + p->beta_us * (double)N;
  return m > k ? m : k;
}

double xs_expert_profile_nstar(const xs_expert_profile* p) {
  return (p->a_us + p->b_us - p->c_us) / p->beta_us;
}

/* ---- fitting ---------------------------------------------------------------------------- */

/* Weighted least squares t ~ p0 + p1*x over the samples with sel[i] == piece, weights 1/t^2
 * (relative error). Samples with sel[i] < 0 (outliers) are ignored. Returns 0 when the piece
 * has fewer than 2 distinct x. */
static int wls(double* p0, double* p1, const double* x, const double* t, const int* sel, int piece,
               size_t n) {
  double sw = 0, sx = 0, st = 0, sxx = 0, sxt = 0, xmin = INFINITY, xmax = -INFINITY;
  for (size_t i = 0; i < n; i++) {
    if (sel[i] != piece) continue;
    double w = 1.0 / (t[i] * t[i]);
    sw += w;
    sx += w * x[i];
    st += w * t[i];
    sxx += w * x[i] * x[i];
    sxt += w * x[i] * t[i];
    if (x[i] < xmin) xmin = x[i];
    if (x[i] > xmax) xmax = x[i];
  }
  if (!(xmax > xmin)) return 0;
  double det = sw * sxx - sx * sx;
  if (!(fabs(det) > 0)) return 0;
  *p1 = (sw * sxt - sx * st) / det;
  *p0 = (st - *p1 * sx) / sw;
  return 1;
}

static double rel_resid(const double* q, double G, double N, double t) {
  double m = q[0] + q[1] * G, k = q[2] + q[3] * N;
  return ((m > k ? m : k) - t) / t;
}

/* Sum of squared relative residuals over the kept samples (keep NULL: all). */
static double rel_sse(const double* q, const double* G, const double* N, const double* t,
                      const unsigned char* keep, size_t n) {
  double s = 0;
  for (size_t i = 0; i < n; i++) {
    if (keep && !keep[i]) continue;
    double r = rel_resid(q, G[i], N[i], t[i]);
    s += r * r;
  }
  return s;
}

static int cmp_double(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return x < y ? -1 : x > y;
}

/* Median of v[0..n) (sorts v). */
static double median_sorted(double* v, size_t n) {
  qsort(v, n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* Least-squares max-affine fit of the kept samples into best[4]; *sse_out its relative SSE.
 * Returns 0 when the kept samples do not span both regimes. sel and ratio: n scratch entries. */
static int fit_ls(double best[4], double* sse_out, const double* G, const double* N,
                  const double* t_us, const unsigned char* keep, size_t n, int* sel,
                  double* ratio) {
  size_t m = 0;
  for (size_t i = 0; i < n; i++)
    if (keep[i]) ratio[m++] = N[i] / G[i];
  qsort(ratio, m, sizeof *ratio, cmp_double);

  /* Stage 1: split by rows per expert (N/G) at every threshold; keep the best. */
  double best_sse = INFINITY;
  for (size_t s = 0; s + 1 < m; s++) {
    if (ratio[s] == ratio[s + 1]) continue;
    double thr = 0.5 * (ratio[s] + ratio[s + 1]);
    for (size_t i = 0; i < n; i++)
      sel[i] = keep[i] ? (N[i] / G[i] > thr) : -1;
    double q[4];
    if (!wls(&q[0], &q[1], G, t_us, sel, 0, n) || !wls(&q[2], &q[3], N, t_us, sel, 1, n)) continue;
    if (q[1] <= 0 || q[3] <= 0) continue;
    double e = rel_sse(q, G, N, t_us, keep, n);
    if (e < best_sse) {
      best_sse = e;
      memcpy(best, q, 4 * sizeof *best);
    }
  }
  if (!xsi_finite(best_sse)) return 0;

  /* Stage 2: alternate (assign each sample to the piece that is the max, refit) while the
   * error falls. */
  for (int it = 0; it < 50; it++) {
    for (size_t i = 0; i < n; i++)
      sel[i] = keep[i] ? (best[2] + best[3] * N[i] > best[0] + best[1] * G[i]) : -1;
    double q[4];
    if (!wls(&q[0], &q[1], G, t_us, sel, 0, n) || !wls(&q[2], &q[3], N, t_us, sel, 1, n)) break;
    if (q[1] <= 0 || q[3] <= 0) break;
    double e = rel_sse(q, G, N, t_us, keep, n);
    if (!(e < best_sse * (1 - 1e-12))) break;
    best_sse = e;
    memcpy(best, q, 4 * sizeof *best);
  }
  *sse_out = best_sse;
  return 1;
}

/* Robust fit (docs/tempo.md, "Fitting"): least squares on relative error, then trimming. The
 * relative residuals r_i of all samples under the current fit give a robust scale
 * s = 1.4826 * MAD(r) (floored at XSI_FIT_SCALE_FLOOR, so near-exact data trims nothing);
 * samples with |r_i - median(r)| > 3 s are outliers (at most a quarter of the samples, the
 * largest first); the kept samples are refitted, and this repeats until the outlier set stops
 * changing (at most 10 rounds). An outlier can come back when the refit explains it. */
#define XSI_FIT_SCALE_FLOOR 0.005
#define XSI_FIT_CUT 3.0

xs_result xs_expert_profile_fit_robust(xs_expert_profile* out, xs_profile_fit_info* info,
                                       unsigned char* outlier_out, const double* G, const double* N,
                                       const double* t_us, size_t n) {
  XSI_ARG(out && G && N && t_us, "out, G, N and t_us must not be NULL");
  XSI_ARG(n >= 4, "need at least 4 samples (got %zu)", n);
  for (size_t i = 0; i < n; i++) {
    XSI_ARG(xsi_finite(G[i]) && G[i] >= 1, "sample %zu: G must be >= 1 (got %g)", i, G[i]);
    XSI_ARG(xsi_finite(N[i]) && N[i] >= 0, "sample %zu: N must be >= 0 (got %g)", i, N[i]);
    XSI_ARG(xsi_finite(t_us[i]) && t_us[i] > 0, "sample %zu: time must be > 0 (got %g)", i,
            t_us[i]);
  }
  xs_result res = XS_OK;
  int* sel = malloc(n * sizeof *sel);
  double* ratio = malloc(n * sizeof *ratio);
  double* dev = malloc(n * sizeof *dev);
  double* tmp = malloc(n * sizeof *tmp);
  unsigned char* keep = malloc(n);
  unsigned char* next = malloc(n);
  if (!sel || !ratio || !dev || !tmp || !keep || !next)
    XSI_FAIL(res, XS_ERR_NO_MEMORY, fail, "fit: out of memory");
  memset(keep, 1, n);
  double best[4], sse, cut = INFINITY;
  if (!fit_ls(best, &sse, G, N, t_us, keep, n, sel, ratio))
    XSI_FAIL(res, XS_ERR_NUMERIC, fail,
             "fit: the samples do not span both regimes (need 2+ distinct G below the crossover "
             "and 2+ distinct N above it)");
  for (int round = 0; round < 10; round++) {
    for (size_t i = 0; i < n; i++)
      tmp[i] = rel_resid(best, G[i], N[i], t_us[i]);
    memcpy(dev, tmp, n * sizeof *dev);
    double med = median_sorted(dev, n);
    for (size_t i = 0; i < n; i++) {
      tmp[i] = fabs(tmp[i] - med);
      dev[i] = tmp[i];
    }
    double scale = 1.4826 * median_sorted(dev, n);
    if (scale < XSI_FIT_SCALE_FLOOR) scale = XSI_FIT_SCALE_FLOOR;
    double thr = XSI_FIT_CUT * scale;
    /* at most n/4 outliers: raise the threshold to the (n - n/4)-th smallest deviation */
    memcpy(dev, tmp, n * sizeof *dev);
    qsort(dev, n, sizeof *dev, cmp_double);
    if (dev[n - 1 - n / 4] > thr) thr = dev[n - 1 - n / 4];
    int changed = 0;
    for (size_t i = 0; i < n; i++) {
      next[i] = !(tmp[i] > thr);
      changed |= next[i] != keep[i];
    }
    if (!changed) {
      cut = thr;
      break;
    }
    double q[4], e;
    if (!fit_ls(q, &e, G, N, t_us, next, n, sel, ratio)) break; /* keep the previous fit */
    memcpy(keep, next, n);
    memcpy(best, q, sizeof best);
    sse = e;
    cut = thr;
  }
  size_t kept = 0;
  for (size_t i = 0; i < n; i++)
    kept += keep[i];
  out->a_us = best[0] > 0 ? best[0] : 0;
  out->b_us = best[1];
  out->c_us = best[2] > 0 ? best[2] : 0;
  out->beta_us = best[3];
  if (info) {
    info->n_samples = n;
    info->n_outliers = n - kept;
    info->rms_rel = sqrt(sse / (double)kept);
    info->rms_rel_all = sqrt(rel_sse(best, G, N, t_us, NULL, n) / (double)n);
    info->outlier_cut = cut;
  }
  if (outlier_out)
    for (size_t i = 0; i < n; i++)
      outlier_out[i] = !keep[i];
  xsi_clear_error();
fail:
  free(sel);
  free(ratio);
  free(dev);
  free(tmp);
  free(keep);
  free(next);
  return res;
}

xs_result xs_expert_profile_fit(xs_expert_profile* out, double* rms_rel_out, const double* G,
                                const double* N, const double* t_us, size_t n) {
  xs_profile_fit_info info;
  XSI_CHECK(xs_expert_profile_fit_robust(out, &info, NULL, G, N, t_us, n));
  if (rms_rel_out) *rms_rel_out = info.rms_rel;
  return XS_OK;
}

xs_result xs_expert_profile_fit_csv(xs_expert_profile* out, double* rms_rel_out, size_t* n_used_out,
                                    const char* path, const char* model) {
  xs_profile_fit_info info;
  XSI_CHECK(xs_expert_profile_fit_csv_info(out, &info, path, model));
  if (rms_rel_out) *rms_rel_out = info.rms_rel;
  if (n_used_out) *n_used_out = info.n_samples;
  return XS_OK;
}

xs_result xs_expert_profile_fit_csv_info(xs_expert_profile* out, xs_profile_fit_info* info,
                                         const char* path, const char* model) {
  XSI_ARG(out && path, "out and path must not be NULL");
  xs_result res = XS_OK;
  char* text = NULL;
  size_t len = 0, m = 0;
  xsi_csv* csv = NULL;
  double *G = NULL, *N = NULL, *T = NULL;
  long cg, cn, ct, cm = -1;
  XSI_CHECK_GOTO(xsi_read_file(&text, &len, path, 0), res, fail);
  XSI_CHECK_GOTO(xsi_csv_parse(&csv, text, len, path, 0), res, fail);
  XSI_CHECK_GOTO(xsi_csv_require(&cg, csv, "G"), res, fail);
  XSI_CHECK_GOTO(xsi_csv_require(&cn, csv, "N"), res, fail);
  XSI_CHECK_GOTO(xsi_csv_require(&ct, csv, "time_us"), res, fail);
  if (model) XSI_CHECK_GOTO(xsi_csv_require(&cm, csv, "model"), res, fail);
  G = malloc((csv->nrows + 1) * sizeof *G);
  N = malloc((csv->nrows + 1) * sizeof *N);
  T = malloc((csv->nrows + 1) * sizeof *T);
  if (!G || !N || !T) XSI_FAIL(res, XS_ERR_NO_MEMORY, fail, "%s: out of memory", path);
  for (size_t r = 0; r < csv->nrows; r++) {
    if (model && strcmp(csv->rows[r][cm], model) != 0) continue;
    XSI_CHECK_GOTO(xsi_csv_number(&G[m], csv, r, cg), res, fail);
    XSI_CHECK_GOTO(xsi_csv_number(&N[m], csv, r, cn), res, fail);
    XSI_CHECK_GOTO(xsi_csv_number(&T[m], csv, r, ct), res, fail);
    m++;
  }
  if (m == 0)
    XSI_FAIL(res, XS_ERR_PARSE, fail, "%s: no sample rows%s%s", path, model ? " for model " : "",
             model ? model : "");
  xs_profile_fit_info fi;
  res = xs_expert_profile_fit_robust(out, &fi, NULL, G, N, T, m);
  if (res != XS_OK) {
    xsi_error_prefix("%s", path);
    goto fail;
  }
  if (info) *info = fi;
  snprintf(out->method, sizeof out->method,
           "max-affine fit of %zu samples (%zu outliers trimmed) from %s", m, fi.n_outliers, path);
  out->calibrated = 1;
fail:
  free(G);
  free(N);
  free(T);
  xsi_csv_free(csv);
  free(text);
  return res;
}
