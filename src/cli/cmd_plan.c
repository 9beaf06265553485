/* cmd_plan.c — `xstage plan min-gap | max-burst | split | fusion`: the model inverted. */
#include "cli/model_cli.h"

#include <math.h>
#include <string.h>

static const char* g_usage =
    "usage: xstage plan <min-gap|max-burst|split|fusion> [options]   (--help on each)\n"
    "  min-gap    smallest gap that keeps periodic bursts of V free of backpressure\n"
    "  max-burst  largest burst that stays free with a gap G\n"
    "  split      split V bytes over a compute window into the fewest bursts that never stall\n"
    "  fusion     predicted overhead of fusing the stores into a tiled kernel\n";

/* "], \"key\": [v0, v1, ...": the next array of the split scan's JSON */
static void print_doubles(const char* key, const double* v, int n) {
  printf("], \"%s\": [", key);
  for (int i = 0; i < n; i++)
    printf("%s%.17g", i ? ", " : "", v[i]);
}

int cmd_plan(int argc, char** argv) {
  if (argc < 1) {
    fputs(g_usage, stderr);
    return 2;
  }
  const char* sub = argv[0];
  if (!strcmp(sub, "--help") || !strcmp(sub, "-h")) {
    fputs(g_usage, stdout);
    return 0;
  }
  int which = !strcmp(sub, "min-gap") ? 0 : !strcmp(sub, "max-burst") ? 1 : !strcmp(sub, "split") ? 2
              : !strcmp(sub, "fusion") ? 3 : -1;
  if (which < 0) {
    fprintf(stderr, "xstage plan: unknown subcommand '%s'\n%s", sub, g_usage);
    return 2;
  }
  static cli_opt opts[] = {
      {"profile", "FILE|NAME", "link profile (default h200-host)", NULL},
      {"K", "N", "producer CTAs issuing at once (default 32)", NULL},
      {"V", "BYTES", "bytes per burst / to split (min-gap, split; default 4MB)", NULL},
      {"G", "TIME", "gap between bursts (max-burst; default 20us)", NULL},
      {"window", "TIME", "compute window to spread V over (split; default 100us)", NULL},
      {"workload", "NAME", "fusion: a catalogue workload (see `xstage run`)", NULL},
      {"bytes-per-tile", "BYTES", "fusion: bytes one producer stores per tile (default 32KB)",
       NULL},
      {"compute", "TIME", "fusion: compute per tile (default 10us)", NULL},
      {"tiles", "N", "fusion: tiles per producer (default 64)", NULL},
      {"split", "N",
       "fusion: also each tile's stores cut into n = 1, 2, 4, ... N pieces (a power "
       "of two <= 128; default 0: off)",
       NULL},
      {"json", NULL, "print JSON", NULL},
  };
  static const char* names[4] = {"plan min-gap", "plan max-burst", "plan split", "plan fusion"};
  static const char* sums[4] = {"smallest gap that keeps periodic bursts free",
                                "largest burst that stays free with gap G",
                                "fewest bursts spreading V over a window without stall",
                                "predicted overhead of fused remote stores"};
  cli_cmd c = CLI_CMD("plan", "", "", opts, 0, 0);
  c.name = names[which];
  c.summary = sums[which];
  int rc = cli_parse(&c, argc - 1, argv + 1);
  if (rc >= 0) return rc;
  double K, V, G, W, bpt, cpt;
  long tiles, split;
  if (cli_get_double(&c, "K", 32, 1, 1e6, &K) || cli_get_bytes(&c, "V", 4194304, 1, 1e13, &V) ||
      cli_get_ns(&c, "G", 20000, 0, 1e13, &G) || cli_get_ns(&c, "window", 100000, 0, 1e13, &W) ||
      cli_get_bytes(&c, "bytes-per-tile", 32768, 0, 1e12, &bpt) ||
      cli_get_ns(&c, "compute", 10000, 0, 1e13, &cpt) ||
      cli_get_long(&c, "tiles", 64, 1, 100000000L, &tiles) ||
      cli_get_long(&c, "split", 0, 0, 128, &split))
    return 2;
  if (split & (split - 1)) return cli_error(&c, "--split: %ld is not a power of two", split);
  if (K != floor(K)) return cli_error(&c, "--K: %g is not a whole number", K);
  xs_link_profile p;
  if (mcli_profile(&c, cli_get_str(&c, "profile", NULL), "h200-host", &p)) return 1;
  int json = cli_flag(&c, "json");
  char a[32], b[32], d[32], e[32], g[32], h[32];
  xs_result r = XS_OK;
  if (which == 0) {
    double g;
    if ((r = xs_plan_min_free_gap(&g, &p, K, V)) != XS_OK) return cli_fail(&c, r, "planning failed");
    if (json) printf("{\"K\": %g, \"V\": %.17g, \"min_free_gap_ns\": %.17g}\n", K, V, isfinite(g) ? g : -1.0);
    else if (isfinite(g))
      printf("smallest free gap for %s bursts from %g CTAs: %s\n", cli_fmt_bytes(a, 32, V), K, cli_fmt_ns(b, 32, g));
    else
      printf("no gap keeps %s bursts from %g CTAs free: one burst alone overflows the stage "
             "(json: -1); split it\n", cli_fmt_bytes(a, 32, V), K);
  } else if (which == 1) {
    double v;
    if ((r = xs_plan_max_burst(&v, &p, K, G)) != XS_OK) return cli_fail(&c, r, "planning failed");
    if (json) printf("{\"K\": %g, \"G\": %.17g, \"max_burst_bytes\": %.17g}\n", K, G, isfinite(v) ? v : -1.0);
    else if (isfinite(v))
      printf("largest free burst from %g CTAs with a %s gap: %s (%.0f bytes)\n", K, cli_fmt_ns(a, 32, G),
             cli_fmt_bytes(b, 32, v), floor(v));
    else
      printf("any burst is free: %g CTAs issue no faster than the stage drains (json: -1)\n", K);
  } else if (which == 2) {
    xs_split_plan sp;
    if ((r = xs_plan_split(&sp, &p, K, V, W)) != XS_OK) return cli_fail(&c, r, "planning failed");
    if (json)
      printf("{\"K\": %g, \"V\": %.17g, \"window_ns\": %.17g, \"nbursts\": %ld, \"burst_bytes\": "
             "%.17g, \"gap_ns\": %.17g, \"stall_ns\": %.17g, \"issue_ns\": %.17g, \"feasible\": %s}\n",
             K, V, W, sp.nbursts, sp.burst_bytes, sp.gap_ns, sp.stall_ns, sp.issue_ns,
             sp.feasible ? "true" : "false");
    else
      printf("%s %s over %s: %ld burst%s of %s, %s of compute before each; issue %s, stall %s\n",
             sp.feasible ? "split" : "cannot split without stall (least stall shown):",
             cli_fmt_bytes(a, 32, V), cli_fmt_ns(b, 32, W), sp.nbursts, sp.nbursts == 1 ? "" : "s",
             cli_fmt_bytes(d, 32, sp.burst_bytes), cli_fmt_ns(e, 32, sp.gap_ns),
             cli_fmt_ns(g, 32, sp.issue_ns), cli_fmt_ns(h, 32, sp.stall_ns));
  } else {
    xs_workload w = XS_WORKLOAD_INITIALIZER;
    const char* wn = cli_get_str(&c, "workload", NULL);
    if (wn) {
      const xs_workload* cat;
      size_t n, i;
      xs_catalogue(&cat, &n);
      for (i = 0; i < n && strcmp(cat[i].name, wn); i++) {}
      if (i == n) return cli_error(&c, "--workload: unknown '%s' (see `xstage run`)", wn);
      w = cat[i];
    } else {
      snprintf(w.name, sizeof w.name, "custom");
      snprintf(w.kind, sizeof w.kind, "custom");
      w.K = K, w.bytes_per_tile = bpt, w.compute_ns_per_tile = cpt, w.tiles_per_producer = tiles;
    }
    xs_fusion_prediction f;
    if ((r = xs_predict_fusion(&f, &p, &w)) != XS_OK) return cli_fail(&c, r, "prediction failed");
    xs_split_scan sc;
    memset(&sc, 0, sizeof sc);
    if (split && (r = xs_plan_split_fusion(&sc, &p, &w, (int)split)) != XS_OK)
      return cli_fail(&c, r, "split prediction failed");
    if (json) {
      printf(
          "{\"workload\": \"%s\", \"K\": %g, \"bytes_per_tile\": %.17g, \"compute_ns_per_tile\": "
          "%.17g, \"tiles\": %ld, \"compute_ns\": %.17g, \"fused_ns\": %.17g, \"fused_mean_ns\": "
          "%.17g, \"overhead_frac\": %.17g, \"serial_ns\": %.17g, \"speedup_vs_serial\": %.17g, "
          "\"regime\": \"%s\", \"first_stall_tile\": %ld, \"min_free_gap_ns\": %.17g, "
          "\"fused_spread_ns\": %.17g, \"overhead_spread_frac\": %.17g, \"drain_ns\": %.17g, "
          "\"fused_coupled_ns\": %.17g, \"overhead_coupled_frac\": %.17g, "
          "\"drain_coupled_ns\": %.17g, \"coupled_spread\": %.17g, "
          "\"coupled_room_bytes\": %.17g",
          w.name, w.K, w.bytes_per_tile, w.compute_ns_per_tile, w.tiles_per_producer, f.compute_ns,
          f.fused_ns, f.fused_mean_ns, f.overhead_frac, f.serial_ns, f.speedup_vs_serial,
          xs_regime_name(f.regime), f.first_stall_tile,
          isfinite(f.min_free_gap_ns) ? f.min_free_gap_ns : -1.0, f.fused_spread_ns,
          f.overhead_spread_frac, f.drain_ns, f.fused_coupled_ns, f.overhead_coupled_frac,
          f.drain_coupled_ns, f.coupled_spread, f.coupled_room_bytes);
      if (split) {
        printf(", \"split\": {\"best_n\": %d, \"n\": [", sc.best_n);
        for (int i = 0; i < sc.count; i++)
          printf("%s%d", i ? ", " : "", sc.n[i]);
        print_doubles("coupled_ns", sc.coupled_ns, sc.count);
        print_doubles("lockstep_ns", sc.lockstep_ns, sc.count);
        printf("]}");
      }
      printf("}\n");
    } else {
      printf("%s: %g producers x %ld tiles, %s per tile after %s of compute\n", w.name, w.K,
             w.tiles_per_producer, cli_fmt_bytes(a, 32, w.bytes_per_tile),
             cli_fmt_ns(b, 32, w.compute_ns_per_tile));
      printf("  compute alone %s; fused %s (slowest CTA), %s (mean CTA): overhead %.1f%%\n",
             cli_fmt_ns(a, 32, f.compute_ns), cli_fmt_ns(b, 32, f.fused_ns),
             cli_fmt_ns(d, 32, f.fused_mean_ns), 100 * f.overhead_frac);
      printf("  with the CTAs' tile ends spread out after the first tile (free-running CTAs; the "
             "line above has them store each tile at once): fused %s, overhead %.1f%%\n",
             cli_fmt_ns(a, 32, f.fused_spread_ns), 100 * f.overhead_spread_frac);
      printf("  the stage then still holds %s of drain: a kernel ends (its stores landed) at "
             "%s lockstep, at most %s spread\n",
             cli_fmt_ns(a, 32, f.drain_ns), cli_fmt_ns(b, 32, f.fused_ns + f.drain_ns),
             cli_fmt_ns(d, 32, f.fused_spread_ns + f.drain_ns));
      printf("  compute then transfer at R: %s -> fused is %.2fx %s\n", cli_fmt_ns(a, 32, f.serial_ns),
             f.speedup_vs_serial >= 1 ? f.speedup_vs_serial : 1 / f.speedup_vs_serial,
             f.speedup_vs_serial >= 1 ? "faster" : "slower");
      printf("  regime %s; first stalled tile %ld; a tile needs %s of compute to stay free\n",
             xs_regime_name(f.regime), f.first_stall_tile, cli_fmt_ns(a, 32, f.min_free_gap_ns));
      printf("  if the compute reads memory (attention does): a CTA "
             "computes its next tile only once its stores have drained, as an SM with queued "
             "remote stores hardly loads: fused %s, overhead %.1f%%, then %s of drain "
             "(docs/model.md section 10, coupled%s)\n",
             cli_fmt_ns(a, 32, f.fused_coupled_ns), 100 * f.overhead_coupled_frac,
             cli_fmt_ns(b, 32, f.drain_coupled_ns),
             strncmp(p.transport, "peer", 4) ? ""
                                             : "; measured over PCIe: over NVLink the loads ran "
                                               "on, so the spread line holds there");
      if (f.regime != XS_REGIME_FREE && f.first_stall_tile >= 0)
        printf("  the stage stalls: for such compute measure with `xstage xbench --sync free "
               "--gap-mode load` at this K, burst and gap\n");
      if (split) {
        printf("  each tile's stores cut into n pieces, each after 1/n of its compute (kernel end, "
               "drain included; coupled, lockstep in brackets):");
        for (int i = 0; i < sc.count; i++)
          printf("%s n=%d %s (%s)", i ? "," : "", sc.n[i], cli_fmt_ns(a, 32, sc.coupled_ns[i]),
                 cli_fmt_ns(b, 32, sc.lockstep_ns[i]));
        int bi = 0;
        while (sc.n[bi] != sc.best_n)
          bi++;
        printf("\n  for compute that reads memory: n = %d, %.1f%% of compute overhead against "
               "%.1f%% unsplit (each piece also costs the kernel some work the model does not "
               "see: measure)\n",
               sc.best_n, 100 * (sc.coupled_ns[bi] / sc.compute_ns - 1),
               100 * (sc.coupled_ns[0] / sc.compute_ns - 1));
      }
    }
  }
  return 0;
}
