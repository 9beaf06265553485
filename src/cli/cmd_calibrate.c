/* cmd_calibrate.c — `xstage calibrate`: measure T0, R, Q and the burst-gap grid on this machine,
 * fit the model on 80% of the configurations, report the held-out error of the fluid model and
 * of the closed form side by side, and write CSV + profile JSON + SVG (docs/calibration.md). */
#include "cli/cli.h"
#include "cli/model_cli.h"
#include "core/strbuf.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static cli_opt g_opts[] = {
    {"target", "T",
     "host | hbm | peer:N | peer:all (each peer, then all at once) | all (default host)", NULL},
    {"quick", NULL, "at most 60 s of GPU time (default)", NULL},
    {"full", NULL, "at most 5 min of GPU time, >= 300 grid points", NULL},
    {"o", "DIR",
     "(or -o DIR) output directory, created if missing (default .): xstage-<t>.csv, "
     "profile-<t>.json, calibration-<t>.svg",
     NULL},
    {"device", "N", "CUDA device (default 0)", NULL},
    {"flavour", "F", "st | relaxed | release | tma (default st)", NULL},
    {"gap-mode", "M",
     "fma | spin | load (default fma; load: the gap reads L2, as a kernel's compute does)", NULL},
    {"sync", "M",
     "clock | sync | free (default clock: after one start barrier burst b of every producer "
     "starts at t0 + b*P on %globaltimer, P = T0 + G, or at once when late; sync puts a grid "
     "barrier in every gap; free: no alignment, gaps are compute)",
     NULL},
    {"refit", "CSV",
     "no GPU: analyse an existing calibration CSV (medians, fit, held-out errors, "
     "transitions); files go to -o DIR only when it is given",
     NULL},
    {"holdout", "F", "share of configurations held out of the fit (default 0.2)", NULL},
    {"seed", "N", "seed of the held-out draw (default 12345)", NULL},
    {"budget-s", "S",
     "GPU-time budget of the plan (default 60 quick, 300 full); the run stops "
     "at 1.5x it",
     NULL},
    {"compare", "FILE|NAME",
     "also score this profile (an embedded one, or an earlier calibration) on the fit's "
     "held-out rows",
     NULL},
    {"no-memcpy", NULL, "skip the cudaMemcpy bandwidth measurement", NULL},
    {"json", NULL, "print the report as JSON", NULL},
};

/* Progress: the CLI's \r line on a terminal (or with XSTAGE_PROGRESS=1); otherwise (a log
 * file) one line per 10%. */
static void on_progress(void* arg, const char* what, double f) {
  static int last = -1;
  (void)arg;
  if (isatty(2) || getenv("XSTAGE_PROGRESS")) {
    cli_progress(what, f);
    return;
  }
  int decile = (int)(f * 10.0);
  if (f <= 0.0) last = -1;
  if (decile != last) fprintf(stderr, "[%3.0f%%] %s\n", 100.0 * f, what);
  last = decile;
}

static const char* ok(int pass) {
  return pass ? "ok" : "MISSED";
}

