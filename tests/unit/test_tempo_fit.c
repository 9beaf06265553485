/* test_tempo_fit.c — the max-affine expert-time profile: evaluation, embedded estimates, and the
 * fit recovering known parameters from noisy synthetic samples. */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L /* mkstemp, fdopen */
#endif
#include "test.h"
#include "xstage/xstage.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

static void test_eval_and_defaults(void) {
  xs_expert_profile p = XS_EXPERT_PROFILE_INITIALIZER;
  p.a_us = 3, p.b_us = 20, p.c_us = 5, p.beta_us = 0.125;
  XT_NEAR(xs_expert_time_us(&p, 2, 100), 43.0, 1e-15);   /* 3 + 40 vs 5 + 12.5 */
  XT_NEAR(xs_expert_time_us(&p, 1, 1000), 130.0, 1e-15); /* 23 vs 5 + 125 */
  XT_NEAR(xs_expert_time_us(&p, 0, 0), 0.0, 0);
  XT_NEAR(xs_expert_profile_nstar(&p), (3 + 20 - 5) / 0.125, 1e-15);
  xs_expert_profile d;
  XT_CHECK(xs_expert_profile_default(&d, "deepseek-v3") == XS_OK);
  XT_EQ_INT(d.calibrated, 1);
  XT_CHECK(strstr(d.method, "H200") != NULL);
  /* physics check of the measured profile: b within 25% of the expert's weight bytes
   * (3*7168*2048*2) streamed at 4 TB/s; beta within a factor 2 of its flops at 650 TFLOP/s */
  XT_NEAR(d.b_us, 3.0 * 7168 * 2048 * 2 / 4e12 * 1e6, 0.25);
  XT_CHECK(d.beta_us > 0.5 * 6.0 * 7168 * 2048 / 650e12 * 1e6);
  XT_CHECK(d.beta_us < 2.0 * 6.0 * 7168 * 2048 / 650e12 * 1e6);
  XT_CHECK(xs_expert_profile_nstar(&d) > 150 && xs_expert_profile_nstar(&d) < 250);
  /* the embedded numbers are the fit of the committed H200 samples */
  xs_expert_profile f = d;
  double rms = 0;
  size_t used = 0;
  XT_CHECK(xs_expert_profile_fit_csv(&f, &rms, &used, "data/tempo_profile_h200.csv",
                                     "deepseek-v3") == XS_OK);
  XT_CHECK(used > 50);
  /* the robust fit trims the three slow G = 1 small-n cuBLAS samples, and only them */
  xs_profile_fit_info fi;
  XT_CHECK(xs_expert_profile_fit_csv_info(&f, &fi, "data/tempo_profile_h200.csv", "deepseek-v3") ==
           XS_OK);
  XT_EQ_INT(fi.n_outliers, 3);
  XT_CHECK(fi.rms_rel < 0.08 && fi.rms_rel_all > fi.rms_rel);
  XT_NEAR(f.a_us, d.a_us, 0.01);
  XT_NEAR(f.b_us, d.b_us, 0.01);
  XT_NEAR(f.c_us, d.c_us, 0.01);
  XT_NEAR(f.beta_us, d.beta_us, 0.01);
  XT_CHECK(xs_expert_profile_default(&d, "qwen3-235b") == XS_OK);
  XT_NEAR(d.b_us, 3.0 * 4096 * 1536 * 2 / 4e12 * 1e6, 0.25);
  f = d;
  XT_CHECK(xs_expert_profile_fit_csv(&f, &rms, &used, "data/tempo_profile_h200.csv",
                                     "qwen3-235b") == XS_OK);
  XT_NEAR(f.a_us, d.a_us, 0.01);
  XT_NEAR(f.b_us, d.b_us, 0.01);
  XT_NEAR(f.c_us, d.c_us, 0.01);
  XT_NEAR(f.beta_us, d.beta_us, 0.01);
  XT_CHECK(xs_expert_profile_default(&d, "mixtral") == XS_ERR_INVALID_ARG);
  XT_CHECK(strstr(xs_last_error(), "qwen3-235b") != NULL);
  XT_CHECK(xs_expert_profile_validate(&d) == XS_OK);
}

