/* sweep.c — the calibration sweep planner, the measurement CSV writer and the pure analysis
 * helpers of calibration (knee, measured transition gap), plus the xbench name parsers.
 * Pure C: runs and is tested without a GPU (tests/unit/test_sweep.c). */
#include "core/fileio.h"
#include "core/internal.h"
#include "core/strbuf.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------------- names ----- */

static const char* const g_flavours[XS_FLAVOUR_COUNT] = {"st.global.v4", "st.relaxed.sys.v4",
                                                         "st.release.sys.v4", "tma.bulk"};
static const char* const g_flavour_short[XS_FLAVOUR_COUNT] = {"st", "relaxed", "release", "tma"};

const char* xs_flavour_name(xs_flavour f) {
  return (unsigned)f < XS_FLAVOUR_COUNT ? g_flavours[f] : "unknown";
}
const char* xs_gap_mode_name(xs_gap_mode m) {
  return m == XS_GAP_FMA ? "fma" : m == XS_GAP_SPIN ? "spin" : "unknown";
}
const char* xs_sync_mode_name(xs_sync_mode m) {
  return m == XS_SYNC_GRID ? "sync" : m == XS_SYNC_FREE ? "free" : "unknown";
}

xs_result xs_flavour_parse(xs_flavour* out, const char* s) {
  XSI_ARG(out && s, "xs_flavour_parse: NULL argument");
  for (int i = 0; i < XS_FLAVOUR_COUNT; i++)
    if (!strcmp(s, g_flavours[i]) || !strcmp(s, g_flavour_short[i])) {
      *out = (xs_flavour)i;
      return XS_OK;
    }
  return xsi_set_error(XS_ERR_INVALID_ARG,
                       "unknown store flavour '%s' (known: st.global.v4|st, "
                       "st.relaxed.sys.v4|relaxed, st.release.sys.v4|release, tma.bulk|tma)",
                       s);
}

xs_result xs_gap_mode_parse(xs_gap_mode* out, const char* s) {
  XSI_ARG(out && s, "xs_gap_mode_parse: NULL argument");
  if (!strcmp(s, "fma"))
    *out = XS_GAP_FMA;
  else if (!strcmp(s, "spin"))
    *out = XS_GAP_SPIN;
  else
    return xsi_set_error(XS_ERR_INVALID_ARG, "unknown gap mode '%s' (known: fma, spin)", s);
  return XS_OK;
}

xs_result xs_sync_mode_parse(xs_sync_mode* out, const char* s) {
  XSI_ARG(out && s, "xs_sync_mode_parse: NULL argument");
  if (!strcmp(s, "sync"))
    *out = XS_SYNC_GRID;
  else if (!strcmp(s, "free"))
    *out = XS_SYNC_FREE;
  else
    return xsi_set_error(XS_ERR_INVALID_ARG, "unknown sync mode '%s' (known: sync, free)", s);
  return XS_OK;
}

xs_result xs_target_parse(xs_target* out, const char* s) {
  XSI_ARG(out && s, "xs_target_parse: NULL argument");
  if (!strcmp(s, "host")) {
    out->kind = XS_TARGET_HOST, out->peer = -1;
    return XS_OK;
  }
  if (!strcmp(s, "hbm")) {
    out->kind = XS_TARGET_HBM, out->peer = -1;
    return XS_OK;
  }
  if (!strncmp(s, "peer:", 5) && s[5] >= '0' && s[5] <= '9') {
    char* end = NULL;
    long p = strtol(s + 5, &end, 10);
    if (*end == '\0' && p >= 0 && p < 1024) {
      out->kind = XS_TARGET_PEER, out->peer = (int)p;
      return XS_OK;
    }
  }
  return xsi_set_error(XS_ERR_INVALID_ARG, "unknown target '%s' (known: host, hbm, peer:N)", s);
}

