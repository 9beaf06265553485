/* dataset.c — measurement CSVs (docs/measurements.md), predictions and error statistics. */
#include "core/csv.h"
#include "core/fileio.h"
#include "model/model_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct xs_dataset {
  size_t n;
  xs_sample* s;
};

#define MAX_ROWS 10000000u

static xs_result check_sample(const xs_sample* s, const char* where) {
  if (!(xsi_finite(s->K) && s->K >= 1 && s->K <= 1e6 && s->K == floor(s->K)))
    return xsi_set_error(XS_ERR_PARSE, "%s: field 'K': %g must be a whole number in [1, 1e6]",
                         where, s->K);
  if (!(xsi_finite(s->V) && s->V > 0 && s->V <= 1e13))
    return xsi_set_error(XS_ERR_PARSE, "%s: field 'V_bytes': %g must be in (0, 1e13]", where,
                         s->V);
  if (!(xsi_finite(s->G) && s->G >= 0 && s->G <= 1e13))
    return xsi_set_error(XS_ERR_PARSE, "%s: field 'gap_ns': %g must be in [0, 1e13]", where,
                         s->G);
  if (s->burst_index < 0 || s->burst_index > 1000000000L)
    return xsi_set_error(XS_ERR_PARSE, "%s: field 'burst_index': %ld must be in [0, 1e9]", where,
                         s->burst_index);
  if (!(xsi_finite(s->t_iss_ns) && s->t_iss_ns > 0 && s->t_iss_ns <= 1e13))
    return xsi_set_error(XS_ERR_PARSE, "%s: field 't_iss_ns': %g must be in (0, 1e13]", where,
                         s->t_iss_ns);
  if (!(xsi_finite(s->t_iss_mean_ns) && s->t_iss_mean_ns >= 0 && s->t_iss_mean_ns <= s->t_iss_ns))
    return xsi_set_error(XS_ERR_PARSE,
                         "%s: field 't_iss_mean_ns': %g must be in (0, t_iss_ns] (0 = absent)",
                         where, s->t_iss_mean_ns);
  if (s->seq < 0 || (s->seq >= 1 && !(xsi_finite(s->gap_before_ns) && s->gap_before_ns >= 0 &&
                                       s->gap_before_ns <= 1e13)))
    return xsi_set_error(XS_ERR_PARSE,
                         "%s: fields 'seq' / 'gap_before_ns': seq %ld must be >= 0 and, when "
                         ">= 1, gap_before_ns %g in [0, 1e13]",
                         where, s->seq, s->gap_before_ns);
  if (!memchr(s->transport, '\0', sizeof s->transport) || !s->transport[0])
    return xsi_set_error(XS_ERR_PARSE, "%s: field 'transport': empty or longer than %zu", where,
                         sizeof s->transport - 1);
  return XS_OK;
}

xs_result xs_dataset_from_samples(xs_dataset** out, const xs_sample* s, size_t n) {
  XSI_ARG(out != NULL, "out is NULL");
  *out = NULL;
  XSI_ARG(s != NULL || n == 0, "samples is NULL");
  XSI_ARG(n <= MAX_ROWS, "more than %u samples", MAX_ROWS);
  for (size_t i = 0; i < n; i++) {
    char where[48];
    snprintf(where, sizeof where, "sample %zu", i);
    xs_result r = check_sample(&s[i], where);
    if (r != XS_OK) return xsi_set_error(XS_ERR_INVALID_ARG, "%s", xs_last_error());
  }
  xs_dataset* d = calloc(1, sizeof *d);
  if (!d) return xsi_set_error(XS_ERR_NO_MEMORY, "dataset");
  d->s = malloc((n ? n : 1) * sizeof *d->s);
  if (!d->s) {
    free(d);
    return xsi_set_error(XS_ERR_NO_MEMORY, "dataset of %zu samples", n);
  }
  if (n) memcpy(d->s, s, n * sizeof *s);
  d->n = n;
  *out = d;
  return XS_OK;
}

