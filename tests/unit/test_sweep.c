/* test_sweep.c — the calibration sweep planner, the measurement CSV writer and the analysis
 * helpers (knee, measured transition gap), all without a GPU. */
#include "core/csv.h"
#include "core/fileio.h"
#include "test.h"
#include "xstage/xstage.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static xs_sweep_point g_pts[XS_SWEEP_MAX_POINTS], g_pts2[XS_SWEEP_MAX_POINTS];

/* The synthetic data of these tests come from the anchor-based host profile (no latency floor:
 * the transition rules compared below are defined on the floor-free model). */
static xs_link_profile host_profile(void) {
  xs_link_profile p = XS_LINK_PROFILE_INITIALIZER;
  XT_CHECK(xs_profile_default(&p, "h200-host-anchors") == XS_OK);
  return p;
}

static size_t count_phase(const xs_sweep_point* p, size_t n, xs_sweep_phase ph) {
  size_t c = 0;
  for (size_t i = 0; i < n; i++)
    c += p[i].phase == ph;
  return c;
}

static double sum_est(const xs_sweep_point* p, size_t n) {
  double s = 0;
  for (size_t i = 0; i < n; i++)
    s += p[i].est_ns;
  return s;
}

static void test_names(void) {
  xs_flavour f;
  for (int i = 0; i < XS_FLAVOUR_COUNT; i++) {
    XT_CHECK(xs_flavour_parse(&f, xs_flavour_name((xs_flavour)i)) == XS_OK);
    XT_EQ_INT(f, i);
  }
  XT_CHECK(xs_flavour_parse(&f, "tma") == XS_OK && f == XS_FLAVOUR_TMA);
  XT_CHECK(xs_flavour_parse(&f, "st.weird") == XS_ERR_INVALID_ARG);
  XT_CHECK(strstr(xs_last_error(), "st.weird") != NULL);
  xs_target t;
  char buf[32];
  XT_CHECK(xs_target_parse(&t, "peer:3") == XS_OK && t.kind == XS_TARGET_PEER && t.peer == 3);
  XT_CHECK(xs_target_name(buf, sizeof buf, t) == XS_OK && !strcmp(buf, "peer:3"));
  XT_CHECK(xs_target_parse(&t, "peer:all") == XS_OK && t.kind == XS_TARGET_PEER &&
           t.peer == XS_PEER_ALL);
  XT_CHECK(xs_target_name(buf, sizeof buf, t) == XS_OK && !strcmp(buf, "peer:all"));
  XT_CHECK(xs_target_parse(&t, "peer:al") == XS_ERR_INVALID_ARG);
  XT_CHECK(xs_target_parse(&t, "hbm") == XS_OK && t.kind == XS_TARGET_HBM);
  XT_CHECK(xs_target_parse(&t, "peer:") == XS_ERR_INVALID_ARG);
  XT_CHECK(xs_target_parse(&t, "peer:1x") == XS_ERR_INVALID_ARG);
  XT_CHECK(xs_target_parse(&t, "nvme") == XS_ERR_INVALID_ARG);
  xs_gap_mode g;
  xs_sync_mode s;
  XT_CHECK(xs_gap_mode_parse(&g, "spin") == XS_OK && g == XS_GAP_SPIN);
  XT_CHECK(xs_gap_mode_parse(&g, "load") == XS_OK && g == XS_GAP_LOAD);
  XT_CHECK(!strcmp(xs_gap_mode_name(XS_GAP_LOAD), "load"));
  XT_CHECK(xs_gap_mode_parse(&g, "loads") == XS_ERR_INVALID_ARG);
  XT_CHECK(xs_sync_mode_parse(&s, "free") == XS_OK && s == XS_SYNC_FREE);
  XT_CHECK(xs_sync_mode_parse(&s, "async") == XS_ERR_INVALID_ARG);
}

/* Every (K, V) of the grid has G = 0, gaps below, around (+-10%) and above its centre. */
static void check_grid_shape(const xs_sweep_point* p, size_t n) {
  size_t groups = 0;
  for (size_t i = 0; i < n; i++) {
    if (p[i].phase != XS_PHASE_GRID) continue;
    int first = 1;
    for (size_t j = 0; j < i; j++)
      if (p[j].phase == XS_PHASE_GRID && p[j].K == p[i].K && p[j].V == p[i].V) first = 0;
    if (!first) continue;
    groups++;
    int zero = 0, below = 0, around = 0, above = 0;
    double c = p[i].G_centre;
    XT_CHECK(c >= 1000.0);
    for (size_t j = i; j < n; j++) {
      if (p[j].phase != XS_PHASE_GRID || p[j].K != p[i].K || p[j].V != p[i].V) continue;
      XT_NEAR(p[j].G_centre, c, 1e-12);
      if (p[j].G == 0)
        zero = 1;
      else if (p[j].G < 0.9 * c)
        below++;
      else if (p[j].G <= 1.1 * c)
        around++;
      else
        above++;
      XT_CHECK(p[j].bursts >= 8 && p[j].bursts <= 64);
    }
    XT_CHECK_MSG(zero && below >= 1 && around >= 3 && above >= 1,
                 "K %d V %g: zero %d below %d around %d above %d", p[i].K, p[i].V, zero, below,
                 around, above);
  }
  XT_CHECK(groups >= 3);
}

static void test_plan_quick(void) {
  xs_link_profile p = host_profile();
  xs_sweep_options o = XS_SWEEP_OPTIONS_INITIALIZER;
  o.level = XS_CALIB_QUICK;
  size_t n = 0, n2 = 0;
  XT_CHECK(xs_sweep_plan(g_pts, XS_SWEEP_MAX_POINTS, &n, 0, &o, &p) == XS_OK);
  XT_CHECK(count_phase(g_pts, n, XS_PHASE_T0) >= 6);
  XT_CHECK(count_phase(g_pts, n, XS_PHASE_R) >= 2);
  XT_CHECK(count_phase(g_pts, n, XS_PHASE_Q) >= 3 * 4 * 3); /* 3 K, >= 4 V (knee), 3 reps */
  int q_largest = 0; /* the largest K (all SMs) is probed for its room too */
  for (size_t i = 0; i < n; i++)
    q_largest += g_pts[i].phase == XS_PHASE_Q && g_pts[i].K == o.sm_count;
  XT_CHECK_MSG(q_largest >= 4 * 3, "quick: %d Q probes at K = %d", q_largest, o.sm_count);
  for (size_t i = 0; i < n; i++) {
    XT_CHECK(g_pts[i].K >= 1 && g_pts[i].K <= o.sm_count);
    if (g_pts[i].phase == XS_PHASE_R) XT_CHECK(g_pts[i].G == 0 && g_pts[i].bursts >= 16);
    if (g_pts[i].phase == XS_PHASE_Q) XT_CHECK(g_pts[i].bursts == 1);
  }
  double probes = sum_est(g_pts, n);
  XT_CHECK(xs_sweep_plan(g_pts, XS_SWEEP_MAX_POINTS, &n, 1, &o, &p) == XS_OK);
  XT_CHECK(count_phase(g_pts, n, XS_PHASE_GRID) >= 60);
  XT_EQ_INT(count_phase(g_pts, n, XS_PHASE_REPEAT), 5);
  XT_CHECK_MSG(probes + sum_est(g_pts, n) <= 60e9, "quick estimate %.1f s",
               (probes + sum_est(g_pts, n)) / 1e9);
  check_grid_shape(g_pts, n);
  /* deterministic */
  XT_CHECK(xs_sweep_plan(g_pts2, XS_SWEEP_MAX_POINTS, &n2, 1, &o, &p) == XS_OK);
  XT_EQ_INT(n2, n);
  XT_CHECK(memcmp(g_pts, g_pts2, n * sizeof g_pts[0]) == 0);
}

