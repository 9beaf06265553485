/* fit.c — robust least-squares fit of a link profile to a measurement dataset.
 *
 * Parameters (log space, so every one stays positive): ln t_fixed, ln r_cta, ln r_cap, ln R and
 * ln Q(K_j), one per distinct K. Residuals are relative errors of the fluid model's prediction
 * of each row (burst `burst_index` of equal bursts from idle). Levenberg-Marquardt on a Huber
 * loss via iteratively reweighted least squares; forward-difference Jacobian. The initial
 * guess comes from the data (see docs/model.md, "Fitting"): R from drain-bound rows, t_fixed and
 * r_iss(K) from the burst-0 line T = t_fixed + V/r_iss, Q(K) from bursts that overflow from
 * idle. unfair_mean is a linear least-squares fit on the rows with t_iss_mean_ns. With
 * options.refine >= 1 one more parameter: ln t_min_ns, the latency floor of T0; with
 * options.refine >= 2 also ln Qb(K_j), the burst room, one per distinct K; with options.refine = 3
 * (the default) also ln(R(K_j) / R) for j >= 1 (the drain rate per K; R = R(K_0)), and per K
 * logit(Qr / min(Qb, Q)) and ln X0 (the relaxing room). The refinements nest: their fit also
 * starts from the fit without them, so it never ends worse on the fitted rows (docs/model.md
 * §12). */
#include "model/model_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NP_BASE 4
#define NP_REFINE 1 /* ln t_min */
#define NP_MAX (NP_BASE + 5 * XS_PROFILE_MAX_QPTS + NP_REFINE)

typedef struct fit_ctx {
  const xs_sample* s;
  size_t* rows; /* indices of the fitted rows */
  size_t n;
  int nk;
  double ks[XS_PROFILE_MAX_QPTS];
  double delta;
  int refine; /* 1: th[NP_BASE + nk] = ln t_min */
  int room;   /* 1: th[NP_BASE + nk + refine + j] = ln Qb(K_j), the burst room */
  int rk;     /* 1: th[i_rk + j - 1] = ln(R(K_j) / R), j >= 1 (R(K_0) = R): the drain rate per K */
  int relax;  /* 1: th[i_rel + j] = logit(Qr(K_j) / Q1(K_j)), Q1 = min(Qb, Q), and
               * th[i_rel + nk + j] = ln X0(K_j): the relaxing room (Qr below Q1 always, so that
               * its gradient never vanishes) */
  int i_rk, i_rel;
  /* measured sequences (xs_sample.seq >= 1): simulated once per evaluation, each with its own
   * gaps (xsi_seq_predict); pred holds those rows' predictions (one entry per dataset row) */
  const size_t* seq_order;
  size_t nseq;
  double* pred;
} fit_ctx;

/* Q1(K_j) = min(Qb, Q): the room one burst has from idle, from which the relaxing room starts. */
static double q1_of(const fit_ctx* c, const double* th, int j) {
  double q = exp(th[NP_BASE + j]);
  return c->room ? fmin(q, exp(th[NP_BASE + c->nk + c->refine + j])) : q;
}
static double logit(double x) {
  x = fmin(fmax(x, 0.01), 0.99);
  return log(x / (1.0 - x));
}

static void to_profile(xs_link_profile* p, const fit_ctx* c, const double* th) {
  p->t_fixed_ns = exp(th[0]);
  p->r_cta = exp(th[1]);
  p->r_cap = exp(th[2]);
  p->R = exp(th[3]);
  p->nq = c->nk;
  for (int j = 0; j < c->nk; j++) {
    p->q_k[j] = c->ks[j];
    p->q_bytes[j] = exp(th[NP_BASE + j]);
  }
  p->t_min_ns = 0.0;
  if (c->refine) {
    p->t_min_ns = exp(th[NP_BASE + c->nk]);
    if (p->t_min_ns < 1e-3) p->t_min_ns = 0.0; /* at the bound of the log: absent */
  }
  p->has_q_burst = c->room;
  for (int j = 0; j < XS_PROFILE_MAX_QPTS; j++)
    p->q_burst_bytes[j] = c->room && j < c->nk ? exp(th[NP_BASE + c->nk + c->refine + j]) : 0.0;
  p->has_r_k = c->rk;
  for (int j = 0; j < XS_PROFILE_MAX_QPTS; j++)
    p->r_k[j] = c->rk && j < c->nk ? p->R * (j ? exp(th[c->i_rk + j - 1]) : 1.0) : 0.0;
  p->has_relax = c->relax;
  for (int j = 0; j < XS_PROFILE_MAX_QPTS; j++) {
    p->q_relax_bytes[j] =
        c->relax && j < c->nk ? q1_of(c, th, j) / (1.0 + exp(-th[c->i_rel + j])) : 0.0;
    p->relax_bytes[j] = c->relax && j < c->nk ? fmin(exp(th[c->i_rel + c->nk + j]), 1e15) : 0.0;
  }
}

