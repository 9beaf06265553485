/* test_fit.c — fitting recovers known parameters from noisy synthetic measurements; the
 * measurement CSV reader rejects bad files naming file, line and field. */
#include "test.h"
#include "xstage/xstage.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static unsigned long long g_rng = 0x1234567887654321ull;
static double gauss(void) {
  double u1 = xt_rand_uniform(&g_rng), u2 = xt_rand_uniform(&g_rng);
  return sqrt(-2.0 * log(u1 + 1e-300)) * cos(6.283185307179586 * u2);
}

static xs_link_profile truth(void) {
  xs_link_profile p = XS_LINK_PROFILE_INITIALIZER;
  p.t_fixed_ns = 160, p.r_cta = 63, p.r_cap = 2000, p.R = 52;
  p.nq = 4;
  const double ks[4] = {4, 16, 32, 64}, qs[4] = {1.5e6, 1.0e6, 7.2e5, 6.0e5};
  for (int i = 0; i < 4; i++) p.q_k[i] = ks[i], p.q_bytes[i] = qs[i];
  p.unfair_mean = 0.5;
  return p;
}

/* The grid behind both synthetic sets: K x V x G sequences of 17 equal bursts from idle,
 * bursts 0, 1, 2, 4, 8, 16 kept. with_mean: also the mean producer (a second noise draw per
 * row, capped at T_iss); without it the column stays 0 (absent). */
static size_t synth_grid(xs_sample* out, const xs_link_profile* p, double noise, int reps,
                         const double* Vs, int nv, int with_mean) {
  const double Ks[4] = {4, 16, 32, 64};
  const double Gs[8] = {0, 1e3, 3e3, 1e4, 2e4, 4e4, 8e4, 2e5};
  const long Bs[6] = {0, 1, 2, 4, 8, 16};
  size_t n = 0;
  for (int rep = 0; rep < reps; rep++)
    for (int k = 0; k < 4; k++)
      for (int v = 0; v < nv; v++)
        for (int g = 0; g < 8; g++) {
          xs_burst bs[17];
          xs_burst_result r[17];
          for (int i = 0; i < 17; i++) bs[i].V = Vs[v], bs[i].gap_ns = Gs[g];
          xs_fluid_simulate(r, NULL, p, Ks[k], bs, 17);
          for (int b = 0; b < 6; b++) {
            xs_sample* s = &out[n++];
            memset(s, 0, sizeof *s);
            snprintf(s->transport, sizeof s->transport, "host");
            s->K = Ks[k], s->V = Vs[v], s->G = Gs[g], s->burst_index = Bs[b];
            double m = exp(noise * gauss());
            s->t_iss_ns = r[Bs[b]].t_iss_ns * m;
            if (!with_mean) continue;
            s->t_iss_mean_ns = r[Bs[b]].t_iss_mean_ns * m * exp(noise * gauss());
            if (s->t_iss_mean_ns > s->t_iss_ns) s->t_iss_mean_ns = s->t_iss_ns;
          }
        }
  return n;
}

/* The sweep identifies every parameter: small bursts (t_fixed), K below and above the cap
 * (r_cta, r_cap), back-to-back large bursts (R), bursts that overflow from idle and transients
 * (Q per K), the mean producer (unfair_mean). noise: multiplicative, lognormal sigma. */
static size_t synth(xs_sample* out, const xs_link_profile* p, double noise, int reps) {
  static const double Vs[5] = {16384, 65536, 262144, 1048576, 4194304};
  return synth_grid(out, p, noise, reps, Vs, 5, 1);
}

static void check_recovery(const xs_link_profile* f, const xs_link_profile* t, double tol) {
  XT_NEAR(f->t_fixed_ns, t->t_fixed_ns, tol);
  XT_NEAR(f->r_cta, t->r_cta, tol);
  XT_NEAR(f->r_cap, t->r_cap, tol);
  XT_NEAR(f->R, t->R, tol);
  XT_EQ_INT(f->nq, t->nq);
  for (int i = 0; i < t->nq && i < f->nq; i++) {
    XT_NEAR(f->q_k[i], t->q_k[i], 0);
    XT_NEAR(f->q_bytes[i], t->q_bytes[i], tol);
  }
  XT_NEAR(f->unfair_mean, t->unfair_mean, tol);
}