xs_result xs_dataset_load(xs_dataset** out, const char* path) {
  XSI_ARG(out != NULL && path != NULL, "out or path is NULL");
  *out = NULL;
  char* text = NULL;
  size_t len = 0;
  xsi_csv* csv = NULL;
  xs_dataset* d = NULL;
  xs_result res = XS_OK;
  XSI_CHECK_GOTO(xsi_read_file(&text, &len, path, 0), res, fail);
  XSI_CHECK_GOTO(xsi_csv_parse(&csv, text, len, path, MAX_ROWS), res, fail);
  long ct, cK, cV, cG, cB, cT;
  XSI_CHECK_GOTO(xsi_csv_require(&ct, csv, "transport"), res, fail);
  XSI_CHECK_GOTO(xsi_csv_require(&cK, csv, "K"), res, fail);
  XSI_CHECK_GOTO(xsi_csv_require(&cV, csv, "V_bytes"), res, fail);
  XSI_CHECK_GOTO(xsi_csv_require(&cG, csv, "gap_ns"), res, fail);
  XSI_CHECK_GOTO(xsi_csv_require(&cB, csv, "burst_index"), res, fail);
  XSI_CHECK_GOTO(xsi_csv_require(&cT, csv, "t_iss_ns"), res, fail);
  long cM = xsi_csv_col(csv, "t_iss_mean_ns");
  long cS = xsi_csv_col(csv, "seq"), cGb = xsi_csv_col(csv, "gap_before_ns");
  if (cS >= 0 && cGb < 0)
    XSI_FAIL(res, XS_ERR_PARSE, fail, "%s: column 'seq' needs the column 'gap_before_ns'", path);
  if (csv->nrows == 0) XSI_FAIL(res, XS_ERR_PARSE, fail, "%s: no data rows", path);
  d = calloc(1, sizeof *d);
  if (d) d->s = calloc(csv->nrows, sizeof *d->s);
  if (!d || !d->s) XSI_FAIL(res, XS_ERR_NO_MEMORY, fail, "%s: %zu rows", path, csv->nrows);
  for (size_t r = 0; r < csv->nrows; r++) {
    xs_sample* s = &d->s[r];
    long long bi = 0;
    const char* tr = csv->rows[r][ct];
    char where[600];
    snprintf(where, sizeof where, "%s:%d", path, csv->row_line[r]);
    if (strlen(tr) >= sizeof s->transport || !tr[0])
      XSI_FAIL(res, XS_ERR_PARSE, fail, "%s: field 'transport': '%.40s' is empty or longer than %zu",
               where, tr, sizeof s->transport - 1);
    memcpy(s->transport, tr, strlen(tr) + 1);
    XSI_CHECK_GOTO(xsi_csv_number(&s->K, csv, r, cK), res, fail);
    XSI_CHECK_GOTO(xsi_csv_number(&s->V, csv, r, cV), res, fail);
    XSI_CHECK_GOTO(xsi_csv_number(&s->G, csv, r, cG), res, fail);
    XSI_CHECK_GOTO(xsi_csv_int(&bi, csv, r, cB, 0, 1000000000LL), res, fail);
    s->burst_index = (long)bi;
    XSI_CHECK_GOTO(xsi_csv_number(&s->t_iss_ns, csv, r, cT), res, fail);
    if (cM >= 0 && csv->rows[r][cM][0]) {
      XSI_CHECK_GOTO(xsi_csv_number(&s->t_iss_mean_ns, csv, r, cM), res, fail);
      if (!(s->t_iss_mean_ns > 0))
        XSI_FAIL(res, XS_ERR_PARSE, fail, "%s: field 't_iss_mean_ns': %g must be > 0", where,
                 s->t_iss_mean_ns);
    }
    if (cS >= 0 && csv->rows[r][cS][0]) {
      long long sq = 0;
      XSI_CHECK_GOTO(xsi_csv_int(&sq, csv, r, cS, 0, 1LL << 50), res, fail);
      s->seq = (long)sq;
      if (s->seq >= 1) XSI_CHECK_GOTO(xsi_csv_number(&s->gap_before_ns, csv, r, cGb), res, fail);
    }
    XSI_CHECK_GOTO(check_sample(s, where), res, fail);
  }
  d->n = csv->nrows;
  xsi_csv_free(csv);
  free(text);
  *out = d;
  return XS_OK;
fail:
  xsi_csv_free(csv);
  free(text);
  xs_dataset_destroy(d);
  return res;
}

xs_result xs_dataset_destroy(xs_dataset* d) {
  if (!d) return XS_OK;
  free(d->s);
  free(d);
  return XS_OK;
}

