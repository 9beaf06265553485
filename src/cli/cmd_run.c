/* cmd_run.c — `xstage run`, the main job.
 *
 * CPU part (this file): load the link profiles (embedded, or --profile FILE), and predict for
 * every workload of the built-in catalogue what fusing its remote stores costs, on the host
 * (PCIe) path and on NVLink (both embedded profiles calibrated on H200s), each also with the
  * stage's room +-10 % (the spread of fitted capacities between calibrations) and with the CTAs'
 * tile ends spread out. The GPU part plugs in before the report: if a GPU is present, calibrate
 * the host path (and, with a second GPU, GPU 0 -> GPU 1) first and pass the fitted profiles to
 * run_report() in place of the embedded ones, then run every catalogue workload's bursts on
 * those links (run_measure) and report the measurements beside the predictions. */
#include "cli/model_cli.h"

#include <errno.h>
#include <math.h>
#include <sys/stat.h>
#include <stdlib.h>
#include <string.h>

/* One catalogue workload's burst pattern measured on this GPU (run_measure): the overhead of
 * the stores over the compute alone, and the prediction of the profile for the gap the producers
 * really computed (the FMA loop's gap is measured, not assumed). ok = 0: not measured. */
typedef struct run_meas {
  int ok;
  double gap_ns;       /* measured compute per tile (median of the runs) */
  double ovh;          /* measured: (slowest producer's end + one gap) / (tiles x gap) - 1 */
  double pred, lo, hi; /* predicted (lockstep) at gap_ns, and with the room 1.1x / 0.9x */
  double spread;       /* predicted with the producers spread out, at gap_ns */
  double coupled;      /* predicted for compute that reads memory (model §10), at gap_ns */
  int load;            /* the gaps read memory (--gap-mode load): gap_ns is the nominal gap */
} run_meas;

/* One link of the report: its profile and label, the catalogue measured on it (run_measure;
 * NULL: not measured) and its calibration in this run (NULL: none) with the embedded profile
 * `ref` scored beside it. */
typedef struct run_link {
  const xs_link_profile* profile;
  const char* label;
  const run_meas* meas;
  const xs_calib_report* cal;
  const char* ref;
} run_link;

/* The report of `xstage run` for a list of links (the first is the host path, calibrated on
 * this machine when a GPU is present). device: a line describing the device or its absence.
 * Prints to stdout; returns the exit code. */
int run_report(const run_link* links, int nlinks, const char* device, int json);

static char g_buf[32];

/* The sensitivity to the stage's capacity: the fitted Q(132) of the H200 host path spread
 * about +-10 % between calibrations (3.2-3.8 MiB; docs/model.md §10), and the catalogue's
 * whole-GPU bursts of 3.6 MiB sit at that knee. lo/hi: the overhead with every room 1.1x / 0.9x
 * the profile's (more room, less overhead). */
#define ROOM_BAND 0.10
static void overhead_band(double* lo, double* hi, const xs_link_profile* p, const xs_workload* w) {
  xs_link_profile q;
  xs_fusion_prediction f;
  *lo = *hi = NAN;
  if (xs_profile_scale_rooms(&q, p, 1 + ROOM_BAND) == XS_OK &&
      xs_predict_fusion(&f, &q, w) == XS_OK)
    *lo = f.overhead_frac;
  if (xs_profile_scale_rooms(&q, p, 1 - ROOM_BAND) == XS_OK &&
      xs_predict_fusion(&f, &q, w) == XS_OK)
    *hi = f.overhead_frac;
}

static const char* kind_title(const char* kind) {
  return !strcmp(kind, "moe") ? "MoE combine (EP=8)" : !strcmp(kind, "ulysses") ? "Ulysses all-to-all (W=8)" : kind;
}

/* One sentence per workload class and profile: does fusion hurt? "Hurts" = the fused kernel
 * runs more than 10% longer than its compute alone (stalls plus the issue time itself). */