static void test_fit_exact(void) {
  xs_link_profile t = truth();
  xs_sample* s = malloc(1000 * sizeof *s);
  size_t n = synth(s, &t, 0.0, 1);
  xs_dataset* d = NULL;
  XT_CHECK(xs_dataset_from_samples(&d, s, n) == XS_OK);
  xs_link_profile f = XS_LINK_PROFILE_INITIALIZER;
  xs_fit_options o = XS_FIT_OPTIONS_INITIALIZER;
  o.holdout_fraction = 0;
  xs_fit_report rep;
  XT_CHECK(xs_model_fit(&f, &rep, NULL, d, &o) == XS_OK);
  check_recovery(&f, &t, 1e-3);
  XT_CHECK(rep.rms_rel_residual < 1e-4);
  XT_EQ_INT(f.calibrated, 1);
  xs_dataset_destroy(d);
  free(s);
}

static void test_fit_noisy(void) {
  xs_link_profile t = truth();
  xs_sample* s = malloc(3000 * sizeof *s);
  for (int trial = 0; trial < 3; trial++) {
    double noise = trial == 0 ? 0.02 : 0.03;
    size_t n = synth(s, &t, noise, 2); /* 1920 rows */
    xs_dataset* d = NULL;
    XT_CHECK(xs_dataset_from_samples(&d, s, n) == XS_OK);
    xs_link_profile f = XS_LINK_PROFILE_INITIALIZER;
    snprintf(f.device, sizeof f.device, "test device");
    xs_fit_options o = XS_FIT_OPTIONS_INITIALIZER;
    o.seed = 7 + (uint64_t)trial;
    xs_fit_report rep;
    uint8_t* hold = calloc(n, 1);
    clock_t c0 = clock();
    XT_CHECK(xs_model_fit(&f, &rep, hold, d, &o) == XS_OK);
    double secs = (double)(clock() - c0) / CLOCKS_PER_SEC;
    printf("  noise %.0f%%: %zu rows fitted in %.3f s, %d iterations: t_fixed %.4g r_cta %.4g "
           "r_cap %.4g R %.4g Q %.4g %.4g %.4g %.4g unfair %.3f; held-out median err fluid "
           "%.2f%% closed %.2f%%\n",
           noise * 100, n, secs, rep.iterations, f.t_fixed_ns, f.r_cta, f.r_cap, f.R,
           f.q_bytes[0], f.q_bytes[1], f.q_bytes[2], f.q_bytes[3], f.unfair_mean,
           100 * rep.fluid_holdout.median, 100 * rep.closed_holdout.median);
    XT_CHECK(secs < 1.0);
    check_recovery(&f, &t, 0.02);
    XT_CHECK(strcmp(f.device, "test device") == 0);
    /* held-out configurations: whole (K,V,G) groups, about 20% of them */
    size_t nh = 0;
    for (size_t i = 0; i < n; i++) {
      nh += hold[i];
      for (size_t j = 0; j < n; j++)
        if (s[j].K == s[i].K && s[j].V == s[i].V && s[j].G == s[i].G) XT_CHECK(hold[j] == hold[i]);
    }
    XT_EQ_INT(nh, rep.n_holdout);
    XT_CHECK(nh > 0.15 * n && nh < 0.25 * n);
    XT_EQ_INT(rep.n_fit + rep.n_holdout, n);
    /* the fluid model beats the closed form on held-out rows and near the transition */
    XT_CHECK(rep.fluid_holdout.median < 0.03);
    XT_CHECK(rep.fluid_holdout.median < rep.closed_holdout.median);
    XT_CHECK(rep.fluid_transition.n > 0);
    XT_CHECK(rep.fluid_transition.mean < rep.closed_transition.mean);
    free(hold);
    xs_dataset_destroy(d);
  }
  free(s);
}

/* The refinement: a latency floor t_min_ns in the truth (active for the small bursts of every
 * K, inactive for the large ones) is recovered within 2% from noisy data, together with every
 * original parameter; with refine = 0 the fit stays on the original model (t_min_ns = 0) and
 * predicts the held-out rows worse. */