static void print_table(const xs_calib_report* r, const xs_link_profile* p, const char* cmdline) {
  char b1[32], b2[32];
  printf("# xstage calibrate: %s, target %s, %s   (%s)\n", p->device, p->transport, p->flavour,
         cmdline);
  printf("sequences %zu, CSV rows %zu, kernel time %.2f s, wall %.1f s; timer resolution %.0f ns, "
         "FMA %.3f iterations/ns\n",
         r->n_points, r->n_rows, r->gpu_s, r->wall_s, r->timer_res_ns, r->fma_iters_per_ns);
  printf("R (sustained injection, median over K): %.2f GB/s", r->R_meas);
  int peer = !strncmp(p->transport, "peer:", 5);
  if (r->memcpy_d2h > 0 && peer)
    printf("; cudaMemcpyPeer to %s %.2f GB/s, back %.2f GB/s", p->transport, r->memcpy_d2h,
           r->memcpy_h2d);
  else if (r->memcpy_d2h > 0)
    printf("; cudaMemcpy D2H %.2f GB/s, H2D %.2f GB/s", r->memcpy_d2h, r->memcpy_h2d);
  if (r->R_vs_memcpy > 0)
    printf("; R / %s = %.3f (target within 10%%: %s)", peer ? "cudaMemcpyPeer" : "D2H",
           r->R_vs_memcpy, ok(fabs(r->R_vs_memcpy - 1.0) <= 0.10));
  printf("\n");
  for (int i = 0; i < r->nq; i++)
    printf("Q knee (single bursts from idle): K=%-4.0f %s\n", r->q_k[i],
           cli_fmt_bytes(b1, sizeof b1, r->q_knee[i]));
  printf("fitted: t_min %.0f ns, t_fixed %.0f ns, r_cta %.2f GB/s, r_cap %.1f GB/s, R %.2f GB/s, "
         "unfair_mean %.2f, Q(K):",
         p->t_min_ns, p->t_fixed_ns, p->r_cta, p->r_cap, p->R, p->unfair_mean);
  for (int i = 0; i < p->nq; i++)
    printf(" %.0f:%s", p->q_k[i], cli_fmt_bytes(b1, sizeof b1, p->q_bytes[i]));
  if (p->has_r_k) {
    printf("; R(K) GB/s:");
    for (int i = 0; i < p->nq; i++) printf(" %.0f:%.2f", p->q_k[i], p->r_k[i]);
  }
  printf("\n");
  const xs_fit_report* f = &r->fit;
  const int host = !strcmp(p->transport, "host");
  printf("\nfit and errors on the per-configuration medians over %d repetitions (%zu rows)\n",
         r->reps, r->n_median_rows);
  printf("|error| of T_iss per burst        rows   fluid median  fluid p90 | closed median  "
         "closed p90\n");
  printf("held-out (random configs)        %6zu   %11.1f%%  %8.1f%% | %12.1f%%  %9.1f%%   ",
         f->fluid_holdout.n, 100 * f->fluid_holdout.median, 100 * f->fluid_holdout.p90,
         100 * f->closed_holdout.median, 100 * f->closed_holdout.p90);
  if (host)
    printf("(per burst, fluid <= 5%% / <= 15%%: %s)\n",
           ok(f->fluid_holdout.median <= 0.05 && f->fluid_holdout.p90 <= 0.15));
  else
    printf("(the targets are defined for the host path)\n");
  printf("held-out sweep points (K,V,G)   %6zu   %11.1f%%  %8.1f%% | %12.1f%%  %9.1f%%   ",
         f->fluid_point_holdout.n, 100 * f->fluid_point_holdout.median,
         100 * f->fluid_point_holdout.p90, 100 * f->closed_point_holdout.median,
         100 * f->closed_point_holdout.p90);
  if (host)
    printf("(per point: total T_iss of its bursts; fluid <= 5%% / <= 15%%: %s)\n",
           ok(f->fluid_point_holdout.median <= 0.05 && f->fluid_point_holdout.p90 <= 0.15));
  else
    printf("(per point: total T_iss of its bursts)\n");
  printf("held-out near the transition    %6zu   %11.1f%%  %8.1f%% | %12.1f%%  %9.1f%%   "
         "(G within +-50%% of the smallest free gap)\n",
         f->fluid_transition.n, 100 * f->fluid_transition.median, 100 * f->fluid_transition.p90,
         100 * f->closed_transition.median, 100 * f->closed_transition.p90);
  printf("held-out points near transition %6zu   %11.1f%%  %8.1f%% | %12.1f%%  %9.1f%%   "
         "(per point)\n",
         f->fluid_point_transition.n, 100 * f->fluid_point_transition.median,
         100 * f->fluid_point_transition.p90, 100 * f->closed_point_transition.median,
         100 * f->closed_point_transition.p90);
  printf("fitted rows                     %6zu   %11.1f%%  %8.1f%% | %12.1f%%  %9.1f%%\n",
         f->fluid_fit.n, 100 * f->fluid_fit.median, 100 * f->fluid_fit.p90,
         100 * f->closed_fit.median, 100 * f->closed_fit.p90);
  if (r->ref_scored) {
    printf("--compare profile, held-out     %6zu   %11.1f%%  %8.1f%% | %12.1f%%  %9.1f%%   "
           "(the same rows as the fit's held-out)\n",
           r->ref.fluid_holdout.n, 100 * r->ref.fluid_holdout.median,
           100 * r->ref.fluid_holdout.p90, 100 * r->ref.closed_holdout.median,
           100 * r->ref.closed_holdout.p90);
    printf("--compare profile, held-out pts %6zu   %11.1f%%  %8.1f%% | %12.1f%%  %9.1f%%   "
           "(the same points)\n",
           r->ref.fluid_point_holdout.n, 100 * r->ref.fluid_point_holdout.median,
           100 * r->ref.fluid_point_holdout.p90, 100 * r->ref.closed_point_holdout.median,
           100 * r->ref.closed_point_holdout.p90);
  }
  printf("\ntransition gap: the smallest grid gap whose steady T_iss (median of the second half) "
         "is within 5%% of T0 (the first burst's), and every larger gap too; measured on the "
         "data, predicted by the fitted model for the same sequences by the same rule; inside = "
         "cap: V > Q(K), the first burst from idle already overflows the stage (no free gap "
         "exists; reported, not scored)\n");
  printf("%6s %12s %9s %5s %12s %12s %8s %7s %14s %14s\n", "K", "V", "T0_us", "gaps", "measured_us",
         "predicted_us", "error", "inside", "settle_gap_us", "min_free_gap_us");
  for (int i = 0; i < r->ntrans; i++) {
    const xs_calib_transition* t = &r->trans[i];
    printf("%6d %12s %9.2f %5d %12.2f %12.2f %7.1f%% %7s %14.2f %14.2f\n", t->K,
           cli_fmt_bytes(b2, sizeof b2, t->V), t->t0_ns / 1e3, t->n_gaps, t->g_meas_ns / 1e3,
           t->g_pred_grid_ns / 1e3, 100 * t->rel_err,
           t->cap_bound ? "cap"
           : t->in_grid ? "yes"
                        : "no",
           t->g_pred_ns / 1e3, t->g_free_ns / 1e3);
  }
  if (r->no_xstage)
    printf("no X-Stage at these sizes on this path: at its smallest gap every (K, V) issues "
           "within 25%% of its T0 (no backpressure to locate; a 5%% settle rule only sees timer "
           "noise here); the transition target is defined for the host path\n");
  else
    printf("pairs whose transition lies inside the grid: %d; predicted within 10%%: %d; "
           "capacity-bound (excluded): %d%s%s\n",
           r->trans_in_grid, r->trans_within_10, r->trans_cap_bound, host ? " (target >= 3: " : "",
           host ? (r->trans_within_10 >= 3 ? "ok)" : "MISSED)") : "");
  printf("\nrepeatability: K=%d V=%s G=%.0f ns, 5 runs, steady T_iss (us):", r->repeat_K,
         cli_fmt_bytes(b1, sizeof b1, r->repeat_V), r->repeat_G);
  for (int i = 0; i < 5; i++)
    printf(" %.3f", r->repeat_ss[i] / 1e3);
  printf("; spread max/min-1 = %.2f%% (per burst, steady median: %s)\n", 100 * r->repeat_spread,
         ok(r->repeat_spread <= 0.05));
  printf("repeatability per point (total T_iss of each run's bursts, us):");
  for (int i = 0; i < 5; i++)
    printf(" %.1f", r->repeat_total[i] / 1e3);
  printf("; spread max/min-1 = %.2f%% (target <= 5%%: %s)\n", 100 * r->repeat_total_spread,
         ok(r->repeat_total_spread <= 0.05));
  if (r->csv_path[0]) printf("files: %s, %s, %s\n", r->csv_path, r->profile_path, r->svg_path);
}