static void test_plan_full(void) {
  xs_link_profile p = host_profile();
  xs_sweep_options o = XS_SWEEP_OPTIONS_INITIALIZER;
  o.level = XS_CALIB_FULL;
  o.sm_count = 132;
  size_t n = 0, np = 0;
  XT_CHECK(xs_sweep_plan(g_pts2, XS_SWEEP_MAX_POINTS, &np, 0, &o, &p) == XS_OK);
  XT_CHECK(xs_sweep_plan(g_pts, XS_SWEEP_MAX_POINTS, &n, 1, &o, &p) == XS_OK);
  XT_CHECK_MSG(count_phase(g_pts, n, XS_PHASE_GRID) >= 300, "%zu grid points",
               count_phase(g_pts, n, XS_PHASE_GRID));
  XT_CHECK(sum_est(g_pts, n) + sum_est(g_pts2, np) <= 300e9);
  check_grid_shape(g_pts, n);
  /* the centre is the model's settle gap (at least 1 us), never beyond the drain time of
   * the whole burst */
  for (size_t i = 0; i < n; i++) {
    if (g_pts[i].phase != XS_PHASE_GRID) continue;
    double g = 0;
    XT_CHECK(xs_calib_predicted_settle_gap(&g, &p, g_pts[i].K, g_pts[i].V, 0.05) == XS_OK);
    XT_NEAR(g_pts[i].G_centre, isfinite(g) && g > 1000 ? g : 1000, 1e-12);
    XT_CHECK(g_pts[i].G_centre <= (g_pts[i].V / p.R > 1000 ? g_pts[i].V / p.R : 1000));
  }
  /* K capped at the SM count, V at the ring */
  o.sm_count = 20;
  o.max_V = 1048576.0;
  XT_CHECK(xs_sweep_plan(g_pts, XS_SWEEP_MAX_POINTS, &n, 1, &o, &p) == XS_OK);
  for (size_t i = 0; i < n; i++)
    XT_CHECK(g_pts[i].K <= 20 && g_pts[i].V <= 1048576.0);
  XT_CHECK(xs_sweep_plan(g_pts, XS_SWEEP_MAX_POINTS, &n, 0, &o, &p) == XS_OK);
  for (size_t i = 0; i < n; i++)
    XT_CHECK(g_pts[i].K <= 20 && g_pts[i].V <= 1048576.0);
}

static void test_plan_budget(void) {
  xs_link_profile p = host_profile();
  xs_sweep_options o = XS_SWEEP_OPTIONS_INITIALIZER;
  o.level = XS_CALIB_FULL;
  size_t n = 0, nfull = 0;
  XT_CHECK(xs_sweep_plan(g_pts2, XS_SWEEP_MAX_POINTS, &nfull, 1, &o, &p) == XS_OK);
  o.budget_ns = 0.4e9; /* grid share: 0.2 s: must drop points and shorten sequences */
  XT_CHECK(xs_sweep_plan(g_pts, XS_SWEEP_MAX_POINTS, &n, 1, &o, &p) == XS_OK);
  XT_CHECK(n < nfull);
  double s = sum_est(g_pts, n);
  /* every kept (K, V) still has G = 0, its centre and a point on each side of it */
  size_t groups = 0;
  for (size_t i = 0; i < n; i++) {
    if (g_pts[i].phase != XS_PHASE_GRID) continue;
    int first = 1;
    for (size_t j = 0; j < i; j++)
      if (g_pts[j].phase == XS_PHASE_GRID && g_pts[j].K == g_pts[i].K && g_pts[j].V == g_pts[i].V)
        first = 0;
    if (!first) continue;
    groups++;
    int zero = 0, below = 0, at = 0, above = 0;
    for (size_t j = i; j < n; j++) {
      const xs_sweep_point* q = &g_pts[j];
      if (q->phase != XS_PHASE_GRID || q->K != g_pts[i].K || q->V != g_pts[i].V) continue;
      if (q->G == 0)
        zero = 1;
      else if (fabs(q->G - q->G_centre) <= 1e-9 * q->G_centre)
        at = 1;
      else if (q->G < q->G_centre)
        below = 1;
      else
        above = 1;
      XT_CHECK(q->bursts >= 8);
    }
    XT_CHECK(zero && below && at && above);
  }
  XT_CHECK(groups >= 3);
  XT_CHECK_MSG(s <= 0.2e9 || groups == 3, "sum %.3f s with %zu groups", s / 1e9, groups);
  /* too small a buffer */
  XT_CHECK(xs_sweep_plan(g_pts, 10, &n, 1, &o, &p) == XS_ERR_EXHAUSTED);
  /* bad options */
  o.sm_count = 0;
  XT_CHECK(xs_sweep_plan(g_pts, XS_SWEEP_MAX_POINTS, &n, 1, &o, &p) == XS_ERR_INVALID_ARG);
  o.sm_count = 132;
  o.size = 3;
  XT_CHECK(xs_sweep_plan(g_pts, XS_SWEEP_MAX_POINTS, &n, 1, &o, &p) == XS_ERR_INVALID_ARG);
}

static void test_estimate(void) {
  xs_link_profile p = host_profile();
  xs_sweep_point pt = {XS_PHASE_GRID, 16, 1048576.0, 20e3, 10, 0, 0, 0};
  double ns = 0;
  XT_CHECK(xs_sweep_estimate(&ns, &pt, &p, 1000) == XS_OK);
  /* at least the gaps plus the bytes at the drain rate beyond the stage */
  XT_CHECK(ns >= 10 * 20e3 + 1000);
  XT_CHECK(ns <= 10 * (20e3 + pt.V / p.R + 5000) + 1000);
  pt.bursts = 0;
  XT_CHECK(xs_sweep_estimate(&ns, &pt, &p, 1000) == XS_ERR_INVALID_ARG);
}

static xs_calib_row make_row(int i) {
  xs_calib_row r;
  memset(&r, 0, sizeof r);
  snprintf(r.transport, sizeof r.transport, "%s", i % 2 ? "host" : "peer:1");
  r.K = 1 + i % 132;
  r.V = 16.0 * (1 + i * 977);
  r.gap_ns = i * 1234.567890123;
  r.burst_index = i % 24;
  r.t_iss_ns = 1000.0 / 3.0 * (i + 1);
  r.t_iss_mean_ns = 0.1 + i * 0.7;
  r.gap_nominal_ns = 1e3 * i;
  r.t_ret_ns = i % 3 ? r.t_iss_ns : NAN;
  r.t_iss_cyc_ns = M_PI * i;
  snprintf(r.flavour, sizeof r.flavour, "%s", i % 4 == 3 ? "tma.bulk" : "st.global.v4");
  snprintf(r.mode, sizeof r.mode, "%s", i % 2 ? "sync" : "free");
  snprintf(r.gap_mode, sizeof r.gap_mode, "fma");
  snprintf(r.phase, sizeof r.phase, "%s", i == 5 ? "a,\"b" : "grid");
  r.point = i / 24;
  r.rep = i % 5;
  r.t_own_max_ns = 2.5 * r.t_iss_ns;
  r.t_own_mean_ns = 1.0 / 7.0 * (i + 3);
  r.t_skew_ns = i % 5 ? 123.25 * i : NAN;
  r.e_end_ns = 1e6 + 1e3 / 3.0 * i;
  r.m_end_ns = 0.9e6 + 1e3 / 9.0 * i;
  r.gap_before_ns = i % 24 ? r.gap_ns : 0.0;
  return r;
}