xs_result xs_target_name(char* buf, size_t n, xs_target t) {
  XSI_ARG(buf && n >= 16, "xs_target_name: buf must hold >= 16 bytes");
  if (t.kind == XS_TARGET_HOST)
    snprintf(buf, n, "host");
  else if (t.kind == XS_TARGET_HBM)
    snprintf(buf, n, "hbm");
  else if (t.kind == XS_TARGET_PEER && t.peer >= 0)
    snprintf(buf, n, "peer:%d", t.peer);
  else
    return xsi_set_error(XS_ERR_INVALID_ARG, "xs_target_name: bad target kind %d", t.kind);
  return XS_OK;
}

const char* xs_sweep_phase_name(xs_sweep_phase p) {
  static const char* const names[] = {"t0", "R", "Q", "grid", "repeat"};
  return (unsigned)p <= XS_PHASE_REPEAT ? names[p] : "unknown";
}

/* ----------------------------------------------------------------------- CSV rows ----- */

xs_result xs_calib_rows_append(xs_calib_row** rows, size_t* n, size_t* cap,
                               const xs_xbench_config* cfg, const xs_xbench_summary* s,
                               const xs_xbench_burst* bursts, const char* phase, long point,
                               int rep) {
  XSI_ARG(rows && n && cap && cfg && s && bursts && phase, "xs_calib_rows_append: NULL argument");
  XSI_ARG(cfg->bursts >= 1, "xs_calib_rows_append: cfg->bursts must be >= 1");
  size_t need = *n + (size_t)cfg->bursts;
  if (need > *cap) {
    size_t nc = *cap ? *cap : 1024;
    while (nc < need)
      nc *= 2;
    xs_calib_row* r = (xs_calib_row*)realloc(*rows, nc * sizeof *r);
    if (!r) return xsi_set_error(XS_ERR_NO_MEMORY, "calibration rows: %zu rows", nc);
    *rows = r, *cap = nc;
  }
  for (int b = 0; b < cfg->bursts; b++) {
    xs_calib_row* r = &(*rows)[(*n)++];
    memset(r, 0, sizeof *r);
    snprintf(r->transport, sizeof r->transport, "%s", s->transport);
    r->K = cfg->K;
    r->V = s->V;
    r->gap_ns = s->gap_measured_ns;
    r->burst_index = b;
    r->t_iss_ns = bursts[b].t_iss_ns;
    r->t_iss_mean_ns = bursts[b].t_iss_mean_ns;
    r->gap_nominal_ns = cfg->gap_ns;
    r->t_ret_ns = bursts[b].t_ret_ns;
    r->t_iss_cyc_ns = bursts[b].t_iss_cyc_ns;
    snprintf(r->flavour, sizeof r->flavour, "%s", xs_flavour_name(cfg->flavour));
    snprintf(r->mode, sizeof r->mode, "%s", xs_sync_mode_name(cfg->sync_mode));
    snprintf(r->gap_mode, sizeof r->gap_mode, "%s", xs_gap_mode_name(cfg->gap_mode));
    snprintf(r->phase, sizeof r->phase, "%.7s", phase);
    r->point = point;
    r->rep = rep;
  }
  return XS_OK;
}

/* Shortest of %.15g / %.17g that reads back to the same double; non-finite as "nan". */
static void put_num(xsi_strbuf* sb, double x) {
  char buf[40];
  if (!isfinite(x)) {
    xsi_sb_puts(sb, "nan");
    return;
  }
  snprintf(buf, sizeof buf, "%.15g", x);
  if (strtod(buf, NULL) != x) snprintf(buf, sizeof buf, "%.17g", x);
  xsi_sb_puts(sb, buf);
}

/* Metadata strings are written as they are when they contain no comma, quote or newline,
 * otherwise quoted with doubled quotes. */
static void put_str(xsi_strbuf* sb, const char* s) {
  if (!strpbrk(s, ",\"\n\r")) {
    xsi_sb_puts(sb, s);
    return;
  }
  xsi_sb_puts(sb, "\"");
  for (; *s; s++) {
    if (*s == '"') xsi_sb_puts(sb, "\"");
    xsi_sb_append(sb, s, 1);
  }
  xsi_sb_puts(sb, "\"");
}

