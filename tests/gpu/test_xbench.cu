/* test_xbench.cu — the X-Stage microbenchmark on a real GPU (SKIPPED without one):
 *   - every flavour writes every byte it claims, to host-mapped memory and to HBM (and to a peer
 *     with >= 2 GPUs): the target is poisoned before and checked after, flags counted;
 *   - timestamps are monotone (per producer and across the grid barrier), gaps are realised;
 *   - a bounded barrier times out cleanly instead of hanging;
 *   - measured rows round-trip through the CSV writer, xs_dataset_load and xs_model_fit.
 * Run: build/test_xbench (from the repository root). */
#include "test.h"
#include "xstage/xstage.h"

#include <cuda_runtime_api.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int g_ngpu = 0;
static xs_xbench* g_host = NULL;
static xs_xbench* g_hbm = NULL;

static xs_xbench_config base_cfg(xs_target_kind kind, int peer) {
  xs_xbench_config c = XS_XBENCH_CONFIG_INITIALIZER;
  c.target.kind = kind;
  c.target.peer = peer;
  c.check = 1;
  return c;
}

/* Timestamps of one run: per producer start <= ret <= end <= gap end <= next start (the gap
 * end stamp sits between the compute gap and the next burst; none after the last burst); in
 * sync mode every producer's start of burst b+1 is after every producer's end of burst b (the
 * barrier). */
static void check_stamps(const xs_xbench_stamp* s, const xs_xbench_config* c) {
  int bad = 0;
  for (int b = 0; b < c->bursts; b++)
    for (int p = 0; p < c->K; p++) {
      const xs_xbench_stamp* x = &s[(size_t)b * c->K + p];
      bad += !(x->start_ns > 0 && x->start_ns <= x->ret_ns && x->ret_ns <= x->end_ns);
      bad += !(x->end_cyc >= x->start_cyc);
      if (c->sync_mode == XS_SYNC_CLOCK) {
        /* clock mode: no gap stamps; burst b starts at or after its schedule S_b, the same for
         * every producer, S_b = S_0 + b*P; a producer never starts before its previous end */
        bad += x->gap_end_ns != 0;
        bad += !(x->sched_ns > 0 && x->start_ns >= x->sched_ns);
        bad += x->sched_ns != s[(size_t)b * c->K].sched_ns;
        if (b > 0)
          bad += x->sched_ns - s[(size_t)(b - 1) * c->K + p].sched_ns !=
                 (uint64_t)llround(c->period_ns);
        if (b + 1 < c->bursts) bad += !(x->end_ns <= s[(size_t)(b + 1) * c->K + p].start_ns);
        continue;
      }
      bad += x->sched_ns != 0;
      if (b + 1 == c->bursts) bad += x->gap_end_ns != 0;
      if (b + 1 < c->bursts) {
        bad += !(x->end_ns <= x->gap_end_ns);
        bad += !(x->gap_end_ns <= s[(size_t)(b + 1) * c->K + p].start_ns);
        bad += !(x->end_ns <= s[(size_t)(b + 1) * c->K + p].start_ns);
        if (c->sync_mode == XS_SYNC_GRID)
          for (int q = 0; q < c->K; q++)
            bad += !(x->end_ns <= s[(size_t)(b + 1) * c->K + q].start_ns);
      }
    }
  XT_CHECK_MSG(bad == 0, "%d timestamp order violations (K %d, bursts %d, %s)", bad, c->K,
               c->bursts, xs_sync_mode_name(c->sync_mode));
}