static void print_json(const xs_calib_report* r, const xs_link_profile* p) {
  xsi_strbuf sb = XSI_STRBUF_INIT;
#define NUM(key, x) (xsi_sb_printf(&sb, "\"%s\": ", key), xsi_sb_json_number(&sb, x))
#define STATS(key, s)                                                                              \
  (xsi_sb_printf(&sb, "\"%s\": {\"n\": %zu, ", key, (s).n), NUM("median", (s).median),             \
   xsi_sb_puts(&sb, ", "), NUM("p90", (s).p90), xsi_sb_puts(&sb, ", "), NUM("max", (s).max),       \
   xsi_sb_puts(&sb, "}"))
  xsi_sb_puts(&sb, "{\"transport\": ");
  xsi_sb_json_string(&sb, p->transport);
  xsi_sb_puts(&sb, ", \"device\": ");
  xsi_sb_json_string(&sb, p->device);
  xsi_sb_printf(&sb, ", \"sequences\": %zu, \"rows\": %zu, ", r->n_points, r->n_rows);
  NUM("gpu_s", r->gpu_s), xsi_sb_puts(&sb, ", ");
  NUM("wall_s", r->wall_s), xsi_sb_puts(&sb, ", ");
  NUM("R_meas_gbps", r->R_meas), xsi_sb_puts(&sb, ", ");
  NUM("memcpy_d2h_gbps", r->memcpy_d2h), xsi_sb_puts(&sb, ", ");
  NUM("memcpy_h2d_gbps", r->memcpy_h2d), xsi_sb_puts(&sb, ", ");
  NUM("R_vs_memcpy", r->R_vs_memcpy), xsi_sb_puts(&sb, ", ");
  NUM("timer_res_ns", r->timer_res_ns), xsi_sb_puts(&sb, ", \"fit\": {");
  STATS("fluid_holdout", r->fit.fluid_holdout), xsi_sb_puts(&sb, ", ");
  STATS("closed_holdout", r->fit.closed_holdout), xsi_sb_puts(&sb, ", ");
  STATS("fluid_transition", r->fit.fluid_transition), xsi_sb_puts(&sb, ", ");
  STATS("fluid_point_holdout", r->fit.fluid_point_holdout), xsi_sb_puts(&sb, ", ");
  STATS("closed_point_holdout", r->fit.closed_point_holdout), xsi_sb_puts(&sb, ", ");
  STATS("fluid_point_transition", r->fit.fluid_point_transition), xsi_sb_puts(&sb, ", ");
  STATS("closed_point_transition", r->fit.closed_point_transition), xsi_sb_puts(&sb, ", ");
  STATS("closed_transition", r->fit.closed_transition), xsi_sb_puts(&sb, ", ");
  STATS("fluid_fit", r->fit.fluid_fit), xsi_sb_puts(&sb, ", ");
  STATS("closed_fit", r->fit.closed_fit), xsi_sb_puts(&sb, "}, ");
  if (r->ref_scored) {
    xsi_sb_puts(&sb, "\"compare\": {");
    STATS("fluid_holdout", r->ref.fluid_holdout), xsi_sb_puts(&sb, ", ");
    STATS("closed_holdout", r->ref.closed_holdout), xsi_sb_puts(&sb, ", ");
    STATS("fluid_point_holdout", r->ref.fluid_point_holdout), xsi_sb_puts(&sb, ", ");
    STATS("closed_point_holdout", r->ref.closed_point_holdout), xsi_sb_puts(&sb, "}, ");
  }
  xsi_sb_puts(&sb, "\"transitions\": [");
  for (int i = 0; i < r->ntrans; i++) {
    const xs_calib_transition* t = &r->trans[i];
    xsi_sb_printf(&sb, "%s{\"K\": %d, ", i ? ", " : "", t->K);
    NUM("V_bytes", t->V), xsi_sb_puts(&sb, ", ");
    NUM("t0_ns", t->t0_ns), xsi_sb_puts(&sb, ", ");
    NUM("g_pred_ns", t->g_pred_ns), xsi_sb_puts(&sb, ", ");
    NUM("g_free_ns", t->g_free_ns), xsi_sb_puts(&sb, ", ");
    NUM("g_meas_ns", t->g_meas_ns), xsi_sb_puts(&sb, ", ");
    NUM("g_pred_grid_ns", t->g_pred_grid_ns), xsi_sb_puts(&sb, ", ");
    xsi_sb_printf(&sb, "\"n_gaps\": %d, \"in_grid\": %d, \"cap_bound\": %d, ", t->n_gaps,
                  t->in_grid, t->cap_bound);
    NUM("rel_err", t->rel_err), xsi_sb_puts(&sb, "}");
  }
  xsi_sb_printf(&sb,
                "], \"transitions_within_10\": %d, \"transitions_in_grid\": %d, "
                "\"no_xstage\": %d, \"reps\": %d, \"median_rows\": %zu, \"repeat\": {\"K\": %d, ",
                r->trans_within_10, r->trans_in_grid, r->no_xstage, r->reps, r->n_median_rows,
                r->repeat_K);
  NUM("V_bytes", r->repeat_V), xsi_sb_puts(&sb, ", ");
  NUM("G_ns", r->repeat_G), xsi_sb_puts(&sb, ", ");
  NUM("spread", r->repeat_spread), xsi_sb_puts(&sb, ", \"steady_ns\": [");
  for (int i = 0; i < 5; i++) {
    if (i) xsi_sb_puts(&sb, ", ");
    xsi_sb_json_number(&sb, r->repeat_ss[i]);
  }
  xsi_sb_puts(&sb, "], ");
  NUM("total_spread", r->repeat_total_spread), xsi_sb_puts(&sb, ", \"total_ns\": [");
  for (int i = 0; i < 5; i++) {
    if (i) xsi_sb_puts(&sb, ", ");
    xsi_sb_json_number(&sb, r->repeat_total[i]);
  }
  xsi_sb_puts(&sb, "]}, \"files\": [");
  xsi_sb_json_string(&sb, r->csv_path);
  xsi_sb_puts(&sb, ", ");
  xsi_sb_json_string(&sb, r->profile_path);
  xsi_sb_puts(&sb, ", ");
  xsi_sb_json_string(&sb, r->svg_path);
  xsi_sb_puts(&sb, "]}\n");
#undef STATS
#undef NUM
  if (xsi_sb_status(&sb) == XS_OK) fputs(sb.data, stdout);
  xsi_sb_free(&sb);
}