xs_result xs_calib_csv_format(char** out, size_t* len, const xs_calib_row* rows, size_t n) {
  XSI_ARG(out && (rows || n == 0), "xs_calib_csv_format: NULL argument");
  xsi_strbuf sb = XSI_STRBUF_INIT;
  xsi_sb_puts(&sb, "transport,K,V_bytes,gap_ns,burst_index,t_iss_ns,t_iss_mean_ns,gap_nominal_ns,"
                   "t_ret_ns,t_iss_cyc_ns,flavour,mode,gap_mode,phase,point,rep\n");
  for (size_t i = 0; i < n; i++) {
    const xs_calib_row* r = &rows[i];
    put_str(&sb, r->transport);
    xsi_sb_printf(&sb, ",%d,", r->K);
    put_num(&sb, r->V);
    xsi_sb_puts(&sb, ",");
    put_num(&sb, r->gap_ns);
    xsi_sb_printf(&sb, ",%ld,", r->burst_index);
    put_num(&sb, r->t_iss_ns);
    xsi_sb_puts(&sb, ",");
    put_num(&sb, r->t_iss_mean_ns);
    xsi_sb_puts(&sb, ",");
    put_num(&sb, r->gap_nominal_ns);
    xsi_sb_puts(&sb, ",");
    put_num(&sb, r->t_ret_ns);
    xsi_sb_puts(&sb, ",");
    put_num(&sb, r->t_iss_cyc_ns);
    xsi_sb_puts(&sb, ",");
    put_str(&sb, r->flavour);
    xsi_sb_puts(&sb, ",");
    put_str(&sb, r->mode);
    xsi_sb_puts(&sb, ",");
    put_str(&sb, r->gap_mode);
    xsi_sb_puts(&sb, ",");
    put_str(&sb, r->phase);
    xsi_sb_printf(&sb, ",%ld,%d\n", r->point, r->rep);
  }
  xs_result res = xsi_sb_status(&sb);
  if (res != XS_OK) {
    xsi_sb_free(&sb);
    return xsi_set_error(res, "calibration CSV: out of memory (%zu rows)", n);
  }
  if (len) *len = sb.len;
  *out = sb.data;
  return XS_OK;
}

xs_result xs_calib_csv_write(const char* path, const xs_calib_row* rows, size_t n) {
  XSI_ARG(path, "xs_calib_csv_write: NULL path");
  char* text = NULL;
  size_t len = 0;
  XSI_CHECK(xs_calib_csv_format(&text, &len, rows, n));
  xs_result res = xsi_write_file_atomic(path, text ? text : "", len);
  free(text);
  return res;
}

/* ------------------------------------------------------------------- the planner ----- */

xs_result xs_sweep_estimate(double* ns, const xs_sweep_point* pt, const xs_link_profile* p,
                            double overhead_ns) {
  XSI_ARG(ns && pt && p, "xs_sweep_estimate: NULL argument");
  XSI_ARG(pt->K >= 1 && pt->V > 0 && pt->G >= 0 && pt->bursts >= 1,
          "xs_sweep_estimate: bad point (K %d, V %g, G %g, bursts %d)", pt->K, pt->V, pt->G,
          pt->bursts);
  xs_steady st;
  XSI_CHECK(xs_fluid_periodic(&st, p, (double)pt->K, pt->V, pt->G));
  double t = st.t_iss_first_ns + (pt->bursts - 1) * (st.t_iss_ns + pt->G) + pt->G;
  /* NOTE: a grid barrier per burst (~2 us) is not in the model; counted here. */
  t += 2000.0 * pt->bursts;
  *ns = t + (overhead_ns > 0 ? overhead_ns : 400e3);
  return XS_OK;
}

typedef struct plan_ctx {
  xs_sweep_point* out;
  size_t cap, n;
  const xs_sweep_options* opt;
  const xs_link_profile* p;
  double overhead;
} plan_ctx;