static void test_csv_roundtrip(void) {
  enum { N = 200 };
  xs_calib_row rows[N];
  for (int i = 0; i < N; i++)
    rows[i] = make_row(i);
  char* text = NULL;
  size_t len = 0;
  XT_CHECK(xs_calib_csv_format(&text, &len, rows, N) == XS_OK);
  XT_CHECK(text && strlen(text) == len);
  xsi_csv* csv = NULL;
  XT_CHECK(xsi_csv_parse(&csv, text, len, "rows.csv", 0) == XS_OK);
  if (!csv) {
    free(text);
    return;
  }
  XT_EQ_INT(csv->nrows, N);
  XT_EQ_INT(csv->ncols, 22); /* 16 + the aggregate-issue columns */
  static const char* cols[] = {"transport",     "K",
                               "V_bytes",       "gap_ns",
                               "burst_index",   "t_iss_ns",
                               "t_iss_mean_ns", "gap_nominal_ns",
                               "t_ret_ns",      "t_iss_cyc_ns",
                               "flavour",       "mode",
                               "gap_mode",      "phase",
                               "point",         "rep"};
  long ci[16];
  for (int c = 0; c < 16; c++)
    XT_CHECK(xsi_csv_require(&ci[c], csv, cols[c]) == XS_OK);
  for (size_t r = 0; r < csv->nrows && r < N; r++) {
    const xs_calib_row* w = &rows[r];
    double x = 0;
    long long k = 0;
    XT_CHECK(!strcmp(csv->rows[r][ci[0]], w->transport));
    XT_CHECK(xsi_csv_int(&k, csv, r, ci[1], 1, 1024) == XS_OK && k == w->K);
    XT_CHECK(xsi_csv_number(&x, csv, r, ci[2]) == XS_OK && x == w->V);
    XT_CHECK(xsi_csv_number(&x, csv, r, ci[3]) == XS_OK && x == w->gap_ns);
    XT_CHECK(xsi_csv_int(&k, csv, r, ci[4], 0, 1 << 20) == XS_OK && k == w->burst_index);
    XT_CHECK(xsi_csv_number(&x, csv, r, ci[5]) == XS_OK && x == w->t_iss_ns);
    XT_CHECK(xsi_csv_number(&x, csv, r, ci[6]) == XS_OK && x == w->t_iss_mean_ns);
    XT_CHECK(xsi_csv_number(&x, csv, r, ci[7]) == XS_OK && x == w->gap_nominal_ns);
    if (isfinite(w->t_ret_ns))
      XT_CHECK(xsi_csv_number(&x, csv, r, ci[8]) == XS_OK && x == w->t_ret_ns);
    else
      XT_CHECK(!strcmp(csv->rows[r][ci[8]], "nan"));
    XT_CHECK(xsi_csv_number(&x, csv, r, ci[9]) == XS_OK && x == w->t_iss_cyc_ns);
    XT_CHECK(!strcmp(csv->rows[r][ci[10]], w->flavour));
    XT_CHECK(!strcmp(csv->rows[r][ci[11]], w->mode));
    XT_CHECK(!strcmp(csv->rows[r][ci[12]], w->gap_mode));
    XT_CHECK_MSG(!strcmp(csv->rows[r][ci[13]], w->phase), "row %zu phase '%s'", r,
                 csv->rows[r][ci[13]]);
    XT_CHECK(xsi_csv_int(&k, csv, r, ci[14], 0, 1 << 20) == XS_OK && k == w->point);
    XT_CHECK(xsi_csv_int(&k, csv, r, ci[15], 0, 100) == XS_OK && k == w->rep);
    /* the extra columns, in order after rep */
    const double extra[6] = {w->t_own_max_ns, w->t_own_mean_ns, w->t_skew_ns,
                             w->e_end_ns,     w->m_end_ns,      w->gap_before_ns};
    for (int c = 0; c < 6; c++) {
      if (isfinite(extra[c]))
        XT_CHECK(xsi_csv_number(&x, csv, r, 16 + c) == XS_OK && x == extra[c]);
      else
        XT_CHECK(!strcmp(csv->rows[r][16 + c], "nan"));
    }
  }
  xsi_csv_free(csv);
  free(text);
  /* header only */
  XT_CHECK(xs_calib_csv_format(&text, &len, NULL, 0) == XS_OK);
  XT_CHECK(text && !strncmp(text, "transport,K,V_bytes,gap_ns,burst_index,t_iss_ns,", 48));
  free(text);
}

/* Rows appended from a measured sequence are read back by the model's dataset loader. */
static void test_rows_dataset(void) {
  xs_xbench_config cfg = XS_XBENCH_CONFIG_INITIALIZER;
  cfg.K = 32, cfg.V = 4194304.0, cfg.gap_ns = 5000, cfg.bursts = 6;
  xs_xbench_summary s;
  memset(&s, 0, sizeof s);
  s.size = sizeof s;
  s.V = 4194304.0;
  s.gap_measured_ns = 6123.5;
  snprintf(s.transport, sizeof s.transport, "host");
  xs_xbench_burst b[6];
  for (int i = 0; i < 6; i++) {
    memset(&b[i], 0, sizeof b[i]);
    b[i].t_iss_ns = 1200.0 + 10000.0 * i, b[i].t_iss_mean_ns = 900.0 + 5000.0 * i;
    b[i].t_ret_ns = b[i].t_iss_ns, b[i].t_iss_cyc_ns = b[i].t_iss_ns;
  }
  xs_calib_row* rows = NULL;
  size_t n = 0, cap = 0;
  XT_CHECK(xs_calib_rows_append(&rows, &n, &cap, &cfg, &s, b, "grid", 7, 0) == XS_OK);
  XT_CHECK(xs_calib_rows_append(&rows, &n, &cap, &cfg, &s, b, "repeat", 8, 1) == XS_OK);
  XT_EQ_INT(n, 12);
  XT_CHECK(rows[7].burst_index == 1 && rows[7].point == 8 && !strcmp(rows[7].phase, "repeat"));
  char path[64];
  snprintf(path, sizeof path, "/tmp/xstage-test-sweep-%d.csv", (int)getpid());
  XT_CHECK(xs_calib_csv_write(path, rows, n) == XS_OK);
  xs_dataset* ds = NULL;
  XT_CHECK(xs_dataset_load(&ds, path) == XS_OK);
  if (ds) {
    XT_EQ_INT(xs_dataset_size(ds), 12);
    const xs_sample* smp = xs_dataset_samples(ds);
    for (size_t i = 0; i < 12; i++) {
      XT_CHECK(!strcmp(smp[i].transport, "host"));
      XT_NEAR(smp[i].K, 32, 0);
      XT_NEAR(smp[i].V, 4194304.0, 0);
      XT_NEAR(smp[i].G, 6123.5, 0);
      XT_EQ_INT(smp[i].burst_index, (long)(i % 6));
      XT_NEAR(smp[i].t_iss_ns, 1200.0 + 10000.0 * (i % 6), 0);
    }
  }
  xs_dataset_destroy(ds);
  unlink(path);
  free(rows);
}

static void test_knee(void) {
  /* t(V) = V / r below the knee, then the stage drains at R: t = (V - Q) / R */
  const double r = 800.0, R = 52.0, Q = 1.5e6; /* bytes/ns, bytes */
  double vk_true = Q / (1 - R / r);            /* where V / r = (V - Q) / R */
  double V[14], t[14];
  for (int i = 0; i < 14; i++) {
    V[i] = 65536.0 * pow(2.0, 0.62 * i);
    t[i] = V[i] <= vk_true ? V[i] / r : (V[i] - Q) / R;
  }
  double vk = 0, q = 0;
  XT_CHECK(xs_calib_knee(&vk, &q, V, t, 14, R) == XS_OK);
  /* the knee is the grid point nearest the true one, Q within the grid step's effect */
  size_t best = 0;
  for (size_t i = 0; i < 14; i++)
    if (fabs(log(V[i] / vk_true)) < fabs(log(V[best] / vk_true))) best = i;
  XT_CHECK_MSG(fabs(log(vk / V[best])) <= log(2.0) * 0.62 + 1e-9, "knee %g, nearest %g", vk,
               V[best]);
  XT_CHECK_MSG(q > 0.5 * Q && q < 1.6 * Q, "q %g vs Q %g", q, Q);
  XT_CHECK(xs_calib_knee(&vk, &q, V, t, 3, R) == XS_ERR_INVALID_ARG);
  V[3] = V[2];
  XT_CHECK(xs_calib_knee(&vk, &q, V, t, 14, R) == XS_ERR_INVALID_ARG);
}

static void test_settle_gap(void) {
  double g[] = {0, 5e3, 10e3, 15e3, 18e3, 19e3, 20e3, 22e3, 30e3};
  double ss[] = {20e3, 15e3, 10e3, 5e3, 2e3, 1.25e3, 1.21e3, 1.2e3, 1.19e3};
  double gm = 0;
  XT_CHECK(xs_calib_settle_gap(&gm, g, ss, 9, 1.2e3, 0.05) == XS_OK);
  XT_NEAR(gm, 19e3, 1e-12);
  /* a noisy point above the transition pushes it up: the gaps beyond must settle too */
  ss[7] = 1.5e3;
  XT_CHECK(xs_calib_settle_gap(&gm, g, ss, 9, 1.2e3, 0.05) == XS_OK);
  XT_NEAR(gm, 30e3, 1e-12);
  /* never settles */
  ss[8] = 3e3;
  XT_CHECK(xs_calib_settle_gap(&gm, g, ss, 9, 1.2e3, 0.05) == XS_OK);
  XT_CHECK(isnan(gm));
  /* everything settles: the smallest gap */
  for (int i = 0; i < 9; i++)
    ss[i] = 1.2e3;
  XT_CHECK(xs_calib_settle_gap(&gm, g, ss, 9, 1.2e3, 0.05) == XS_OK);
  XT_NEAR(gm, 0, 0);
  g[2] = 1;
  XT_CHECK(xs_calib_settle_gap(&gm, g, ss, 9, 1.2e3, 0.05) == XS_ERR_INVALID_ARG);
}

/* The model-side settle gap: close to the smallest free gap when a burst fits the stage,
 * finite when it overflows the stage, 0 when nothing back-pressures. */