size_t xs_dataset_size(const xs_dataset* d) { return d ? d->n : 0; }
const xs_sample* xs_dataset_samples(const xs_dataset* d) { return d ? d->s : NULL; }

/* ------------------------------------------------------------ measured sequences ----- */

static const xs_sample* g_seq_s; /* for the sort (single-threaded use) */
static int cmp_seq_row(const void* a, const void* b) {
  const xs_sample *x = &g_seq_s[*(const size_t*)a], *y = &g_seq_s[*(const size_t*)b];
  int c = strcmp(x->transport, y->transport);
  if (c) return c;
  if (x->K != y->K) return x->K < y->K ? -1 : 1;
  if (x->V != y->V) return x->V < y->V ? -1 : 1;
  if (x->seq != y->seq) return x->seq < y->seq ? -1 : 1;
  if (x->burst_index != y->burst_index) return x->burst_index < y->burst_index ? -1 : 1;
  return 0;
}

static int same_seq(const xs_sample* x, const xs_sample* y) {
  return x->seq == y->seq && x->K == y->K && x->V == y->V && !strcmp(x->transport, y->transport);
}

xs_result xsi_seq_order(size_t** order, size_t* m, const xs_sample* s, size_t n) {
  *order = NULL, *m = 0;
  size_t k = 0;
  for (size_t i = 0; i < n; i++)
    k += s[i].seq >= 1;
  if (!k) return XS_OK;
  size_t* o = malloc(k * sizeof *o);
  if (!o) return xsi_set_error(XS_ERR_NO_MEMORY, "sequences of %zu rows", k);
  k = 0;
  for (size_t i = 0; i < n; i++)
    if (s[i].seq >= 1) o[k++] = i;
  g_seq_s = s;
  qsort(o, k, sizeof *o, cmp_seq_row);
  *order = o, *m = k;
  return XS_OK;
}

/* Bursts missing from a sequence's rows: at most this many are simulated one by one; a larger
 * hole is bridged by the closed form of equal bursts with the next row's gap G. */
#define SEQ_MAX_HOLE 65536L

void xsi_seq_predict(double* pred, const xs_sample* s, const size_t* order, size_t m,
                     const xs_link_profile* p) {
  for (size_t i = 0; i < m;) {
    size_t j = i + 1;
    while (j < m && same_seq(&s[order[i]], &s[order[j]]))
      j++;
    xsi_link l = xsi_link_of(p, s[order[i]].K);
    double bl = 0.0, T = 0.0;
    long next = 0; /* the next burst to simulate */
    for (size_t k = i; k < j; k++) {
      const xs_sample* r = &s[order[k]];
      if (r->burst_index >= next) {
        if (r->burst_index - next > SEQ_MAX_HOLE) {
          bl = xsi_backlog_at(&l, r->V, r->G, r->burst_index);
          next = r->burst_index;
        }
        for (; next <= r->burst_index; next++) {
          double gap = next == r->burst_index ? r->gap_before_ns : (next ? r->G : 0.0);
          double e = 0.0;
          bl -= fmin(bl, l.R * gap);
          T = xsi_burst_time(&l, bl, r->V, &e, NULL, NULL);
          bl = e;
        }
      }
      pred[order[k]] = T; /* a repeated burst index gets the first row's prediction */
    }
    i = j;
  }
}

xs_result xs_dataset_predict(double* fluid_ns, double* closed_ns, const xs_dataset* d,
                             const xs_link_profile* p) {
  XSI_ARG(d != NULL, "dataset is NULL");
  XSI_CHECK(xs_profile_validate(p));
  for (size_t i = 0; i < d->n; i++) {
    const xs_sample* s = &d->s[i];
    xsi_link l = xsi_link_of(p, s->K);
    if (fluid_ns && s->seq < 1) fluid_ns[i] = xsi_predict_burst(&l, s->V, s->G, s->burst_index);
    if (closed_ns) closed_ns[i] = fmax(xsi_t0(&l, s->V), s->V / l.R - xsi_row_gap(s));
  }
  if (fluid_ns) {
    size_t* order = NULL;
    size_t m = 0;
    XSI_CHECK(xsi_seq_order(&order, &m, d->s, d->n));
    xsi_seq_predict(fluid_ns, d->s, order, m, p);
    free(order);
  }
  return XS_OK;
}