static void test_fit_recovers(void) {
  const double truth[3][4] = {{4.0, 22.0, 4.0, 0.1355}, {2.5, 9.4, 6.0, 0.058}, {8, 15, 1, 0.2}};
  for (int k = 0; k < 3; k++) {
    double G[200], N[200], T[200];
    size_t n = 0;
    unsigned long long s = 11 + k;
    const int gs[] = {1, 2, 4, 8, 16, 32};
    const int ns[] = {1, 8, 16, 32, 64, 96, 128, 192, 256, 384, 512, 768, 1024, 2048};
    for (int i = 0; i < 6; i++)
      for (int j = 0; j < 14; j++) {
        G[n] = gs[i];
        N[n] = (double)gs[i] * ns[j];
        double m = truth[k][0] + truth[k][1] * G[n], c = truth[k][2] + truth[k][3] * N[n];
        double noise = 1 + 0.02 * (2 * xt_rand_uniform(&s) - 1); /* +-2% */
        T[n++] = (m > c ? m : c) * noise;
      }
    xs_expert_profile p = XS_EXPERT_PROFILE_INITIALIZER;
    double rms;
    XT_CHECK(xs_expert_profile_fit(&p, &rms, G, N, T, n) == XS_OK);
    XT_NEAR(p.b_us, truth[k][1], 0.03);
    XT_NEAR(p.beta_us, truth[k][3], 0.03);
    XT_NEAR(p.a_us + p.b_us, truth[k][0] + truth[k][1], 0.03); /* one weight-bound expert */
    double nstar_true = (truth[k][0] + truth[k][1] - truth[k][2]) / truth[k][3];
    XT_NEAR(xs_expert_profile_nstar(&p), nstar_true, 0.05);
    XT_CHECK(rms < 0.02);
    /* clean (+-2%) samples: the robust fit trims nothing */
    xs_profile_fit_info fi;
    XT_CHECK(xs_expert_profile_fit_robust(&p, &fi, NULL, G, N, T, n) == XS_OK);
    XT_EQ_INT(fi.n_outliers, 0);
    XT_NEAR(fi.rms_rel, rms, 1e-12);
  }
}

/* A few slow small-N samples (like cuBLAS picking a bad algorithm for G = 1, n = 8 and 32 on the
 * H200: 177 us against 31 us at n = 64) must not pull the fit: they are trimmed and the known
 * parameters come back as without them. */