static void test_predicted_settle_gap(void) {
  xs_link_profile p = host_profile();
  double g = 0, gfree = 0, t0 = 0;
  XT_CHECK(xs_calib_predicted_settle_gap(&g, &p, 16, 1048576.0, 0.05) == XS_OK);
  XT_CHECK(xs_plan_min_free_gap(&gfree, &p, 16, 1048576.0) == XS_OK);
  XT_CHECK(xs_t0_iss(&t0, &p, 16, 1048576.0) == XS_OK);
  XT_CHECK_MSG(isfinite(gfree) && g <= gfree * (1 + 1e-3) && g >= gfree - 0.05 * t0 - 0.002 * gfree,
               "settle %g vs free %g (T0 %g)", g, gfree, t0);
  /* the steady T_iss at the settle gap is within 5% of the first burst, and not just below */
  xs_steady st;
  XT_CHECK(xs_fluid_periodic(&st, &p, 16, 1048576.0, g) == XS_OK);
  XT_CHECK(st.t_iss_ns <= 1.05 * st.t_iss_first_ns * (1 + 1e-9));
  XT_CHECK(xs_fluid_periodic(&st, &p, 16, 1048576.0, 0.98 * g) == XS_OK);
  XT_CHECK(st.t_iss_ns > 1.05 * st.t_iss_first_ns);
  /* a burst that overflows the stage from idle: no free gap, but a finite settle gap (the
   * backlog left by a burst drains), below the drain time of the whole burst */
  XT_CHECK(xs_plan_min_free_gap(&gfree, &p, 32, 4194304.0) == XS_OK);
  XT_CHECK(!isfinite(gfree));
  XT_CHECK(xs_calib_predicted_settle_gap(&g, &p, 32, 4194304.0, 0.05) == XS_OK);
  XT_CHECK_MSG(isfinite(g) && g > 0 && g < 4194304.0 / p.R, "settle %g", g);
  /* a burst so large that back-to-back bursts are within 5% of the first: 0 */
  XT_CHECK(xs_calib_predicted_settle_gap(&g, &p, 32, 64.0 * 1048576.0, 0.05) == XS_OK);
  XT_NEAR(g, 0, 0);
  /* a tiny burst on a fast path settles at once */
  xs_link_profile h = XS_LINK_PROFILE_INITIALIZER;
  XT_CHECK(xs_profile_default(&h, "h200-hbm") == XS_OK);
  XT_CHECK(xs_calib_predicted_settle_gap(&g, &h, 16, 65536.0, 0.05) == XS_OK);
  XT_NEAR(g, 0, 0);
  XT_CHECK(xs_calib_predicted_settle_gap(&g, &p, 0, 65536.0, 0.05) == XS_ERR_INVALID_ARG);
}

/* Rows of one measured sequence: nb bursts of (K, V) with gap G under profile p, burst 0 from
 * idle, each T_iss scaled by (1 + noise * u), u in [-1, 1] from a fixed LCG. */
static uint32_t g_lcg = 12345u;
static double unif(void) {
  g_lcg = g_lcg * 1664525u + 1013904223u;
  return (double)(g_lcg >> 8) / 8388608.0 - 1.0;
}

static size_t synth_seq(xs_calib_row* out, const xs_link_profile* p, int K, double V, double G,
                        int nb, const char* phase, long point, int rep, double noise) {
  xs_burst bs[128];
  xs_burst_result br[128];
  for (int b = 0; b < nb; b++)
    bs[b].V = V, bs[b].gap_ns = b ? G : 0;
  XT_CHECK(xs_fluid_simulate(br, NULL, p, K, bs, (size_t)nb) == XS_OK);
  for (int b = 0; b < nb; b++) {
    xs_calib_row* r = &out[b];
    memset(r, 0, sizeof *r);
    snprintf(r->transport, sizeof r->transport, "%s", "host");
    r->K = K, r->V = V, r->gap_ns = G, r->gap_nominal_ns = G, r->burst_index = b;
    r->t_iss_ns = br[b].t_iss_ns * (1.0 + noise * unif());
    r->t_iss_mean_ns = br[b].t_iss_mean_ns;
    if (r->t_iss_mean_ns > r->t_iss_ns) r->t_iss_mean_ns = r->t_iss_ns;
    r->t_ret_ns = r->t_iss_ns, r->t_iss_cyc_ns = NAN;
    snprintf(r->flavour, sizeof r->flavour, "st.global.v4");
    snprintf(r->mode, sizeof r->mode, "free");
    snprintf(r->gap_mode, sizeof r->gap_mode, "fma");
    snprintf(r->phase, sizeof r->phase, "%s", phase);
    r->point = point, r->rep = rep;
  }
  return (size_t)nb;
}

static void test_rows_median(void) {
  xs_link_profile p = host_profile();
  xs_calib_row rows[3 * 8 + 4];
  size_t n = 0;
  for (int r = 0; r < 3; r++)
    n += synth_seq(rows + n, &p, 16, 1048576.0, 5000.0, 8, "grid", r, r, 0.0);
  n += synth_seq(rows + n, &p, 32, 262144.0, 0.0, 4, "grid", 3, 0, 0.0);
  /* repetition 1 is slow, repetition 2 fast: the median is repetition 0 */
  for (int b = 0; b < 8; b++)
    rows[8 + b].t_iss_ns *= 3.0, rows[16 + b].t_iss_ns *= 0.5, rows[8 + b].gap_ns = 7000.0;
  xs_calib_row* med = NULL;
  size_t nm = 0;
  XT_CHECK(xs_calib_rows_median(&med, &nm, rows, n) == XS_OK);
  XT_EQ_INT(nm, 12);
  for (int b = 0; b < 8; b++) {
    XT_EQ_INT(med[b].burst_index, b);
    XT_EQ_INT(med[b].rep, 3);
    XT_NEAR(med[b].t_iss_ns, rows[b].t_iss_ns, 1e-9);
    XT_NEAR(med[b].gap_ns, 5000.0, 1e-9);
  }
  XT_EQ_INT(med[8].K, 32);
  XT_EQ_INT(med[8].rep, 1);
  free(med);
  /* CSV round trip of rows, NaN fields included */
  char path[] = "/tmp/xs_test_rows_XXXXXX";
  int fd = mkstemp(path);
  XT_CHECK(fd >= 0);
  close(fd);
  XT_CHECK(xs_calib_csv_write(path, rows, n) == XS_OK);
  xs_calib_row* back = NULL;
  size_t nb = 0;
  XT_CHECK(xs_calib_csv_read(&back, &nb, path) == XS_OK);
  XT_EQ_INT(nb, n);
  for (size_t i = 0; i < n; i++) {
    XT_CHECK(back[i].t_iss_ns == rows[i].t_iss_ns && back[i].gap_ns == rows[i].gap_ns);
    XT_CHECK(back[i].K == rows[i].K && back[i].burst_index == rows[i].burst_index);
    XT_CHECK(back[i].point == rows[i].point && back[i].rep == rows[i].rep);
    XT_CHECK(isnan(back[i].t_iss_cyc_ns) && !strcmp(back[i].phase, "grid"));
  }
  free(back);
  unlink(path);
  XT_CHECK(xs_calib_csv_read(&back, &nb, "/nonexistent/x.csv") != XS_OK);
}

/* Rows generated by the model itself: the measured and the predicted transition coincide on
 * the grid (the same rule on the same sequences), and the counts follow. */
static void test_transitions_same_rule(void) {
  xs_link_profile p = host_profile();
  static xs_calib_row rows[40 * 14 * 64];
  static const double fr[] = {0, 0.25, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.1, 1.2, 1.3, 1.4, 1.5, 2.0};
  static const int ks[] = {16, 32, 132};
  static const double vs[] = {262144.0, 524288.0};
  size_t n = 0;
  long pt = 0;
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 2; j++) {
      double gc = 0;
      XT_CHECK(xs_calib_predicted_settle_gap(&gc, &p, ks[i], vs[j], 0.05) == XS_OK);
      XT_CHECK(isfinite(gc) && gc > 0);
      for (int f = 0; f < 14; f++)
        n += synth_seq(rows + n, &p, ks[i], vs[j], fr[f] * gc, 48, "grid", pt++, 0, 0.0);
    }
  xs_calib_transition tr[XS_CALIB_MAX_PAIRS];
  int nt = 0, w10 = -1, ing = -1;
  XT_CHECK(xs_calib_transitions(tr, XS_CALIB_MAX_PAIRS, &nt, &w10, &ing, rows, n, &p, 0.05) ==
           XS_OK);
  XT_EQ_INT(nt, 6);
  XT_EQ_INT(ing, 6);
  XT_EQ_INT(w10, 6);
  for (int q = 0; q < nt; q++) {
    XT_EQ_INT(tr[q].n_gaps, 14);
    XT_CHECK(tr[q].in_grid);
    XT_NEAR(tr[q].g_meas_ns, tr[q].g_pred_grid_ns, 1e-9);
    XT_NEAR(tr[q].rel_err, 0, 1e-12);
    /* the grid transition is a grid gap within one 10% step above the continuous one */
    XT_CHECK_MSG(tr[q].g_meas_ns >= tr[q].g_pred_ns * (1 - 1e-6) &&
                     tr[q].g_meas_ns <= 1.11 * tr[q].g_pred_ns,
                 "K %d V %g: grid %g continuous %g", tr[q].K, tr[q].V, tr[q].g_meas_ns,
                 tr[q].g_pred_ns);
  }
  /* a profile that drains 3x faster predicts earlier transitions: outside 10% */
  xs_link_profile fast = p;
  fast.R = 3 * p.R;
  XT_CHECK(xs_calib_transitions(tr, XS_CALIB_MAX_PAIRS, &nt, &w10, &ing, rows, n, &fast, 0.05) ==
           XS_OK);
  XT_EQ_INT(ing, 6);
  XT_EQ_INT(w10, 0);
  /* cap */
  XT_CHECK(xs_calib_transitions(tr, 2, &nt, NULL, NULL, rows, n, &p, 0.05) == XS_OK);
  XT_EQ_INT(nt, 2);
}

