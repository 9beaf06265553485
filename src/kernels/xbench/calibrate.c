/* calibrate.c — xs_calibrate: probes (T0, R, Q), a first fit, the K x V x G grid centred on
 * the predicted transitions, the held-out fit, the measured transition gaps, repeatability,
 * cudaMemcpy bandwidth, and the files (CSV, profile JSON, SVG). See docs/calibration.md. */
#include "core/svg.h"
#include "kernels/xbench/xbench_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct seq {
  xs_sweep_point pt;
  xs_xbench_summary s;
  int ok; /* measured */
} seq;

typedef struct calib_run {
  xs_xbench* bench;
  const xs_calib_config* cfg;
  char transport[32];
  xs_calib_row* rows;
  size_t nrows, caprows;
  xs_xbench_burst* bursts; /* XS_XBENCH_MAX_BURSTS scratch */
  long point;
  double kernel_ms;
  double t_begin, budget_s;
  int stopped; /* the measured time reached the budget: remaining points skipped */
  const xs_link_profile* centre; /* clock mode: P = T0(K, V) of this profile + G */
} calib_run;

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp_double(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

static double median(double* v, size_t n) {
  if (!n) return NAN;
  qsort(v, n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static void progress(const calib_run* r, const char* what, double f) {
  if (r->cfg->progress) r->cfg->progress(r->cfg->progress_arg, what, f);
}

/* Measure the points of one phase; progress runs from f0 to f1. */
static xs_result measure(calib_run* r, seq* out, const xs_sweep_point* pts, size_t n, double f0,
                         double f1, const char* label) {
  for (size_t i = 0; i < n; i++) {
    out[i].pt = pts[i];
    out[i].ok = 0;
    if (r->stopped || now_s() - r->t_begin > r->budget_s) {
      r->stopped = 1;
      continue;
    }
    xs_xbench_config c = XS_XBENCH_CONFIG_INITIALIZER;
    c.device = r->cfg->device;
    c.target = r->cfg->target;
    c.K = pts[i].K;
    c.V = pts[i].V;
    c.gap_ns = pts[i].G;
    c.bursts = pts[i].bursts;
    c.flavour = r->cfg->flavour;
    c.gap_mode = r->cfg->gap_mode;
    c.sync_mode = r->cfg->sync_mode;
    if (c.sync_mode == XS_SYNC_CLOCK) {
      /* the schedule: burst b at b*P, P = T0 + G (T0 of the profile the phase is centred on);
       * in the drain regime later bursts start late and their gaps shrink (recorded per burst) */
      double t0 = 0;
      xs_steady st;
      if (r->centre && xs_fluid_periodic(&st, r->centre, (double)c.K, c.V, 0.0) == XS_OK)
        t0 = st.t_iss_first_ns; /* the first burst, from idle */
      c.period_ns = t0 > 0 ? t0 + c.gap_ns : 0.0; /* 0: the embedded profile's T0 */
    }
    xs_result res = xs_xbench_measure(r->bursts, NULL, &out[i].s, r->bench, &c);
    if (res != XS_OK) {
      xsi_error_prefix("%s point %zu (K %d, V %.0f, G %.0f ns)", label, i, c.K, c.V, c.gap_ns);
      return res;
    }
    out[i].ok = 1;
    r->kernel_ms += out[i].s.kernel_ms;
    XSI_CHECK(xs_calib_rows_append(&r->rows, &r->nrows, &r->caprows, &c, &out[i].s, r->bursts,
                                   xs_sweep_phase_name(pts[i].phase), r->point++, pts[i].rep));
    char what[96];
    snprintf(what, sizeof what, "%s %zu/%zu: K %d V %.0f KiB G %.1f us", label, i + 1, n, c.K,
             c.V / 1024, c.gap_ns / 1e3);
    progress(r, what, f0 + (f1 - f0) * (double)(i + 1) / (double)n);
  }
  return XS_OK;
}

/* A dataset of the rows whose phase is in `phases` (NULL: all). */
static xs_result rows_dataset(xs_dataset** ds, const calib_run* r, const char* const* phases) {
  xs_sample* s = (xs_sample*)calloc(r->nrows ? r->nrows : 1, sizeof *s);
  if (!s) return xsi_set_error(XS_ERR_NO_MEMORY, "calibration: %zu samples", r->nrows);
  size_t n = 0;
  for (size_t i = 0; i < r->nrows; i++) {
    const xs_calib_row* w = &r->rows[i];
    int keep = !phases;
    for (int j = 0; phases && phases[j]; j++)
      keep |= !strcmp(w->phase, phases[j]);
    if (!keep) continue;
    snprintf(s[n].transport, sizeof s[n].transport, "%s", w->transport);
    s[n].K = w->K, s[n].V = w->V, s[n].G = w->gap_ns;
    s[n].burst_index = w->burst_index, s[n].t_iss_ns = w->t_iss_ns;
    s[n].t_iss_mean_ns = w->t_iss_mean_ns;
    if (w->seq >= 1 && isfinite(w->gap_before_ns) && w->gap_before_ns >= 0)
      s[n].seq = w->seq, s[n].gap_before_ns = w->gap_before_ns;
    n++;
  }
  xs_result res = xs_dataset_from_samples(ds, s, n);
  free(s);
  return res;
}

/* R, Q knees and the profile the grid is centred on (a first fit of the probes; the embedded
 * profile with the measured R if that fit fails). */
static xs_result analyse_probes(xs_link_profile* centre, xs_calib_report* rep, calib_run* r,
                                const seq* pr, size_t n, const xs_link_profile* guess) {
  double* v = (double*)malloc((n + 1) * sizeof(double));
  double* t = (double*)malloc((n + 1) * sizeof(double));
  double* tmp = (double*)malloc((n + 1) * sizeof(double));
  xs_dataset* ds = NULL;
  xs_result res = XS_OK;
  if (!v || !t || !tmp) XSI_FAIL(res, XS_ERR_NO_MEMORY, done, "calibration: probe analysis");
  size_t m = 0;
  for (size_t i = 0; i < n; i++)
    if (pr[i].ok && pr[i].pt.phase == XS_PHASE_R && pr[i].s.rate_gbps > 0)
      tmp[m++] = pr[i].s.rate_gbps;
  rep->R_meas = m ? median(tmp, m) : 0;
  /* Q: per K, median single-burst T_iss per V, then the knee. */
  rep->nq = 0;
  for (size_t i = 0; i < n && rep->nq < XS_CALIB_MAX_K; i++) {
    if (!pr[i].ok || pr[i].pt.phase != XS_PHASE_Q) continue;
    int K = pr[i].pt.K, seen = 0;
    for (int q = 0; q < rep->nq; q++)
      seen |= rep->q_k[q] == K;
    if (seen) continue;
    size_t nv = 0;
    for (size_t j = i; j < n; j++) {
      if (!pr[j].ok || pr[j].pt.phase != XS_PHASE_Q || pr[j].pt.K != K) continue;
      if (nv && pr[j].s.V == v[nv - 1]) continue;
      size_t nr = 0;
      for (size_t k = j; k < n; k++)
        if (pr[k].ok && pr[k].pt.phase == XS_PHASE_Q && pr[k].pt.K == K && pr[k].s.V == pr[j].s.V)
          tmp[nr++] = pr[k].s.t_iss_first_ns;
      v[nv] = pr[j].s.V, t[nv] = median(tmp, nr), nv++;
    }
    double vk = 0, qb = 0;
    if (nv >= 4 && rep->R_meas > 0 && xs_calib_knee(&vk, &qb, v, t, nv, rep->R_meas) == XS_OK) {
      rep->q_k[rep->nq] = K, rep->q_knee[rep->nq] = qb, rep->nq++;
    }
  }
  /* first fit on the probes, no held-out rows */
  *centre = *guess;
  if (rep->R_meas > 0) centre->R = rep->R_meas;
  {
    static const char* const probe_phases[] = {"t0", "R", "Q", NULL};
    xs_fit_options fo = XS_FIT_OPTIONS_INITIALIZER;
    xs_link_profile fitted = *centre;
    xs_fit_report fr;
    fo.holdout_fraction = 0;
    fo.transport = r->transport;
    if (rows_dataset(&ds, r, probe_phases) == XS_OK &&
        xs_model_fit(&fitted, &fr, NULL, ds, &fo) == XS_OK && xs_profile_validate(&fitted) == XS_OK)
      *centre = fitted;
    xsi_clear_error();
  }
done:
  xs_dataset_destroy(ds);
  free(v);
  free(t);
  free(tmp);
  return res;
}

/* SVG: steady T_iss against the measured gap for up to four (K, V), measured points beside
 * the fluid model's and the closed form's predictions. */
static xs_result write_svg(const char* path, const seq* g, size_t n, const xs_calib_report* rep,
                           const xs_link_profile* p) {
  xsi_plot plot;
  char title[160];
  snprintf(title, sizeof title, "X-Stage calibration: %.60s, %.16s, %.24s", p->device, p->transport,
           p->flavour);
  xsi_plot_init(&plot, title, "gap G (us; clock schedule: period = T0 + G)",
                 "steady-state T_iss (us)");
  xs_result res = XS_OK;
  static const unsigned colors[4] = {0x1f77b4, 0xd62728, 0x2ca02c, 0x9467bd};
  int drawn = 0;
  for (int q = 0; q < rep->ntrans && drawn < 4; q++) {
    const xs_calib_transition* tr = &rep->trans[q];
    if (!isfinite(tr->g_meas_ns) && q + 4 - drawn < rep->ntrans) continue;
    double x[64], y[64], xm[96], yf[96], yc[96], gmax = 0;
    size_t m = 0;
    int clock = 0, nbursts = 2;
    for (size_t j = 0; j < n && m < 64; j++)
      if (g[j].ok && g[j].pt.phase == XS_PHASE_GRID && g[j].pt.K == tr->K && g[j].s.V == tr->V) {
        x[m] = g[j].s.gap_measured_ns / 1e3, y[m] = g[j].s.t_iss_steady_ns / 1e3;
        gmax = x[m] > gmax ? x[m] : gmax;
        clock |= g[j].s.sched_period_ns > 0;
        nbursts = g[j].pt.bursts > nbursts ? g[j].pt.bursts : nbursts;
        m++;
      }
    if (nbursts > XS_XBENCH_MAX_BURSTS) nbursts = XS_XBENCH_MAX_BURSTS;
    if (!m) continue;
    for (int k = 0; k < 96; k++) {
      xs_steady st;
      double G = gmax * 1e3 * k / 95.0, c = NAN, t0 = NAN, ss = NAN;
      xm[k] = G / 1e3;
      if (clock) {
        /* NOTE: a clock-scheduled sequence has period P = T0 + G: while P < V/R every burst
         * starts late (no gap at all), so both predictors are run under the same schedule as
         * the measurement (the closed form's steady state: T0 if P >= V/R, else V/R). */
        xs_t0_iss(&t0, p, tr->K, tr->V);
        yf[k] = xs_calib_predict_clock(NULL, &ss, p, tr->K, tr->V, t0 + G, nbursts) == XS_OK
                    ? ss / 1e3
                    : NAN;
        yc[k] = (t0 + G >= tr->V / p->R ? t0 : tr->V / p->R) / 1e3;
      } else {
        yf[k] = xs_fluid_periodic(&st, p, tr->K, tr->V, G) == XS_OK ? st.t_iss_ns / 1e3 : NAN;
        yc[k] = xs_predict_closed(&c, p, tr->K, tr->V, G) == XS_OK ? c / 1e3 : NAN;
      }
    }
    char lab[96];
    snprintf(lab, sizeof lab, "K=%d V=%.0f KiB measured", tr->K, tr->V / 1024);
    XSI_CHECK_GOTO(xsi_plot_series(&plot, lab, x, y, m, XSI_STYLE_POINTS, colors[drawn]), res,
                   done);
    snprintf(lab, sizeof lab, "K=%d V=%.0f KiB fluid", tr->K, tr->V / 1024);
    XSI_CHECK_GOTO(xsi_plot_series(&plot, lab, xm, yf, 96, XSI_STYLE_LINE, colors[drawn]), res,
                   done);
    snprintf(lab, sizeof lab, "K=%d V=%.0f KiB closed form", tr->K, tr->V / 1024);
    XSI_CHECK_GOTO(xsi_plot_series(&plot, lab, xm, yc, 96, XSI_STYLE_DASHED, colors[drawn]), res,
                   done);
    drawn++;
  }
  res = xsi_plot_write(&plot, path);
done:
  xsi_plot_free(&plot);
  return res;
}

static xs_result check_cfg(const xs_calib_config* c) {
  XSI_ARG(c->size == sizeof(xs_calib_config),
          "xs_calibrate: config size mismatch (use XS_CALIB_CONFIG_INITIALIZER)");
  XSI_ARG(c->level == XS_CALIB_QUICK || c->level == XS_CALIB_FULL, "xs_calibrate: bad level");
  XSI_ARG(c->holdout_fraction >= 0 && c->holdout_fraction <= 0.9,
          "xs_calibrate: holdout_fraction must be in [0, 0.9] (got %g)", c->holdout_fraction);
  XSI_ARG(c->budget_s >= 0 && c->budget_s <= 3600, "xs_calibrate: budget_s must be in [0, 3600]");
  XSI_ARG((unsigned)c->flavour < XS_FLAVOUR_COUNT, "xs_calibrate: bad flavour");
  return XS_OK;
}

xs_result xs_calibrate(xs_link_profile* profile, xs_calib_report* report,
                       const xs_calib_config* cfg) {
  XSI_ARG(profile && cfg, "xs_calibrate: NULL profile or config");
  XSI_CHECK(check_cfg(cfg));
  xs_result res = XS_OK;
  calib_run r;
  memset(&r, 0, sizeof r);
  r.cfg = cfg;
  r.t_begin = now_s();
  /* NOTE: the plan's estimate keeps the GPU time within the level's budget; this hard stop
   * (budget + 50% for host overhead) bounds the wall time even if the estimate is wrong. */
  double budget = cfg->budget_s > 0 ? cfg->budget_s : (cfg->level == XS_CALIB_FULL ? 300 : 60);
  r.budget_s = 1.5 * budget;
  xs_calib_report rep;
  memset(&rep, 0, sizeof rep);
  rep.size = sizeof rep;
  xs_sweep_point* pts = (xs_sweep_point*)malloc(XS_SWEEP_MAX_POINTS * sizeof *pts);
  seq* pr = (seq*)calloc(XS_SWEEP_MAX_POINTS, sizeof *pr);
  seq* gr = (seq*)calloc(XS_SWEEP_MAX_POINTS, sizeof *gr);
  xs_dataset* ds = NULL;
  xs_calib_row *back = NULL, *med = NULL;
  size_t nback = 0, nmed = 0;
  size_t npr = 0, ngr = 0;
  r.bursts = (xs_xbench_burst*)malloc(XS_XBENCH_MAX_BURSTS * sizeof *r.bursts);
  if (!pts || !pr || !gr || !r.bursts) XSI_FAIL(res, XS_ERR_NO_MEMORY, fail, "xs_calibrate");
  XSI_CHECK_GOTO(xs_target_name(r.transport, sizeof r.transport, cfg->target), res, fail);

  /* 0. cudaMemcpy bandwidth (the yardstick for R on the host path), then the session. */
  if (cfg->memcpy_bw && cfg->target.kind == XS_TARGET_PEER) {
    /* the yardstick of a peer path: cudaMemcpyPeer to the same peer(s), all at once */
    int peers[XSI_XB_MAX_TARGETS], np = 0;
    if (cfg->target.peer != XS_PEER_ALL)
      peers[np++] = cfg->target.peer;
    else
      np = xsi_xb_reachable_peers(cfg->device, peers, XSI_XB_MAX_TARGETS);
    progress(&r, "cudaMemcpyPeer bandwidth (256 MiB per peer)", 0.0);
    if (np)
      XSI_CHECK_GOTO(xs_memcpy_peer_bandwidth(&rep.memcpy_d2h, &rep.memcpy_h2d, cfg->device, peers,
                                              np, 0, 5),
                     res, fail);
  } else if (cfg->memcpy_bw) {
    progress(&r, "cudaMemcpy bandwidth (256 MiB pinned)", 0.0);
    XSI_CHECK_GOTO(xs_memcpy_bandwidth(&rep.memcpy_d2h, &rep.memcpy_h2d, cfg->device, 0, 5), res,
                   fail);
  }
  XSI_CHECK_GOTO(xs_xbench_create(&r.bench, cfg->device, cfg->target, 0), res, fail);
  int sms = 0;
  XSI_CHECK_GOTO(xs_xbench_info(&sms, &rep.fma_iters_per_ns, r.bench), res, fail);
  {
    xs_xbench_summary tmp;
    xs_xbench_config c = XS_XBENCH_CONFIG_INITIALIZER;
    c.device = cfg->device, c.target = cfg->target, c.K = 1, c.V = 4096, c.bursts = 1;
    XSI_CHECK_GOTO(xs_xbench_measure(NULL, NULL, &tmp, r.bench, &c), res, fail);
    rep.timer_res_ns = tmp.timer_res_ns;
  }

  /* 1. probes, centred on the embedded profile of this path */
  xs_link_profile guess;
  const char* pname = cfg->target.kind == XS_TARGET_HOST  ? "h200-host"
                      : cfg->target.kind == XS_TARGET_HBM ? "h200-hbm"
                                                          : "h200-nvlink";
  XSI_CHECK_GOTO(xs_profile_default(&guess, pname), res, fail);
  xs_sweep_options so = XS_SWEEP_OPTIONS_INITIALIZER;
  so.level = cfg->level;
  so.sm_count = sms;
  so.max_V = (double)xsi_xbench_ring_bytes(r.bench);
  so.budget_ns = budget * 1e9;
  XSI_CHECK_GOTO(xs_sweep_plan(pts, XS_SWEEP_MAX_POINTS, &npr, 0, &so, &guess), res, fail);
  r.centre = &guess;
  XSI_CHECK_GOTO(measure(&r, pr, pts, npr, 0.05, 0.35, "probe"), res, fail);
  xs_link_profile centre;
  XSI_CHECK_GOTO(analyse_probes(&centre, &rep, &r, pr, npr, &guess), res, fail);

  /* 2. the grid around each (K, V)'s predicted transition, and the repeatability runs */
  XSI_CHECK_GOTO(xs_sweep_plan(pts, XS_SWEEP_MAX_POINTS, &ngr, 1, &so, &centre), res, fail);
  r.centre = &centre;
  XSI_CHECK_GOTO(measure(&r, gr, pts, ngr, 0.35, 0.90, "grid"), res, fail);

  /* 3. CSV (read back: the round trip is part of the check), then the analysis: medians over
   * the repetitions of every configuration, the fit with a random held-out share of the
   * configurations, the transitions on the grid, the repeatability (xs_calib_analyse). */
  if (cfg->out_dir) {
    snprintf(rep.csv_path, sizeof rep.csv_path, "%s/xstage-%s.csv", cfg->out_dir, r.transport);
    XSI_CHECK_GOTO(xs_calib_csv_write(rep.csv_path, r.rows, r.nrows), res, fail);
    XSI_CHECK_GOTO(xs_calib_csv_read(&back, &nback, rep.csv_path), res, fail);
    if (nback != r.nrows)
      XSI_FAIL(res, XS_ERR_INTERNAL, fail, "%s: %zu rows read back, %zu written", rep.csv_path,
               nback, r.nrows);
  }
  progress(&r, "fitting the model", 0.92);
  *profile = guess;
  snprintf(profile->device, sizeof profile->device, "%.63s", xsi_xbench_device_name(r.bench));
  snprintf(profile->transport, sizeof profile->transport, "%s", r.transport);
  snprintf(profile->flavour, sizeof profile->flavour, "%s", xs_flavour_name(cfg->flavour));
  {
    time_t now = time(NULL);
    struct tm tmv;
    gmtime_r(&now, &tmv);
    strftime(profile->date, sizeof profile->date, "%Y-%m-%d", &tmv);
  }
  snprintf(profile->method, sizeof profile->method, "%.159s",
           cfg->method ? cfg->method : "xs_calibrate (xstage calibrate)");
  rep.reps = cfg->level == XS_CALIB_FULL ? XS_CALIB_REPS_FULL : XS_CALIB_REPS_QUICK;
  XSI_CHECK_GOTO(xs_calib_analyse_ref(profile, &rep, &med, &nmed, back ? back : r.rows,
                                      back ? nback : r.nrows, r.transport, cfg->holdout_fraction,
                                      cfg->seed, cfg->reference),
                 res, fail);
  if (cfg->out_dir) {
    /* the medians the model was fitted to and evaluated on, read back as a dataset */
    char mpath[600];
    snprintf(mpath, sizeof mpath, "%s/xstage-%s-median.csv", cfg->out_dir, r.transport);
    XSI_CHECK_GOTO(xs_calib_csv_write(mpath, med, nmed), res, fail);
    XSI_CHECK_GOTO(xs_dataset_load(&ds, mpath), res, fail);
  }

  rep.R_vs_memcpy =
      cfg->target.kind != XS_TARGET_HBM && rep.memcpy_d2h > 0 ? rep.R_meas / rep.memcpy_d2h : 0;

  /* 5. profile JSON and SVG */
  if (cfg->out_dir) {
    progress(&r, "writing profile and plot", 0.97);
    snprintf(rep.profile_path, sizeof rep.profile_path, "%s/profile-%s.json", cfg->out_dir,
             r.transport);
    XSI_CHECK_GOTO(xs_profile_write(profile, rep.profile_path), res, fail);
    snprintf(rep.svg_path, sizeof rep.svg_path, "%s/calibration-%s.svg", cfg->out_dir, r.transport);
    XSI_CHECK_GOTO(write_svg(rep.svg_path, gr, ngr, &rep, profile), res, fail);
  }
  rep.n_points = (size_t)r.point;
  rep.n_rows = r.nrows;
  rep.gpu_s = r.kernel_ms / 1e3;
  rep.wall_s = now_s() - r.t_begin;
  progress(&r, "done", 1.0);
  if (report) *report = rep;
  xsi_clear_error();
fail:
  if (res != XS_OK && report) {
    rep.n_points = (size_t)r.point, rep.n_rows = r.nrows;
    rep.wall_s = now_s() - r.t_begin;
    *report = rep;
  }
  xs_dataset_destroy(ds);
  free(back);
  free(med);
  xs_xbench_destroy(r.bench);
  free(r.rows);
  free(r.bursts);
  free(gr);
  free(pr);
  free(pts);
  return res;
}

xs_result xs_calibrate_quick(xs_link_profile* profile, xs_calib_report* report,
                             const char* out_dir) {
  xs_calib_config c = XS_CALIB_CONFIG_INITIALIZER;
  c.level = XS_CALIB_QUICK;
  c.out_dir = out_dir;
  c.method = "xs_calibrate_quick (xstage run)";
  return xs_calibrate(profile, report, &c);
}