static xs_result add_point(plan_ctx* c, xs_sweep_phase ph, int K, double V, double G, int bursts,
                           int rep, double centre) {
  if (c->n >= c->cap)
    return xsi_set_error(XS_ERR_EXHAUSTED, "sweep plan: more than %zu points", c->cap);
  xs_sweep_point* pt = &c->out[c->n];
  pt->phase = ph, pt->K = K, pt->V = V, pt->G = G, pt->bursts = bursts, pt->rep = rep;
  pt->G_centre = centre;
  XSI_CHECK(xs_sweep_estimate(&pt->est_ns, pt, c->p, c->overhead));
  c->n++;
  return XS_OK;
}

/* K values: those of `ks` capped to the SM count, without duplicates, ascending. */
static int k_set(int* out, const int* ks, int nk, int sm) {
  int n = 0;
  for (int i = 0; i < nk; i++) {
    int k = ks[i] > sm ? sm : ks[i];
    int dup = 0;
    for (int j = 0; j < n; j++)
      dup |= out[j] == k;
    if (!dup && k >= 1) out[n++] = k;
  }
  return n;
}

xs_result xs_calib_predicted_settle_gap(double* G_ns, const xs_link_profile* p, double K, double V,
                                        double tol) {
  XSI_ARG(G_ns && p, "xs_calib_predicted_settle_gap: NULL argument");
  XSI_ARG(K >= 1 && V > 0 && isfinite(V), "xs_calib_predicted_settle_gap: bad K %g / V %g", K, V);
  if (!(tol > 0)) tol = 0.05;
  xs_steady st;
  XSI_CHECK(xs_fluid_periodic(&st, p, K, V, 0));
  double first = st.t_iss_first_ns;
  if (st.t_iss_ns <= (1.0 + tol) * first) {
    *G_ns = 0;
    return XS_OK;
  }
  /* steady T_iss does not grow with G; at G = V/R + first the stage empties every period */
  double lo = 0, hi = V / p->R + first + 1.0;
  XSI_CHECK(xs_fluid_periodic(&st, p, K, V, hi));
  for (int i = 0; i < 8 && st.t_iss_ns > (1.0 + tol) * first; i++) {
    hi *= 2;
    XSI_CHECK(xs_fluid_periodic(&st, p, K, V, hi));
  }
  if (st.t_iss_ns > (1.0 + tol) * first) {
    *G_ns = INFINITY;
    return XS_OK;
  }
  for (int i = 0; i < 60 && hi - lo > 1e-3 * hi; i++) {
    double mid = 0.5 * (lo + hi);
    XSI_CHECK(xs_fluid_periodic(&st, p, K, V, mid));
    if (st.t_iss_ns <= (1.0 + tol) * first)
      hi = mid;
    else
      lo = mid;
  }
  *G_ns = hi;
  return XS_OK;
}

/* The G value (ns) the grid of (K, V) surrounds: the predicted settle gap (the smallest free
 * gap when one exists; when the burst overflows the stage from idle, the gap after which
 * every burst is again like the first); the drain time V/R if none; at least 1 us. */
static xs_result centre_gap(double* G, const xs_link_profile* p, int K, double V) {
  double g = 0;
  XSI_CHECK(xs_calib_predicted_settle_gap(&g, p, (double)K, V, 0.05));
  if (!isfinite(g)) g = V / p->R;
  *G = g < 1000.0 ? 1000.0 : g;
  return XS_OK;
}

static double sum_est(const plan_ctx* c) {
  double s = 0;
  for (size_t i = 0; i < c->n; i++)
    s += c->out[i].est_ns;
  return s;
}