static void residuals(double* r, const fit_ctx* c, const double* th) {
  xs_link_profile p = XS_LINK_PROFILE_INITIALIZER;
  to_profile(&p, c, th);
  if (c->nseq) xsi_seq_predict(c->pred, c->s, c->seq_order, c->nseq, &p);
  for (size_t i = 0; i < c->n; i++) {
    const xs_sample* s = &c->s[c->rows[i]];
    xsi_link l = xsi_link_of(&p, s->K);
    double t = s->seq >= 1 ? c->pred[c->rows[i]] : xsi_predict_burst(&l, s->V, s->G, s->burst_index);
    r[i] = (t - s->t_iss_ns) / s->t_iss_ns;
  }
}

static double huber_cost(const double* r, size_t n, double d) {
  double c = 0;
  for (size_t i = 0; i < n; i++) {
    double a = fabs(r[i]);
    c += a <= d ? 0.5 * a * a : d * (a - 0.5 * d);
  }
  return c;
}

/* Solve A x = b (n x n, symmetric positive definite after damping) by Gaussian elimination
 * with partial pivoting. Returns 0 on success. */
static int solve(double* A, double* b, int n) {
  for (int k = 0; k < n; k++) {
    int piv = k;
    for (int i = k + 1; i < n; i++)
      if (fabs(A[i * n + k]) > fabs(A[piv * n + k])) piv = i;
    if (!(fabs(A[piv * n + k]) > 1e-300)) return 1;
    if (piv != k) {
      for (int j = 0; j < n; j++) {
        double t = A[k * n + j];
        A[k * n + j] = A[piv * n + j];
        A[piv * n + j] = t;
      }
      double t = b[k];
      b[k] = b[piv];
      b[piv] = t;
    }
    for (int i = k + 1; i < n; i++) {
      double f = A[i * n + k] / A[k * n + k];
      for (int j = k; j < n; j++) A[i * n + j] -= f * A[k * n + j];
      b[i] -= f * b[k];
    }
  }
  for (int k = n - 1; k >= 0; k--) {
    double s = b[k];
    for (int j = k + 1; j < n; j++) s -= A[k * n + j] * b[j];
    b[k] = s / A[k * n + k];
  }
  return 0;
}

