/* cmd_model_plot.c — `xstage model plot`: measured issue times and both predictors (fluid
 * model, closed form) against the gap G, one colour per burst size V. */
#include "cli/model_cli.h"
#include "core/internal.h"
#include "core/svg.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define MAXV 8
#define NGRID 241

static const unsigned k_colors[MAXV] = {0x1f77b4, 0xff7f0e, 0x2ca02c, 0xd62728,
                                        0x9467bd, 0x8c564b, 0xe377c2, 0x17becf};

static int cmp_d(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return x < y ? -1 : x > y;
}

xs_result mcli_plot_write(const char* path, const xs_dataset* d, const uint8_t* holdout,
                          const xs_link_profile* p, double K, const double* Vs_in, int nv) {
  const xs_sample* S = d ? xs_dataset_samples(d) : NULL;
  size_t n = d ? xs_dataset_size(d) : 0;
  double Vs[MAXV];
  long idx[MAXV]; /* burst index plotted for each V (the largest measured; steady without data) */
  double gmax = 0;
  if (d) {
    nv = 0;
    for (size_t i = 0; i < n; i++) {
      if (S[i].K != K) continue;
      int k = 0;
      while (k < nv && Vs[k] != S[i].V) k++;
      if (k == nv && nv < MAXV) Vs[nv] = S[i].V, idx[nv++] = -1;
      gmax = fmax(gmax, S[i].G);
    }
    qsort(Vs, (size_t)nv, sizeof *Vs, cmp_d);
    for (int k = 0; k < nv; k++) {
      idx[k] = 0;
      for (size_t i = 0; i < n; i++)
        if (S[i].K == K && S[i].V == Vs[k] && S[i].burst_index > idx[k]) idx[k] = S[i].burst_index;
    }
  } else {
    for (int k = 0; k < nv && k < MAXV; k++) {
      Vs[k] = Vs_in[k], idx[k] = -1;
      double g;
      xs_plan_min_free_gap(&g, p, K, Vs[k]);
      if (isfinite(g)) gmax = fmax(gmax, 1.5 * g);
    }
    if (nv > MAXV) nv = MAXV;
  }
  if (nv == 0) return xsi_set_error(XS_ERR_INVALID_ARG, "plot: no rows with K = %g", K);
  if (!(gmax > 0)) gmax = 100e3;
  char title[160], lab[96], b[32];
  snprintf(title, sizeof title, "X-Stage issue time vs gap: %s%s, K = %g%s", p->transport,
           p->calibrated ? "" : " (uncalibrated profile)", K,
           d ? "" : ", steady state");
  xsi_plot pl;
  xsi_plot_init(&pl, title, "gap G between bursts (us)", "sender-visible issue time T_iss (us)");
  pl.logy = 1;
  double gx[NGRID], yf[NGRID], yc[NGRID];
  xs_result r = XS_OK;
  double* px = malloc((n + 1) * sizeof *px);
  double* py = malloc((n + 1) * sizeof *py);
  if (!px || !py) r = xsi_set_error(XS_ERR_NO_MEMORY, "plot");
  for (int k = 0; k < nv && r == XS_OK; k++) {
    xs_link_profile q = *p;
    double V = Vs[k];
    for (int i = 0; i < NGRID; i++) {
      double G = gmax * i / (NGRID - 1), t;
      gx[i] = G / 1e3;
      if (idx[k] < 0) {
        xs_steady s;
        xs_fluid_periodic(&s, &q, K, V, G);
        yf[i] = s.t_iss_ns / 1e3;
      } else {
        xs_dataset* one = NULL;
        xs_sample smp;
        memset(&smp, 0, sizeof smp);
        snprintf(smp.transport, sizeof smp.transport, "x");
        smp.K = K, smp.V = V, smp.G = G, smp.burst_index = idx[k], smp.t_iss_ns = 1;
        if (xs_dataset_from_samples(&one, &smp, 1) == XS_OK) xs_dataset_predict(&t, NULL, one, &q);
        xs_dataset_destroy(one);
        yf[i] = t / 1e3;
      }
      xs_predict_closed(&t, &q, K, V, G);
      yc[i] = t / 1e3;
    }
    cli_fmt_bytes(b, sizeof b, V);
    if (idx[k] < 0) snprintf(lab, sizeof lab, "V=%s fluid", b);
    else snprintf(lab, sizeof lab, "V=%s fluid (burst %ld)", b, idx[k]);
    r = xsi_plot_series(&pl, lab, gx, yf, NGRID, XSI_STYLE_LINE, k_colors[k]);
    snprintf(lab, sizeof lab, "V=%s closed form", b);
    if (r == XS_OK) r = xsi_plot_series(&pl, lab, gx, yc, NGRID, XSI_STYLE_DASHED, k_colors[k]);
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
      if (S[i].K == K && S[i].V == V && S[i].burst_index == idx[k])
        px[m] = S[i].G / 1e3, py[m++] = S[i].t_iss_ns / 1e3;
    snprintf(lab, sizeof lab, "V=%s measured%s", b, holdout ? " (fit + held out)" : "");
    if (r == XS_OK && m) r = xsi_plot_series(&pl, lab, px, py, m, XSI_STYLE_POINTS, k_colors[k]);
  }
  if (r == XS_OK) r = xsi_plot_write(&pl, path);
  xsi_plot_free(&pl);
  free(px);
  free(py);
  return r;
}