static xs_result plan_probes(plan_ctx* c) {
  const int full = c->opt->level == XS_CALIB_FULL;
  static const int kq[] = {16, 32, 132}, kf[] = {8, 16, 32, 64, 132};
  int ks[8];
  int nk = full ? k_set(ks, kf, 5, c->opt->sm_count) : k_set(ks, kq, 3, c->opt->sm_count);
  static const double vq[] = {262144, 1048576, 4194304};
  static const double vf[] = {131072, 262144, 524288, 1048576, 2097152, 4194304, 8388608};
  const double* vs = full ? vf : vq;
  int nv = full ? 7 : 3;
  double maxV = c->opt->max_V;
  /* T0: 4-burst sequences with a gap long enough to drain each burst (2 V/R + 10 us). */
  for (int i = 0; i < nk; i++)
    for (int j = 0; j < nv; j++)
      if (vs[j] <= maxV) {
        double G = 2.0 * vs[j] / c->p->R + 10e3;
        XSI_CHECK(add_point(c, XS_PHASE_T0, ks[i], vs[j], G < 20e3 ? 20e3 : G, 4, 0, 0));
      }
  /* R: long back-to-back sequences of 4 MiB bursts. */
  double vr = maxV < 4194304.0 ? maxV : 4194304.0;
  for (int i = 0; i < nk; i++)
    XSI_CHECK(add_point(c, XS_PHASE_R, ks[i], vr, 0, full ? 48 : 24, 0, 0));
  /* Q: single bursts, V geometric from 64 KiB to 16 MiB, 3 repetitions each. */
  int nq = full ? 13 : 9;
  for (int i = 0; i < nk; i++) {
    if (!full && ks[i] != ks[0] && ks[i] != ks[nk > 1 ? 1 : 0]) continue;
    for (int j = 0; j < nq; j++) {
      double V = 65536.0 * pow(256.0, (double)j / (nq - 1));
      V = 16.0 * ks[i] * ceil(V / (16.0 * ks[i]));
      if (V > maxV) continue;
      for (int r = 0; r < 3; r++)
        XSI_CHECK(add_point(c, XS_PHASE_Q, ks[i], V, 0, 1, r, 0));
    }
  }
  return XS_OK;
}

static xs_result plan_grid(plan_ctx* c) {
  const int full = c->opt->level == XS_CALIB_FULL;
  static const int kq[] = {16, 32, 132}, kf[] = {8, 16, 32, 64, 132};
  int ks[8];
  int nk = full ? k_set(ks, kf, 5, c->opt->sm_count) : k_set(ks, kq, 3, c->opt->sm_count);
  static const double vq[] = {524288, 1048576, 4194304};
  static const double vf[] = {262144, 524288, 1048576, 2097152, 4194304, 8388608};
  const double* vs = full ? vf : vq;
  int nv = full ? 6 : 3;
  static const double fq[] = {0, 0.5, 0.8, 0.9, 1.0, 1.1, 1.2, 1.6};
  static const double ff[] = {0,   0.25, 0.5, 0.7,  0.8, 0.85, 0.9, 0.95,
                              1.0, 1.05, 1.1, 1.15, 1.2, 1.35, 1.6, 2.2};
  const double* fs = full ? ff : fq;
  int nf = full ? 16 : 8;
  int base_bursts = full ? 32 : 24;
  for (int i = 0; i < nk; i++)
    for (int j = 0; j < nv; j++) {
      if (vs[j] > c->opt->max_V) continue;
      double Gc = 0;
      XSI_CHECK(centre_gap(&Gc, c->p, ks[i], vs[j]));
      for (int f = 0; f < nf; f++) {
        double G = fs[f] * Gc;
        xs_steady st;
        XSI_CHECK(xs_fluid_periodic(&st, c->p, (double)ks[i], vs[j], G));
        long need = 2 * st.bursts_to_steady + 4;
        int bursts = need > base_bursts ? (need > 64 ? 64 : (int)need) : base_bursts;
        XSI_CHECK(add_point(c, XS_PHASE_GRID, ks[i], vs[j], G, bursts, 0, Gc));
      }
    }
  /* Repeatability: the anchors' 16 CTAs x 1 MiB back to back, 5 times. */
  int kr = c->opt->sm_count < 16 ? c->opt->sm_count : 16;
  double vr = c->opt->max_V < 1048576.0 ? c->opt->max_V : 1048576.0;
  for (int r = 0; r < 5; r++)
    XSI_CHECK(add_point(c, XS_PHASE_REPEAT, kr, vr, 0, 32, r, 0));
  return XS_OK;
}