/* The whole analysis on a synthetic calibration (3 repetitions, 2% noise, probes, repeat):
 * the fit recovers the profile, the transitions are found inside the grid, and a path with
 * no backpressure is recognised as such. */
static void test_analyse(void) {
  xs_link_profile p = host_profile();
  static xs_calib_row rows[200000];
  static const double fr[] = {0, 0.25, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.1, 1.2, 1.3, 1.4, 1.5, 2.0};
  static const int ks[] = {16, 32};
  static const double vs[] = {262144.0, 524288.0, 4194304.0};
  size_t n = 0;
  long pt = 0;
  g_lcg = 777u;
  for (int i = 0; i < 2; i++) {
    for (int j = 0; j < 3; j++) /* T0 probes */
      n += synth_seq(rows + n, &p, ks[i], vs[j] / 4, 200e3, 4, "t0", pt++, 0, 0.02);
    for (int j = 0; j < 3; j++) {
      double gc = 0;
      XT_CHECK(xs_calib_predicted_settle_gap(&gc, &p, ks[i], vs[j], 0.05) == XS_OK);
      if (!(gc >= 1000)) gc = 1000;
      for (int f = 0; f < 14; f++)
        for (int r = 0; r < 3; r++)
          n += synth_seq(rows + n, &p, ks[i], vs[j], fr[f] * gc, 32, "grid", pt++, r, 0.02);
    }
    n += synth_seq(rows + n, &p, ks[i], 4194304.0, 0, 24, "R", pt++, 0, 0.0);
  }
  for (int r = 0; r < 5; r++)
    n += synth_seq(rows + n, &p, 16, 1048576.0, 0, 32, "repeat", pt++, r, 0.01);
  XT_CHECK(n < sizeof rows / sizeof rows[0]);
  xs_link_profile fit = host_profile();
  xs_calib_report rep;
  memset(&rep, 0, sizeof rep);
  rep.size = sizeof rep;
  xs_calib_row* med = NULL;
  size_t nmed = 0;
  XT_CHECK(xs_calib_analyse(&fit, &rep, &med, &nmed, rows, n, "host", 0.2, 12345u) == XS_OK);
  XT_CHECK(med != NULL && nmed > 0 && nmed < n);
  free(med);
  XT_CHECK_MSG(fabs(fit.R / p.R - 1) < 0.02, "R %g vs %g", fit.R, p.R);
  XT_CHECK_MSG(fabs(rep.R_meas / p.R - 1) < 0.02, "R_meas %g", rep.R_meas);
  XT_CHECK_MSG(rep.fit.fluid_holdout.median < 0.02, "held-out median %g",
               rep.fit.fluid_holdout.median);
  XT_CHECK(rep.fit.fluid_holdout.n > 0);
  XT_EQ_INT(rep.ntrans, 6);
  XT_CHECK_MSG(rep.trans_in_grid >= 4 && rep.trans_within_10 >= 4, "in grid %d, within 10%% %d",
               rep.trans_in_grid, rep.trans_within_10);
  XT_CHECK(!rep.no_xstage);
  XT_EQ_INT(rep.ref_scored, 0);
  /* a reference profile is scored on the fit's own held-out rows and points: the fitted profile
   * as its own reference scores exactly the fit's numbers; the generating profile about as well;
   * a profile of another link (NVLink) far worse; an invalid one is refused */
  {
    xs_link_profile again = host_profile(), nv = XS_LINK_PROFILE_INITIALIZER, bad = fit;
    xs_calib_report r2;
    memset(&r2, 0, sizeof r2);
    r2.size = sizeof r2;
    XT_CHECK(xs_calib_analyse_ref(&again, &r2, NULL, NULL, rows, n, "host", 0.2, 12345u, &fit) ==
             XS_OK);
    XT_EQ_INT(r2.ref_scored, 1);
    XT_EQ_INT((long)r2.ref.fluid_holdout.n, (long)rep.fit.fluid_holdout.n);
    XT_NEAR(r2.ref.fluid_holdout.median, rep.fit.fluid_holdout.median, 1e-12);
    XT_NEAR(r2.ref.fluid_holdout.p90, rep.fit.fluid_holdout.p90, 1e-12);
    XT_NEAR(r2.ref.closed_holdout.p90, rep.fit.closed_holdout.p90, 1e-12);
    XT_EQ_INT((long)r2.ref.fluid_point_holdout.n, (long)rep.fit.fluid_point_holdout.n);
    XT_NEAR(r2.ref.fluid_point_holdout.median, rep.fit.fluid_point_holdout.median, 1e-12);
    XT_CHECK(xs_calib_analyse_ref(&again, &r2, NULL, NULL, rows, n, "host", 0.2, 12345u, &p) ==
             XS_OK);
    XT_CHECK_MSG(r2.ref.fluid_holdout.median < 0.02, "generator: %g", r2.ref.fluid_holdout.median);
    XT_CHECK(xs_profile_default(&nv, "h200-nvlink") == XS_OK);
    XT_CHECK(xs_calib_analyse_ref(&again, &r2, NULL, NULL, rows, n, "host", 0.2, 12345u, &nv) ==
             XS_OK);
    XT_CHECK_MSG(r2.ref.fluid_holdout.median > 0.2, "nvlink: %g", r2.ref.fluid_holdout.median);
    bad.R = -1;
    XT_CHECK(xs_calib_analyse_ref(&again, &r2, NULL, NULL, rows, n, "host", 0.2, 12345u, &bad) ==
             XS_ERR_INVALID_ARG);
  }
  XT_CHECK(rep.repeat_K == 16 && rep.repeat_spread >= 0 && rep.repeat_spread < 0.03);
  /* the per-point repeatability: each run's total issue time (32 bursts of about V/R each in
   * this drain-regime configuration), spread computed over the 5 totals */
  {
    double mn = INFINITY, mx = 0;
    for (int r = 0; r < 5; r++) {
      XT_CHECK_MSG(rep.repeat_total[r] > 20.0 * 1048576.0 / p.R &&
                       rep.repeat_total[r] < 40.0 * 1048576.0 / p.R,
                   "run %d total %g ns", r, rep.repeat_total[r]);
      mn = fmin(mn, rep.repeat_total[r]), mx = fmax(mx, rep.repeat_total[r]);
    }
    XT_NEAR(rep.repeat_total_spread, mx / mn - 1.0, 1e-12);
    XT_CHECK(rep.repeat_total_spread >= 0 && rep.repeat_total_spread < 0.03);
  }
  /* HBM: nothing backs up, every pair settles at G = 0 */
  xs_link_profile h = XS_LINK_PROFILE_INITIALIZER;
  XT_CHECK(xs_profile_default(&h, "h200-hbm") == XS_OK);
  n = 0;
  for (int j = 0; j < 3; j++)
    for (int f = 0; f < 4; f++)
      n += synth_seq(rows + n, &h, 32, vs[j], f * 1000.0, 16, "grid", pt++, 0, 0.01);
  for (size_t i = 0; i < n; i++)
    snprintf(rows[i].transport, sizeof rows[i].transport, "hbm");
  memset(&rep, 0, sizeof rep);
  rep.size = sizeof rep;
  fit = h;
  XT_CHECK(xs_calib_analyse(&fit, &rep, NULL, NULL, rows, n, "hbm", 0.2, 1u) == XS_OK);
  XT_EQ_INT(rep.ntrans, 3);
  XT_EQ_INT(rep.trans_in_grid, 0);
  XT_CHECK(rep.no_xstage);
  XT_CHECK(xs_calib_analyse(&fit, &rep, NULL, NULL, rows, n, "hbm", 1.5, 1u) ==
           XS_ERR_INVALID_ARG);
}