/* --refit CSV: the analysis of xs_calibrate on rows measured before (no GPU). The transport
 * is --target when given, else the first row's; the fit starts from that path's embedded
 * profile. */
/* -o DIR: create it (and its parents) if missing; it must be a writable directory. The
 * calibration writes there after minutes of measuring: that must not fail at the end. Returns
 * 0, or prints the error and returns 1. */
static int ensure_dir(const cli_cmd* c, const char* dir) {
  char path[1024];
  struct stat st;
  if (snprintf(path, sizeof path, "%s", dir) >= (int)sizeof path)
    return cli_error(c, "-o: path too long"), 1;
  for (char* q = path + 1; *q; q++) /* the parents, then the directory */
    if (*q == '/') {
      *q = '\0';
      if (mkdir(path, 0755) != 0 && errno != EEXIST)
        return cli_error(c, "-o: cannot create '%s': %s", path, strerror(errno)), 1;
      *q = '/';
    }
  if (mkdir(path, 0755) != 0 && errno != EEXIST)
    return cli_error(c, "-o: cannot create '%s': %s", path, strerror(errno)), 1;
  if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode))
    return cli_error(c, "-o: '%s' exists and is not a directory", path), 1;
  if (access(path, W_OK) != 0)
    return cli_error(c, "-o: '%s' is not writable: %s", path, strerror(errno)), 1;
  return 0;
}