/* 1 if grid points i and j belong to the same (K, V). */
static int same_group(const xs_sweep_point* a, const xs_sweep_point* b) {
  return a->phase == XS_PHASE_GRID && b->phase == XS_PHASE_GRID && a->K == b->K && a->V == b->V;
}

/* Side of a grid point relative to its centre: -1 below, +1 above, 0 for G = 0 and the centre
 * (never dropped). */
static int side(const xs_sweep_point* p) {
  if (p->G <= 0 || fabs(p->G - p->G_centre) <= 1e-9 * p->G_centre) return 0;
  return p->G < p->G_centre ? -1 : 1;
}

static void drop(plan_ctx* c, size_t i) {
  memmove(&c->out[i], &c->out[i + 1], (c->n - i - 1) * sizeof c->out[0]);
  c->n--;
}

/* Keep the plan within the budget: (1) halve the bursts of grid sequences (not below 8);
 * (2) drop grid points farthest from their centre, keeping G = 0, the centre and at least one
 * point on each side of it; (3) drop whole (K, V) groups, the most expensive first, keeping at
 * least three. Deterministic (ties go to the first point). */
static void fit_budget(plan_ctx* c, double budget) {
  if (sum_est(c) <= budget) return;
  for (size_t i = 0; i < c->n; i++) {
    xs_sweep_point* pt = &c->out[i];
    if (pt->phase == XS_PHASE_GRID && pt->bursts > 8) {
      double per = (pt->est_ns - c->overhead) / pt->bursts;
      pt->bursts = pt->bursts / 2 < 8 ? 8 : pt->bursts / 2;
      pt->est_ns = c->overhead + per * pt->bursts;
    }
  }
  while (sum_est(c) > budget) {
    size_t worst = c->n;
    double wd = -1;
    for (size_t i = 0; i < c->n; i++) {
      const xs_sweep_point* pt = &c->out[i];
      int sd = pt->phase == XS_PHASE_GRID ? side(pt) : 0;
      if (!sd) continue;
      int others = 0;
      for (size_t j = 0; j < c->n; j++)
        others += j != i && same_group(pt, &c->out[j]) && side(&c->out[j]) == sd;
      double d = fabs(log(pt->G / pt->G_centre));
      if (others && d > wd + 1e-12) wd = d, worst = i;
    }
    if (worst == c->n) break;
    drop(c, worst);
  }
  while (sum_est(c) > budget) {
    size_t groups = 0, worst = c->n;
    double wsum = -1;
    for (size_t i = 0; i < c->n; i++) {
      int first = c->out[i].phase == XS_PHASE_GRID;
      for (size_t j = 0; j < i && first; j++)
        first = !same_group(&c->out[i], &c->out[j]);
      if (!first) continue;
      groups++;
      double s = 0;
      for (size_t j = i; j < c->n; j++)
        s += same_group(&c->out[i], &c->out[j]) ? c->out[j].est_ns : 0;
      if (s > wsum + 1e-9) wsum = s, worst = i;
    }
    if (groups <= 3 || worst == c->n) return;
    xs_sweep_point key = c->out[worst];
    for (size_t i = c->n; i-- > 0;)
      if (same_group(&key, &c->out[i])) drop(c, i);
  }
}