static void run_checked(xs_xbench* bench, xs_xbench_config c, const char* what) {
  xs_xbench_summary s;
  xs_xbench_stamp* st = (xs_xbench_stamp*)calloc((size_t)c.bursts * c.K, sizeof *st);
  xs_xbench_burst* b = (xs_xbench_burst*)calloc((size_t)c.bursts, sizeof *b);
  memset(&s, 0, sizeof s);
  xs_result res = xs_xbench_measure(b, st, &s, bench, &c);
  XT_CHECK_MSG(res == XS_OK, "%s: %s: %s", what, xs_strerror(res), xs_last_error());
  double per = 16.0 * ceil(c.V / c.K / 16.0);
  XT_NEAR(s.V, per * c.K, 0);
  XT_CHECK_MSG(s.bytes_checked > 0 && s.bytes_wrong == 0 && s.flag_wrong == 0,
               "%s: checked %ld, wrong %ld, flags wrong %ld", what, s.bytes_checked, s.bytes_wrong,
               s.flag_wrong);
  XT_CHECK(s.bytes_checked % (long)(per * c.K) == 0);
  if (res == XS_OK) check_stamps(st, &c);
  for (int i = 0; i < c.bursts; i++)
    XT_CHECK(b[i].t_iss_ns > 0 && b[i].t_iss_mean_ns <= b[i].t_iss_ns + 1e-9);
  printf("  %-40s K %3d V %9.0f: T_iss first %9.1f ns, steady %9.1f ns (mean %9.1f), gap %9.1f "
         "ns, %ld bytes checked\n",
         what, c.K, s.V, s.t_iss_first_ns, s.t_iss_steady_ns, s.t_iss_mean_steady_ns,
         s.gap_measured_ns, s.bytes_checked);
  free(st);
  free(b);
}

/* Every flavour, flags on and off, odd sizes (per-producer bytes rounded up to 16). */
static void flavours_on(xs_xbench* bench, xs_target_kind kind, int peer) {
  static const double Vs[] = {1048576.0, 3.0 * 65536 + 48, 9437184.0 + 16};
  static const int Ks[] = {16, 7, 132};
  int sms = 0;
  xs_xbench_info(&sms, NULL, bench);
  for (int f = 0; f < XS_FLAVOUR_COUNT; f++)
    for (int i = 0; i < 3; i++) {
      xs_xbench_config c = base_cfg(kind, peer);
      c.flavour = (xs_flavour)f;
      c.K = Ks[i] > sms ? sms : Ks[i];
      c.V = Vs[i];
      c.bursts = 5;
      c.gap_ns = 2000;
      c.flag = i == 1;
      char what[96];
      snprintf(what, sizeof what, "%s %s%s",
               kind == XS_TARGET_HOST  ? "host"
               : kind == XS_TARGET_HBM ? "hbm"
               : peer == XS_PEER_ALL   ? "peer:all"
                                       : "peer",
               xs_flavour_name(c.flavour), c.flag ? " +flag" : "");
      run_checked(bench, c, what);
    }
}

static void test_bytes_host(void) {
  flavours_on(g_host, XS_TARGET_HOST, -1);
}
static void test_bytes_hbm(void) {
  flavours_on(g_hbm, XS_TARGET_HBM, -1);
}

static void test_bytes_peer(void) {
  if (g_ngpu < 2) {
    printf("  (peer target skipped: %d GPU)\n", g_ngpu);
    return;
  }
  xs_target t = {XS_TARGET_PEER, 1};
  xs_xbench* b = NULL;
  xs_result res = xs_xbench_create(&b, 0, t, (size_t)64 << 20);
  if (res == XS_ERR_UNSUPPORTED) {
    printf("  (peer target skipped: %s)\n", xs_last_error());
    return;
  }
  XT_CHECK_MSG(res == XS_OK, "%s", xs_last_error());
  if (b) flavours_on(b, XS_TARGET_PEER, 1);
  xs_xbench_destroy(b);
  /* peer:all: producer k writes peer k mod n (every ring and flag checked) */
  t.peer = XS_PEER_ALL;
  b = NULL;
  res = xs_xbench_create(&b, 0, t, (size_t)64 << 20);
  XT_CHECK_MSG(res == XS_OK, "peer:all: %s", xs_last_error());
  if (b) flavours_on(b, XS_TARGET_PEER, XS_PEER_ALL);
  xs_xbench_destroy(b);
  /* cudaMemcpyPeer yardstick: positive, finite, and a bad peer list is refused */
  double out = 0, in = 0;
  int peers[1] = {1}, self[1] = {0};
  res = xs_memcpy_peer_bandwidth(&out, &in, 0, peers, 1, (size_t)64 << 20, 3);
  XT_CHECK_MSG(res == XS_OK && out > 1.0 && in > 1.0 && isfinite(out) && isfinite(in),
               "memcpy peer: %s (%g / %g GB/s)", xs_last_error(), out, in);
  printf("  cudaMemcpyPeer 0 -> 1: %.1f GB/s, 1 -> 0: %.1f GB/s\n", out, in);
  XT_EQ_INT(xs_memcpy_peer_bandwidth(&out, &in, 0, self, 1, 4096, 1), XS_ERR_INVALID_ARG);
  XT_EQ_INT(xs_memcpy_peer_bandwidth(&out, &in, 0, peers, 0, 4096, 1), XS_ERR_INVALID_ARG);
}