static int refit(cli_cmd* c, const char* path, const xs_calib_config* cfg, const char* cmdline) {
  xs_calib_row* rows = NULL;
  size_t n = 0;
  xs_result res = xs_calib_csv_read(&rows, &n, path);
  if (res != XS_OK) return cli_fail(c, res, "reading the CSV");
  if (!n) {
    free(rows);
    return cli_error(c, "%s: no rows", path);
  }
  if (ensure_dir(c, cfg->out_dir)) { /* after the input is known good: no directory for nothing */
    free(rows);
    return 2;
  }
  char tn[32];
  if (cli_flag(c, "target"))
    xs_target_name(tn, sizeof tn, cfg->target);
  else
    snprintf(tn, sizeof tn, "%s", rows[0].transport);
  xs_link_profile prof;
  const char* pname = !strcmp(tn, "host")  ? "h200-host"
                      : !strcmp(tn, "hbm") ? "h200-hbm"
                                           : "h200-nvlink";
  xs_profile_default(&prof, pname);
  snprintf(prof.transport, sizeof prof.transport, "%s", tn);
  snprintf(prof.flavour, sizeof prof.flavour, "%s", rows[0].flavour);
  snprintf(prof.method, sizeof prof.method, "xstage calibrate --refit %.120s", path);
  xs_calib_report rep;
  memset(&rep, 0, sizeof rep);
  rep.size = sizeof rep;
  int maxrep = 0;
  for (size_t i = 0; i < n; i++)
    if (!strcmp(rows[i].phase, "grid") && rows[i].rep + 1 > maxrep) maxrep = rows[i].rep + 1;
  rep.reps = maxrep;
  xs_calib_row* med = NULL;
  size_t nmed = 0;
  res = xs_calib_analyse_ref(&prof, &rep, &med, &nmed, rows, n, tn, cfg->holdout_fraction,
                             cfg->seed, cfg->reference);
  if (res == XS_OK && cli_flag(c, "o")) {
    snprintf(rep.csv_path, sizeof rep.csv_path, "%s/xstage-%s-median.csv", cfg->out_dir, tn);
    snprintf(rep.profile_path, sizeof rep.profile_path, "%s/profile-%s.json", cfg->out_dir, tn);
    res = xs_calib_csv_write(rep.csv_path, med, nmed);
    if (res == XS_OK) res = xs_profile_write(&prof, rep.profile_path);
  }
  free(med);
  free(rows);
  if (res != XS_OK) return cli_fail(c, res, "analysing the CSV");
  rep.n_rows = n;
  if (cli_flag(c, "json"))
    print_json(&rep, &prof);
  else
    print_table(&rep, &prof, cmdline);
  return 0;
}