static void verdict(FILE* f, const xs_link_profile* p, const char* label, const char* kind) {
  const xs_workload* cat;
  size_t n;
  xs_catalogue(&cat, &n);
  int total = 0, hurts = 0, slower = 0, stalls = 0, linkbound = 0, edge = 0, spread_hurts = 0;
  int coupled_hurts = 0;
  double worst = 0, best_other = 0;
  const char* worst_name = "";
  for (size_t i = 0; i < n; i++) {
    if (strcmp(cat[i].kind, kind)) continue;
    xs_fusion_prediction fp;
    if (xs_predict_fusion(&fp, p, &cat[i]) != XS_OK) continue;
    total++;
    hurts += fp.overhead_frac > 0.10;
    spread_hurts += fp.overhead_spread_frac > 0.10;
    coupled_hurts += fp.overhead_coupled_frac > 0.10;
    double lo, hi;
    overhead_band(&lo, &hi, p, &cat[i]);
    edge += (lo > 0.10) != (hi > 0.10); /* the verdict flips within the capacity's spread */
    stalls += fp.first_stall_tile >= 0;
    slower += fp.speedup_vs_serial < 1;
    linkbound += fp.total_bytes / p->R > fp.compute_ns;
    if (fp.overhead_frac <= 0.10) best_other = fmax(best_other, fp.overhead_frac);
    if (fp.overhead_frac > worst) worst = fp.overhead_frac, worst_name = cat[i].name;
  }
  fprintf(f, "%s on %s%s: ", kind_title(kind), label, p->calibrated ? "" : " (uncalibrated)");
  if (hurts == 0)
    fprintf(f, "fusion does not hurt: every shape stays within %.1f%% of its compute time%s.\n",
            100 * worst, stalls ? " (the stage does fill, but the stalls are small)" : "");
  else
    fprintf(f, "fusion hurts in %d of %d shapes (compute stretched by more than 10%%; worst %s, "
               "+%.0f%%)%s%s.\n", hurts, total, worst_name, 100 * worst,
            hurts < total ? "; the others stay within " : "",
            hurts < total ? (snprintf(g_buf, sizeof g_buf, "%.1f%%", 100 * best_other), g_buf) : "");
  if (hurts) {
    fprintf(f, "  Fused is %s compute-then-transfer", slower ? "slower than" : "still faster than");
    if (slower) fprintf(f, " in %d of them", slower);
    if (linkbound)
      fprintf(f,
              "; in %d the link cannot carry the bytes within the compute time (bytes/R > "
              "compute), so no schedule hides the transfer",
              linkbound);
    if (linkbound < hurts)
      fprintf(f,
              "; %s the bursts overflow the stage: smaller, spread bursts help (`xstage plan "
              "split`)",
              linkbound ? "elsewhere" : "there");
    fprintf(f, ".\n");
  }
  if (spread_hurts < hurts)
    fprintf(f,
            "  With the CTAs' tile ends spread out (free-running CTAs, column spread) it hurts "
            "in %d of them: for compute that does not read memory while the stores drain, the "
            "lockstep figures are the upper bound.\n",
            spread_hurts);
  if (!strncmp(p->transport, "peer", 4))
    fprintf(f,
            "  Compute that reads memory ran on over NVLink while its stores drained (session 20, "
            "one GPU pair): the spread column holds for it too.\n");
  else
    fprintf(f,
            "  If the compute reads memory (attention does; column coupled) it hurts in %d of "
            "%d.\n",
            coupled_hurts, total);
  if (edge)
    fprintf(f,
            "  At the stage's capacity: the verdict of %d shape%s flips with a room 10%% larger "
            "or smaller (the spread of Q between calibrations; column Q+-10%%): measure %s "
            "before deploying.\n",
            edge, edge > 1 ? "s" : "", edge > 1 ? "them" : "it");
}

static void json_stats(const char* key, const xs_error_stats* st, const char* sep) {
  printf("\"%s\": {\"n\": %zu, \"median\": %.6g, \"p90\": %.6g}%s", key, st->n, st->median, st->p90,
         sep);
}