static int cmp_double(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return x < y ? -1 : x > y;
}

xs_result xsi_error_stats(xs_error_stats* st, const double* rel, size_t n) {
  memset(st, 0, sizeof *st);
  st->n = n;
  if (n == 0) return XS_OK;
  double* v = malloc(n * sizeof *v);
  if (!v) return xsi_set_error(XS_ERR_NO_MEMORY, "error statistics of %zu rows", n);
  double sum = 0;
  for (size_t i = 0; i < n; i++) v[i] = fabs(rel[i]), sum += v[i];
  qsort(v, n, sizeof *v, cmp_double);
  st->median = n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
  size_t i90 = (size_t)ceil(0.9 * (double)n);
  st->p90 = v[(i90 ? i90 : 1) - 1];
  st->max = v[n - 1];
  st->mean = sum / (double)n;
  free(v);
  return XS_OK;
}

/* Row i counts when sel[i] == 1 (mask/want and, for the transition figures, the window, folded
 * into one selection by the callers). pf, pc: both predictors' issue times of every row. */
static xs_result rows_stats(xs_error_stats* fluid, xs_error_stats* closed, const xs_dataset* d,
                            const double* pf, const double* pc, const uint8_t* sel) {
  size_t n = d->n;
  double* rel = malloc((n + 1) * sizeof *rel);
  if (!rel) return xsi_set_error(XS_ERR_NO_MEMORY, "evaluate: %zu rows", n);
  xs_result r = XS_OK;
  for (int which = 0; which < 2 && r == XS_OK; which++) {
    xs_error_stats* st = which ? closed : fluid;
    if (!st) continue;
    const double* pr = which ? pc : pf;
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
      if (sel[i]) rel[m++] = (pr[i] - d->s[i].t_iss_ns) / d->s[i].t_iss_ns;
    r = xsi_error_stats(st, rel, m);
  }
  free(rel);
  return r;
}

static xs_result points_stats(xs_error_stats* fluid, xs_error_stats* closed, const xs_dataset* d,
                              const double* pf, const double* pc, const uint8_t* sel);

/* Both predictors of p for every row, and sel[i] = (mask NULL or mask[i] == want): the common
 * start of the evaluations. buf holds 2n doubles then n bytes; the caller frees it. */
static xs_result predict_select(double** buf, const xs_dataset* d, const xs_link_profile* p,
                                const uint8_t* mask, uint8_t want) {
  XSI_ARG(d != NULL, "dataset is NULL");
  XSI_CHECK(xs_profile_validate(p));
  size_t n = d->n;
  *buf = malloc((2 * n + 1) * sizeof **buf + n + 1);
  if (!*buf) return xsi_set_error(XS_ERR_NO_MEMORY, "evaluate: %zu rows", n);
  xs_dataset_predict(*buf, *buf + n, d, p);
  uint8_t* sel = (uint8_t*)(*buf + 2 * n);
  for (size_t i = 0; i < n; i++)
    sel[i] = !mask || mask[i] == want;
  return XS_OK;
}

xs_result xs_model_evaluate(xs_error_stats* fluid, xs_error_stats* closed, const xs_dataset* d,
                            const xs_link_profile* p, const uint8_t* mask, uint8_t want) {
  double* buf = NULL;
  XSI_CHECK(predict_select(&buf, d, p, mask, want));
  xs_result r = rows_stats(fluid, closed, d, buf, buf + d->n, (uint8_t*)(buf + 2 * d->n));
  free(buf);
  return r;
}