static void test_fit_ignores_outliers(void) {
  const double truth[4] = {14.0, 20.8, 13.2, 0.101};
  const int gs[] = {1, 2, 4, 8, 16, 32};
  const int ns[] = {1, 8, 32, 64, 96, 128, 192, 256, 384, 512, 1024, 2048};
  double G[72], N[72], T[72];
  size_t n = 0, bad[3];
  int nbad = 0;
  unsigned long long s = 5;
  for (int i = 0; i < 6; i++)
    for (int j = 0; j < 12; j++) {
      G[n] = gs[i];
      N[n] = (double)gs[i] * ns[j];
      double m = truth[0] + truth[1] * G[n], c = truth[2] + truth[3] * N[n];
      T[n] = (m > c ? m : c) * (1 + 0.02 * (2 * xt_rand_uniform(&s) - 1));
      if (gs[i] == 1 && (ns[j] == 1 || ns[j] == 8 || ns[j] == 32)) {
        T[n] *= 5.0; /* the outliers */
        bad[nbad++] = n;
      }
      n++;
    }
  xs_expert_profile p = XS_EXPERT_PROFILE_INITIALIZER;
  xs_profile_fit_info fi;
  unsigned char out[72];
  XT_CHECK(xs_expert_profile_fit_robust(&p, &fi, out, G, N, T, n) == XS_OK);
  XT_EQ_INT(fi.n_samples, 72);
  XT_EQ_INT(fi.n_outliers, 3);
  for (int k = 0; k < nbad; k++)
    XT_EQ_INT(out[bad[k]], 1);
  XT_NEAR(p.b_us, truth[1], 0.03);
  XT_NEAR(p.beta_us, truth[3], 0.03);
  XT_NEAR(p.a_us + p.b_us, truth[0] + truth[1], 0.03);
  XT_CHECK(fi.rms_rel < 0.02);    /* the kept samples fit to their noise */
  XT_CHECK(fi.rms_rel_all > 0.1); /* the outliers stay 5x off the fitted curve (-80% each) */
  /* the fit with the outliers equals (within 1%) the fit of the same samples without them */
  for (int k = 0; k < nbad; k++)
    T[bad[k]] /= 5.0;
  xs_expert_profile q = XS_EXPERT_PROFILE_INITIALIZER;
  XT_CHECK(xs_expert_profile_fit_robust(&q, &fi, NULL, G, N, T, n) == XS_OK);
  XT_EQ_INT(fi.n_outliers, 0);
  XT_NEAR(p.b_us, q.b_us, 0.01);
  XT_NEAR(p.beta_us, q.beta_us, 0.01);
}

static void test_fit_csv_and_errors(void) {
  char path[] = "/tmp/xs_tempo_fit_XXXXXX";
  int fd = mkstemp(path);
  XT_CHECK(fd >= 0);
  FILE* f = fdopen(fd, "w");
  fprintf(f, "model,G,N,time_us\n");
  for (int g = 1; g <= 16; g *= 2)
    for (int n = 16; n <= 2048; n *= 2) {
      double m = 5 + 10 * g, c = 3 + 0.05 * g * n;
      fprintf(f, "x,%d,%d,%.6f\n", g, g * n, m > c ? m : c);
      fprintf(f, "y,%d,%d,%.6f\n", g, g * n, 2 * (m > c ? m : c));
    }
  fclose(f);
  xs_expert_profile p = XS_EXPERT_PROFILE_INITIALIZER;
  size_t used = 0;
  XT_CHECK(xs_expert_profile_fit_csv(&p, NULL, &used, path, "x") == XS_OK);
  XT_EQ_INT(used, 40);
  XT_NEAR(p.b_us, 10, 1e-6);
  XT_NEAR(p.beta_us, 0.05, 1e-6);
  XT_EQ_INT(p.calibrated, 1);
  XT_CHECK(xs_expert_profile_fit_csv(&p, NULL, &used, path, "y") == XS_OK);
  XT_NEAR(p.b_us, 20, 1e-6);
  XT_CHECK(xs_expert_profile_fit_csv(&p, NULL, &used, path, "z") == XS_ERR_PARSE);
  unlink(path);
  /* one regime only: cannot determine both lines */
  double G[6] = {1, 2, 4, 8, 16, 32}, N[6] = {1, 2, 4, 8, 16, 32}, T[6];
  for (int i = 0; i < 6; i++)
    T[i] = 4 + 20 * G[i];
  XT_CHECK(xs_expert_profile_fit(&p, NULL, G, N, T, 6) == XS_ERR_NUMERIC);
  T[2] = -1;
  XT_CHECK(xs_expert_profile_fit(&p, NULL, G, N, T, 6) == XS_ERR_INVALID_ARG);
  XT_CHECK(xs_expert_profile_fit_csv(&p, NULL, NULL, "/nonexistent.csv", NULL) == XS_ERR_IO);
}

int main(void) {
  XT_RUN(test_eval_and_defaults);
  XT_RUN(test_fit_recovers);
  XT_RUN(test_fit_ignores_outliers);
  XT_RUN(test_fit_csv_and_errors);
  return XT_END();
}
