/* cmd_xbench.c — `xstage xbench`: one measured burst-gap configuration, printed per burst beside
 * the model's prediction for the same sequence (so anyone can hold a measurement against
 * `xstage model predict`). */
#include "cli/cli.h"
#include "core/strbuf.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static cli_opt g_opts[] = {
    {"target", "T", "host | hbm | peer:N (default host)", NULL},
    {"K", "N", "producer CTAs (default 16)", NULL},
    {"V", "BYTES", "bytes per burst, all producers (default 1MB)", NULL},
    {"G", "TIME", "gap between bursts (default 0; e.g. 20us)", NULL},
    {"bursts", "N", "bursts in the sequence (default 32)", NULL},
    {"flavour", "F", "st | relaxed | release | tma (default st)", NULL},
    {"flag", NULL, "end each producer's burst with a release flag (red.release.sys.add)", NULL},
    {"gap-mode", "M",
     "fma | spin | load (default fma; load: the gap reads L2, as a kernel's compute does)", NULL},
    {"sync", "M",
     "clock | sync | free (default clock: after one start barrier burst b of every producer "
     "starts at t0 + b*P on %globaltimer, or at once when late; sync: a grid barrier before "
     "every burst; free: no alignment, gaps are compute)",
     NULL},
    {"period", "TIME",
     "clock mode: the schedule's period P (default: T0 of --profile for K, V, plus --G)", NULL},
    {"device", "N", "CUDA device (default 0)", NULL},
    {"check", NULL, "poison the target before and verify every byte after", NULL},
    {"timeout-ms", "MS", "bound on every device spin (default 2000)", NULL},
    {"profile", "P", "profile for the prediction: embedded name or JSON file (default h200-host)",
     NULL},
    {"csv", "FILE", "also write the bursts as measurement CSV rows", NULL},
    {"stamps", "FILE",
     "also write the raw per-producer per-burst stamps as CSV (producer, burst, start_ns, "
     "end_ns, gap_ns, ...): the reduction can be redone offline",
     NULL},
    {"from-stamps", "FILE",
     "no GPU: reduce the stamps of a --stamps CSV again (aggregate T_iss, table and prediction)",
     NULL},
    {"run", "N", "with --from-stamps: which run of a merged stamps CSV (0-based, default 0)", NULL},
    {"json", NULL, "print JSON instead of a table", NULL},
};

static xs_result load_profile(xs_link_profile* p, const char* name) {
  if (xs_profile_default(p, name) == XS_OK) return XS_OK;
  return xs_profile_read(p, name);
}