/* ------------------------------------------------ aggregate issue time (free mode) ----- */

/* Synthetic per-producer stamps of an aggregate fluid queue with unfair service: the K
 * producers are one issuer whose burst b takes T[b] (the model's per-burst T_iss, gaps G
 * between the aggregate bursts); within burst b the producers are served one after the other
 * in an order rotated by b (producer (b + j) % K is served j-th and ends at A_b + T_b (j+1)/K).
 * Each producer starts its next burst after its own gap (free mode), so a producer served
 * first and then last has an own duration of about two bursts: the own-duration definition
 * overstates the issue time while the aggregate one recovers T[b]. clock64 runs at clk GHz
 * with a different offset per SM; stamps are integer ns near 1.7e18 (the real magnitude). */
static void synth_stamps(xs_xbench_stamp* st, const double* T, int K, int nb, double G,
                         double clk) {
  const uint64_t origin = 1700000000000000000ull;
  double A = 0, endp[132];
  for (int b = 0; b < nb; b++) {
    for (int j = 0; j < K; j++) {
      int p = (b + j) % K;
      double end = A + T[b] * (j + 1) / K;
      double start = b == 0 ? (double)(p % 4) : endp[p] + G;
      xs_xbench_stamp* x = &st[(size_t)b * K + p];
      x->start_ns = origin + (uint64_t)llround(start);
      x->ret_ns = x->start_ns + 10;
      x->end_ns = origin + (uint64_t)llround(end);
      x->start_cyc = 1000000000ull * (uint64_t)p + (uint64_t)llround(start * clk);
      x->end_cyc = 1000000000ull * (uint64_t)p + (uint64_t)llround(end * clk);
      if (b > 0) st[(size_t)(b - 1) * K + p].gap_end_ns = x->start_ns;
      endp[p] = end;
    }
    A += T[b] + G;
  }
}

static void check_aggregate(int K, double V, double G, int nb) {
  xs_link_profile p = host_profile();
  xs_burst bs[64];
  xs_burst_result br[64];
  double T[64];
  xs_xbench_stamp st[64 * 132];
  xs_xbench_burst out[64];
  memset(st, 0, sizeof st);
  for (int b = 0; b < nb; b++)
    bs[b].V = V, bs[b].gap_ns = b ? G : 0.0;
  XT_CHECK(xs_fluid_simulate(br, NULL, &p, K, bs, (size_t)nb) == XS_OK);
  for (int b = 0; b < nb; b++)
    T[b] = br[b].t_iss_ns;
  synth_stamps(st, T, K, nb, G, 1.98);
  xs_xbench_summary s;
  memset(&s, 0, sizeof s);
  s.V = V;
  double clk = 0;
  XT_CHECK(xs_xbench_reduce(out, &s, st, K, nb, &clk) == XS_OK);
  XT_NEAR(s.sm_clock_ghz, 1.98, 1e-3);
  const double c = (K + 1.0) / (2.0 * K); /* the mean producer's share of its burst */
  double own_excess = 0;
  for (int b = 0; b < nb; b++) {
    /* stamps are whole ns: a few ns of rounding at most */
    XT_CHECK_MSG(fabs(out[b].t_iss_ns - T[b]) <= 3.0, "K %d V %.0f G %.0f burst %d: %.1f vs %.1f",
                 K, V, G, b, out[b].t_iss_ns, T[b]);
    double tm = b ? c * T[b] + (1 - c) * T[b - 1] : c * T[0];
    tm = tm < 1 ? 1 : tm > out[b].t_iss_ns ? out[b].t_iss_ns : tm;
    XT_CHECK_MSG(fabs(out[b].t_iss_mean_ns - tm) <= 3.0, "mean burst %d: %.1f vs %.1f", b,
                 out[b].t_iss_mean_ns, tm);
    XT_CHECK(out[b].t_iss_mean_ns <= out[b].t_iss_ns);
    XT_NEAR(out[b].gap_before_ns, b ? G : 0.0, 1.5);
    if (b + 1 < nb) XT_NEAR(out[b].gap_ns, G, 1.5);
    XT_CHECK(out[b].t_own_max_ns >= out[b].t_own_mean_ns);
    if (b > 0 && out[b].t_own_max_ns - out[b].t_iss_ns > own_excess)
      own_excess = out[b].t_own_max_ns - out[b].t_iss_ns;
    XT_NEAR(out[b].t_iss_cyc_ns, out[b].t_own_max_ns, 0);
  }
  XT_NEAR(s.gap_measured_ns, G, 1.5);
  XT_NEAR(s.t_iss_first_ns, T[0], 3.0);
  XT_CHECK(s.skew_max_ns > 0);
  /* rotating service: the own-duration definition overstates the slowest producer by about
   * a burst once the stage back-pressures (run 2's failure); the aggregate one does not */
  if (T[nb - 1] > 2 * T[0])
    XT_CHECK_MSG(own_excess > 0.5 * T[nb - 1], "own excess %.0f", own_excess);
  /* G = 0: the sustained rate of the second half is the drain rate, never above it */
  if (G == 0) {
    XT_CHECK_MSG(s.rate_gbps <= p.R * 1.001 && s.rate_gbps >= 0.99 * p.R, "rate %.3f vs R %.3f",
                 s.rate_gbps, p.R);
  }
  /* the raw stamps survive their CSV, and the reduction of the copy is the same */
  xs_xbench_config cfg = XS_XBENCH_CONFIG_INITIALIZER;
  cfg.K = K, cfg.V = V, cfg.gap_ns = G, cfg.bursts = nb, cfg.sync_mode = XS_SYNC_FREE;
  char path[80];
  snprintf(path, sizeof path, "/tmp/xstage-test-stamps-%d.csv", (int)getpid());
  XT_CHECK(xs_xbench_stamps_csv_write(path, st, &cfg, &s) == XS_OK);
  xs_xbench_stamp* back = NULL;
  xs_xbench_config c2 = XS_XBENCH_CONFIG_INITIALIZER;
  double V2 = 0;
  int nruns = 0;
  XT_CHECK(xs_xbench_stamps_csv_read(&back, &c2, &V2, &nruns, path, 0) == XS_OK);
  XT_CHECK(c2.K == K && c2.bursts == nb && V2 == V && c2.gap_ns == G && nruns == 1 &&
           c2.sync_mode == XS_SYNC_FREE);
  if (back) {
    XT_CHECK(memcmp(back, st, (size_t)K * nb * sizeof *st) == 0);
    xs_xbench_burst out2[64];
    xs_xbench_summary s2;
    memset(&s2, 0, sizeof s2);
    s2.V = V;
    XT_CHECK(xs_xbench_reduce(out2, &s2, back, K, nb, NULL) == XS_OK);
    XT_NEAR(s2.t_iss_steady_ns, s.t_iss_steady_ns, 0);
  }
  free(back);
  unlink(path);
}

static void test_aggregate_issue(void) {
  check_aggregate(16, 1048576.0, 0.0, 32);     /* drain-dominated */
  check_aggregate(16, 1048576.0, 10000.0, 48); /* near the transition */
  check_aggregate(16, 1048576.0, 40000.0, 16); /* backpressure-free */
  check_aggregate(132, 1048576.0, 15000.0, 48);
  check_aggregate(32, 4194304.0, 0.0, 24);
  /* one producer: aggregate = own duration */
  xs_xbench_stamp st[4];
  xs_xbench_burst out[4];
  xs_xbench_summary s;
  memset(st, 0, sizeof st);
  memset(&s, 0, sizeof s);
  s.V = 65536;
  for (int b = 0; b < 4; b++) {
    st[b].start_ns = 5000 + 3000 * (uint64_t)b, st[b].end_ns = st[b].start_ns + 700;
    st[b].ret_ns = st[b].start_ns + 600;
    st[b].start_cyc = 2 * st[b].start_ns, st[b].end_cyc = 2 * st[b].end_ns;
    st[b].gap_end_ns = b < 3 ? st[b].start_ns + 3000 : 0;
  }
  XT_CHECK(xs_xbench_reduce(out, &s, st, 1, 4, NULL) == XS_OK);
  for (int b = 0; b < 4; b++) {
    XT_NEAR(out[b].t_iss_ns, 700, 1e-9);
    XT_NEAR(out[b].t_own_max_ns, 700, 1e-9);
    XT_NEAR(out[b].t_ret_ns, 600, 1e-9);
  }
  XT_NEAR(s.gap_measured_ns, 2300, 1e-9);
  XT_CHECK(xs_xbench_reduce(out, &s, st, 0, 4, NULL) == XS_ERR_INVALID_ARG);
}