int cmd_calibrate(int argc, char** argv) {
  cli_cmd c = CLI_CMD("calibrate", "measure T0, R, Q on this machine and fit a profile (GPU)", "",
                      g_opts, 0, 0);
  /* the short form -o DIR is accepted beside --o DIR */
  char* args[64];
  if (argc > 64) return cli_error(&c, "too many arguments (%d)", argc);
  static char long_o[] = "--o";
  for (int i = 0; i < argc; i++)
    args[i] = strcmp(argv[i], "-o") == 0 ? long_o : argv[i];
  int rc = cli_parse(&c, argc, args);
  if (rc >= 0) return rc;
  if (cli_flag(&c, "quick") && cli_flag(&c, "full"))
    return cli_error(&c, "--quick and --full exclude each other");
  xs_calib_config cfg = XS_CALIB_CONFIG_INITIALIZER;
  double dev = 0, hold = 0.2, seed = 12345, budget = 0;
  if (cli_get_double(&c, "device", 0, 0, 1023, &dev) ||
      cli_get_double(&c, "budget-s", 0, 1, 3600, &budget) ||
      cli_get_double(&c, "holdout", 0.2, 0, 0.9, &hold) ||
      cli_get_double(&c, "seed", 12345, 0, 4294967295.0, &seed))
    return 2;
  xs_result res;
  if ((res = xs_flavour_parse(&cfg.flavour, cli_get_str(&c, "flavour", "st"))) != XS_OK ||
      (res = xs_gap_mode_parse(&cfg.gap_mode, cli_get_str(&c, "gap-mode", "fma"))) != XS_OK ||
      (res = xs_sync_mode_parse(&cfg.sync_mode, cli_get_str(&c, "sync", "clock"))) != XS_OK)
    return cli_error(&c, "%s", xs_last_error());
  const char* tname = cli_get_str(&c, "target", "host");
  xs_target targets[2 + 8 + 1]; /* host, hbm, at most 8 peers, peer:all */
  int nt = 0;
  /* all: host, hbm, then the peers; peer:all: each peer on its own, then every peer at once
   * (the last only with >= 2 peers: with one it is the same measurement as peer:N) */
  int all = !strcmp(tname, "all"), peers_all = all || !strcmp(tname, "peer:all");
  if (all) {
    targets[nt++] = (xs_target){XS_TARGET_HOST, -1};
    targets[nt++] = (xs_target){XS_TARGET_HBM, -1};
  }
  if (peers_all) {
    for (int p = 0; p < 8; p++)
      if (p != (int)dev) targets[nt++] = (xs_target){XS_TARGET_PEER, p};
    targets[nt++] = (xs_target){XS_TARGET_PEER, XS_PEER_ALL};
  } else if ((res = xs_target_parse(&targets[nt++], tname)) != XS_OK) {
    return cli_error(&c, "%s", xs_last_error());
  }
  cfg.device = (int)dev;
  cfg.level = cli_flag(&c, "full") ? XS_CALIB_FULL : XS_CALIB_QUICK;
  cfg.out_dir = cli_get_str(&c, "o", ".");
  cfg.holdout_fraction = hold;
  cfg.budget_s = budget;
  cfg.seed = (uint64_t)seed;
  cfg.memcpy_bw = !cli_flag(&c, "no-memcpy");
  cfg.progress = on_progress;
  static xs_link_profile ref;
  if (cli_flag(&c, "compare")) {
    if (mcli_profile(&c, cli_get_str(&c, "compare", NULL), NULL, &ref)) return 1;
    cfg.reference = &ref;
  }
  char cmdline[160];
  snprintf(cmdline, sizeof cmdline,
           "xstage calibrate --target %.20s --%s --flavour %s --sync %s "
           "--gap-mode %s",
           tname, cfg.level == XS_CALIB_FULL ? "full" : "quick", xs_flavour_name(cfg.flavour),
           xs_sync_mode_name(cfg.sync_mode), xs_gap_mode_name(cfg.gap_mode));
  cfg.method = cmdline;

  if (cli_flag(&c, "refit")) {
    char line[200];
    snprintf(line, sizeof line, "xstage calibrate --refit %.160s", cli_get_str(&c, "refit", ""));
    return refit(&c, cli_get_str(&c, "refit", ""), &cfg, line);
  }
  char gpu[128];
  if (!cli_have_gpu(gpu, sizeof gpu)) {
    fprintf(stderr,
            "xstage calibrate: %s: calibration measures on a GPU and none is usable in "
            "this process; the embedded profiles (xstage model) work without one\n",
            xs_strerror(XS_ERR_NO_DEVICE));
    return 1;
  }
  if (ensure_dir(&c, cfg.out_dir)) return 2; /* before the measurement, not after it */
  int failures = 0, done = 0, reached_peers = 0;
  char last_peer[32] = "";
  for (int i = 0; i < nt; i++) {
    char tn[32];
    xs_target_name(tn, sizeof tn, targets[i]);
    cfg.target = targets[i];
    if (targets[i].kind == XS_TARGET_PEER) {
      /* 'all' / 'peer:all': a peer that is missing or unreachable is skipped, not an error */
      xs_xbench* probe = NULL;
      if (xs_xbench_create(&probe, cfg.device, targets[i], 4096) != XS_OK) {
        if (!peers_all) {
          failures++;
          cli_fail(&c, XS_ERR_UNSUPPORTED, tn);
        }
        continue;
      }
      xs_xbench_destroy(probe);
      if (targets[i].peer == XS_PEER_ALL && reached_peers < 2) {
        fprintf(stderr, "xstage calibrate: peer:all skipped: %d peer reached, the same as %s\n",
                reached_peers, last_peer);
        continue;
      }
      if (targets[i].peer != XS_PEER_ALL)
        reached_peers++, snprintf(last_peer, sizeof last_peer, "%s", tn);
    }
    fprintf(stderr, "xstage calibrate: %s: target %s, %s ...\n", gpu, tn,
            cfg.level == XS_CALIB_FULL ? "full" : "quick");
    xs_link_profile prof;
    xs_calib_report rep;
    res = xs_calibrate(&prof, &rep, &cfg);
    cli_progress_done();
    if (res != XS_OK) {
      failures++;
      cli_fail(&c, res, tn);
      continue;
    }
    done++;
    if (cli_flag(&c, "json"))
      print_json(&rep, &prof);
    else
      print_table(&rep, &prof, cmdline);
    fflush(stdout);
  }
  if (!done && !failures)
    fprintf(stderr, "xstage calibrate: %s: target %s: no target could be measured (%s)\n",
            xs_strerror(XS_ERR_UNSUPPORTED), tname,
            peers_all ? "no peer GPU is reachable from this device" : "see above");
  return failures || !done ? 1 : 0;
}