/* Modes: free-running producers, spin and load gaps; the realised gap follows the nominal one. */
static void test_modes_and_gaps(void) {
  static const xs_gap_mode gm[3] = {XS_GAP_FMA, XS_GAP_SPIN, XS_GAP_LOAD};
  for (int m = 0; m < 6; m++) {
    xs_xbench_config c = base_cfg(XS_TARGET_HOST, -1);
    c.sync_mode = m & 1 ? XS_SYNC_FREE : XS_SYNC_GRID;
    c.gap_mode = gm[m >> 1];
    c.K = 16, c.V = 262144, c.bursts = 12, c.gap_ns = 20000;
    xs_xbench_summary s;
    xs_xbench_burst b[12];
    xs_xbench_stamp st[12 * 16];
    xs_result res = xs_xbench_measure(b, st, &s, g_host, &c);
    XT_CHECK_MSG(res == XS_OK, "%s", xs_last_error());
    if (res != XS_OK) continue;
    check_stamps(st, &c);
    /* spin: at least G; FMA and load: calibrated (at session start / the first load run),
     * within a factor (clocks move; 256 KiB bursts of 16 CTAs leave the stage unfilled) */
    double lo = c.gap_mode == XS_GAP_SPIN ? 0.99 : 0.6, hi = 2.5;
    if (c.gap_mode == XS_GAP_LOAD)
      XT_CHECK_MSG(s.load_iters_per_ns > 0 && isfinite(s.load_iters_per_ns),
                   "load gap calibration %g iterations/ns", s.load_iters_per_ns);
    XT_CHECK_MSG(s.gap_measured_ns >= lo * c.gap_ns && s.gap_measured_ns <= hi * c.gap_ns + 5000,
                 "%s/%s: measured gap %.0f ns for nominal %.0f", xs_sync_mode_name(c.sync_mode),
                 xs_gap_mode_name(c.gap_mode), s.gap_measured_ns, c.gap_ns);
    printf("  %s/%s: gap %.0f ns (nominal %.0f), T_iss steady %.0f ns, timer res %.0f ns, SM "
           "%.3f GHz\n",
           xs_sync_mode_name(c.sync_mode), xs_gap_mode_name(c.gap_mode), s.gap_measured_ns,
           c.gap_ns, s.t_iss_steady_ns, s.timer_res_ns, s.sm_clock_ghz);
  }
}

/* Clock mode: every byte written, the schedule in the stamps, gaps g_b in [0, P]; a drain-bound
 * period (P below V/R) makes later bursts late (gaps 0), a long one keeps T_iss at T0. */