static void print_json(const xs_xbench_config* c, const xs_xbench_summary* s,
                       const xs_xbench_burst* b, const xs_burst_result* pred, const xs_steady* st,
                       double closed, const char* pname) {
  xsi_strbuf sb = XSI_STRBUF_INIT;
#define NUM(key, x) (xsi_sb_printf(&sb, "\"%s\": ", key), xsi_sb_json_number(&sb, x))
  xsi_sb_puts(&sb, "{\"device\": ");
  xsi_sb_json_string(&sb, s->device);
  xsi_sb_puts(&sb, ", \"transport\": ");
  xsi_sb_json_string(&sb, s->transport);
  xsi_sb_printf(&sb,
                ", \"flavour\": \"%s\", \"mode\": \"%s\", \"gap_mode\": \"%s\", \"flag\": %d, ",
                xs_flavour_name(c->flavour), xs_sync_mode_name(c->sync_mode),
                xs_gap_mode_name(c->gap_mode), c->flag);
  xsi_sb_printf(&sb, "\"K\": %d, \"bursts\": %d, ", c->K, c->bursts);
  NUM("V_bytes", s->V), xsi_sb_puts(&sb, ", ");
  NUM("gap_nominal_ns", s->gap_nominal_ns), xsi_sb_puts(&sb, ", ");
  NUM("gap_ns", s->gap_measured_ns), xsi_sb_puts(&sb, ", ");
  NUM("sched_period_ns", s->sched_period_ns), xsi_sb_puts(&sb, ", ");
  NUM("t_iss_first_ns", s->t_iss_first_ns), xsi_sb_puts(&sb, ", ");
  NUM("t_iss_steady_ns", s->t_iss_steady_ns), xsi_sb_puts(&sb, ", ");
  NUM("t_iss_mean_steady_ns", s->t_iss_mean_steady_ns), xsi_sb_puts(&sb, ", ");
  NUM("rate_gbps", s->rate_gbps), xsi_sb_puts(&sb, ", ");
  NUM("timer_res_ns", s->timer_res_ns), xsi_sb_puts(&sb, ", ");
  NUM("sm_clock_ghz", s->sm_clock_ghz), xsi_sb_puts(&sb, ", ");
  NUM("load_iters_per_ns", s->load_iters_per_ns), xsi_sb_puts(&sb, ", ");
  NUM("kernel_ms", s->kernel_ms), xsi_sb_puts(&sb, ", ");
  xsi_sb_printf(&sb, "\"bytes_checked\": %ld, \"bytes_wrong\": %ld, ", s->bytes_checked,
                s->bytes_wrong);
  xsi_sb_puts(&sb, "\"profile\": ");
  xsi_sb_json_string(&sb, pname);
  xsi_sb_puts(&sb, ", ");
  NUM("pred_fluid_steady_ns", st->t_iss_ns), xsi_sb_puts(&sb, ", ");
  NUM("pred_fluid_mean_steady_ns", st->t_iss_mean_ns), xsi_sb_puts(&sb, ", ");
  NUM("pred_closed_ns", closed), xsi_sb_puts(&sb, ", \"regime\": ");
  xsi_sb_json_string(&sb, xs_regime_name(st->regime));
  xsi_sb_puts(&sb, ", \"per_burst\": [");
  for (int i = 0; i < c->bursts; i++) {
    xsi_sb_puts(&sb, i ? ", {" : "{");
    NUM("t_start_ns", b[i].t_start_ns), xsi_sb_puts(&sb, ", ");
    NUM("t_iss_ns", b[i].t_iss_ns), xsi_sb_puts(&sb, ", ");
    NUM("t_iss_mean_ns", b[i].t_iss_mean_ns), xsi_sb_puts(&sb, ", ");
    NUM("t_ret_ns", b[i].t_ret_ns), xsi_sb_puts(&sb, ", ");
    NUM("t_skew_ns", b[i].t_skew_ns), xsi_sb_puts(&sb, ", ");
    NUM("t_iss_cyc_ns", b[i].t_iss_cyc_ns), xsi_sb_puts(&sb, ", ");
    NUM("t_own_max_ns", b[i].t_own_max_ns), xsi_sb_puts(&sb, ", ");
    NUM("t_own_mean_ns", b[i].t_own_mean_ns), xsi_sb_puts(&sb, ", ");
    NUM("e_end_ns", b[i].e_end_ns), xsi_sb_puts(&sb, ", ");
    NUM("m_end_ns", b[i].m_end_ns), xsi_sb_puts(&sb, ", ");
    NUM("gap_before_ns", b[i].gap_before_ns), xsi_sb_puts(&sb, ", ");
    NUM("gap_ns", b[i].gap_ns), xsi_sb_puts(&sb, ", ");
    NUM("pred_fluid_ns", pred ? pred[i].t_iss_ns : NAN), xsi_sb_puts(&sb, ", ");
    NUM("pred_fluid_mean_ns", pred ? pred[i].t_iss_mean_ns : NAN), xsi_sb_puts(&sb, "}");
  }
  xsi_sb_puts(&sb, "]}\n");
#undef NUM
  if (xsi_sb_status(&sb) == XS_OK) fputs(sb.data, stdout);
  xsi_sb_free(&sb);
}