xs_result xs_model_score(xs_fit_report* out, const xs_dataset* d, const xs_link_profile* p,
                         const uint8_t* mask, uint8_t want) {
  XSI_ARG(out != NULL, "xs_model_score: out is NULL");
  double* buf = NULL;
  XSI_CHECK(predict_select(&buf, d, p, mask, want));
  size_t n = d->n;
  const double *pf = buf, *pc = buf + n;
  uint8_t* sel = (uint8_t*)(buf + 2 * n);
  uint8_t* win = malloc(n + 1);
  if (!win) {
    free(buf);
    return xsi_set_error(XS_ERR_NO_MEMORY, "score: %zu rows", n);
  }
  xs_fit_report rp;
  memset(&rp, 0, sizeof rp);
  size_t scored = 0;
  for (size_t i = 0; i < n; i++) { /* near the transition: G within +-50% of the free gap */
    double g = 0;
    win[i] = 0;
    scored += sel[i];
    if (sel[i] && xs_plan_min_free_gap(&g, p, d->s[i].K, d->s[i].V) == XS_OK && xsi_finite(g) &&
        g > 0 && fabs(d->s[i].G - g) <= 0.5 * g)
      win[i] = 1;
  }
  rp.n_holdout = scored;
  xs_result r = rows_stats(&rp.fluid_holdout, &rp.closed_holdout, d, pf, pc, sel);
  if (r == XS_OK) r = rows_stats(&rp.fluid_transition, &rp.closed_transition, d, pf, pc, win);
  if (r == XS_OK)
    r = points_stats(&rp.fluid_point_holdout, &rp.closed_point_holdout, d, pf, pc, sel);
  if (r == XS_OK)
    r = points_stats(&rp.fluid_point_transition, &rp.closed_point_transition, d, pf, pc, win);
  free(win);
  free(buf);
  if (r == XS_OK) *out = rp;
  return r;
}

/* ------------------------------------------------------------ per-point errors ----- */

/* A row's point key, copied so the sort needs no global (the function is public). */
typedef struct pt_key {
  const char* transport;
  double K, V, G;
  long seq;
  size_t row;
} pt_key;

/* Order of points (transport, K, V, G, seq); 0: the same point. */
static int point_order(const pt_key* x, const pt_key* y) {
  int t = strcmp(x->transport, y->transport);
  if (t) return t;
  if (x->K != y->K) return x->K < y->K ? -1 : 1;
  if (x->V != y->V) return x->V < y->V ? -1 : 1;
  if (x->G != y->G) return x->G < y->G ? -1 : 1;
  return (x->seq > y->seq) - (x->seq < y->seq);
}
static int cmp_point(const void* a, const void* b) {
  const pt_key *x = (const pt_key*)a, *y = (const pt_key*)b;
  int o = point_order(x, y);
  return o ? o : (x->row > y->row) - (x->row < y->row);
}

xs_result xs_model_evaluate_points(xs_error_stats* fluid, xs_error_stats* closed,
                                   const xs_dataset* d, const xs_link_profile* p,
                                   const uint8_t* mask, uint8_t want) {
  double* buf = NULL;
  XSI_CHECK(predict_select(&buf, d, p, mask, want));
  xs_result r = points_stats(fluid, closed, d, buf, buf + d->n, (uint8_t*)(buf + 2 * d->n));
  free(buf);
  return r;
}

static xs_result points_stats(xs_error_stats* fluid, xs_error_stats* closed, const xs_dataset* d,
                              const double* pf, const double* pc, const uint8_t* sel) {
  size_t n = d->n;
  double* buf = malloc((2 * n + 1) * sizeof *buf);
  pt_key* key = malloc((n + 1) * sizeof *key);
  if (!buf || !key) {
    free(buf), free(key);
    return xsi_set_error(XS_ERR_NO_MEMORY, "evaluate points: %zu rows", n);
  }
  double *relf = buf, *relc = buf + n;
  for (size_t i = 0; i < n; i++) {
    const xs_sample* s = &d->s[i];
    key[i] = (pt_key){s->transport, s->K, s->V, s->G, s->seq, i};
  }
  qsort(key, n, sizeof *key, cmp_point);
  size_t m = 0;
  for (size_t i = 0; i < n;) {
    size_t j = i;
    double meas = 0, sf = 0, sc = 0;
    int in = 1;
    for (; j < n && point_order(&key[i], &key[j]) == 0; j++) {
      size_t r = key[j].row;
      meas += d->s[r].t_iss_ns, sf += pf[r], sc += pc[r];
      in &= sel[r];
    }
    if (in && meas > 0) relf[m] = sf / meas - 1.0, relc[m] = sc / meas - 1.0, m++;
    i = j;
  }
  xs_result r = XS_OK;
  if (fluid) r = xsi_error_stats(fluid, relf, m);
  if (closed && r == XS_OK) r = xsi_error_stats(closed, relc, m);
  free(buf), free(key);
  return r;
}