static void test_fit_tmin(void) {
  xs_link_profile t = truth();
  t.t_min_ns = 200;
  xs_sample* s = malloc(3000 * sizeof *s);
  size_t n = synth(s, &t, 0.0, 1);
  xs_dataset* d = NULL;
  XT_CHECK(xs_dataset_from_samples(&d, s, n) == XS_OK);
  xs_link_profile f = XS_LINK_PROFILE_INITIALIZER;
  xs_fit_options o = XS_FIT_OPTIONS_INITIALIZER;
  o.holdout_fraction = 0;
  xs_fit_report rep;
  XT_CHECK(xs_model_fit(&f, &rep, NULL, d, &o) == XS_OK);
  check_recovery(&f, &t, 1e-3);
  XT_NEAR(f.t_min_ns, t.t_min_ns, 1e-3);
  xs_dataset_destroy(d);
  n = synth(s, &t, 0.02, 2);
  XT_CHECK(xs_dataset_from_samples(&d, s, n) == XS_OK);
  o = (xs_fit_options)XS_FIT_OPTIONS_INITIALIZER;
  xs_fit_report r1, r0;
  XT_CHECK(xs_model_fit(&f, &r1, NULL, d, &o) == XS_OK);
  printf("  t_min 200 ns, noise 2%%: t_min %.4g t_fixed %.4g r_cta %.4g R %.4g; held-out median "
         "%.2f%% p90 %.2f%%\n", f.t_min_ns, f.t_fixed_ns, f.r_cta, f.R,
         100 * r1.fluid_holdout.median, 100 * r1.fluid_holdout.p90);
  check_recovery(&f, &t, 0.02);
  XT_NEAR(f.t_min_ns, t.t_min_ns, 0.02);
  o.refine = 0;
  xs_link_profile f0 = XS_LINK_PROFILE_INITIALIZER;
  XT_CHECK(xs_model_fit(&f0, &r0, NULL, d, &o) == XS_OK);
  XT_CHECK(f0.t_min_ns == 0.0 && f0.has_q_burst == 0);
  printf("  the same data, refine = 0: held-out median %.2f%% p90 %.2f%%\n",
         100 * r0.fluid_holdout.median, 100 * r0.fluid_holdout.p90);
  XT_CHECK(r1.fluid_holdout.p90 < r0.fluid_holdout.p90);
  xs_dataset_destroy(d);
  free(s);
}

/* The second refinement: a burst room Qb(K) in the truth, below Q at K = 16 and 32 (a burst from
 * idle is throttled at Qb while small bursts accumulate to Q), above Q elsewhere (inactive, so
 * not identified, not checked): the default fit recovers it with every other parameter from
 * exact data, and within 3% from noisy data; refine = 1 (no room) predicts the held-out rows
 * worse. */
static void test_fit_burst_room(void) {
  xs_link_profile t = truth();
  t.t_min_ns = 200;
  t.has_q_burst = 1;
  const double qr[4] = {2.0e6, 6.0e5, 4.5e5, 1.0e6};
  for (int i = 0; i < 4; i++) t.q_burst_bytes[i] = qr[i];
  xs_sample* s = malloc(3000 * sizeof *s);
  size_t n = synth(s, &t, 0.0, 1);
  xs_dataset* d = NULL;
  XT_CHECK(xs_dataset_from_samples(&d, s, n) == XS_OK);
  xs_link_profile f = XS_LINK_PROFILE_INITIALIZER;
  xs_fit_options o = XS_FIT_OPTIONS_INITIALIZER;
  o.holdout_fraction = 0;
  xs_fit_report rep;
  XT_CHECK(xs_model_fit(&f, &rep, NULL, d, &o) == XS_OK);
  check_recovery(&f, &t, 1e-3);
  XT_NEAR(f.t_min_ns, t.t_min_ns, 1e-3);
  XT_CHECK(f.has_q_burst == 1);
  XT_NEAR(f.q_burst_bytes[1], qr[1], 1e-3);
  XT_NEAR(f.q_burst_bytes[2], qr[2], 1e-3);
  xs_dataset_destroy(d);
  n = synth(s, &t, 0.02, 2);
  XT_CHECK(xs_dataset_from_samples(&d, s, n) == XS_OK);
  o = (xs_fit_options)XS_FIT_OPTIONS_INITIALIZER;
  xs_fit_report r2, r1;
  XT_CHECK(xs_model_fit(&f, &r2, NULL, d, &o) == XS_OK);
  printf("  burst room 600/450 KB at K = 16/32, noise 2%%: Qb %.4g %.4g Q %.4g %.4g; held-out "
         "median %.2f%% p90 %.2f%%\n", f.q_burst_bytes[1], f.q_burst_bytes[2], f.q_bytes[1],
         f.q_bytes[2], 100 * r2.fluid_holdout.median, 100 * r2.fluid_holdout.p90);
  check_recovery(&f, &t, 0.03);
  XT_NEAR(f.q_burst_bytes[1], qr[1], 0.03);
  XT_NEAR(f.q_burst_bytes[2], qr[2], 0.03);
  o.refine = 1;
  xs_link_profile f1 = XS_LINK_PROFILE_INITIALIZER;
  XT_CHECK(xs_model_fit(&f1, &r1, NULL, d, &o) == XS_OK);
  XT_CHECK(f1.has_q_burst == 0 && f1.t_min_ns > 0);
  printf("  the same data, refine = 1: held-out median %.2f%% p90 %.2f%%\n",
         100 * r1.fluid_holdout.median, 100 * r1.fluid_holdout.p90);
  XT_CHECK(r2.fluid_holdout.p90 < r1.fluid_holdout.p90);
  xs_dataset_destroy(d);
  free(s);
}