int run_report(const run_link* links, int nlinks, const char* device, int json) {
  const xs_workload* cat;
  size_t n;
  xs_catalogue(&cat, &n);
  char a[32], b[32], c[32], d[32], e[32], g[32];
  if (json) printf("{\n  \"device\": \"%s\",\n  \"profiles\": [\n", device);
  else printf("xstage run: X-Stage predictions for fused remote stores\ndevice: %s\n", device);
  for (int pi = 0; pi < nlinks; pi++) {
    const xs_link_profile* p = links[pi].profile;
    if (json) {
      char* js = NULL;
      xs_profile_to_json(&js, p);
      printf("    {\"label\": \"%s\", \"profile\": %s, ", links[pi].label, js ? js : "null");
      const xs_calib_report* cr = links[pi].cal;
      if (cr) {
        printf("\"calibration\": {\"sequences\": %zu, \"wall_s\": %.6g, \"R_meas_gbps\": %.6g, "
               "\"copy_engine_gbps\": %.6g, ",
               cr->n_points, cr->wall_s, cr->R_meas, cr->memcpy_d2h);
        json_stats("fluid_holdout", &cr->fit.fluid_holdout, ", ");
        json_stats("fluid_point_holdout", &cr->fit.fluid_point_holdout, ", ");
        json_stats("closed_holdout", &cr->fit.closed_holdout, "");
        if (cr->ref_scored) {
          printf(", \"embedded_%s_on_the_same_rows\": {", links[pi].ref);
          json_stats("fluid_holdout", &cr->ref.fluid_holdout, ", ");
          json_stats("fluid_point_holdout", &cr->ref.fluid_point_holdout, "}");
        }
        printf("}, ");
      }
      printf("\"workloads\": [\n");
      free(js);
    } else {
      printf("\n");
      mcli_describe(stdout, links[pi].label, p);
      printf("%-22s %4s %9s %9s %9s %9s %7s %13s %7s %8s %8s %9s %6s  %-17s %9s\n", "workload", "K",
             "burst", "bytes", "compute", "fused", "ovh%", "Q+-10%", "spread", "coupled",
             "measured", "serial", "vs ser", "regime", "free gap");
    }
    for (size_t i = 0; i < n; i++) {
      const xs_workload* w = &cat[i];
      xs_fusion_prediction f;
      xs_result r = xs_predict_fusion(&f, p, w);
      if (r != XS_OK) {
        fprintf(stderr, "xstage run: %s: %s: %s\n", w->name, xs_strerror(r), xs_last_error());
        return 1;
      }
      double lo, hi;
      overhead_band(&lo, &hi, p, w);
      char band[32], mjs[512] = "", mtxt[16] = "-", ctxt[16] = "-";
      /* coupled: the host path's (over NVLink the loads ran on, session 20): "-" for peers */
      if (strncmp(p->transport, "peer", 4))
        snprintf(ctxt, sizeof ctxt, "%.1f%%", 100 * f.overhead_coupled_frac);
      snprintf(band, sizeof band, "%.1f-%.1f%%", 100 * lo, 100 * hi);
      const run_meas* m = links[pi].meas && links[pi].meas[i].ok ? &links[pi].meas[i] : NULL;
      if (m) {
        snprintf(
            mjs, sizeof mjs,
            "\"measured\": {\"gap_mode\": \"%s\", \"gap_ns\": %.17g, \"overhead_frac\": %.17g, "
            "\"predicted_overhead_frac\": %.17g, \"room_plus10\": %.17g, "
            "\"room_minus10\": %.17g, \"predicted_spread_overhead_frac\": %.17g, "
            "\"predicted_coupled_overhead_frac\": %.17g}, ",
            m->load ? "load" : "fma", m->gap_ns, m->ovh, m->pred, m->lo, m->hi, m->spread,
            m->coupled);
        snprintf(mtxt, sizeof mtxt, "%.1f%%", 100 * m->ovh);
      }
      if (json)
        printf("      {\"name\": \"%s\", \"kind\": \"%s\", \"K\": %g, \"burst_bytes\": %.17g, "
               "\"total_bytes\": %.17g, \"compute_ns\": %.17g, \"fused_ns\": %.17g, "
               "\"fused_mean_ns\": %.17g, \"overhead_frac\": %.17g, \"serial_ns\": %.17g, "
               "\"speedup_vs_serial\": %.17g, \"regime\": \"%s\", \"first_stall_tile\": %ld, "
               "\"min_free_gap_ns\": %.17g, \"overhead_frac_room_plus10\": %.17g, "
               "\"overhead_frac_room_minus10\": %.17g, \"fused_spread_ns\": %.17g, "
               "\"overhead_spread_frac\": %.17g, \"fused_coupled_ns\": %.17g, "
               "\"overhead_coupled_frac\": %.17g, \"drain_coupled_ns\": %.17g, "
               "%s\"note\": \"%s\"}%s\n",
               w->name, w->kind, w->K, w->K * w->bytes_per_tile, f.total_bytes, f.compute_ns,
               f.fused_ns, f.fused_mean_ns, f.overhead_frac, f.serial_ns, f.speedup_vs_serial,
               xs_regime_name(f.regime), f.first_stall_tile,
               isfinite(f.min_free_gap_ns) ? f.min_free_gap_ns : -1.0, lo, hi, f.fused_spread_ns,
               f.overhead_spread_frac, f.fused_coupled_ns, f.overhead_coupled_frac,
               f.drain_coupled_ns, mjs, w->note, i + 1 < n ? "," : "");
      else
        printf("%-22s %4g %9s %9s %9s %9s %6.1f%% %13s %6.1f%% %8s %8s %9s %5.2fx  %-17s %9s\n",
               w->name, w->K, cli_fmt_bytes(a, 32, w->K * w->bytes_per_tile),
               cli_fmt_bytes(b, 32, f.total_bytes), cli_fmt_ns(c, 32, f.compute_ns),
               cli_fmt_ns(d, 32, f.fused_ns), 100 * f.overhead_frac, band,
               100 * f.overhead_spread_frac, ctxt, mtxt, cli_fmt_ns(e, 32, f.serial_ns),
               f.speedup_vs_serial, xs_regime_name(f.regime), cli_fmt_ns(g, 32, f.min_free_gap_ns));
    }
    if (json) printf("    ]}%s\n", pi + 1 < nlinks ? "," : "");
  }
  if (json) {
    printf("  ]\n}\n");
    return 0;
  }
  printf("\n(fused: the slowest CTA, every CTA storing each tile at once (lockstep); ovh%%: fused "
         "over compute alone; Q+-10%%: ovh%% with the stage's room 10%% larger / smaller, the "
         "spread of Q between calibrations; spread: ovh%% with the CTAs' tile ends spread out "
         "after the first tile, as free-running CTAs drift; coupled: ovh%% when the compute reads "
         "memory, so a CTA computes its next tile only once its stores have drained and the stage "
         "holds no more than its shared room (attention, over PCIe; - over NVLink, where the "
         "loads ran on); "
         "measured: on this GPU, by xbench; "
         "serial: compute, then the same bytes at R; vs ser: serial / fused; free gap: compute "
         "per tile that keeps each tile's burst free; workload assumptions: docs/model.md)\n\n");
  for (int pi = 0; pi < nlinks; pi++) {
    if (!links[pi].meas) continue;
    int nm = 0, same = 0, load = 0, csame = 0;
    double slo = INFINITY, shi = 0, llo = INFINITY, lhi = 0; /* measured / predicted fused time */
    double clo = INFINITY, chi = 0;
    for (size_t i = 0; i < n; i++) {
      const run_meas* m = &links[pi].meas[i];
      if (!m->ok) continue;
      nm++, load = m->load;
      double rs = (1 + m->ovh) / (1 + m->spread), rl = (1 + m->ovh) / (1 + m->pred);
      slo = fmin(slo, rs), shi = fmax(shi, rs), llo = fmin(llo, rl), lhi = fmax(lhi, rl);
      same += (m->ovh > 0.10) == (m->spread > 0.10);
      double rc = (1 + m->ovh) / (1 + m->coupled);
      clo = fmin(clo, rc), chi = fmax(chi, rc);
      csame += (m->ovh > 0.10) == (m->coupled > 0.10);
    }
    if (nm && !load)
      printf("Measured on this GPU, %s (each workload's bursts and compute gaps run by xbench's "
             "free-running producers, median of 3, FMA gaps (--gap-mode load for compute that "
             "reads memory); column measured): fused time measured / predicted at the measured "
             "gap %.3f-%.3f with the CTAs spread, %.3f-%.3f in lockstep; the spread prediction "
             "gives the measurement's verdict (more or less than 10%%) in %d of %d.\n",
             links[pi].label, slo, shi, llo, lhi, same, nm);
    else if (nm)
      printf("Measured on this GPU, %s (each workload's bursts and compute gaps run by xbench's "
             "free-running producers, median of 3, gaps that read memory (--gap-mode load), as "
             "attention computes; column measured): fused time measured / predicted at the "
             "nominal gap %.3f-%.3f coupled (the prediction for such compute), %.3f-%.3f with the "
             "CTAs spread, %.3f-%.3f in lockstep; the coupled prediction gives the "
             "measurement's verdict (more or less than 10%%) in %d of %d, the spread one in %d.\n",
             links[pi].label, clo, chi, slo, shi, llo, lhi, csame, nm, same);
  }
  static const char* kinds[2] = {"moe", "ulysses"};
  for (int k = 0; k < 2; k++)
    for (int pi = 0; pi < nlinks; pi++)
      verdict(stdout, links[pi].profile, links[pi].label, kinds[k]);
  /* NOTE: measured accuracy of these predictions on a fused kernel, stated beside them (the
   * figures are docs/results/gemm-remote-h200.md's, 2026-11-29 and 30, H200s) */
  printf(
      "\nChecked on fused kernels. The GEMM engine storing every tile remotely (4 shapes, "
      "PCIe and NVLink, sessions 19-20, the stage's final drain included): between the spread and "
      "the lockstep predictions where the link does not bind all the time, 4-10%% faster than "
      "both where it binds over PCIe (the embedded R(132) is below that GPU's): "
      "docs/results/gemm-remote-h200.md. The attention's Ulysses epilogue to host memory "
      "(W = 8, session 20): the coupled prediction 0.555 of plain at S = 4608, where the link "
      "binds, against 0.52-0.53 measured (lockstep 0.68), 0.93 at S = 16896 against 0.90-0.92, "
      "0.98-0.99 from S = 32760 on against 0.98-0.99: compute that reads memory waits while the "
      "stores drain (docs/model.md section 10). So for such compute read the coupled column over "
      "PCIe, and measure where it is near a verdict: the fused kernel, `xstage run --gap-mode "
      "load`, or `xstage xbench --sync free --gap-mode load` at its K, V and gap.\n");
  return 0;
}