static void test_clock_mode(void) {
  xs_xbench_config c = base_cfg(XS_TARGET_HOST, -1);
  c.sync_mode = XS_SYNC_CLOCK;
  c.K = 16, c.V = 1048576, c.bursts = 16, c.period_ns = 5000;
  run_checked(g_host, c, "clock, P 5 us (drain-bound)");
  c.period_ns = 60000;
  run_checked(g_host, c, "clock, P 60 us (free)");
  c.check = 0;
  for (int k = 0; k < 2; k++) {
    c.period_ns = k ? 60000 : 5000;
    xs_xbench_summary s;
    xs_xbench_burst b[16];
    xs_xbench_stamp st[16 * 16];
    xs_result res = xs_xbench_measure(b, st, &s, g_host, &c);
    XT_CHECK_MSG(res == XS_OK, "%s", xs_last_error());
    if (res != XS_OK) continue;
    check_stamps(st, &c);
    XT_NEAR(s.sched_period_ns, c.period_ns, 1e-9);
    int late = 0;
    for (int i = 1; i < 16; i++) {
      XT_CHECK(b[i].gap_before_ns >= 0 && b[i].gap_before_ns <= c.period_ns + 1);
      late += b[i].gap_before_ns == 0;
    }
    if (!k) XT_CHECK_MSG(late >= 8, "P 5 us: only %d of 15 bursts late", late);
    if (k) XT_CHECK_MSG(s.t_iss_steady_ns <= 3.0 * s.t_iss_first_ns + 2000,
                        "P 60 us: steady %.0f ns vs first %.0f ns", s.t_iss_steady_ns,
                        s.t_iss_first_ns);
    printf("  clock P %.0f us: first %.0f ns, steady %.0f ns, late %d/15, rate %.1f GB/s\n",
           c.period_ns / 1e3, s.t_iss_first_ns, s.t_iss_steady_ns, late, s.rate_gbps);
  }
}

static void test_timeout_and_args(void) {
  int sms = 0;
  XT_CHECK(xs_xbench_info(&sms, NULL, g_hbm) == XS_OK && sms > 0);
  /* 32 CTAs x 4 MB to host memory from idle: producers finish tens of us apart (the anchors:
   * mean 35 us, last 67 us), so a 1 ns bound on the barrier must expire */
  xs_xbench_config c = base_cfg(XS_TARGET_HOST, -1);
  c.check = 0;
  c.K = 32 < sms ? 32 : sms, c.V = 4194304.0, c.bursts = 4, c.timeout_ms = 1e-6;
  xs_result res = xs_xbench_measure(NULL, NULL, NULL, g_host, &c);
  XT_CHECK_MSG(res == XS_ERR_TIMEOUT, "got %s: %s", xs_strerror(res), xs_last_error());
  c.timeout_ms = 2000; /* the session still works after a timeout */
  res = xs_xbench_measure(NULL, NULL, NULL, g_host, &c);
  XT_CHECK_MSG(res == XS_OK, "%s", xs_last_error());
  c = base_cfg(XS_TARGET_HBM, -1);
  c.check = 0;
  c.K = sms + 1;
  XT_CHECK(xs_xbench_measure(NULL, NULL, NULL, g_hbm, &c) == XS_ERR_INVALID_ARG);
  c.K = 16, c.V = 1e9; /* beyond the 256 MiB ring */
  XT_CHECK(xs_xbench_measure(NULL, NULL, NULL, g_hbm, &c) == XS_ERR_INVALID_ARG);
  c.V = 4096, c.target.kind = XS_TARGET_HOST; /* not the session's target */
  XT_CHECK(xs_xbench_measure(NULL, NULL, NULL, g_hbm, &c) == XS_ERR_INVALID_ARG);
  double d2h = 0, h2d = 0;
  XT_CHECK(xs_memcpy_bandwidth(&d2h, &h2d, 0, (size_t)64 << 20, 3) == XS_OK);
  XT_CHECK(d2h > 1.0 && h2d > 1.0);
  printf("  cudaMemcpy 64 MiB pinned: D2H %.1f GB/s, H2D %.1f GB/s\n", d2h, h2d);
}