/* The third refinement: a drain rate per K (R(K) 45 B/ns at K = 64 against 52 elsewhere) and a
 * relaxing room (a burst that overflows from idle has its room shrink towards Qr over X0 bytes
 * issued at the drain rate) in the truth, swept over bursts up to 16 MiB so that the room of an
 * overflowing burst is seen at several sizes. The default fit recovers R(K), Q and the room of
 * each overflowing size from exact data, within a few percent from noisy data, and predicts
 * held-out configurations better than refine = 2 (without it). */
static size_t synth_relax(xs_sample* out, const xs_link_profile* p, double noise) {
  static const double Vs[8] = {16384,   65536,   262144,  1048576,
                               2097152, 4194304, 8388608, 16777216};
  return synth_grid(out, p, noise, 1, Vs, 8, 0);
}

static void test_fit_relax(void) {
  xs_link_profile t = truth();
  t.t_min_ns = 200;
  t.has_q_burst = 1;
  const double qr[4] = {2.0e6, 6.0e5, 4.5e5, 1.0e6}, rk[4] = {52, 52, 50, 45};
  const double qx[4] = {4e5, 3.5e5, 3e5, 3e5}, x0[4] = {1e6, 5e5, 1e6, 2e6};
  t.has_r_k = t.has_relax = 1;
  for (int i = 0; i < 4; i++)
    t.q_burst_bytes[i] = qr[i], t.r_k[i] = rk[i], t.q_relax_bytes[i] = qx[i], t.relax_bytes[i] = x0[i];
  xs_sample* s = malloc(2000 * sizeof *s);
  size_t n = synth_relax(s, &t, 0.0);
  xs_dataset* d = NULL;
  XT_CHECK(xs_dataset_from_samples(&d, s, n) == XS_OK);
  xs_link_profile f = XS_LINK_PROFILE_INITIALIZER;
  xs_fit_options o = XS_FIT_OPTIONS_INITIALIZER;
  o.holdout_fraction = 0;
  xs_fit_report rep;
  XT_CHECK(xs_model_fit(&f, &rep, NULL, d, &o) == XS_OK);
  XT_CHECK(f.has_r_k == 1 && f.has_relax == 1);
  XT_NEAR(f.t_fixed_ns, t.t_fixed_ns, 1e-3);
  XT_NEAR(f.r_cta, t.r_cta, 1e-3);
  XT_NEAR(f.t_min_ns, t.t_min_ns, 1e-3);
  for (int i = 0; i < 4; i++) {
    XT_NEAR(f.r_k[i], rk[i], 1e-3);
    XT_NEAR(f.q_bytes[i], t.q_bytes[i], 1e-3);
  }
  /* the room of every burst that overflows from idle (what the data determine) */
  const double Vo[3] = {4194304, 8388608, 16777216};
  for (int i = 0; i < 4; i++)
    for (int v = 0; v < 3; v++) {
      double a, b;
      XT_CHECK(xs_burst_room_for(&a, &f, t.q_k[i], Vo[v]) == XS_OK);
      XT_CHECK(xs_burst_room_for(&b, &t, t.q_k[i], Vo[v]) == XS_OK);
      XT_NEAR(a, b, 1e-3);
    }
  XT_CHECK(rep.rms_rel_residual < 1e-3);
  xs_dataset_destroy(d);
  n = synth_relax(s, &t, 0.02);
  XT_CHECK(xs_dataset_from_samples(&d, s, n) == XS_OK);
  o = (xs_fit_options)XS_FIT_OPTIONS_INITIALIZER;
  xs_fit_report r3, r2;
  XT_CHECK(xs_model_fit(&f, &r3, NULL, d, &o) == XS_OK);
  /* noisy: R(K) and the issue time of every overflowing burst from idle (the room itself is
   * ill-conditioned there: a 1% error in R moves the room of a 16 MiB burst by 0.17 MB) */
  double t_err = 0;
  for (int i = 0; i < 4; i++)
    for (int v = 0; v < 3; v++) {
      xs_steady a, b;
      xs_fluid_periodic(&a, &f, t.q_k[i], Vo[v], INFINITY);
      xs_fluid_periodic(&b, &t, t.q_k[i], Vo[v], INFINITY);
      t_err = fmax(t_err, fabs(a.t_iss_first_ns / b.t_iss_first_ns - 1));
    }
  printf("  R(K) 52/52/50/45, relaxing room, noise 2%%: R(K) %.4g %.4g %.4g %.4g, worst issue time "
         "of an overflowing burst from idle off by %.2f%%; held-out median %.2f%% p90 %.2f%%\n",
         f.r_k[0], f.r_k[1], f.r_k[2], f.r_k[3], 100 * t_err, 100 * r3.fluid_holdout.median,
         100 * r3.fluid_holdout.p90);
  for (int i = 0; i < 4; i++) XT_NEAR(f.r_k[i], rk[i], 0.03);
  XT_CHECK(t_err < 0.03);
  o.refine = 2;
  xs_link_profile f2 = XS_LINK_PROFILE_INITIALIZER;
  XT_CHECK(xs_model_fit(&f2, &r2, NULL, d, &o) == XS_OK);
  XT_CHECK(f2.has_r_k == 0 && f2.has_relax == 0 && f2.has_q_burst == 1);
  printf("  the same data, refine = 2: held-out median %.2f%% p90 %.2f%%\n",
         100 * r2.fluid_holdout.median, 100 * r2.fluid_holdout.p90);
  XT_CHECK(r3.fluid_holdout.p90 < r2.fluid_holdout.p90);
  xs_dataset_destroy(d);
  free(s);
}