static void run_progress(void* arg, const char* what, double fraction) {
  (void)arg;
  cli_progress(what, fraction);
}

/* The GPU part of the main job: calibrate a path of device 0 (the host path, or peer:1 over
 * NVLink) with the --quick sweep, write its CSV/profile/plot under out_dir, and say how well
 * the model predicted the held-out points, beside the embedded profile `ref` on the same rows.
 * Returns 0 and fills *out, or prints the failure and returns 1. */
static int run_calibrate(const cli_cmd* c, xs_link_profile* out, xs_calib_report* rep,
                         xs_target target, const char* ref, const char* out_dir, int json) {
  xs_calib_config cfg = XS_CALIB_CONFIG_INITIALIZER;
  cfg.target = target;
  cfg.level = XS_CALIB_QUICK;
  cfg.out_dir = out_dir;
  cfg.method = target.kind == XS_TARGET_HOST ? "xstage run (calibrate --quick)"
                                             : "xstage run (calibrate --target peer:1 --quick)";
  cfg.progress = run_progress;
  /* the embedded profile scored on the same held-out rows: whether a miss of the accuracy
   * targets is the model's or the quick sweep's noise (session 18: both score alike) */
  xs_link_profile embedded;
  if (xs_profile_default(&embedded, ref) == XS_OK) cfg.reference = &embedded;
  memset(rep, 0, sizeof *rep);
  rep->size = sizeof *rep;
  char tn[32];
  xs_target_name(tn, sizeof tn, target);
  fprintf(stderr, "xstage run: calibrating the %s path (quick sweep, <= 60 s)\n", tn);
  xs_result r = xs_calibrate(out, rep, &cfg);
  cli_progress_done();
  if (r != XS_OK) return cli_fail(c, r, "calibration");
  FILE* f = json ? stderr : stdout;
  fprintf(f,
          "calibration of %s: %zu sequences in %.1f s; R %.1f GB/s (cudaMemcpy%s %.1f GB/s); "
          "held-out |error| median/p90: fluid %.1f%%/%.1f%%, closed form %.1f%%/%.1f%%\n",
          tn, rep->n_points, rep->wall_s, rep->R_meas,
          target.kind == XS_TARGET_HOST ? " D2H" : "Peer", rep->memcpy_d2h,
          100 * rep->fit.fluid_holdout.median, 100 * rep->fit.fluid_holdout.p90,
          100 * rep->fit.closed_holdout.median, 100 * rep->fit.closed_holdout.p90);
  fprintf(f, "  held-out points (total issue time of each sequence): fluid %.1f%%/%.1f%%",
          100 * rep->fit.fluid_point_holdout.median, 100 * rep->fit.fluid_point_holdout.p90);
  if (rep->ref_scored)
    fprintf(f, "; the embedded %s on the same rows %.1f%%/%.1f%%, points %.1f%%/%.1f%%", ref,
            100 * rep->ref.fluid_holdout.median, 100 * rep->ref.fluid_holdout.p90,
            100 * rep->ref.fluid_point_holdout.median, 100 * rep->ref.fluid_point_holdout.p90);
  fprintf(f, "\n");
  if (rep->profile_path[0])
    fprintf(f, "calibration files: %s, %s, %s\n", rep->csv_path, rep->profile_path, rep->svg_path);
  return 0;
}