int mcli_plot(int argc, char** argv) {
  static cli_opt opts[] = {
      {"out", "FILE", "the SVG to write (also -o FILE; required)", NULL},
      {"profile", "FILE|NAME", "profile (default: fitted to the CSV, or h200-host without one)", NULL},
      {"K", "N", "producer count to plot (default: the most common K in the CSV, or 32)", NULL},
      {"V", "LIST", "burst sizes without a CSV (default 256KB,512KB,1MB,4MB)", NULL},
      {"transport", "T", "use only rows of this transport", NULL},
  };
  cli_cmd c = CLI_CMD("model plot", "SVG of issue time against the gap, one curve per V", "[<csv>]",
                      opts, 0, 1);
  int rc = cli_parse(&c, argc, argv);
  if (rc >= 0) return rc;
  const char* out = cli_get_str(&c, "out", NULL);
  if (!out) return cli_error(&c, "missing -o FILE (the SVG to write)");
  double Vs[MAXV];
  int nv = 0;
  if (cli_get_list(&c, "V", 1, Vs, MAXV, &nv)) return 2;
  for (int i = 0; i < nv; i++)
    if (!(Vs[i] > 0)) return cli_error(&c, "--V: sizes must be > 0");
  double K = 0;
  if (cli_get_double(&c, "K", 0, 1, 1e6, &K)) return 2;
  xs_dataset* d = NULL;
  xs_result r;
  if (c.npos == 1) {
    if ((r = xs_dataset_load(&d, c.pos[0])) != XS_OK) return cli_fail(&c, r, "cannot load the measurements");
    const char* tr = cli_get_str(&c, "transport", NULL);
    if (tr) { /* keep only that transport's rows */
      size_t n = xs_dataset_size(d), m = 0;
      xs_sample* s = malloc((n + 1) * sizeof *s);
      for (size_t i = 0; s && i < n; i++)
        if (!strcmp(xs_dataset_samples(d)[i].transport, tr)) s[m++] = xs_dataset_samples(d)[i];
      xs_dataset_destroy(d);
      d = NULL;
      r = s && m ? xs_dataset_from_samples(&d, s, m) : XS_ERR_INVALID_ARG;
      free(s);
      if (r != XS_OK) return cli_fail(&c, r, "no rows of that transport");
    }
    if (K == 0) { /* the most common K */
      size_t n = xs_dataset_size(d), best = 0;
      for (size_t i = 0; i < n; i++) {
        size_t cnt = 0;
        for (size_t j = 0; j < n; j++) cnt += xs_dataset_samples(d)[j].K == xs_dataset_samples(d)[i].K;
        if (cnt > best) best = cnt, K = xs_dataset_samples(d)[i].K;
        if (n > 20000) break; /* large files: the first row's K */
      }
    }
  } else if (nv == 0) {
    const double def[4] = {262144, 524288, 1048576, 4194304};
    memcpy(Vs, def, sizeof def);
    nv = 4;
  }
  if (K == 0) K = 32;
  xs_link_profile p;
  if (cli_get_str(&c, "profile", NULL) || !d) {
    if (mcli_profile(&c, cli_get_str(&c, "profile", NULL), "h200-host", &p)) {
      xs_dataset_destroy(d);
      return 1;
    }
  } else {
    xs_fit_options o = XS_FIT_OPTIONS_INITIALIZER;
    o.holdout_fraction = 0;
    p = (xs_link_profile)XS_LINK_PROFILE_INITIALIZER;
    if ((r = xs_model_fit(&p, NULL, NULL, d, &o)) != XS_OK) {
      xs_dataset_destroy(d);
      return cli_fail(&c, r, "cannot fit a profile to the CSV (give --profile)");
    }
  }
  r = mcli_plot_write(out, d, NULL, &p, K, Vs, nv);
  xs_dataset_destroy(d);
  if (r != XS_OK) return cli_fail(&c, r, "cannot write the plot");
  printf("wrote %s\n", out);
  return 0;
}