/* Rows of a small host sweep -> CSV -> xs_dataset_load -> xs_model_fit with a held-out share. */
static void test_csv_fit_roundtrip(void) {
  xs_calib_row* rows = NULL;
  size_t n = 0, cap = 0;
  long point = 0;
  static const int Ks[] = {8, 16, 32};
  static const double Vs[] = {262144.0, 1048576.0, 4194304.0};
  static const double Gs[] = {0, 5e3, 10e3, 20e3, 40e3, 80e3};
  xs_xbench_burst b[16];
  for (int k = 0; k < 3; k++)
    for (int v = 0; v < 3; v++)
      for (int g = 0; g < 6; g++) {
        xs_xbench_config c = base_cfg(XS_TARGET_HOST, -1);
        c.check = 0;
        c.K = Ks[k], c.V = Vs[v], c.gap_ns = Gs[g], c.bursts = 16;
        xs_xbench_summary s;
        xs_result res = xs_xbench_measure(b, NULL, &s, g_host, &c);
        XT_CHECK_MSG(res == XS_OK, "%s", xs_last_error());
        if (res != XS_OK) return;
        XT_CHECK(xs_calib_rows_append(&rows, &n, &cap, &c, &s, b, "grid", point++, 0) == XS_OK);
      }
  char path[64];
  snprintf(path, sizeof path, "/tmp/xstage-test-xbench-%d.csv", (int)getpid());
  XT_CHECK(xs_calib_csv_write(path, rows, n) == XS_OK);
  xs_dataset* ds = NULL;
  XT_CHECK_MSG(xs_dataset_load(&ds, path) == XS_OK, "%s", xs_last_error());
  if (ds) {
    XT_EQ_INT(xs_dataset_size(ds), n);
    const xs_sample* smp = xs_dataset_samples(ds);
    for (size_t i = 0; i < n && i < xs_dataset_size(ds); i++)
      XT_CHECK(smp[i].t_iss_ns == rows[i].t_iss_ns && smp[i].G == rows[i].gap_ns &&
               smp[i].burst_index == rows[i].burst_index);
    xs_link_profile p = XS_LINK_PROFILE_INITIALIZER;
    XT_CHECK(xs_profile_default(&p, "h200-host") == XS_OK);
    xs_fit_report rep;
    xs_fit_options fo = XS_FIT_OPTIONS_INITIALIZER;
    uint8_t* hold = (uint8_t*)calloc(n, 1);
    xs_result res = xs_model_fit(&p, &rep, hold, ds, &fo);
    XT_CHECK_MSG(res == XS_OK, "fit: %s: %s", xs_strerror(res), xs_last_error());
    if (res == XS_OK) {
      XT_CHECK(xs_profile_validate(&p) == XS_OK);
      XT_CHECK(rep.n_holdout > 0 && rep.n_fit > rep.n_holdout);
      printf("  fit on %zu rows (%zu held out): R %.2f GB/s; held-out fluid median %.1f%% p90 "
             "%.1f%%, closed median %.1f%% p90 %.1f%%\n",
             rep.n_fit, rep.n_holdout, p.R, 100 * rep.fluid_holdout.median,
             100 * rep.fluid_holdout.p90, 100 * rep.closed_holdout.median,
             100 * rep.closed_holdout.p90);
    }
    free(hold);
  }
  xs_dataset_destroy(ds);
  unlink(path);
  free(rows);
}

int main(void) {
  if (cudaGetDeviceCount(&g_ngpu) != cudaSuccess || g_ngpu < 1) XT_SKIP("no GPU");
  xs_target host = {XS_TARGET_HOST, -1}, hbm = {XS_TARGET_HBM, -1};
  xs_result r1 = xs_xbench_create(&g_host, 0, host, 0);
  xs_result r2 = xs_xbench_create(&g_hbm, 0, hbm, 0);
  if (r1 != XS_OK || r2 != XS_OK) {
    fprintf(stderr, "session creation failed: %s\n", xs_last_error());
    return 1;
  }
  double fma = 0;
  xs_xbench_info(NULL, &fma, g_host);
  printf("  FMA loop: %.3f iterations/ns\n", fma);
  XT_RUN(test_bytes_host);
  XT_RUN(test_bytes_hbm);
  XT_RUN(test_bytes_peer);
  XT_RUN(test_modes_and_gaps);
  XT_RUN(test_clock_mode);
  XT_RUN(test_timeout_and_args);
  XT_RUN(test_csv_fit_roundtrip);
  xs_xbench_destroy(g_hbm);
  xs_xbench_destroy(g_host);
  return XT_END();
}