/* Stamps of two runs concatenated as calib.sh merges them (header once): each run reads back
 * by its index, one past the last is refused with the count. */
static void test_stamps_merged(void) {
  static xs_xbench_stamp st1[16 * 8], st2[132 * 6];
  double T[8];
  for (int b = 0; b < 8; b++)
    T[b] = 1000.0 + 2000.0 * b;
  memset(st1, 0, sizeof st1);
  memset(st2, 0, sizeof st2);
  synth_stamps(st1, T, 16, 8, 0.0, 1.98);
  synth_stamps(st2, T, 132, 6, 15000.0, 1.98);
  xs_xbench_config c1 = XS_XBENCH_CONFIG_INITIALIZER, c2 = XS_XBENCH_CONFIG_INITIALIZER;
  c1.K = 16, c1.bursts = 8, c1.gap_ns = 0, c1.sync_mode = XS_SYNC_GRID;
  c2.K = 132, c2.bursts = 6, c2.gap_ns = 15000, c2.sync_mode = XS_SYNC_FREE;
  xs_xbench_summary s;
  memset(&s, 0, sizeof s);
  s.V = 1048576.0;
  char a[80], b[80], m[80];
  snprintf(a, sizeof a, "/tmp/xstage-test-st1-%d.csv", (int)getpid());
  snprintf(b, sizeof b, "/tmp/xstage-test-st2-%d.csv", (int)getpid());
  snprintf(m, sizeof m, "/tmp/xstage-test-stm-%d.csv", (int)getpid());
  XT_CHECK(xs_xbench_stamps_csv_write(a, st1, &c1, &s) == XS_OK);
  XT_CHECK(xs_xbench_stamps_csv_write(b, st2, &c2, &s) == XS_OK);
  char *ta = NULL, *tb = NULL;
  size_t la = 0, lb = 0;
  XT_CHECK(xsi_read_file(&ta, &la, a, 0) == XS_OK && xsi_read_file(&tb, &lb, b, 0) == XS_OK);
  if (ta && tb) {
    const char* body = strchr(tb, '\n') + 1;
    size_t lbody = lb - (size_t)(body - tb);
    char* all = (char*)malloc(la + lbody + 1);
    memcpy(all, ta, la);
    memcpy(all + la, body, lbody);
    XT_CHECK(xsi_write_file_atomic(m, all, la + lbody) == XS_OK);
    free(all);
    xs_xbench_stamp* back = NULL;
    xs_xbench_config r = XS_XBENCH_CONFIG_INITIALIZER;
    int nruns = 0;
    double V = 0;
    XT_CHECK(xs_xbench_stamps_csv_read(&back, &r, &V, &nruns, m, 1) == XS_OK);
    XT_EQ_INT(nruns, 2);
    XT_CHECK(r.K == 132 && r.bursts == 6 && r.gap_ns == 15000 && r.sync_mode == XS_SYNC_FREE);
    if (back) XT_CHECK(memcmp(back, st2, sizeof st2) == 0);
    free(back);
    back = NULL;
    XT_CHECK(xs_xbench_stamps_csv_read(&back, &r, &V, NULL, m, 0) == XS_OK);
    XT_CHECK(r.K == 16 && r.bursts == 8 && r.sync_mode == XS_SYNC_GRID);
    if (back) XT_CHECK(memcmp(back, st1, sizeof st1) == 0);
    free(back);
    back = NULL;
    XT_CHECK(xs_xbench_stamps_csv_read(&back, &r, &V, NULL, m, 2) == XS_ERR_INVALID_ARG);
    XT_CHECK(strstr(xs_last_error(), "holds 2") != NULL);
  }
  free(ta), free(tb);
  unlink(a), unlink(b), unlink(m);
}

/* A CSV written before the aggregate columns existed (16 columns) still reads; the new
 * fields are NaN. */
static void test_csv_old_columns(void) {
  const char* text = "transport,K,V_bytes,gap_ns,burst_index,t_iss_ns,t_iss_mean_ns,gap_nominal_ns,"
                     "t_ret_ns,t_iss_cyc_ns,flavour,mode,gap_mode,phase,point,rep\n"
                     "host,16,1048576,0,0,1300,900,0,1200,1250,st.global.v4,free,fma,grid,0,0\n";
  char path[80];
  snprintf(path, sizeof path, "/tmp/xstage-test-old-%d.csv", (int)getpid());
  XT_CHECK(xsi_write_file_atomic(path, text, strlen(text)) == XS_OK);
  xs_calib_row* rows = NULL;
  size_t n = 0;
  XT_CHECK(xs_calib_csv_read(&rows, &n, path) == XS_OK);
  XT_EQ_INT(n, 1);
  if (rows && n == 1) {
    XT_NEAR(rows[0].t_iss_ns, 1300, 0);
    XT_CHECK(isnan(rows[0].t_own_max_ns) && isnan(rows[0].e_end_ns) &&
             isnan(rows[0].gap_before_ns));
  }
  free(rows);
  unlink(path);
}

/* ------------------------------------------------------------- clock-scheduled sequences ----- */

/* The model run under the clock schedule: burst b scheduled at b*P starts at max(b*P, E_{b-1});
 * the gap before it is max(0, b*P - E_{b-1}). T[b], g[b] (g[0] = 0), A[b] (its start). */
static void clock_model(double* T, double* g, double* A, const xs_link_profile* p, double K,
                        double V, double P, int nb) {
  xs_burst bs[64];
  xs_burst_result r[64];
  double E = 0;
  for (int b = 0; b < nb; b++) {
    double Sb = b * P;
    g[b] = b ? fmax(0.0, Sb - E) : 0.0;
    A[b] = b ? fmax(Sb, E) : Sb;
    for (int i = 0; i <= b; i++)
      bs[i].V = V, bs[i].gap_ns = g[i];
    XT_CHECK(xs_fluid_simulate(r, NULL, p, K, bs, (size_t)b + 1) == XS_OK);
    T[b] = r[b].t_iss_ns;
    E = A[b] + T[b];
  }
}

/* Per-producer stamps of that schedule: the producers are served in a rotating order (the one
 * served last in burst b is (K-1-b) mod K); producer p's end is A_b + T_b (rank+1)/K, its start
 * max(S_b, its own previous end). Times are ns on a clock starting at t0. */
static void clock_stamps(xs_xbench_stamp* st, const double* T, const double* A, int K, double P,
                         int nb, uint64_t t0) {
  double prev_end[200] = {0};
  for (int b = 0; b < nb; b++)
    for (int p = 0; p < K; p++) {
      int rank = (p + b) % K;
      double Sb = b * P;
      double start = b ? fmax(Sb, prev_end[p]) : Sb;
      double end = A[b] + T[b] * (rank + 1) / K;
      xs_xbench_stamp* x = &st[(size_t)b * K + p];
      memset(x, 0, sizeof *x);
      x->sched_ns = t0 + (uint64_t)llround(Sb);
      x->start_ns = t0 + (uint64_t)llround(start);
      x->end_ns = t0 + (uint64_t)llround(end);
      x->ret_ns = x->end_ns;
      x->start_cyc = 2 * x->start_ns, x->end_cyc = 2 * x->end_ns;
      prev_end[p] = end;
    }
}