static void write_file(const char* path, const char* text) {
  FILE* f = fopen(path, "w");
  fputs(text, f);
  fclose(f);
}

static void test_bad_csv(void) {
  static const struct { const char* text; const char* want; } bad[] = {
      {"transport,K,V_bytes,gap_ns,burst_index\nhost,1,2,3,0\n", "missing column 't_iss_ns'"},
      {"transport,K,V_bytes,gap_ns,burst_index,t_iss_ns\nhost,0,1024,0,0,100\n", ":2: field 'K'"},
      {"transport,K,V_bytes,gap_ns,burst_index,t_iss_ns\nhost,4,1024,0,0,100\nhost,-4,1024,0,0,100\n", ":3: field 'K'"},
      {"transport,K,V_bytes,gap_ns,burst_index,t_iss_ns\nhost,4,abc,0,0,100\n", ":2: field 'V_bytes'"},
      {"transport,K,V_bytes,gap_ns,burst_index,t_iss_ns\nhost,4,1024,0,0,nan\n", ":2: field 't_iss_ns'"},
      {"transport,K,V_bytes,gap_ns,burst_index,t_iss_ns\nhost,4,1e300,0,0,100\n", ":2: field 'V_bytes'"},
      {"transport,K,V_bytes,gap_ns,burst_index,t_iss_ns\nhost,4,1024,-1,0,100\n", ":2: field 'gap_ns'"},
      {"transport,K,V_bytes,gap_ns,burst_index,t_iss_ns\nhost,4,1024,0,1.5,100\n", ":2: field 'burst_index'"},
      {"transport,K,V_bytes,gap_ns,burst_index,t_iss_ns\nhost,4,1024,0,0,0\n", ":2: field 't_iss_ns'"},
      {"transport,K,V_bytes,gap_ns,burst_index,t_iss_ns\nhost,4,1024,0,0\n", ":2"},
      {"transport,K,V_bytes,gap_ns,burst_index,t_iss_ns\n", "no data rows"},
      {"transport,K,V_bytes,gap_ns,burst_index,t_iss_ns\nhost,2.5,1024,0,0,100\n", ":2: field 'K'"},
      {"transport,K,V_bytes,gap_ns,burst_index,t_iss_ns,t_iss_mean_ns\nhost,4,1024,0,0,100,200\n", ":2: field 't_iss_mean_ns'"},
  };
  char path[64];
  snprintf(path, sizeof path, "/tmp/xstage-test-fit-%d.csv", (int)getpid());
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    write_file(path, bad[i].text);
    xs_dataset* d = (xs_dataset*)1;
    xs_result r = xs_dataset_load(&d, path);
    XT_CHECK_MSG(r == XS_ERR_PARSE, "case %zu: %s", i, xs_strerror(r));
    XT_CHECK(d == NULL);
    XT_CHECK_MSG(strstr(xs_last_error(), bad[i].want) && strstr(xs_last_error(), path),
                 "case %zu: '%s' lacks '%s'", i, xs_last_error(), bad[i].want);
  }
  write_file(path, "# a comment\ntransport,K,V_bytes,gap_ns,burst_index,t_iss_ns,flavour\n"
                   "host,4,1024,0,0,100,st.global\nhost,8,2048,10,1,200,st.global\n");
  xs_dataset* d = NULL;
  XT_CHECK(xs_dataset_load(&d, path) == XS_OK);
  XT_EQ_INT(xs_dataset_size(d), 2);
  XT_NEAR(xs_dataset_samples(d)[1].G, 10, 0);
  XT_EQ_INT(xs_dataset_samples(d)[1].burst_index, 1);
  /* too few rows for the parameters: a clear numeric error */
  xs_link_profile f = XS_LINK_PROFILE_INITIALIZER;
  XT_CHECK(xs_model_fit(&f, NULL, NULL, d, NULL) == XS_ERR_NUMERIC);
  xs_dataset_destroy(d);
  XT_CHECK(xs_dataset_load(&d, "/nonexistent/x.csv") == XS_ERR_IO);
  remove(path);
}