xs_result xs_sweep_plan(xs_sweep_point* out, size_t cap, size_t* n, int grid,
                        const xs_sweep_options* opt, const xs_link_profile* centre) {
  XSI_ARG(out && n && opt && centre, "xs_sweep_plan: NULL argument");
  XSI_ARG(opt->size == sizeof(xs_sweep_options), "xs_sweep_plan: opt->size mismatch (use "
                                                 "XS_SWEEP_OPTIONS_INITIALIZER)");
  XSI_ARG(opt->sm_count >= 1, "xs_sweep_plan: sm_count must be >= 1 (got %d)", opt->sm_count);
  XSI_ARG(opt->max_V >= 65536.0, "xs_sweep_plan: max_V must be >= 64 KiB (got %g)", opt->max_V);
  XSI_ARG(opt->budget_ns >= 0 && opt->overhead_ns >= 0, "xs_sweep_plan: negative budget");
  XSI_ARG(opt->level == XS_CALIB_QUICK || opt->level == XS_CALIB_FULL,
          "xs_sweep_plan: bad level %d", (int)opt->level);
  XSI_CHECK(xs_profile_validate(centre));
  plan_ctx c = {out, cap, 0, opt, centre, opt->overhead_ns > 0 ? opt->overhead_ns : 400e3};
  *n = 0;
  if (grid)
    XSI_CHECK(plan_grid(&c));
  else
    XSI_CHECK(plan_probes(&c));
  double budget =
      opt->budget_ns > 0 ? opt->budget_ns : (opt->level == XS_CALIB_FULL ? 300e9 : 60e9);
  /* The probes and the grid share the budget: probes 30%, grid 50%, 20% reserve. */
  fit_budget(&c, budget * (grid ? 0.5 : 0.3));
  *n = c.n;
  return XS_OK;
}

/* -------------------------------------------------------------------- analysis ----- */

/* Least-squares line through (x[i], y[i]), i in [a, b): residual sum of squares. */
static double line_sse(const double* x, const double* y, size_t a, size_t b) {
  double n = (double)(b - a), sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (size_t i = a; i < b; i++)
    sx += x[i], sy += y[i], sxx += x[i] * x[i], sxy += x[i] * y[i];
  double den = n * sxx - sx * sx;
  double slope = den != 0 ? (n * sxy - sx * sy) / den : 0;
  double icpt = (sy - slope * sx) / n;
  double sse = 0;
  for (size_t i = a; i < b; i++) {
    double r = y[i] - (icpt + slope * x[i]);
    sse += r * r;
  }
  return sse;
}

xs_result xs_calib_knee(double* v_knee, double* q_bytes, const double* V, const double* t_ns,
                        size_t n, double R) {
  XSI_ARG(v_knee && q_bytes && V && t_ns, "xs_calib_knee: NULL argument");
  XSI_ARG(n >= 4, "xs_calib_knee: need >= 4 points (got %zu)", n);
  XSI_ARG(R > 0 && isfinite(R), "xs_calib_knee: R must be > 0 (got %g)", R);
  for (size_t i = 0; i < n; i++) {
    XSI_ARG(isfinite(V[i]) && isfinite(t_ns[i]), "xs_calib_knee: point %zu not finite", i);
    XSI_ARG(i == 0 || V[i] > V[i - 1], "xs_calib_knee: V must increase (point %zu)", i);
  }
  /* The knee is shared by both segments: segment 1 = [0, k], segment 2 = [k, n). */
  size_t best = 1;
  double best_sse = INFINITY;
  for (size_t k = 1; k + 1 < n; k++) {
    double sse = line_sse(V, t_ns, 0, k + 1) + line_sse(V, t_ns, k, n);
    if (sse < best_sse) best_sse = sse, best = k;
  }
  *v_knee = V[best];
  double q = V[best] - R * t_ns[best];
  *q_bytes = q > 0 ? q : 0;
  return XS_OK;
}

xs_result xs_calib_settle_gap(double* g_meas, const double* g, const double* ss, size_t n,
                              double t0, double tol) {
  XSI_ARG(g_meas && g && ss, "xs_calib_settle_gap: NULL argument");
  XSI_ARG(n >= 1 && t0 > 0 && isfinite(t0), "xs_calib_settle_gap: need n >= 1 and t0 > 0");
  if (!(tol > 0)) tol = 0.05;
  for (size_t i = 1; i < n; i++)
    XSI_ARG(g[i] >= g[i - 1], "xs_calib_settle_gap: gaps must ascend (index %zu)", i);
  *g_meas = NAN;
  for (size_t i = n; i-- > 0;) {
    if (!(ss[i] <= (1.0 + tol) * t0)) break;
    *g_meas = g[i];
  }
  return XS_OK;
}