static void check_clock(int K, double V, double G, int nb) {
  static xs_xbench_stamp st[200 * 64], st2[200 * 64];
  xs_xbench_burst out[64], out2[64];
  double T[64], g[64], A[64];
  xs_link_profile p = host_profile();
  xs_steady s0;
  XT_CHECK(xs_fluid_periodic(&s0, &p, K, V, 0) == XS_OK);
  double P = s0.t_iss_first_ns + G;
  clock_model(T, g, A, &p, K, V, P, nb);
  const uint64_t t0 = 1700000000123456789ull;
  clock_stamps(st, T, A, K, P, nb, t0);
  xs_xbench_summary s;
  memset(&s, 0, sizeof s);
  s.V = V;
  XT_CHECK(xs_xbench_reduce(out, &s, st, K, nb, NULL) == XS_OK);
  int late = 0;
  for (int b = 0; b < nb; b++) {
    XT_CHECK(fabs(out[b].t_iss_ns - T[b]) <= 2.0); /* stamps are whole ns */
    XT_CHECK(fabs(out[b].gap_before_ns - g[b]) <= 2.0);
    if (b + 1 < nb) XT_CHECK(fabs(out[b].gap_ns - g[b + 1]) <= 2.0);
    late += b > 0 && g[b] == 0;
  }
  XT_NEAR(s.sched_period_ns, (double)llround(nb > 1 ? P : 0), 1e-12);
  XT_CHECK(fabs(s.gap_measured_ns - fmax(0.0, s.sched_period_ns - out[0].t_iss_ns)) <= 1e-9);
  /* the model fed with the reduced gaps gives back the reduced issue times */
  xs_burst bs[64];
  xs_burst_result r[64];
  for (int b = 0; b < nb; b++)
    bs[b].V = V, bs[b].gap_ns = out[b].gap_before_ns;
  XT_CHECK(xs_fluid_simulate(r, NULL, &p, K, bs, (size_t)nb) == XS_OK);
  for (int b = 0; b < nb; b++)
    XT_CHECK(fabs(r[b].t_iss_ns - out[b].t_iss_ns) <= 1e-3 * out[b].t_iss_ns + 4.0);
  /* the stamps CSV keeps the schedule: the offline reduction is the same */
  char path[] = "/tmp/xs_test_clock_XXXXXX";
  int fd = mkstemp(path);
  XT_CHECK(fd >= 0);
  if (fd >= 0) close(fd);
  xs_xbench_config cfg = XS_XBENCH_CONFIG_INITIALIZER;
  cfg.K = K, cfg.V = V, cfg.gap_ns = G, cfg.bursts = nb, cfg.sync_mode = XS_SYNC_CLOCK;
  XT_CHECK(xs_xbench_stamps_csv_write(path, st, &cfg, &s) == XS_OK);
  xs_xbench_stamp* rd = NULL;
  xs_xbench_config c2 = XS_XBENCH_CONFIG_INITIALIZER;
  double V2 = 0;
  XT_CHECK(xs_xbench_stamps_csv_read(&rd, &c2, &V2, NULL, path, 0) == XS_OK);
  XT_EQ_INT(c2.sync_mode, XS_SYNC_CLOCK);
  if (rd) {
    memcpy(st2, rd, (size_t)nb * K * sizeof *rd);
    xs_xbench_summary s2;
    memset(&s2, 0, sizeof s2);
    s2.V = V2;
    XT_CHECK(xs_xbench_reduce(out2, &s2, st2, K, nb, NULL) == XS_OK);
    for (int b = 0; b < nb; b++) {
      XT_NEAR(out2[b].t_iss_ns, out[b].t_iss_ns, 1e-12);
      XT_NEAR(out2[b].gap_before_ns, out[b].gap_before_ns, 1e-12);
    }
  }
  free(rd);
  unlink(path);
  printf("  clock K %d V %.0f G %.0f us: T_iss first %.2f us, last %.2f us, late bursts %d\n", K,
         V, G / 1e3, T[0] / 1e3, T[nb - 1] / 1e3, late);
}

/* Clock-scheduled stamps (fluid model, unfair rotating service, S_b = t0 + b*P) reduce to the
 * model's per-burst T_iss and gaps, in the drain regime (late bursts: gaps 0) and free. */
static void test_clock_reduce(void) {
  check_clock(16, 1048576.0, 0.0, 32);
  check_clock(16, 1048576.0, 10000.0, 32);
  check_clock(16, 1048576.0, 20000.0, 32);
  check_clock(132, 1048576.0, 15000.0, 24);
  check_clock(16, 65536.0, 50000.0, 8);
  xs_sync_mode m;
  XT_CHECK(xs_sync_mode_parse(&m, "clock") == XS_OK);
  XT_EQ_INT(m, XS_SYNC_CLOCK);
  XT_CHECK(!strcmp(xs_sync_mode_name(XS_SYNC_CLOCK), "clock"));
}

/* Clock rows carry seq and gap_before_ns through the calibration CSV into the dataset, and the
 * dataset predicts each sequence with its own gaps. */
static void test_clock_rows_dataset(void) {
  xs_link_profile p = host_profile();
  const int K = 16, nb = 16;
  const double V = 1048576.0;
  double T[64], g[64], A[64];
  xs_steady s0;
  XT_CHECK(xs_fluid_periodic(&s0, &p, K, V, 0) == XS_OK);
  double P = s0.t_iss_first_ns + 5000.0;
  clock_model(T, g, A, &p, K, V, P, nb);
  static xs_xbench_stamp st[64 * 16];
  clock_stamps(st, T, A, K, P, nb, 1000000000000ull);
  xs_xbench_burst out[64];
  xs_xbench_summary s;
  memset(&s, 0, sizeof s);
  s.V = V;
  snprintf(s.transport, sizeof s.transport, "host");
  XT_CHECK(xs_xbench_reduce(out, &s, st, K, nb, NULL) == XS_OK);
  xs_xbench_config cfg = XS_XBENCH_CONFIG_INITIALIZER;
  cfg.K = K, cfg.V = V, cfg.gap_ns = 5000.0, cfg.bursts = nb, cfg.sync_mode = XS_SYNC_CLOCK;
  xs_calib_row* rows = NULL;
  size_t n = 0, cap = 0;
  XT_CHECK(xs_calib_rows_append(&rows, &n, &cap, &cfg, &s, out, "grid", 6, 0) == XS_OK);
  XT_EQ_INT((int)n, nb);
  XT_EQ_INT((int)rows[3].seq, 7);
  char path[] = "/tmp/xs_test_clockcsv_XXXXXX";
  int fd = mkstemp(path);
  XT_CHECK(fd >= 0);
  if (fd >= 0) close(fd);
  XT_CHECK(xs_calib_csv_write(path, rows, n) == XS_OK);
  xs_calib_row* back = NULL;
  size_t nb2 = 0;
  XT_CHECK(xs_calib_csv_read(&back, &nb2, path) == XS_OK);
  XT_EQ_INT((int)nb2, nb);
  if (back) {
    XT_EQ_INT((int)back[5].seq, 7);
    XT_NEAR(back[5].period_ns, s.sched_period_ns, 1e-12);
  }
  xs_dataset* ds = NULL;
  XT_CHECK(xs_dataset_load(&ds, path) == XS_OK);
  if (ds) {
    const xs_sample* smp = xs_dataset_samples(ds);
    double pf[64], pc[64];
    XT_CHECK(xs_dataset_predict(pf, pc, ds, &p) == XS_OK);
    for (int b = 0; b < nb; b++) {
      XT_EQ_INT((int)smp[b].seq, 7);
      XT_CHECK(fabs(smp[b].gap_before_ns - g[b]) <= 2.0);
      XT_CHECK(fabs(pf[b] - T[b]) <= 1e-3 * T[b] + 4.0);
      double t0 = s0.t_iss_first_ns;
      XT_CHECK(pc[b] >= t0 * (1 - 1e-9));
    }
  }
  xs_dataset_destroy(ds);
  free(back);
  free(rows);
  unlink(path);
}

/* The model under a clock schedule: a period at least V/R leaves every burst free (T0); a
 * shorter one backs the bursts up until each takes V/R (no gap left). */
static void test_predict_clock(void) {
  xs_link_profile p = host_profile();
  const double K = 16, V = 262144;
  double t0 = 0, first = 0, steady = 0;
  XT_CHECK(xs_t0_iss(&t0, &p, K, V) == XS_OK);
  XT_CHECK(xs_calib_predict_clock(&first, &steady, &p, K, V, 2.0 * V / p.R, 48) == XS_OK);
  XT_NEAR(first, t0, 1e-9);
  XT_NEAR(steady, t0, 1e-9);
  XT_CHECK(xs_calib_predict_clock(NULL, &steady, &p, K, V, t0, 48) == XS_OK);
  XT_NEAR(steady, V / p.R, 1e-6);
  XT_CHECK(xs_calib_predict_clock(NULL, &steady, &p, K, V, t0, 1) == XS_ERR_INVALID_ARG);
  XT_CHECK(xs_calib_predict_clock(NULL, &steady, NULL, K, V, t0, 8) == XS_ERR_INVALID_ARG);
}

int main(void) {
  XT_RUN(test_predict_clock);
  XT_RUN(test_names);
  XT_RUN(test_plan_quick);
  XT_RUN(test_plan_full);
  XT_RUN(test_plan_budget);
  XT_RUN(test_estimate);
  XT_RUN(test_csv_roundtrip);
  XT_RUN(test_rows_dataset);
  XT_RUN(test_knee);
  XT_RUN(test_settle_gap);
  XT_RUN(test_predicted_settle_gap);
  XT_RUN(test_rows_median);
  XT_RUN(test_transitions_same_rule);
  XT_RUN(test_analyse);
  XT_RUN(test_aggregate_issue);
  XT_RUN(test_stamps_merged);
  XT_RUN(test_csv_old_columns);
  XT_RUN(test_clock_reduce);
  XT_RUN(test_clock_rows_dataset);
  return XT_END();
}