/* Clock-scheduled sequences (calibration's default): burst b is scheduled at b*P, P = T0 + G,
 * and starts at max(b*P, end of burst b-1); rows carry the sequence id and the gap each burst
 * actually had. The fit sees every sequence as it happened and recovers the parameters. */
static size_t synth_clock(xs_sample* out, const xs_link_profile* p, double noise) {
  const double Ks[4] = {4, 16, 32, 64};
  const double Vs[5] = {16384, 65536, 262144, 1048576, 4194304};
  const double Gs[8] = {0, 1e3, 3e3, 1e4, 2e4, 4e4, 8e4, 2e5};
  enum { NB = 17 };
  size_t n = 0;
  long seq = 0;
  for (int k = 0; k < 4; k++)
    for (int v = 0; v < 5; v++)
      for (int g = 0; g < 8; g++) {
        xs_burst bs[NB];
        xs_burst_result r[NB];
        double gap[NB], E = 0, P = 0;
        seq++;
        for (int b = 0; b < NB; b++) {
          if (b == 1) P = r[0].t_iss_ns + Gs[g];
          double Sb = b * P;
          gap[b] = b ? fmax(0.0, Sb - E) : 0.0;
          for (int i = 0; i <= b; i++)
            bs[i].V = Vs[v], bs[i].gap_ns = i ? gap[i] : 0.0;
          xs_fluid_simulate(r, NULL, p, Ks[k], bs, (size_t)b + 1);
          E = (b ? fmax(Sb, E) : Sb) + r[b].t_iss_ns;
          xs_sample* s = &out[n++];
          memset(s, 0, sizeof *s);
          snprintf(s->transport, sizeof s->transport, "host");
          s->K = Ks[k], s->V = Vs[v], s->G = Gs[g], s->burst_index = b;
          s->seq = seq, s->gap_before_ns = gap[b];
          double m = exp(noise * gauss());
          s->t_iss_ns = r[b].t_iss_ns * m;
          s->t_iss_mean_ns = r[b].t_iss_mean_ns * m;
          if (s->t_iss_mean_ns > s->t_iss_ns) s->t_iss_mean_ns = s->t_iss_ns;
        }
      }
  return n;
}