/* The "run" of the main job on a GPU: every catalogue workload's burst pattern (K producers,
 * K x bytes_per_tile per burst, compute_ns_per_tile of FMA work between bursts,
 * tiles_per_producer bursts) measured on `target` by xbench's free-running producers (what a
 * fused kernel's CTAs do: compute, store, compute, ...; a stall delays the next compute), three
 * times. Fused time = the slowest producer's end + the first tile's compute (xbench starts with
 * a burst); overhead = fused / (tiles x gap) - 1, with the gap the producers measured (FMA
 * gaps) or the nominal one (load gaps: they stretch while the SM's stores drain, which is the
 * overhead; calibrated with K CTAs loading, so the nominal gap is what they take alone). m gets
 * one entry per catalogue workload (ok = 0 where K exceeds this GPU's SMs). 0, or 1 after
 * printing the failure. */
static double med3(double a, double b, double c) {
  return fmax(fmin(a, b), fmin(fmax(a, b), c));
}

static int run_measure(run_meas* m, const cli_cmd* c, const xs_link_profile* p, xs_target target,
                       xs_gap_mode gap_mode) {
  const xs_workload* cat;
  size_t n;
  xs_catalogue(&cat, &n);
  memset(m, 0, n * sizeof *m);
  xs_xbench* b = NULL;
  xs_result r = xs_xbench_create(&b, 0, target, 0);
  if (r != XS_OK) return cli_fail(c, r, "measuring the catalogue");
  int sms = 0;
  xs_xbench_info(&sms, NULL, b);
  char tn[32];
  xs_target_name(tn, sizeof tn, target);
  for (size_t i = 0; i < n && r == XS_OK; i++) {
    const xs_workload* w = &cat[i];
    if (w->K > sms || w->tiles_per_producer > XS_XBENCH_MAX_BURSTS) continue;
    cli_progress(tn, (double)i / (double)n);
    xs_xbench_config cfg = XS_XBENCH_CONFIG_INITIALIZER;
    cfg.target = target, cfg.K = (int)w->K, cfg.V = w->K * w->bytes_per_tile;
    cfg.gap_ns = w->compute_ns_per_tile, cfg.bursts = (int)w->tiles_per_producer;
    cfg.sync_mode = XS_SYNC_FREE, cfg.gap_mode = gap_mode;
    const int load = gap_mode == XS_GAP_LOAD;
    double ovh[3], gap[3];
    for (int k = 0; k < 3 && r == XS_OK; k++) {
      xs_xbench_summary sm;
      memset(&sm, 0, sizeof sm);
      sm.size = sizeof sm;
      if ((r = xs_xbench_measure(NULL, NULL, &sm, b, &cfg)) != XS_OK) break;
      gap[k] = !load && cfg.bursts > 1 && sm.gap_measured_ns > 0 ? sm.gap_measured_ns : cfg.gap_ns;
      ovh[k] = (sm.total_ns + gap[k]) / (cfg.bursts * gap[k]) - 1.0;
    }
    if (r != XS_OK) break;
    xs_workload at = *w; /* predicted at the gap the producers computed (median of three) */
    at.compute_ns_per_tile = med3(gap[0], gap[1], gap[2]);
    xs_fusion_prediction f;
    if (xs_predict_fusion(&f, p, &at) != XS_OK) continue;
    m[i].ok = 1, m[i].gap_ns = at.compute_ns_per_tile, m[i].ovh = med3(ovh[0], ovh[1], ovh[2]);
    m[i].load = load;
    m[i].pred = f.overhead_frac;
    m[i].spread = f.overhead_spread_frac;
    m[i].coupled = f.overhead_coupled_frac;
    overhead_band(&m[i].lo, &m[i].hi, p, &at);
  }
  cli_progress_done();
  xs_xbench_destroy(b);
  if (r != XS_OK) return cli_fail(c, r, "measuring the catalogue");
  return 0;
}