int cmd_xbench(int argc, char** argv) {
  cli_cmd c = CLI_CMD("xbench", "one measured burst-gap configuration (GPU)", "", g_opts, 0, 0);
  int rc = cli_parse(&c, argc, argv);
  if (rc >= 0) return rc;
  xs_xbench_config cfg = XS_XBENCH_CONFIG_INITIALIZER;
  double K = 16, V = 1048576, G = 0, nb = 32, dev = 0, tmo = 2000, period = 0;
  if (cli_get_double(&c, "K", 16, 1, 1024, &K) || cli_get_bytes(&c, "V", 1048576, 16, 4e9, &V) ||
      cli_get_ns(&c, "G", 0, 0, 1e9, &G) ||
      cli_get_double(&c, "bursts", 32, 1, XS_XBENCH_MAX_BURSTS, &nb) ||
      cli_get_double(&c, "device", 0, 0, 1023, &dev) ||
      cli_get_double(&c, "timeout-ms", 2000, 1, 600e3, &tmo) ||
      cli_get_ns(&c, "period", 0, 0, 1e9, &period))
    return 2;
  if (K != floor(K) || nb != floor(nb) || dev != floor(dev))
    return cli_error(&c, "--K, --bursts and --device take whole numbers");
  xs_result res;
  if ((res = xs_target_parse(&cfg.target, cli_get_str(&c, "target", "host"))) != XS_OK ||
      (res = xs_flavour_parse(&cfg.flavour, cli_get_str(&c, "flavour", "st"))) != XS_OK ||
      (res = xs_gap_mode_parse(&cfg.gap_mode, cli_get_str(&c, "gap-mode", "fma"))) != XS_OK ||
      (res = xs_sync_mode_parse(&cfg.sync_mode, cli_get_str(&c, "sync", "clock"))) != XS_OK)
    return cli_error(&c, "%s", xs_last_error());
  cfg.K = (int)K, cfg.V = V, cfg.gap_ns = G, cfg.bursts = (int)nb, cfg.device = (int)dev;
  cfg.flag = cli_flag(&c, "flag");
  cfg.check = cli_flag(&c, "check");
  cfg.timeout_ms = tmo;
  const char* pname = cli_get_str(&c, "profile", "h200-host");
  xs_link_profile prof;
  if ((res = load_profile(&prof, pname)) != XS_OK) return cli_fail(&c, res, "loading the profile");
  if (cfg.sync_mode == XS_SYNC_CLOCK && !(period > 0)) {
    /* P = T0_est + G: the first burst from idle under the profile, plus the gap */
    xs_steady s0;
    double per = 16.0 * ceil(V / K / 16.0) * K; /* the effective V */
    period = xs_fluid_periodic(&s0, &prof, K, per, 0.0) == XS_OK ? s0.t_iss_first_ns + G : 0.0;
  }
  cfg.period_ns = period;
  const char* from = cli_flag(&c, "from-stamps") ? cli_get_str(&c, "from-stamps", "") : NULL;
  xs_xbench_stamp* stamps = NULL;
  xs_xbench_summary s;
  memset(&s, 0, sizeof s);
  s.size = sizeof s;
  if (from) {
    /* offline: the configuration comes from the file */
    double run = 0;
    int nruns = 0;
    if (cli_get_double(&c, "run", 0, 0, 1e6, &run)) return 2;
    if (run != floor(run)) return cli_error(&c, "--run takes a whole number");
    if ((res = xs_xbench_stamps_csv_read(&stamps, &cfg, &s.V, &nruns, from, (int)run)) != XS_OK)
      return cli_fail(&c, res, "reading the stamps");
    K = cfg.K, G = cfg.gap_ns, cfg.V = s.V;
    s.per_producer = s.V / cfg.K, s.gap_nominal_ns = cfg.gap_ns;
    snprintf(s.device, sizeof s.device, "offline (%d of %d runs in the file)", (int)run + 1, nruns);
    snprintf(s.transport, sizeof s.transport, "%s", cli_get_str(&c, "target", "host"));
  }

  char gpu[128];
  if (!from && !cli_have_gpu(gpu, sizeof gpu)) {
    fprintf(stderr,
            "xstage xbench: %s: xbench measures on a GPU and none is usable in this "
            "process; 'xstage model predict' predicts without one\n",
            xs_strerror(XS_ERR_NO_DEVICE));
    return 1;
  }
  xs_xbench_burst* b = (xs_xbench_burst*)calloc((size_t)cfg.bursts, sizeof *b);
  xs_burst_result* pred = (xs_burst_result*)calloc((size_t)cfg.bursts, sizeof *pred);
  xs_burst* seqv = (xs_burst*)calloc((size_t)cfg.bursts, sizeof *seqv);
  if (!b || !pred || !seqv) {
    free(b), free(pred), free(seqv), free(stamps);
    return cli_fail(&c, XS_ERR_NO_MEMORY, "allocating results");
  }
  if (from) {
    res = xs_xbench_reduce(b, &s, stamps, cfg.K, cfg.bursts, NULL);
    free(stamps);
    stamps = NULL;
    if (res != XS_OK) {
      free(b), free(pred), free(seqv);
      return cli_fail(&c, res, "reducing the stamps");
    }
  } else if (cli_flag(&c, "stamps")) {
    stamps = (xs_xbench_stamp*)calloc((size_t)cfg.bursts * (size_t)cfg.K, sizeof *stamps);
    if (!stamps) {
      free(b), free(pred), free(seqv);
      return cli_fail(&c, XS_ERR_NO_MEMORY, "allocating the stamps");
    }
  }
  if (!from) res = xs_xbench_run(b, stamps, &s, &cfg);
  if (res == XS_OK && stamps)
    res = xs_xbench_stamps_csv_write(cli_get_str(&c, "stamps", ""), stamps, &cfg, &s);
  free(stamps);
  if (res != XS_OK) {
    free(b), free(pred), free(seqv);
    return cli_fail(&c, res, "measuring");
  }
  /* The model's view of the same sequence, with the measured gap: burst 0 from idle (clock
   * mode: each burst with its own measured gap, as it happened). */
  const int clock = cfg.sync_mode == XS_SYNC_CLOCK;
  for (int i = 0; i < cfg.bursts; i++)
    seqv[i].V = s.V,
    seqv[i].gap_ns = !i ? 0 : clock ? fmax(0.0, b[i].gap_before_ns) : s.gap_measured_ns;
  int have_pred = xs_fluid_simulate(pred, NULL, &prof, K, seqv, (size_t)cfg.bursts) == XS_OK;
  xs_steady st;
  memset(&st, 0, sizeof st);
  double closed = NAN;
  if (xs_fluid_periodic(&st, &prof, K, s.V, s.gap_measured_ns) != XS_OK) st.t_iss_ns = NAN;
  if (xs_predict_closed(&closed, &prof, K, s.V, s.gap_measured_ns) != XS_OK) closed = NAN;

  if (cli_flag(&c, "csv")) {
    xs_calib_row* rows = NULL;
    size_t n = 0, cap = 0;
    res = xs_calib_rows_append(&rows, &n, &cap, &cfg, &s, b, "xbench", 0, 0);
    if (res == XS_OK) res = xs_calib_csv_write(cli_get_str(&c, "csv", ""), rows, n);
    free(rows);
    if (res != XS_OK) {
      free(b), free(pred), free(seqv);
      return cli_fail(&c, res, "writing the CSV");
    }
  }
  if (cli_flag(&c, "json")) {
    print_json(&cfg, &s, b, have_pred ? pred : NULL, &st, closed, pname);
  } else {
    char v1[32], g1[32], g2[32];
    printf("# xbench: %s, target %s, %s, %s, %s gaps%s: K=%d V=%s (%.0f B/producer) G=%s "
           "(measured %s) bursts=%d\n",
           s.device, s.transport, xs_flavour_name(cfg.flavour), xs_sync_mode_name(cfg.sync_mode),
           xs_gap_mode_name(cfg.gap_mode), cfg.flag ? ", flag" : "", cfg.K,
           cli_fmt_bytes(v1, sizeof v1, s.V), s.per_producer, cli_fmt_ns(g1, sizeof g1, G),
           cli_fmt_ns(g2, sizeof g2, s.gap_measured_ns), cfg.bursts);
    printf("# timer resolution %.0f ns, SM clock %.3f GHz, FMA %.3f iterations/ns, kernel %.3f ms",
           s.timer_res_ns, s.sm_clock_ghz, s.fma_iters_per_ns, s.kernel_ms);
    if (cfg.gap_mode == XS_GAP_LOAD)
      printf(", load gap %.4f iterations/ns (calibrated with K CTAs loading; measured gaps "
             "longer than G are the compute stalled behind its SM's queued stores)",
             s.load_iters_per_ns);
    printf("\n");
    if (clock)
      printf("# clock mode: burst b scheduled at S_b = t0 + b*P, P = %.3f us (no barrier; a late "
             "producer starts at once); T_iss = E_b - max(S_b, E_{b-1}), gap_us = the gap "
             "before the next burst, max(0, S_b - E_{b-1}); fluid_us: the model with these "
             "gaps\n",
             s.sched_period_ns / 1e3);
    else if (cfg.sync_mode == XS_SYNC_GRID)
      printf("# sync mode: a grid barrier before each burst; it waits behind the producers' "
             "outstanding remote stores, so T_iss (period minus the compute gap) includes it: "
             "what a grid-synchronised fused kernel pays (docs/calibration.md)\n");
    if (!clock)
      printf("# T_iss = aggregate issue time: E_b - E_{b-1} - G_b (E_b: last producer end of "
             "burst b, G_b: mean compute gap before it; burst 0 from the common start); mean_us "
             "the same with the mean producer end; own_max/own_mean: producers' own durations\n");
    printf("%6s %11s %11s %11s %11s %11s %11s %11s %11s %11s %11s\n", "burst", "start_us",
           "T_iss_us", "mean_us", "own_max_us", "own_mean_us", "ret_us", "gap_us", "skew_us",
           "fluid_us", "fluid_mean");
    for (int i = 0; i < cfg.bursts; i++)
      printf("%6d %11.3f %11.3f %11.3f %11.3f %11.3f %11.3f %11.3f %11.3f %11.3f %11.3f\n", i,
             b[i].t_start_ns / 1e3, b[i].t_iss_ns / 1e3, b[i].t_iss_mean_ns / 1e3,
             b[i].t_own_max_ns / 1e3, b[i].t_own_mean_ns / 1e3, b[i].t_ret_ns / 1e3,
             b[i].gap_ns / 1e3, b[i].t_skew_ns / 1e3, have_pred ? pred[i].t_iss_ns / 1e3 : NAN,
             have_pred ? pred[i].t_iss_mean_ns / 1e3 : NAN);
    printf("steady state (median of the second half): T_iss %.3f us (mean producer %.3f us); "
           "sustained %.2f GB/s (second half, gaps excluded); max skew %.3f us\n",
           s.t_iss_steady_ns / 1e3, s.t_iss_mean_steady_ns / 1e3, s.rate_gbps, s.skew_max_ns / 1e3);
    if (clock && have_pred) {
      double v[XS_XBENCH_MAX_BURSTS];
      int h = cfg.bursts / 2, m = 0;
      for (int i = h; i < cfg.bursts; i++)
        v[m++] = pred[i].t_iss_ns;
      for (int i = 1; i < m; i++) /* insertion sort: the median of the second half */
        for (int j = i; j > 0 && v[j - 1] > v[j]; j--) {
          double t = v[j];
          v[j] = v[j - 1], v[j - 1] = t;
        }
      double med = m % 2 ? v[m / 2] : 0.5 * (v[m / 2 - 1] + v[m / 2]);
      printf("predicted (%s, the measured per-burst gaps): fluid steady %.3f us; "
             "measured/fluid = %.3f; configuration gap P - T_iss(0) = %.3f us, at which the "
             "fluid periodic state is %.3f us (%s), closed form %.3f us\n",
             pname, med / 1e3, s.t_iss_steady_ns / med, s.gap_measured_ns / 1e3,
             st.t_iss_ns / 1e3, xs_regime_name(st.regime), closed / 1e3);
    } else {
      printf("predicted (%s, G = measured gap): fluid steady %.3f us (mean %.3f us, %s), closed "
             "form %.3f us; measured/fluid = %.3f\n",
             pname, st.t_iss_ns / 1e3, st.t_iss_mean_ns / 1e3, xs_regime_name(st.regime),
             closed / 1e3, s.t_iss_steady_ns / st.t_iss_ns);
    }
    if (cfg.check)
      printf("check: %ld bytes verified, %ld wrong, %ld flags wrong\n", s.bytes_checked,
             s.bytes_wrong, s.flag_wrong);
  }
  free(b), free(pred), free(seqv);
  return 0;
}