static void test_fit_clock(void) {
  xs_link_profile t = truth();
  xs_sample* s = malloc(3000 * sizeof *s);
  size_t n = synth_clock(s, &t, 0.0);
  int late = 0;
  for (size_t i = 0; i < n; i++)
    late += s[i].burst_index > 0 && s[i].gap_before_ns < s[i].G;
  XT_CHECK(late > 100); /* the drain regime: late bursts with shrunken gaps */
  xs_dataset* d = NULL;
  XT_CHECK(xs_dataset_from_samples(&d, s, n) == XS_OK);
  xs_link_profile f = XS_LINK_PROFILE_INITIALIZER;
  xs_fit_options o = XS_FIT_OPTIONS_INITIALIZER;
  o.holdout_fraction = 0;
  xs_fit_report rep;
  XT_CHECK(xs_model_fit(&f, &rep, NULL, d, &o) == XS_OK);
  check_recovery(&f, &t, 0.02);
  XT_CHECK(rep.rms_rel_residual < 1e-3);
  /* the dataset predicts the sequences as they happened */
  double* pf = malloc(n * sizeof *pf);
  XT_CHECK(xs_dataset_predict(pf, NULL, d, &t) == XS_OK);
  double worst = 0;
  for (size_t i = 0; i < n; i++)
    worst = fmax(worst, fabs(pf[i] - s[i].t_iss_ns) / s[i].t_iss_ns);
  XT_CHECK(worst < 1e-9);
  /* with a held-out share (split by configuration): held-out errors small */
  xs_dataset_destroy(d);
  n = synth_clock(s, &t, 0.02);
  XT_CHECK(xs_dataset_from_samples(&d, s, n) == XS_OK);
  o.holdout_fraction = 0.2;
  XT_CHECK(xs_model_fit(&f, &rep, NULL, d, &o) == XS_OK);
  printf("  clock-scheduled, noise 2%%: %zu rows, %d late; held-out median %.2f%% p90 %.2f%% "
         "(closed form %.2f%%); R %.4g Q(16) %.4g\n",
         n, late, 100 * rep.fluid_holdout.median, 100 * rep.fluid_holdout.p90,
         100 * rep.closed_holdout.median, f.R, f.q_bytes[1]);
  XT_CHECK(rep.fluid_holdout.median < 0.03);
  XT_NEAR(f.R, t.R, 0.02);
  xs_dataset_destroy(d);
  free(pf);
  free(s);
}

/* An embedded profile is the fit of its committed calibration data (medians per configuration):
 * `name` re-fitted from `csv`, its drain rate R within [r_lo, r_hi] GB/s. */
static void check_embedded_fit(const char* name, const char* csv, double r_lo, double r_hi) {
  xs_dataset* d = NULL;
  if (xs_dataset_load(&d, csv) != XS_OK) {
    XT_CHECK_MSG(0, "%s: %s", csv, xs_last_error());
    return;
  }
  xs_link_profile e, f = XS_LINK_PROFILE_INITIALIZER;
  XT_CHECK(xs_profile_default(&e, name) == XS_OK);
  xs_fit_options o = XS_FIT_OPTIONS_INITIALIZER;
  xs_fit_report rep;
  XT_CHECK(xs_model_fit(&f, &rep, NULL, d, &o) == XS_OK);
  XT_NEAR(f.R, e.R, 0.01);
  XT_NEAR(f.r_cta, e.r_cta, 0.01);
  XT_NEAR(f.r_cap, e.r_cap, 0.01);
  XT_NEAR(f.t_fixed_ns, e.t_fixed_ns, 0.01);
  XT_NEAR(f.t_min_ns, e.t_min_ns, 0.01);
  XT_NEAR(f.unfair_mean, e.unfair_mean, 0.01);
  XT_EQ_INT(f.nq, e.nq);
  for (int i = 0; i < e.nq && i < f.nq; i++) XT_NEAR(f.q_bytes[i], e.q_bytes[i], 0.01);
  /* and the burst room (the default fit has it) */
  XT_EQ_INT(f.has_q_burst, e.has_q_burst);
  for (int i = 0; i < e.nq && i < f.nq; i++)
    XT_NEAR(f.q_burst_bytes[i], e.q_burst_bytes[i], 0.01);
  /* and the drain rate per K and the relaxing room (the default fit has them too) */
  XT_EQ_INT(f.has_r_k, e.has_r_k);
  XT_EQ_INT(f.has_relax, e.has_relax);
  for (int i = 0; i < e.nq && i < f.nq; i++) {
    XT_NEAR(f.r_k[i], e.r_k[i], 0.01);
    XT_NEAR(f.q_relax_bytes[i], e.q_relax_bytes[i], 0.01);
    XT_NEAR(f.relax_bytes[i], e.relax_bytes[i], 0.01);
  }
  /* and it is the link it names: R in the copy engine's range on the same machine */
  XT_CHECK_MSG(e.R > r_lo && e.R < r_hi, "%s: R %g outside [%g, %g]", name, e.R, r_lo, r_hi);
  XT_CHECK(e.calibrated == 1);
  xs_dataset_destroy(d);
}