int cmd_run(int argc, char** argv) {
  static cli_opt opts[] = {
      {"profile", "FILE|NAME",
       "host-path profile to use instead of calibrating (default: "
       "calibrate with a GPU, else the embedded h200-host)",
       NULL},
      {"no-calibrate", NULL, "never calibrate, even with a GPU", NULL},
      {"no-measure", NULL,
       "with a GPU, do not run the catalogue's burst patterns (predictions only)", NULL},
      {"gap-mode", "fma|load",
       "the measured patterns' compute: fma (default) or load (reads L2 as attention or a GEMM "
       "does; a link-bound pattern then stalls its compute, as those kernels do)",
       NULL},
      {"out", "DIR", "where calibration writes its CSV, profile and plot (default xstage-out)",
       NULL},
      {"json", NULL, "print JSON", NULL},
  };
  cli_cmd c = CLI_CMD("run", "the main job: calibrate (GPU) or use the embedded profile, then "
                      "predict the workload catalogue", "", opts, 0, 0);
  int rc = cli_parse(&c, argc, argv);
  if (rc >= 0) return rc;
  int json = cli_flag(&c, "json");
  xs_gap_mode gap_mode = XS_GAP_FMA;
  const char* gm = cli_get_str(&c, "gap-mode", "fma");
  if (xs_gap_mode_parse(&gap_mode, gm) != XS_OK || gap_mode == XS_GAP_SPIN)
    return cli_error(&c, "--gap-mode: fma or load (got '%s')", gm);
  const char* given = cli_get_str(&c, "profile", NULL);
  xs_link_profile host, nvlink;
  if (mcli_profile(&c, given, "h200-host", &host)) return 1;
  if (mcli_profile(&c, NULL, "h200-nvlink", &nvlink)) return 1;
  char gpu[128] = "", device[256];

  run_link links[2] = {{&host, given ? given : "h200-host", NULL, NULL, "h200-host"},
                       {&nvlink, "h200-nvlink", NULL, NULL, "h200-nvlink"}};
  static xs_calib_report cal[2];
  if (cli_have_gpu(gpu, sizeof gpu) && !given && !cli_flag(&c, "no-calibrate")) {
    const char* out = cli_get_str(&c, "out", "xstage-out");
    if (mkdir(out, 0755) != 0 && errno != EEXIST) {
      fprintf(stderr, "xstage run: cannot create '%s': %s\n", out, strerror(errno));
      return 1;
    }
    fprintf(stderr, "xstage run: GPU found (%s)\n", gpu);
    if (run_calibrate(&c, &host, &cal[0], (xs_target){XS_TARGET_HOST, -1}, "h200-host", out, json))
      return 1;
    links[0].label = "host (calibrated now)", links[0].cal = &cal[0];
    snprintf(device, sizeof device, "%s: host path calibrated in this run", gpu);
    /* with a second GPU, GPU 0 -> GPU 1 too (NVLink on an HGX board). A failure there (no peer
     * access, ...) leaves the embedded NVLink profile in place, said so, and the run goes on */
    if (cli_gpu_count() >= 2) {
      if (run_calibrate(&c, &nvlink, &cal[1], (xs_target){XS_TARGET_PEER, 1}, "h200-nvlink", out,
                        json) == 0) {
        links[1].label = "peer:1 (calibrated now)", links[1].cal = &cal[1];
        snprintf(device, sizeof device, "%s: host path and GPU 0 -> GPU 1 calibrated in this run",
                 gpu);
      } else {
        fprintf(stderr, "xstage run: peer:1 not calibrated; the embedded h200-nvlink is used\n");
        if (mcli_profile(&c, NULL, "h200-nvlink", &nvlink)) return 1;
      }
    }
  } else if (gpu[0]) {
    snprintf(device, sizeof device, "%s (not calibrated in this run: %s profile)", gpu,
             given ? "given" : "embedded");
  } else {
    snprintf(device, sizeof device, "no GPU: CPU-only predictions from the %s profile(s)",
             given ? "given" : "embedded");
  }
  /* run: the catalogue's burst patterns on the links this machine has (host path; GPU 0 -> 1) */
  static run_meas mh[64], mn[64];
  const xs_workload* cat;
  size_t ncat;
  xs_catalogue(&cat, &ncat);
  if (gpu[0] && !cli_flag(&c, "no-measure") && ncat <= 64) {
    fprintf(stderr, "xstage run: running the catalogue's burst patterns (xbench, free-running)\n");
    if (run_measure(mh, &c, &host, (xs_target){XS_TARGET_HOST, -1}, gap_mode)) return 1;
    links[0].meas = mh;
    /* GPU 0 -> GPU 1 where it was calibrated in this run; a failure there is reported and the
     * report goes on with predictions only for that link */
    if (links[1].cal) {
      if (run_measure(mn, &c, &nvlink, (xs_target){XS_TARGET_PEER, 1}, gap_mode) == 0)
        links[1].meas = mn;
      else
        fprintf(stderr, "xstage run: peer:1 not measured; its predictions stand alone\n");
    }
  }
  rc = run_report(links, 2, device, json);
  if (rc || json) return rc;
  xs_balance_summary_t bs;
  if (xs_balance_summary(&bs) == XS_OK)
    printf("\nTEMPO expert-parallel dispatch (modeled makespan per MoE layer): %s\n", bs.line);
  return 0;
}