static int cmp_double(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return x < y ? -1 : x > y;
}
static double median(double* v, size_t n) {
  qsort(v, n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* Median issue time of burst-0 rows with this K and V (0 if none). */
static double burst0_time(const fit_ctx* c, double K, double V, double* scratch) {
  size_t m = 0;
  for (size_t i = 0; i < c->n; i++) {
    const xs_sample* s = &c->s[c->rows[i]];
    if (s->burst_index == 0 && s->K == K && s->V == V) scratch[m++] = s->t_iss_ns;
  }
  return m ? median(scratch, m) : 0.0;
}

/* mode 0: the original initial guess (plus t_min); 1: the slopes skip bursts on the latency
 * floor; 2: as 1, and a K without a slope starts the cap at r_cta * K. Returns 1 if the mode
 * changed anything against mode 0 (a burst skipped, or a K without a slope). */
static int initial_guess(double* th, const fit_ctx* c, double* tmp, double* tmp2, int mode) {
  const xs_sample* S = c->s;
  /* R: drain-bound rows are large bursts back to back; there V/(T+G) = R. */
  double gmin = INFINITY;
  size_t m = 0;
  for (size_t i = 0; i < c->n; i++)
    gmin = fmin(gmin, xsi_row_gap(&S[c->rows[i]])), tmp[m++] = S[c->rows[i]].V;
  double vmed = median(tmp, m);
  m = 0;
  for (size_t i = 0; i < c->n; i++) {
    const xs_sample* s = &S[c->rows[i]];
    double g = xsi_row_gap(s);
    if (s->burst_index >= 1 && g <= gmin && s->V >= vmed) tmp[m++] = s->V / (s->t_iss_ns + g);
  }
  if (m == 0)
    for (size_t i = 0; i < c->n; i++)
      tmp[m++] = S[c->rows[i]].V / (S[c->rows[i]].t_iss_ns + xsi_row_gap(&S[c->rows[i]]));
  double R = median(tmp, m);
  /* t_fixed and r_iss(K) from the two smallest burst-0 sizes of each K. */
  /* t_min (refine): the median over K of the burst-0 time of each K's smallest burst (the
   * floor, if the data have one; the fit lowers it until it is inactive if they do not). In
   * modes 1 and 2 the slope below uses only bursts above 1.02 x that floor. */
  double t_min0 = 0.0;
  int changed = 0;
  if (c->refine) {
    double tm[XS_PROFILE_MAX_QPTS];
    int ntm = 0;
    for (int j = 0; j < c->nk; j++) {
      double v1 = INFINITY;
      for (size_t i = 0; i < c->n; i++) {
        const xs_sample* s = &S[c->rows[i]];
        if (s->burst_index == 0 && s->K == c->ks[j] && s->V < v1) v1 = s->V;
      }
      if (v1 < INFINITY) tm[ntm++] = burst0_time(c, c->ks[j], v1, tmp2);
    }
    t_min0 = ntm ? median(tm, (size_t)ntm) : 0.0;
  }
  double ri[XS_PROFILE_MAX_QPTS] = {0}, tfs[XS_PROFILE_MAX_QPTS];
  int ntf = 0;
  for (int j = 0; j < c->nk; j++) {
    double v1 = INFINITY, v2 = INFINITY;
    for (size_t i = 0; i < c->n; i++) {
      const xs_sample* s = &S[c->rows[i]];
      if (s->burst_index != 0 || s->K != c->ks[j]) continue;
      if (mode >= 1 && s->t_iss_ns <= 1.02 * t_min0) {
        changed = 1;
        continue;
      }
      if (s->V < v1) v2 = v1, v1 = s->V;
      else if (s->V > v1 && s->V < v2) v2 = s->V;
    }
    if (!(v2 < INFINITY)) continue;
    double t1 = burst0_time(c, c->ks[j], v1, tmp2), t2 = burst0_time(c, c->ks[j], v2, tmp2);
    double slope = (t2 - t1) / (v2 - v1);
    if (!(slope > 0)) continue;
    ri[j] = 1.0 / slope;
    tfs[ntf++] = t1 - v1 * slope;
  }
  double tf = ntf ? median(tfs, (size_t)ntf) : 0.0;
  double tmin = INFINITY, rcta = 0, rcap = 0;
  for (size_t i = 0; i < c->n; i++) tmin = fmin(tmin, S[c->rows[i]].t_iss_ns);
  if (!(tf > 1e-3 * tmin)) tf = 1e-3 * tmin;
  for (int j = 0; j < c->nk; j++)
    if (ri[j] > 0) rcta = fmax(rcta, ri[j] / c->ks[j]), rcap = fmax(rcap, ri[j]);
  /* A K whose smallest bursts sit on a latency floor (t_min) gives no slope, so its issue rate
   * is unknown: start the cap at the largest measured r_iss (modes 0, 1) or at what r_cta
   * gives that K (mode 2). */
  for (int j = 0; j < c->nk && rcta > 0; j++)
    if (!(ri[j] > 0) && mode >= 1) {
      changed = 1;
      if (mode == 2) rcap = fmax(rcap, rcta * c->ks[j]);
    }
  if (!(rcta > 0)) {
    for (size_t i = 0; i < c->n; i++) {
      const xs_sample* s = &S[c->rows[i]];
      if (s->burst_index == 0) rcap = fmax(rcap, s->V / s->t_iss_ns), rcta = fmax(rcta, s->V / s->t_iss_ns / s->K);
    }
  }
  if (!(rcta > 0)) rcta = rcap = 2.0 * R;
  /* Q(K): bursts that overflow from idle: T = tf + u/r + (V-u)/R, Q = u (1 - R/r). */
  double qfallback = 0;
  double rq_hi[XS_PROFILE_MAX_QPTS] = {0}, rq_lo[XS_PROFILE_MAX_QPTS] = {0};
  double rq_x[XS_PROFILE_MAX_QPTS] = {0};
  for (int j = 0; j < c->nk; j++) {
    double r = fmin(c->ks[j] * rcta, rcap);
    size_t nq = 0;
    double qlow = 0;
    for (size_t i = 0; i < c->n && r > R; i++) {
      const xs_sample* s = &S[c->rows[i]];
      if (s->burst_index != 0 || s->K != c->ks[j]) continue;
      double t0 = tf + s->V / r;
      if (s->t_iss_ns > 1.1 * t0) {
        double u = (s->V / R - (s->t_iss_ns - tf)) / (1.0 / R - 1.0 / r);
        if (u > 0) tmp2[nq] = s->V, tmp[nq++] = u * (1.0 - R / r);
      } else if (s->t_iss_ns < 1.05 * t0) {
        qlow = fmax(qlow, s->V * (1.0 - R / r));
      }
    }
    /* the relaxing room: the room of the smallest overflowing burst (or the largest free
     * growth, if larger) starts Qb, that of the largest Qr, and X0 is where the room has come
     * half way down, in bytes issued at the drain rate */
    if (c->relax && nq >= 2) {
      size_t ilo = 0, ihi = 0;
      for (size_t k = 1; k < nq; k++) {
        if (tmp2[k] < tmp2[ilo]) ilo = k;
        if (tmp2[k] > tmp2[ihi]) ihi = k;
      }
      rq_hi[j] = fmax(tmp[ilo], qlow);
      rq_lo[j] = fmin(tmp[ihi], rq_hi[j]);
      double mid = 0.5 * (rq_hi[j] + rq_lo[j]), best = INFINITY;
      for (size_t k = 0; k < nq; k++)
        if (fabs(tmp[k] - mid) < best) best = fabs(tmp[k] - mid), rq_x[j] = tmp2[k];
      rq_x[j] = fmax(rq_x[j] - rq_hi[j] * r / (r - R), 0.1 * rq_hi[j]) / log(2.0);
    }
    double q = nq ? median(tmp, nq) : (qlow > 0 ? 1.2 * qlow : 0.0);
    th[NP_BASE + j] = q;
    if (q > qfallback) qfallback = q;
  }
  if (!(qfallback > 0)) qfallback = vmed;
  th[0] = log(tf);
  th[1] = log(rcta);
  th[2] = log(fmax(rcap, rcta));
  th[3] = log(R > 0 ? R : 1.0);
  for (int j = 0; j < c->nk; j++)
    th[NP_BASE + j] = log(th[NP_BASE + j] > 0 ? th[NP_BASE + j] : qfallback);
  if (c->refine) th[NP_BASE + c->nk] = log(t_min0 > 0 ? t_min0 : 1.0);
  /* burst room: the overflow rows above estimate what one burst from idle sees (Qb); the
   * accumulated capacity Q starts above it, so that both are active. */
  for (int j = 0; c->room && j < c->nk; j++) {
    th[NP_BASE + c->nk + c->refine + j] = th[NP_BASE + j];
    th[NP_BASE + j] += log(1.5);
  }
  /* R(K): the same drain-bound statistic as R, per K (ratio to the smallest K's); 1 when a K
   * has too few such rows */
  for (int j = 1; c->rk && j < c->nk; j++) {
    double rj[2] = {0, 0};
    for (int h = 0; h < 2; h++) {
      double kk = h ? c->ks[j] : c->ks[0];
      m = 0;
      for (size_t i = 0; i < c->n; i++) {
        const xs_sample* s = &S[c->rows[i]];
        double g = xsi_row_gap(s);
        if (s->K == kk && s->burst_index >= 1 && g <= gmin && s->V >= vmed)
          tmp[m++] = s->V / (s->t_iss_ns + g);
      }
      rj[h] = m >= 5 ? median(tmp, m) : 0.0;
    }
    th[c->i_rk + j - 1] = rj[0] > 0 && rj[1] > 0 ? log(rj[1] / rj[0]) : 0.0;
  }
  if (c->rk && R > 0) { /* R is then R(K_0) */
    m = 0;
    for (size_t i = 0; i < c->n; i++) {
      const xs_sample* s = &S[c->rows[i]];
      double g = xsi_row_gap(s);
      if (s->K == c->ks[0] && s->burst_index >= 1 && g <= gmin && s->V >= vmed)
        tmp[m++] = s->V / (s->t_iss_ns + g);
    }
    if (m >= 5) th[3] = log(median(tmp, m));
  }
  /* the relaxing room from the overflowing bursts above; a K without two of them starts with
   * Qr = 0.8 Qb and X0 = 2 Qb */
  for (int j = 0; c->relax && j < c->nk; j++) {
    double* qb = &th[NP_BASE + c->nk + c->refine + j];
    if (rq_hi[j] > 0 && rq_lo[j] > 0 && rq_x[j] > 0) {
      *qb = log(rq_hi[j]);
      th[NP_BASE + j] = fmax(th[NP_BASE + j], *qb + log(1.5));
      th[c->i_rel + j] = logit(rq_lo[j] / q1_of(c, th, j));
      th[c->i_rel + c->nk + j] = log(rq_x[j]);
    } else {
      th[c->i_rel + j] = logit(0.8);
      th[c->i_rel + c->nk + j] = *qb + log(2.0);
    }
  }
  return changed;
}

/* Levenberg-Marquardt with Huber IRLS weights. Returns iterations used. */
static int lm(double* th, int np, const fit_ctx* c, int max_iter, double* work) {
  size_t n = c->n;
  double *r = work, *rt = r + n, *J = rt + n; /* J: np columns of n */
  double A[NP_MAX * NP_MAX], g[NP_MAX], trial[NP_MAX];
  residuals(r, c, th);
  double cost = huber_cost(r, n, c->delta), lambda = 1e-3;
  int it = 0, small = 0;
  for (; it < max_iter; it++) {
    for (int k = 0; k < np; k++) {
      double h = 1e-6, save = th[k];
      th[k] = save + h;
      residuals(J + (size_t)k * n, c, th);
      th[k] = save;
      for (size_t i = 0; i < n; i++) J[(size_t)k * n + i] = (J[(size_t)k * n + i] - r[i]) / h;
    }
    memset(A, 0, sizeof A);
    memset(g, 0, sizeof g);
    for (size_t i = 0; i < n; i++) {
      double a = fabs(r[i]), w = a <= c->delta ? 1.0 : c->delta / a;
      for (int k = 0; k < np; k++) {
        double jk = J[(size_t)k * n + i] * w;
        g[k] += jk * r[i];
        for (int l = k; l < np; l++) A[k * np + l] += jk * J[(size_t)l * n + i];
      }
    }
    for (int k = 0; k < np; k++)
      for (int l = 0; l < k; l++) A[k * np + l] = A[l * np + k];
    int accepted = 0;
    for (int tries = 0; tries < 12 && !accepted; tries++) {
      double M[NP_MAX * NP_MAX], d[NP_MAX];
      memcpy(M, A, sizeof(double) * (size_t)(np * np));
      for (int k = 0; k < np; k++) {
        M[k * np + k] += lambda * fmax(A[k * np + k], 1e-12);
        d[k] = -g[k];
      }
      if (solve(M, d, np)) {
        lambda *= 10;
        continue;
      }
      for (int k = 0; k < np; k++) trial[k] = fmin(fmax(th[k] + fmax(fmin(d[k], 2.0), -2.0), -14.0), 35.0);
      residuals(rt, c, trial);
      double nc = huber_cost(rt, n, c->delta);
      if (nc < cost) {
        double rel = (cost - nc) / fmax(cost, 1e-300);
        memcpy(th, trial, sizeof(double) * (size_t)np);
        memcpy(r, rt, sizeof(double) * n);
        cost = nc;
        lambda = fmax(lambda / 3.0, 1e-9);
        accepted = 1;
        small = rel < 1e-10 ? small + 1 : 0;
      } else {
        lambda *= 4.0;
      }
    }
    if (!accepted || small >= 3) break;
  }
  return it + 1;
}

static double cost_of(const fit_ctx* c, const double* th, double* work) {
  residuals(work, c, th);
  return huber_cost(work, c->n, c->delta);
}

/* The starts of the fit: the initial guess of the data, and with the latency floor two more that
 * account for it (the floor can hide the slope of small bursts), when they differ from the
 * first; the lowest robust cost on the fitted rows wins. Returns the iterations of the winner. */
static int fit_starts(double* th, const fit_ctx* c, int np, int max_iter, double* work) {
  initial_guess(th, c, work, work + c->n, 0);
  int iters = lm(th, np, c, max_iter, work);
  for (int mode = 1; c->refine && mode <= 2; mode++) {
    double th2[NP_MAX];
    if (!initial_guess(th2, c, work, work + c->n, mode)) break;
    int it2 = lm(th2, np, c, max_iter, work);
    if (cost_of(c, th2, work) < cost_of(c, th, work)) {
      memcpy(th, th2, sizeof th2);
      iters = it2;
    }
  }
  return iters;
}

static uint64_t splitmix64(uint64_t* s) {
  uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

static const xs_sample* g_sort_s; /* for the config sort (single-threaded use within fit) */
static int cmp_cfg(const void* a, const void* b) {
  const xs_sample *x = &g_sort_s[*(const size_t*)a], *y = &g_sort_s[*(const size_t*)b];
  if (x->K != y->K) return x->K < y->K ? -1 : 1;
  if (x->V != y->V) return x->V < y->V ? -1 : 1;
  if (x->G != y->G) return x->G < y->G ? -1 : 1;
  return 0;
}

/* mark[i]: 0 fitted, 1 held out, 2 other transport. */
static xs_result split_rows(uint8_t* mark, const xs_sample* S, size_t n, const xs_fit_options* o) {
  size_t m = 0;
  size_t* idx = malloc((n + 1) * sizeof *idx);
  long* cfg = malloc((n + 1) * sizeof *cfg);
  if (!idx || !cfg) {
    free(idx);
    free(cfg);
    return xsi_set_error(XS_ERR_NO_MEMORY, "fit: %zu rows", n);
  }
  for (size_t i = 0; i < n; i++) {
    mark[i] = 2;
    if (!o->transport || strcmp(S[i].transport, o->transport) == 0) idx[m++] = i, mark[i] = 0;
  }
  g_sort_s = S;
  qsort(idx, m, sizeof *idx, cmp_cfg);
  long ncfg = 0;
  for (size_t i = 0; i < m; i++) {
    if (i > 0 && cmp_cfg(&idx[i - 1], &idx[i]) != 0) ncfg++;
    cfg[i] = ncfg;
  }
  ncfg = m ? ncfg + 1 : 0;
  long nh = (long)floor(o->holdout_fraction * (double)ncfg + 0.5);
  if (nh > ncfg - 1) nh = ncfg > 0 ? ncfg - 1 : 0;
  long* perm = malloc(((size_t)ncfg + 1) * sizeof *perm);
  uint8_t* held = calloc((size_t)ncfg + 1, 1);
  if (!perm || !held) {
    free(idx), free(cfg), free(perm), free(held);
    return xsi_set_error(XS_ERR_NO_MEMORY, "fit: %ld configurations", ncfg);
  }
  uint64_t st = o->seed;
  for (long i = 0; i < ncfg; i++) perm[i] = i;
  for (long i = ncfg - 1; i > 0; i--) {
    long j = (long)(splitmix64(&st) % (uint64_t)(i + 1));
    long t = perm[i];
    perm[i] = perm[j], perm[j] = t;
  }
  for (long i = 0; i < nh; i++) held[perm[i]] = 1;
  for (size_t i = 0; i < m; i++)
    if (held[cfg[i]]) mark[idx[i]] = 1;
  free(idx), free(cfg), free(perm), free(held);
  return XS_OK;
}

xs_result xs_model_fit(xs_link_profile* out, xs_fit_report* report, uint8_t* holdout,
                       const xs_dataset* d, const xs_fit_options* opt) {
  XSI_ARG(out != NULL && d != NULL, "out or dataset is NULL");
  xs_fit_options o = XS_FIT_OPTIONS_INITIALIZER;
  if (opt) {
    XSI_ARG(opt->size >= sizeof o, "fit options: 'size' not set (use XS_FIT_OPTIONS_INITIALIZER)");
    o = *opt;
  }
  XSI_ARG(xsi_finite(o.holdout_fraction) && o.holdout_fraction >= 0 && o.holdout_fraction <= 0.9,
          "holdout fraction must be in [0, 0.9] (got %g)", o.holdout_fraction);
  XSI_ARG(xsi_finite(o.huber_delta) && o.huber_delta > 0, "huber_delta must be > 0");
  XSI_ARG(o.max_iter >= 1 && o.max_iter <= 100000, "max_iter must be in [1, 100000]");
  XSI_ARG(o.refine >= 0 && o.refine <= 3, "refine must be in [0, 3] (got %d)", o.refine);
  const xs_sample* S = xs_dataset_samples(d);
  size_t N = xs_dataset_size(d);
  xs_result res = XS_OK;
  uint8_t* mark = malloc(N + 1);
  double* work = NULL;
  size_t* seq_order = NULL;
  fit_ctx c;
  memset(&c, 0, sizeof c);
  c.s = S, c.delta = o.huber_delta, c.refine = o.refine != 0, c.room = o.refine >= 2;
  c.rk = c.relax = o.refine >= 3;
  c.rows = malloc((N + 1) * sizeof *c.rows);
  c.pred = malloc((N + 1) * sizeof *c.pred);
  if (!mark || !c.rows || !c.pred) XSI_FAIL(res, XS_ERR_NO_MEMORY, fail, "fit: %zu rows", N);
  XSI_CHECK_GOTO(xsi_seq_order(&seq_order, &c.nseq, S, N), res, fail);
  c.seq_order = seq_order;
  XSI_CHECK_GOTO(split_rows(mark, S, N, &o), res, fail);
  double kall[4096];
  int nkall = 0;
  for (size_t i = 0; i < N; i++) {
    if (mark[i] != 0) continue;
    c.rows[c.n++] = i;
    int seen = 0;
    for (int j = 0; j < nkall; j++) seen |= kall[j] == S[i].K;
    if (!seen && nkall < 4096) kall[nkall++] = S[i].K;
  }
  if (c.n == 0)
    XSI_FAIL(res, XS_ERR_INVALID_ARG, fail, "fit: no rows%s%s", o.transport ? " of transport " : "",
             o.transport ? o.transport : "");
  qsort(kall, (size_t)nkall, sizeof *kall, cmp_double);
  c.nk = nkall <= XS_PROFILE_MAX_QPTS ? nkall : XS_PROFILE_MAX_QPTS;
  for (int j = 0; j < c.nk; j++) /* more K than points: spread the points over the range */
    c.ks[j] = nkall <= XS_PROFILE_MAX_QPTS ? kall[j]
                                           : kall[(int)lround((double)j * (nkall - 1) / (c.nk - 1))];
  c.i_rk = NP_BASE + c.nk + (c.refine ? NP_REFINE : 0) + (c.room ? c.nk : 0);
  c.i_rel = c.i_rk + (c.rk ? c.nk - 1 : 0);
  int np = c.i_rel + (c.relax ? 2 * c.nk : 0);
  if (c.n < (size_t)np + 1)
    XSI_FAIL(res, XS_ERR_NUMERIC, fail, "fit: %zu fitted rows cannot determine %d parameters", c.n,
             np);
  work = malloc(((size_t)np + 3) * c.n * sizeof *work);
  if (!work) XSI_FAIL(res, XS_ERR_NO_MEMORY, fail, "fit: %zu rows", c.n);
  double th[NP_MAX];
  int iters = fit_starts(th, &c, np, o.max_iter, work);
  /* With the drain rate per K or the relaxing room, also start from the fit without them
   * (R(K) = R, a room that barely relaxes): a nested model, so the result is never worse on
   * the fitted rows than the fit without the refinement; the lowest robust cost wins. */
  if (c.rk || c.relax) {
    fit_ctx c2 = c;
    c2.rk = c2.relax = 0;
    double base[NP_MAX], th2[NP_MAX];
    fit_starts(base, &c2, c.i_rk, o.max_iter, work);
    /* base extended by neutral values: R(K) = R, Qr = 0.9 Q1 relaxing over 10 Q1 */
    memcpy(th2, base, sizeof base);
    for (int j = 1; c.rk && j < c.nk; j++) th2[c.i_rk + j - 1] = 0.0;
    for (int j = 0; c.relax && j < c.nk; j++) {
      th2[c.i_rel + j] = logit(0.9);
      th2[c.i_rel + c.nk + j] = log(q1_of(&c, base, j) * 10.0);
    }
    double th3[NP_MAX];
    memcpy(th3, th2, sizeof th2);
    int it2 = lm(th2, np, &c, o.max_iter, work);
    if (cost_of(&c, th2, work) < cost_of(&c, th, work)) {
      memcpy(th, th2, sizeof th2);
      iters = it2;
    }
    /* and with both: the relaxing room first (R(K) held at R), then everything */
    if (c.rk && c.relax) {
      fit_ctx c3 = c;
      c3.rk = 0;
      c3.i_rel = c.i_rk;
      for (int j = 0; j < 2 * c.nk; j++) th3[c3.i_rel + j] = th3[c.i_rel + j];
      lm(th3, c3.i_rel + 2 * c.nk, &c3, o.max_iter, work);
      for (int j = 2 * c.nk - 1; j >= 0; j--) th3[c.i_rel + j] = th3[c3.i_rel + j];
      for (int j = 1; j < c.nk; j++) th3[c.i_rk + j - 1] = 0.0;
      int it3 = lm(th3, np, &c, o.max_iter, work);
      if (cost_of(&c, th3, work) < cost_of(&c, th, work)) {
        memcpy(th, th3, sizeof th3);
        iters = it3;
      }
    }
  }
  xs_link_profile p = *out;
  if (p.size < sizeof p || xs_profile_validate(&p) != XS_OK) {
    xs_link_profile init = XS_LINK_PROFILE_INITIALIZER;
    p = init;
  }
  to_profile(&p, &c, th);
  /* unfair_mean: mean = T0 + u (T - T0) on the rows that stalled. */
  double num = 0, den = 0;
  for (size_t i = 0; i < c.n; i++) {
    const xs_sample* s = &S[c.rows[i]];
    if (!(s->t_iss_mean_ns > 0)) continue;
    xsi_link l = xsi_link_of(&p, s->K);
    double t0 = xsi_t0(&l, s->V), x = s->t_iss_ns - t0;
    if (x > 0.05 * t0) num += (s->t_iss_mean_ns - t0) * x, den += x * x;
  }
  if (den > 0) p.unfair_mean = fmin(1.0, fmax(0.0, num / den));
  p.calibrated = 1;
  if (!p.transport[0] && o.transport) snprintf(p.transport, sizeof p.transport, "%s", o.transport);
  if (!p.transport[0]) snprintf(p.transport, sizeof p.transport, "%s", S[c.rows[0]].transport);
  if (!p.method[0]) snprintf(p.method, sizeof p.method, "xs_model_fit of %zu rows", c.n);
  if (xs_profile_validate(&p) != XS_OK)
    XSI_FAIL(res, XS_ERR_NUMERIC, fail, "fit did not converge to a valid profile: %s",
             xs_last_error());
  if (report) {
    xs_fit_report rp; /* the held-out figures, then the fitted rows' */
    XSI_CHECK_GOTO(xs_model_score(&rp, d, &p, mark, 1), res, fail);
    rp.iterations = iters;
    for (size_t i = 0; i < N; i++)
      rp.n_fit += mark[i] == 0;
    XSI_CHECK_GOTO(xs_model_evaluate(&rp.fluid_fit, &rp.closed_fit, d, &p, mark, 0), res, fail);
    residuals(work, &c, th);
    double ss = 0;
    for (size_t i = 0; i < c.n; i++) ss += work[i] * work[i];
    rp.rms_rel_residual = sqrt(ss / (double)c.n);
    *report = rp;
  }
  if (holdout)
    for (size_t i = 0; i < N; i++) holdout[i] = mark[i] == 1;
  *out = p;
  free(mark), free(c.rows), free(work), free(c.pred), free(seq_order);
  return XS_OK;
fail:
  free(mark), free(c.rows), free(work), free(c.pred), free(seq_order);
  return res;
}