/* The embedded H200 profiles are the fits of the committed calibration data: h200-host (PCIe,
 * cudaMemcpy D2H measured 55 GB/s) and h200-nvlink (cudaMemcpyPeer measured 394 GB/s). */
static void test_embedded_is_the_fit(void) {
  check_embedded_fit("h200-host", "data/h200-host-calibration.csv", 45, 56);
  check_embedded_fit("h200-nvlink", "data/h200-nvlink-calibration.csv", 340, 400);
}

/* An embedded profile predicts a second machine's calibration (data/validation/: never fitted,
 * measured on another H200 / pair of H200s on 2026-11-30): the fluid model's error per point and
 * per burst within the bounds it met there (docs/results/calibration-h200.md, session 18:
 * h200-host per point 3.2 % / 10.1 %, h200-nvlink per burst 3.0 % / 7.9 %), with some room. A
 * model change that loses the out-of-machine accuracy fails here. */
static void check_on_second_machine(const char* name, const char* csv, double med_max,
                                    double p90_max, int per_point) {
  xs_dataset* d = NULL;
  if (xs_dataset_load(&d, csv) != XS_OK) {
    XT_CHECK_MSG(0, "%s: %s", csv, xs_last_error());
    return;
  }
  xs_link_profile e;
  XT_CHECK(xs_profile_default(&e, name) == XS_OK);
  xs_error_stats f, c;
  XT_CHECK((per_point ? xs_model_evaluate_points(&f, &c, d, &e, NULL, 0)
                      : xs_model_evaluate(&f, &c, d, &e, NULL, 0)) == XS_OK);
  XT_CHECK(f.n > 500);
  XT_CHECK_MSG(f.median <= med_max && f.p90 <= p90_max, "%s on %s: fluid median %.4f p90 %.4f",
               name, csv, f.median, f.p90);
  /* xs_model_score (one prediction, every figure) agrees with the single evaluations */
  xs_fit_report sc;
  XT_CHECK(xs_model_score(&sc, d, &e, NULL, 0) == XS_OK);
  xs_error_stats fr, cr, fp, cp;
  XT_CHECK(xs_model_evaluate(&fr, &cr, d, &e, NULL, 0) == XS_OK);
  XT_CHECK(xs_model_evaluate_points(&fp, &cp, d, &e, NULL, 0) == XS_OK);
  XT_EQ_INT((long)sc.n_holdout, (long)xs_dataset_size(d));
  XT_NEAR(sc.fluid_holdout.p90, fr.p90, 1e-15);
  XT_NEAR(sc.closed_holdout.median, cr.median, 1e-15);
  XT_NEAR(sc.fluid_point_holdout.median, fp.median, 1e-15);
  XT_NEAR(sc.closed_point_holdout.p90, cp.p90, 1e-15);
  XT_CHECK(sc.fluid_transition.n > 0 && sc.fluid_transition.n < sc.fluid_holdout.n);
  XT_CHECK(sc.fluid_point_transition.n > 0 &&
           sc.fluid_point_transition.n < sc.fluid_point_holdout.n);
  XT_EQ_INT((long)sc.n_fit, 0);
  /* and the fluid model beats the closed form there, as on the fitted machine */
  XT_CHECK_MSG(f.p90 < c.p90, "%s: fluid p90 %.4f, closed form %.4f", name, f.p90, c.p90);
  xs_dataset_destroy(d);
}

static void test_embedded_on_second_machine(void) {
  check_on_second_machine("h200-host", "data/validation/h200-host-20261130.csv", 0.04, 0.12, 1);
  check_on_second_machine("h200-nvlink", "data/validation/h200-nvlink-20261130.csv", 0.04, 0.10, 0);
}

int main(void) {
  XT_RUN(test_embedded_is_the_fit);
  XT_RUN(test_embedded_on_second_machine);
  XT_RUN(test_fit_exact);
  XT_RUN(test_fit_noisy);
  XT_RUN(test_bad_csv);
  XT_RUN(test_fit_tmin);
  XT_RUN(test_fit_burst_room);
  XT_RUN(test_fit_relax);
  XT_RUN(test_fit_clock);
  return XT_END();
}
